/* The tenants' portal under /portal/ on the worker's `listen` address: a
 * server-rendered site where one tenant manages its endpoints (add, edit,
 * disable, delete, signing secret, custom headers, example events,
 * recovery) and reads its message log and attempts. It is entered through a
 * single-use login link (portal_link.h: `POST /api/v1/auth/app-portal-
 * access/{app_id}` or `hookd tenant portal-link T`), exchanged for an
 * HttpOnly, SameSite=Strict session cookie (Secure when [portal] base_url
 * is https). Every state change is a POST carrying the session's CSRF
 * token; every page is sent with a Content-Security-Policy that allows no
 * inline script. The data goes through the API role's operations, scoped
 * to the session's tenant. Loop thread only. */
#ifndef HOOKD_PORTAL_H
#define HOOKD_PORTAL_H

#include <event2/buffer.h>
#include <jansson.h>
#include <libpq-fe.h>
#include <stddef.h>

struct portal;
struct hookd_ctx;
struct http_server;

/* Routes /portal/ on http (borrowed; outlives the portal). */
struct portal *portal_new(struct hookd_ctx *ctx, struct http_server *http);
/* Requests whose job has not finished. */
size_t portal_pending(const struct portal *p);
void portal_free(struct portal *p); /* accepts NULL; after the shared pool closed */

/* The operators' side of the portal, for the admin view (admin.c): the
 * tenants with a button each that mints a portal login link, and the page
 * that shows the minted link (to open, or to send to the customer). */

/* Every tenant as [{id, uid, name}] (caller frees), or NULL. DB thread. */
json_t *portal_admin_tenants(PGconn *conn);
/* The tenants section of the admin page; each form posts csrf to
 * /admin/tenants/{id}/portal. */
void portal_admin_render_tenants(struct evbuffer *b, const json_t *tenants, const char *csrf);
/* The minted link (shown once), with how long it opens. */
void portal_admin_render_link(struct evbuffer *b, const char *tenant, const char *url, const char *ttl);

#endif
