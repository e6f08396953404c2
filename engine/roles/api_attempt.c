/* Delivery attempts of an application's messages: list by message, list by
 * endpoint (newest first, from the `attempts` history), and resend (the
 * message's delivery to the endpoint opens again and is scheduled at once,
 * through the delivery role like a replayed dead letter). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_internal.h"
#include "xmalloc.h"

/* The message the path's segment names (msg_… or eventId) into id. */
static bool find_message(PGconn *conn, struct api_req *r, const char *msg, char id[40])
{
    const char *p[] = {r->app, msg, "false"};
    return api_find_one(conn, r, Q_API_MESSAGE_GET, p, API_MESSAGE_GET_ID, "Message", id, 40);
}

static bool find_endpoint(PGconn *conn, struct api_req *r, const char *ep, char id[40])
{
    const char *p[] = {r->app, ep};
    return api_find_one(conn, r, Q_API_ENDPOINT_RESOLVE, p, API_ENDPOINT_RESOLVE_ID, "Endpoint", id, 40);
}

static void list(PGconn *conn, struct api_req *r, const char *msg, const char *ep)
{
    int limit;
    const char *it;
    if (api_page(r, &limit, &it) != 0)
        return;
    const char *st = api_query(r, "status");
    if (st && strcmp(st, "0") != 0 && strcmp(st, "2") != 0) {
        api_invalid(r, "query", "status", "hookd records 0 (success) and 2 (fail)", "value_error");
        return;
    }
    char n[16];
    snprintf(n, sizeof n, "%d", limit + 1);
    const char *p[] = {r->app, msg, ep, it, n, st};
    PGresult *res = api_exec(conn, r, Q_API_ATTEMPT_LIST, p);
    if (!res)
        return;
    api_reply_list(r, res, API_ATTEMPT_LIST_BODY, API_ATTEMPT_LIST_API_ID, limit);
    PQclear(res);
}

void api_attempt_list_by_msg(PGconn *conn, struct api_req *r)
{
    char msg[40], ep[40];
    const char *only = api_query(r, "endpoint_id");
    if (!api_resolve_app(conn, r, r->params[0]) || !find_message(conn, r, r->params[1], msg))
        return;
    if (only && !find_endpoint(conn, r, only, ep))
        return;
    list(conn, r, msg, only ? ep : NULL);
}

void api_attempt_list_by_endpoint(PGconn *conn, struct api_req *r)
{
    char ep[40];
    if (api_resolve_app(conn, r, r->params[0]) && find_endpoint(conn, r, r->params[1], ep))
        list(conn, r, NULL, ep);
}

void api_attempt_resend(PGconn *conn, struct api_req *r)
{
    char msg[40], ep[40];
    if (!api_resolve_app(conn, r, r->params[0]) || !find_message(conn, r, r->params[1], msg) ||
        !find_endpoint(conn, r, r->params[2], ep))
        return;
    const char *p[] = {msg, ep};
    PGresult *res = api_exec(conn, r, Q_API_ATTEMPT_RESEND, p);
    if (!res)
        return;
    if (PQntuples(res) == 1)
        r->due[r->ndue++] = xstrdup(PQgetvalue(res, 0, API_ATTEMPT_RESEND_ID));
    PQclear(res);
    api_reply(r, 202, json_object());
}
