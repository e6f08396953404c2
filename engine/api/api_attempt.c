/* Delivery attempts of an application's messages, from the `attempts`
 * history and the deliveries they belong to: list by message, list by
 * endpoint (newest first), get one, the messages an
 * endpoint was attempted with and the endpoints a message was attempted to
 * (with the delivery's status: 0 success, 2 fail, 3 sending), and resend
 * (the message's delivery to the endpoint opens again and is scheduled at
 * once, through the delivery role like a replayed dead letter). The shapes
 * and query parameters are Svix's (v1.message-attempt.*). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_internal.h"
#include "endpoint_headers.h"
#include "version.h"
#include "xmalloc.h"

static bool find_endpoint(PGconn *conn, struct api_req *r, const char *ep, char id[40])
{
    const char *p[] = {r->app, ep};
    return api_find_one(conn, r, Q_API_ENDPOINT_RESOLVE, p, API_ENDPOINT_RESOLVE_ID, "Endpoint", id, 40);
}

/* `status`: Svix's MessageStatus, 0 success, 1 pending, 2 fail, 3 sending,
 * 4 canceled (hookd's attempts are 0 or 2; the others select nothing). */
static bool status_query(struct api_req *r, const char **st)
{
    *st = api_query(r, "status");
    if (*st && (strlen(*st) != 1 || (*st)[0] < '0' || (*st)[0] > '4')) {
        api_invalid(r, "query", "status", "value is not a valid enumeration member; permitted: 0, 1, 2, 3, 4",
                    "type_error.enum");
        return false;
    }
    return true;
}

static bool with_content(struct api_req *r, const char **out)
{
    bool w;
    if (!api_bool_query(r, "with_content", true, &w)) /* Svix's default: true */
        return false;
    *out = w ? "true" : "false";
    return true;
}

/* `status_code_class`: Svix's StatusCodeClass, 0 (no answer), 100, …, 500. */
static bool code_class_query(struct api_req *r, const char **cls)
{
    static const char *const classes[] = {"0", "100", "200", "300", "400", "500"};
    *cls = api_query(r, "status_code_class");
    for (size_t i = 0; *cls && i < sizeof classes / sizeof classes[0]; i++)
        if (strcmp(*cls, classes[i]) == 0)
            return true;
    if (*cls)
        api_invalid(r, "query", "status_code_class",
                    "value is not a valid enumeration member; permitted: 0, 100, 200, 300, 400, 500",
                    "type_error.enum");
    return !*cls;
}

/* The filters every attempt list and count reads: status, status code
 * class and the message's (event types, channel, tag, before, after). */
struct attempt_filter {
    const char *status, *code_class;
    struct api_msg_filter msg;
};

static bool attempt_filters(struct api_req *r, struct attempt_filter *f)
{
    memset(f, 0, sizeof *f);
    return status_query(r, &f->status) && code_class_query(r, &f->code_class) && api_message_filters(r, &f->msg);
}

/* Lists the attempts of msg or ep (or both); with_msg: Svix's `with_msg`,
 * read by list-by-endpoint only. */
static void list(PGconn *conn, struct api_req *r, const char *msg, const char *ep, bool read_with_msg)
{
    struct attempt_filter f;
    const char *content;
    bool with_msg = false;
    if (attempt_filters(r, &f) && with_content(r, &content) &&
        (!read_with_msg || api_bool_query(r, "with_msg", false, &with_msg))) {
        const char *p[] = {r->app,
                           msg,
                           ep,
                           f.status,
                           content,
                           f.code_class,
                           f.msg.event_types,
                           f.msg.before,
                           f.msg.after,
                           f.msg.channel,
                           f.msg.tag,
                           with_msg ? "true" : "false"};
        api_list(conn, r, Q_API_ATTEMPT_LIST, p, 12, API_ORDER_TIME, API_ATTEMPT_LIST_BODY, API_ATTEMPT_LIST_API_ID);
    }
    free(f.msg.event_types);
}

void api_attempt_list_by_msg(PGconn *conn, struct api_req *r)
{
    char msg[40], ep[40];
    const char *only = api_query(r, "endpoint_id");
    if (!api_resolve_message(conn, r, msg, NULL))
        return;
    if (only && !find_endpoint(conn, r, only, ep))
        return;
    list(conn, r, msg, only ? ep : NULL, false);
}

void api_attempt_list_by_endpoint(PGconn *conn, struct api_req *r)
{
    char ep[40];
    if (api_resolve_app(conn, r, r->params[0]) && find_endpoint(conn, r, r->params[1], ep))
        list(conn, r, NULL, ep, true);
}

void api_attempt_get(PGconn *conn, struct api_req *r)
{
    char msg[40];
    if (!api_resolve_message(conn, r, msg, NULL))
        return;
    const char *p[] = {msg, r->params[2]};
    api_reply_one(conn, r, Q_API_ATTEMPT_GET, p, API_ATTEMPT_GET_BODY, "Message attempt");
}

