/* The tenants' portal under /portal/ on the worker's `listen` address: a
 * server-rendered site where one tenant manages its endpoints (add, edit,
 * disable, delete, signing secret, custom headers, example events,
 * recovery) and reads its message log and attempts. It is entered through a
 * single-use login link (portal_token.h: `POST /api/v1/auth/app-portal-
 * access/{app_id}` or `hookd tenant portal-link T`), exchanged for an
 * HttpOnly, SameSite=Strict session cookie (Secure when [portal] base_url
 * is https). Every state change is a POST carrying the session's CSRF
 * token; every page is sent with a Content-Security-Policy that allows no
 * inline script. The data goes through the API role's operations, scoped
 * to the session's tenant. Loop thread only. */
#ifndef HOOKD_PORTAL_H
#define HOOKD_PORTAL_H

#include <stddef.h>

struct portal;
struct hookd_ctx;
struct http_server;

/* Routes /portal/ on http (borrowed; outlives the portal). */
struct portal *portal_new(struct hookd_ctx *ctx, struct http_server *http);
/* Requests whose job has not finished. */
size_t portal_pending(const struct portal *p);
void portal_free(struct portal *p); /* accepts NULL; after the shared pool closed */

#endif
