/* Expunging content that was sent or received by mistake (Svix's
 * expunge-content operations): a message's payload (it becomes
 * {"expired": true}, and the message is never sent again: see
 * sql/queries/api_message_expunge.sql), every message's payload of an
 * application (expunge-all-contents: a background task, task_runner.c)
 * or of a list of its messages (bulk-expunge-content), and an attempt's
 * response (it becomes "EXPUNGED"). As in Svix, these are the organization's
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

/* After a message's expunge (msg: its id): its dead letters were skipped,
 * so an ordered endpoint's successors held behind them are due at once
 * (after the commit, api_request_done). false after answering an error. */
static bool release_successors(PGconn *conn, struct api_req *r, const char *msg)
{
    const char *p[] = {msg};
    PGresult *res = api_exec(conn, r, Q_API_MESSAGE_ORDERED_NEXT, p);
    if (!res)
        return false;
    for (int i = 0; i < PQntuples(res) && r->ndue < API_DELIVERIES_MAX; i++) {
        r->due[r->ndue] = xstrdup(PQgetvalue(res, i, API_MESSAGE_ORDERED_NEXT_ID));
        r->due_ms[r->ndue++] = strtoll(PQgetvalue(res, i, API_MESSAGE_ORDERED_NEXT_DUE_MS), NULL, 10);
    }
    PQclear(res);
    return true;
}

void api_content_expunge_message(PGconn *conn, struct api_req *r)
{
    /* the event locked first: a relay pass fanning it out is waited for,
     * and its deliveries are then closed too (api_message_lock.sql) */
    char msg[40];
    expunge(conn, r, Q_API_MESSAGE_LOCK, Q_API_MESSAGE_EXPUNGE, NULL, "Message", msg);
    if (r->status == 204)
        (void)release_successors(conn, r, msg);
}

/* One message of a bulk expunge (ref: msg_… id or eventId) as one
 * expunge-content does it: "expunged", "not-found", or NULL after
 * answering an error. */
static const char *expunge_one(PGconn *conn, struct api_req *r, const char *ref)
{
    const char *p[] = {r->app, ref};
    PGresult *res = api_exec(conn, r, Q_API_MESSAGE_FIND, p);
    if (!res)
        return NULL;
    char msg[40] = "";
    if (PQntuples(res) == 1)
        snprintf(msg, sizeof msg, "%s", PQgetvalue(res, 0, API_MESSAGE_FIND_ID));
    PQclear(res);
    if (!msg[0])
        return "not-found";
    const char *q[] = {msg};
    enum query_id steps[] = {Q_API_MESSAGE_LOCK, Q_API_MESSAGE_EXPUNGE};
    for (size_t i = 0; i < 2; i++) {
        if (!(res = api_exec(conn, r, steps[i], q)))
            return NULL;
        PQclear(res);
    }
    return release_successors(conn, r, msg) ? "expunged" : NULL;
}

/* Svix's bulk-expunge-content: each id of the body (msg_… or eventId, at
 * most API_LIMIT_MAX) of the path's application, answered per id. */
void api_content_bulk_expunge(PGconn *conn, struct api_req *r)
{
    json_t *ids = json_object_get(r->body, "ids"), *id;
    size_t i;
    if (ids && !json_is_null(ids) && (!json_is_array(ids) || json_array_size(ids) > API_LIMIT_MAX))
        api_invalid(r, "body", "ids", "must be a list of at most " API_STR(API_LIMIT_MAX) " ids", "value_error");
    json_array_foreach(ids, i, id)
    {
        if (!api_failed(r) && (!json_is_string(id) || json_string_length(id) < 1 || json_string_length(id) > 256))
            api_invalid(r, "body", "ids", "every item must be a string of 1 to 256 characters", "value_error");
    }
    if (api_failed(r) || !api_global_token(r) || !api_resolve_app(conn, r, r->params[0]))
        return;
    json_t *results = json_object();
    json_array_foreach(ids, i, id)
    {
        const char *status = expunge_one(conn, r, json_string_value(id));
        if (!status) {
            json_decref(results);
            return;
        }
        json_object_set_new(results, json_string_value(id), json_string(status));
    }
    api_reply(r, 200, json_pack("{s:o}", "results", results));
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
