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

#include <jansson.h>
#include <libpq-fe.h>
#include <stdbool.h>
#include <stddef.h>

/* Deliveries one operation may make due (resend, recover). */
#define API_DELIVERIES_MAX 256

struct api;
struct hookd_ctx;
struct http_server;
struct hookd_config;

/* Routes /api/v1/ on http (borrowed; outlives the api). */
struct api *api_new(struct hookd_ctx *ctx, struct http_server *http);
/* Requests whose transaction has not finished. */
size_t api_pending(const struct api *a);
/* Stops the purge timer (shutdown, while the pool lives). */
void api_close(struct api *a);
void api_free(struct api *a); /* accepts NULL; after the shared pool closed */


/* ---- operations called in-process (the portal) ----
 * One call of an API operation as a token scoped to one tenant would make
 * it. The path's parameters are the tenant's application, then a and b. */
struct api_call {
    const struct hookd_config *cfg; /* borrowed */
    const char *op;                 /* the operation id, e.g. "v1.endpoint.create" */
    const char *tenant;             /* the tenant (application id) the call is scoped to */
    const char *a, *b;              /* the path's further parameters, or NULL */
    json_t *body;                   /* borrowed; NULL: none */
    const char *query;              /* a query string ("limit=250"), or NULL */
};

struct api_call_result {
    int status;
    json_t *reply;                 /* the answer's body: caller frees; NULL: none */
    char *due[API_DELIVERIES_MAX]; /* delivery ids made due: caller schedules or frees */
    size_t ndue;
};

/* Runs c on conn inside the caller's transaction (the caller begins, and
 * commits or rolls back by the status). An unknown operation answers 501.
 * DB thread. */
void api_call(PGconn *conn, const struct api_call *c, struct api_call_result *out);

/* Every route of the API as [{method, path, operation, implemented,
 * summary, status}] (caller frees): the source of
 * docs/reference/api-operations.md. */
json_t *api_routes_reference(void);

/* Whether an endpoint whose filterTypes are types (globs; NULL or empty:
 * every type) receives messages of type. */
bool api_filter_types_match(const json_t *types, const char *type);

#endif