void api_attempt_list_messages(PGconn *conn, struct api_req *r)
{
    char ep[40];
    const char *st, *content;
    struct api_msg_filter f;
    memset(&f, 0, sizeof f);
    if (status_query(r, &st) && api_message_filters(r, &f) && with_content(r, &content) &&
        api_resolve_app(conn, r, r->params[0]) && find_endpoint(conn, r, r->params[1], ep)) {
        const char *p[] = {r->app, ep, st, f.event_types, f.before, f.after, content, f.channel, f.tag};
        api_list(conn, r, Q_API_ATTEMPTED_MESSAGES, p, 9, API_ORDER_TIME, API_ATTEMPTED_MESSAGES_BODY,
                 API_ATTEMPTED_MESSAGES_API_ID);
    }
    free(f.event_types);
}

void api_attempt_list_destinations(PGconn *conn, struct api_req *r)
{
    char msg[40];
    if (!api_resolve_message(conn, r, msg, NULL))
        return;
    const char *p[] = {msg};
    api_list(conn, r, Q_API_ATTEMPTED_DESTINATIONS, p, 1, API_ORDER_FIXED, API_ATTEMPTED_DESTINATIONS_BODY,
             API_ATTEMPTED_DESTINATIONS_API_ID);
}

void api_attempt_resend(PGconn *conn, struct api_req *r)
{
    char msg[40], ep[40];
    bool expunged = false;
    if (!api_resolve_message(conn, r, msg, &expunged))
        return;
    if (expunged) { /* Svix's answer for a message without content */
        api_error(r, 400, "missing_payload", "Unable to resend message. Payload is missing (probably expired).");
        return;
    }
    if (!find_endpoint(conn, r, r->params[2], ep))
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

/* Svix's CountOut ceiling: counting stops past this many attempts. */
#define ATTEMPT_COUNT_MAX 10000

void api_attempt_count_by_endpoint(PGconn *conn, struct api_req *r)
{
    char ep[40];
    struct attempt_filter f;
    if (attempt_filters(r, &f) && api_resolve_app(conn, r, r->params[0]) && find_endpoint(conn, r, r->params[1], ep)) {
        const char *p[] = {r->app,       ep,          f.status,      f.code_class, f.msg.event_types,
                           f.msg.before, f.msg.after, f.msg.channel, f.msg.tag,    API_STR(ATTEMPT_COUNT_MAX)};
        PGresult *res = api_exec(conn, r, Q_API_ATTEMPT_COUNT, p);
        if (res) {
            api_reply(r, 200,
                      json_pack("{s:I, s:b}", "count",
                                (json_int_t)strtoll(PQgetvalue(res, 0, API_ATTEMPT_COUNT_COUNT), NULL, 10),
                                "approximated", PQgetvalue(res, 0, API_ATTEMPT_COUNT_APPROXIMATED)[0] == 't'));
            PQclear(res);
        }
    }
    free(f.msg.event_types);
}

/* The headers delivery.c sends (send_item and headers_at_send), rebuilt:
 * its fixed ones and the endpoint's custom headers (as they are now), each
 * sensitive one named in `sensitive` without its value. The signature and
 * its timestamp are made at send time and not kept: they are named in
 * `sensitive` too. hookd does not keep response headers. */
static json_t *sent_headers(const char *webhook_id, const char *custom)
{
    json_t *sent = json_pack("{s:s, s:s, s:s}", "Content-Type", "application/json", "User-Agent",
                             "hookd/" HOOKD_VERSION, "webhook-id", webhook_id);
    json_t *hidden = json_pack("[s, s]", "webhook-timestamp", "webhook-signature");
    json_t *all = custom ? json_loads(custom, 0, NULL) : NULL;
    const char *k;
    json_t *v;
    json_object_foreach(all, k, v)
    {
        if (!json_is_string(v) || endpoint_headers_reserved(k))
            continue; /* never sent (delivery_policy_headers drops them) */
        if (endpoint_headers_sensitive(k))
            json_array_append_new(hidden, json_string(k));
        else
            json_object_set(sent, k, v);
    }
    json_decref(all);
    return json_pack("{s:o, s:o, s:n}", "sentHeaders", sent, "sensitive", hidden, "responseHeaders");
}

void api_attempt_headers(PGconn *conn, struct api_req *r)
{
    char msg[40];
    if (!api_resolve_message(conn, r, msg, NULL))
        return;
    const char *p[] = {msg, r->params[2]};
    PGresult *res = api_exec(conn, r, Q_API_ATTEMPT_HEADERS, p);
    if (!res)
        return;
    if (PQntuples(res) == 1)
        api_reply(r, 200,
                  sent_headers(PQgetvalue(res, 0, API_ATTEMPT_HEADERS_WEBHOOK_ID),
                               PQgetisnull(res, 0, API_ATTEMPT_HEADERS_HEADERS)
                                   ? NULL
                                   : PQgetvalue(res, 0, API_ATTEMPT_HEADERS_HEADERS)));
    else
        api_not_found(r, "Message attempt");
    PQclear(res);
}
