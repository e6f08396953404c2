/* The admin view's tenants and portal links; see portal_admin.h. Every
 * value is escaped with the portal's own writer (portal_esc). */
#include "portal_admin.h"

#include <stdio.h>
#include <string.h>

#include "portal_internal.h"
#include "query.h"

json_t *portal_admin_tenants(PGconn *conn)
{
    char err[256];
    PGresult *res = query_prepared(conn, Q_PORTAL_TENANT_LIST, NULL, err, sizeof err);
    if (!res)
        return NULL;
    json_t *out = json_array();
    for (int i = 0; i < PQntuples(res); i++)
        json_array_append_new(out, json_pack("{s:s, s:s, s:s}", "id", PQgetvalue(res, i, PORTAL_TENANT_LIST_ID), "uid",
                                             PQgetvalue(res, i, PORTAL_TENANT_LIST_UID), "name",
                                             PQgetvalue(res, i, PORTAL_TENANT_LIST_NAME)));
    PQclear(res);
    return out;
}

void portal_admin_render_tenants(struct evbuffer *b, const json_t *tenants, const char *csrf)
{
    evbuffer_add_printf(b, "<h2>Tenants</h2>");
    if (json_array_size(tenants) == 0) {
        evbuffer_add_printf(b, "<p id=no-tenants>No tenants yet (<code>hookd tenant add UID</code>).</p>");
        return;
    }
    evbuffer_add_printf(b, "<table id=tenants><tr><th>uid</th><th>name</th><th>id</th><th>portal</th></tr>");
    size_t i;
    const json_t *t;
    json_array_foreach(tenants, i, t)
    {
        const char *id = json_string_value(json_object_get(t, "id"));
        evbuffer_add_printf(b, "<tr><td>");
        portal_esc(b, json_string_value(json_object_get(t, "uid")));
        evbuffer_add_printf(b, "</td><td>");
        portal_esc(b, json_string_value(json_object_get(t, "name")));
        evbuffer_add_printf(b, "</td><td><code>");
        portal_esc(b, id);
        evbuffer_add_printf(b, "</code></td><td><form method=post action=\"/admin/tenants/");
        portal_esc(b, id);
        evbuffer_add_printf(b, "/portal\"><input type=hidden name=csrf value=\"");
        portal_esc(b, csrf);
        evbuffer_add_printf(b, "\"><button type=submit class=portal-link>Portal link</button></form></td></tr>");
    }
    evbuffer_add_printf(b, "</table>");
}

void portal_admin_render_link(struct evbuffer *b, const char *tenant, const char *url, const char *ttl)
{
    evbuffer_add_printf(b, "<p class=msg>A portal link for <code>");
    portal_esc(b, tenant);
    evbuffer_add_printf(b, "</code>: it opens once, within ");
    portal_esc(b, ttl);
    evbuffer_add_printf(b, ", and signs its opener in as that tenant. It is shown only now.</p><p><a id=portal-url "
                           "href=\"");
    portal_esc(b, url);
    evbuffer_add_printf(b, "\" target=_blank rel=\"noopener noreferrer\">Open the portal</a></p><pre id=portal-link>");
    portal_esc(b, url);
    evbuffer_add_printf(b, "</pre><p><a href=\"/admin\">Back</a></p>");
}
