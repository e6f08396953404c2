/* The HTTP API under /api/v1/ on the worker's `listen` address, compatible
 * with what the official Svix SDKs send (applications = hookd's tenants,
 * endpoints, messages, attempts, event types). Requests carry
 * `Authorization: Bearer <token>`; tokens are made by `hookd token create`
 * and stored as SHA-256 digests; a tenant-scoped token sees its tenant only
 * (404 for everything else). Failed authentications are throttled per
 * client address as the admin view's are (admin_guard). Every operation runs
 * in one transaction on the shared pool; POSTs with an `idempotency-key`
 * header answer a repeat with the first answer. `/api/v1/openapi.json`
 * describes exactly the operations implemented; the others answer 501 with
 * their name. Loop thread only. */
#ifndef HOOKD_API_H
#define HOOKD_API_H

#include <stddef.h>

struct api;
struct hookd_ctx;
struct http_server;

/* Routes /api/v1/ on http (borrowed; outlives the api). */
struct api *api_new(struct hookd_ctx *ctx, struct http_server *http);
/* Requests whose transaction has not finished. */
size_t api_pending(const struct api *a);
/* Stops the purge timer (shutdown, while the pool lives). */
void api_close(struct api *a);
void api_free(struct api *a); /* accepts NULL; after the shared pool closed */

#endif
