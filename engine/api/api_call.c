/* API operations called in-process, for the portal: a request built from
 * an operation id and a tenant, as a token scoped to that tenant would
 * send it, run on the caller's connection inside its transaction; see
 * api.h. */
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <stdio.h>
#include <string.h>

#include "api_internal.h"

void api_call(PGconn *conn, const struct api_call *c, struct api_call_result *out)
{
    memset(out, 0, sizeof *out);
    const struct api_route *route = api_route_by_op(c->op);
    if (!route || !route->fn) {
        out->status = 501;
        out->reply = json_pack("{s:s, s:s}", "code", "not_implemented", "detail", c->op);
        return;
    }
    struct api_req r;
    memset(&r, 0, sizeof r);
    r.route = route;
    r.cfg = c->cfg;
    r.query.tqh_first = NULL;
    r.query.tqh_last = &r.query.tqh_first;
    if (c->query)
        (void)evhttp_parse_query_str(c->query, &r.query);
    snprintf(r.tenant, sizeof r.tenant, "%s", c->tenant);
    r.params[0] = (char *)c->tenant;
    r.params[1] = (char *)c->a;
    r.params[2] = (char *)c->b;
    r.nparams = c->b ? 3 : c->a ? 2 : 1;
    r.body = c->body;
    r.auth_ok = true;
    route->fn(conn, &r);
    evhttp_clear_headers(&r.query);
    out->status = r.status;
    out->reply = r.reply;
    memcpy(out->due, r.due, r.ndue * sizeof r.due[0]);
    out->ndue = r.ndue;
}
