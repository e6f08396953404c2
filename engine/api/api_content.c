/* Expunging content that was sent or received by mistake (Svix's
 * expunge-content operations): a message's payload (it becomes
 * {"expired": true}, and the message is never sent again: see
 * sql/queries/api_message_expunge.sql), every message's payload of an
 * application (expunge-all-contents: a background task, task_runner.c)
 * and an attempt's response (it becomes "EXPUNGED"). As in Svix, these are the organization's
 * operations: a tenant's token gets 403, whatever the application. */
#include <stdio.h>
#include <stdlib.h>

#include "api_internal.h"
#include "xmalloc.h"

/* Runs statement q on (the path's message, extra) and answers 204, or 404
 * "<what> not found" when it touched no row. lock (Q__COUNT: none) runs
 * first on the message, in the same transaction. msg: the message's id. */
static void expunge(PGconn *conn, struct api_req *r, enum query_id lock, enum query_id q, const char *extra,
                    const char *what, char msg[40])
{
    if (!api_global_token(r) || !api_resolve_message(conn, r, msg, NULL))
        return;
    if (lock != Q__COUNT) {
        const char *pl[] = {msg};
        PGresult *l = api_exec(conn, r, lock, pl);
        if (!l)
            return;
        PQclear(l);
    }
    const char *p[] = {msg, extra};
    PGresult *res = api_exec(conn, r, q, p);
    if (!res)
        return;
    if (PQntuples(res) > 0)
        api_reply(r, 204, NULL);
    else
        api_not_found(r, what);
    PQclear(res);
}

void api_content_expunge_message(PGconn *conn, struct api_req *r)
{
    /* the event locked first: a relay pass fanning it out is waited for,
     * and its deliveries are then closed too (api_message_lock.sql) */
    char msg[40];
    expunge(conn, r, Q_API_MESSAGE_LOCK, Q_API_MESSAGE_EXPUNGE, NULL, "Message", msg);
    if (r->status != 204)
        return;
    /* its dead letters were skipped: an ordered endpoint's successors held
     * behind them are due at once (after the commit, api_request_done) */
    const char *p[] = {msg};
    PGresult *res = api_exec(conn, r, Q_API_MESSAGE_ORDERED_NEXT, p);
    if (!res)
        return;
    for (int i = 0; i < PQntuples(res) && r->ndue < API_DELIVERIES_MAX; i++) {
        r->due[r->ndue] = xstrdup(PQgetvalue(res, i, API_MESSAGE_ORDERED_NEXT_ID));
        r->due_ms[r->ndue++] = strtoll(PQgetvalue(res, i, API_MESSAGE_ORDERED_NEXT_DUE_MS), NULL, 10);
    }
    PQclear(res);
}

void api_content_expunge_attempt(PGconn *conn, struct api_req *r)
{
    char msg[40];
    expunge(conn, r, Q__COUNT, Q_API_ATTEMPT_EXPUNGE, r->params[2], "Message attempt", msg);
}

void api_content_expunge_all(PGconn *conn, struct api_req *r)
{
    if (api_global_token(r) && api_resolve_app(conn, r, r->params[0]))
        api_task_start(conn, r, "application.purge_content", json_object());
}
