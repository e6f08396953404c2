/* The operators' side of the portal, for the admin view (admin.c): the
 * tenants with a button each that mints a portal login link, and the page
 * that shows the minted link (to open, or to send to the customer). */
#ifndef HOOKD_PORTAL_ADMIN_H
#define HOOKD_PORTAL_ADMIN_H

#include <event2/buffer.h>
#include <jansson.h>
#include <libpq-fe.h>

/* Every tenant as [{id, uid, name}] (caller frees), or NULL. DB thread. */
json_t *portal_admin_tenants(PGconn *conn);
/* The tenants section of the admin page; each form posts csrf to
 * /admin/tenants/{id}/portal. */
void portal_admin_render_tenants(struct evbuffer *b, const json_t *tenants, const char *csrf);
/* The minted link (shown once), with how long it opens. */
void portal_admin_render_link(struct evbuffer *b, const char *tenant, const char *url, const char *ttl);

#endif
