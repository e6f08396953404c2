/* The admin view's tenants and portal links; see portal_admin.h. Every
 * value is escaped with the pages' shared writer (html_ui_esc). */
#include "portal.h"

#include <stdio.h>
#include <string.h>

#include "html_ui.h"
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
    static const char *const cols[] = {"uid", "name", "id", "portal"};
    evbuffer_add_printf(b, "<h2>Tenants</h2>");
    if (json_array_size(tenants) == 0) {
        html_ui_empty(b, "no-tenants", "No tenants yet (hookd tenant add UID).");
        return;
    }
    html_ui_table_begin(b, "tenants", NULL, cols, 4);
    size_t i;
    const json_t *t;
    json_array_foreach(tenants, i, t)
    {
        const char *id = json_string_value(json_object_get(t, "id"));
        html_ui_printf(b,
                       "<tr><td data-label=\"uid\">%s</td><td data-label=\"name\">%s</td><td data-label=\"id\">"
                       "<code>%s</code></td><td><form method=\"post\" action=\"/admin/tenants/%s/portal\">"
                       "<input type=\"hidden\" name=\"csrf\" value=\"%s\"><button type=\"submit\" "
                       "class=\"secondary portal-link\">Portal link</button></form></td></tr>",
                       json_string_value(json_object_get(t, "uid")), json_string_value(json_object_get(t, "name")), id,
                       id, csrf);
    }
    html_ui_table_end(b);
}

void portal_admin_render_link(struct evbuffer *b, const char *tenant, const char *url, const char *ttl)
{
    html_ui_printf(b,
                   "<p class=\"notice ok msg\" role=\"status\">A portal link for <code>%s</code>: it opens once, "
                   "within %s, and signs its opener in as that tenant. It is shown only now.</p><p><a "
                   "id=\"portal-url\" href=\"%s\" target=\"_blank\" rel=\"noopener noreferrer\">Open the portal</a>"
                   "</p><pre id=\"portal-link\">%s</pre><p><a href=\"/admin\">Back</a></p>",
                   tenant, ttl, url, url);
}
