/* Messages of an application: create (an outbox event of the tenant, with
 * `eventId` unique per application: a repeat is 409, as in Svix; the
 * `idempotency-key` header is handled by the router), get (by msg_… id or
 * eventId) and list (newest first). The relay fans a message out to the
 * tenant's matching endpoints like any event hookd_emit writes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_internal.h"

#define EVENT_TYPE_MAX 256
#define EVENT_ID_MAX 256

static const char *with_content(const struct api_req *r, bool dflt)
{
    const char *w = api_query(r, "with_content");
    if (!w)
        return dflt ? "true" : "false";
    return strcmp(w, "false") == 0 ? "false" : "true";
}

/* The path's application; when it does not exist and the body carries an
 * `application` (Svix: ApplicationIn whose uid is the path's), it is
 * created first, in the same transaction. */
static bool resolve_or_create_app(PGconn *conn, struct api_req *r)
{
    json_t *app = json_object_get(r->body, "application");
    if (!app || json_is_null(app) || r->tenant[0])
        return api_resolve_app(conn, r, r->params[0]);
    const char *p[] = {r->params[0], r->tenant};
    PGresult *res = api_exec(conn, r, Q_API_APP_RESOLVE, p);
    if (!res)
        return false;
    bool found = PQntuples(res) == 1;
    if (found)
        snprintf(r->app, sizeof r->app, "%s", PQgetvalue(res, 0, API_APP_RESOLVE_ID));
    PQclear(res);
    if (found)
        return true;
    const char *name = api_str(r, app, "name", true), *uid = api_str(r, app, "uid", false);
    if (uid && strcmp(uid, r->params[0]) != 0)
        api_invalid(r, "body", "application", "the application's uid must be the path's", "application_uid_mismatch");
    if (!uid && api_check_uid(r, "uid", r->params[0]))
        uid = r->params[0];
    if (api_failed(r))
        return false;
    const char *c[] = {name, uid, NULL, "{}"};
    if (!(res = api_exec(conn, r, Q_API_APP_CREATE, c)))
        return false;
    json_t *created = api_row_json(res, 0, API_APP_CREATE_BODY);
    PQclear(res);
    const char *id = json_string_value(json_object_get(created, "id"));
    snprintf(r->app, sizeof r->app, "%s", id ? id : "");
    json_decref(created);
    return r->app[0] != '\0';
}

void api_message_create(PGconn *conn, struct api_req *r)
{
    const json_t *b = r->body;
    const char *type = api_str(r, b, "eventType", true), *event_id = api_str(r, b, "eventId", false);
    json_t *payload = json_object_get(b, "payload");
    if (!payload || !json_is_object(payload))
        api_invalid(r, "body", "payload", payload ? "value is not a valid dict" : "field required",
                    payload ? "type_error.dict" : "value_error.missing");
    if (type && (strlen(type) > EVENT_TYPE_MAX ||
                 strspn(type, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.") != strlen(type)))
        api_invalid(r, "body", "eventType", "must be at most 256 characters of a-z, A-Z, 0-9, '-', '_' and '.'",
                    "value_error.str.regex");
    if (event_id && (strlen(event_id) == 0 || strlen(event_id) > EVENT_ID_MAX))
        api_invalid(r, "body", "eventId", "must be 1 to 256 characters", "value_error.any_str");
    if (api_failed(r) || !resolve_or_create_app(conn, r))
        return;
    char *text = json_dumps(payload, JSON_COMPACT);
    const char *p[] = {r->app, type, text, event_id, with_content(r, true)};
    PGresult *res = api_exec(conn, r, Q_API_MESSAGE_CREATE, p);
    free(text);
    if (!res) {
        if (r->status == 409)
            api_error(r, 409, "conflict", "a message with this eventId already exists");
        return;
    }
    json_t *body = api_row_json(res, 0, 0);
    PQclear(res);
    if (body)
        api_reply(r, 202, body);
    else
        api_error(r, 500, "server_error", "the message was not stored");
}

void api_message_get(PGconn *conn, struct api_req *r)
{
    if (!api_resolve_app(conn, r, r->params[0]))
        return;
    const char *p[] = {r->app, r->params[1], with_content(r, true)};
    api_reply_one(conn, r, Q_API_MESSAGE_GET, p, API_MESSAGE_GET_BODY, "Message");
}

void api_message_list(PGconn *conn, struct api_req *r)
{
    if (!api_resolve_app(conn, r, r->params[0]))
        return;
    const char *p[] = {r->app, api_query(r, "event_types"), with_content(r, true)};
    api_list(conn, r, Q_API_MESSAGE_LIST, p, 3, API_ORDER_FIXED, API_MESSAGE_LIST_BODY, API_MESSAGE_LIST_API_ID);
}
