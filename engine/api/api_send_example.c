/* Send an example (Svix's v1.endpoint.send-example,
 * `POST /api/v1/app/{app_id}/endpoint/{endpoint_id}/send-example`, body
 * `{"eventType", "exampleIndex"?}`): a message of the event type whose
 * payload is the catalogue's example — `schemas["1"].examples[exampleIndex]`
 * (default the first), or `{"success": true}` for `svix.ping` — sent to
 * that one endpoint only, as svix-webhooks' server does: the message is
 * created (202, MessageOut), and delivered when the endpoint takes it
 * (enabled, its filterTypes and payload filter match, as for any message).
 * An unknown event type is 404; one without an example 400
 * `invalid_scheme`. The portal's "Send example" button calls it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_internal.h"
#include "config.h"
#include "payload_filter.h"
#include "xmalloc.h"

#define PING_TYPE "svix.ping"

/* The event type's example payload (a new reference), or NULL with the
 * answer set. */
static json_t *example_payload(PGconn *conn, struct api_req *r, const char *type, int64_t index)
{
    if (strcmp(type, PING_TYPE) == 0)
        return json_pack("{s:b}", "success", 1);
    const char *p[] = {type};
    PGresult *res = api_exec(conn, r, Q_API_EVENT_TYPE_GET, p);
    if (!res)
        return NULL;
    json_t *et = PQntuples(res) == 1 ? api_row_json(res, 0, API_EVENT_TYPE_GET_BODY) : NULL;
    PQclear(res);
    if (!et) {
        api_not_found(r, "Event type");
        return NULL;
    }
    const json_t *examples = json_object_get(json_object_get(json_object_get(et, "schemas"), "1"), "examples");
    json_t *ex = json_array_get(examples, index < 0 ? 0 : (size_t)index);
    if (ex)
        json_incref(ex);
    else if (index > 0 && json_array_size(examples) > 0)
        api_invalid(r, "body", "exampleIndex", "the event type has fewer examples", "value_error.number");
    else
        api_error(r, 400, "invalid_scheme", "Unable to generate example message from event-type schema");
    json_decref(et);
    return ex;
}

bool api_filter_types_match(const json_t *types, const char *type)
{
    bool match = json_array_size(types) == 0;
    size_t i;
    const json_t *t;
    json_array_foreach(types, i, t)
        match = match || (json_is_string(t) && config_glob_match(json_string_value(t), type));
    return match;
}

/* Whether the endpoint (its API body) takes a message of type with
 * payload: enabled, a filterType (glob) matches, the payload filter holds. */
static bool takes(const json_t *ep, const char *type, json_t *payload)
{
    if (json_is_true(json_object_get(ep, "disabled")))
        return false;
    const json_t *filter = json_object_get(ep, "payloadFilter");
    return api_filter_types_match(json_object_get(ep, "filterTypes"), type) &&
           (!filter || json_is_null(filter) || payload_filter_match(filter, payload));
}

void api_endpoint_send_example(PGconn *conn, struct api_req *r)
{
    const char *type = api_str(r, r->body, "eventType", true);
    int64_t index = api_int(r, r->body, "exampleIndex", 0, 1000);
    if (type && (strlen(type) > 256 ||
                 strspn(type, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.") != strlen(type)))
        api_invalid(r, "body", "eventType", "must be at most 256 characters of a-z, A-Z, 0-9, '-', '_' and '.'",
                    "value_error.str.regex");
    char ep_id[40];
    const char *ep_p[] = {r->app, r->params[1]};
    if (api_failed(r) || !api_resolve_app(conn, r, r->params[0]) ||
        !api_find_one(conn, r, Q_API_ENDPOINT_RESOLVE, ep_p, API_ENDPOINT_RESOLVE_ID, "Endpoint", ep_id, sizeof ep_id))
        return;
    json_t *payload = example_payload(conn, r, type, index);
    if (!payload)
        return;
    const char *get_p[] = {ep_id};
    PGresult *res = api_exec(conn, r, Q_API_ENDPOINT_GET, get_p);
    json_t *ep = res && PQntuples(res) == 1 ? api_row_json(res, 0, API_ENDPOINT_GET_BODY) : NULL;
    PQclear(res);
    char *text = json_dumps(payload, JSON_COMPACT | JSON_ENCODE_ANY);
    const char *p[] = {r->app, type, text, ep && takes(ep, type, payload) ? ep_id : NULL};
    res = api_failed(r) ? NULL : api_exec(conn, r, Q_API_ENDPOINT_SEND_EXAMPLE, p);
    json_t *body = res ? api_row_json(res, 0, API_ENDPOINT_SEND_EXAMPLE_BODY) : NULL;
    if (body && !PQgetisnull(res, 0, API_ENDPOINT_SEND_EXAMPLE_DELIVERY_ID))
        r->due[r->ndue++] = xstrdup(PQgetvalue(res, 0, API_ENDPOINT_SEND_EXAMPLE_DELIVERY_ID));
    PQclear(res);
    free(text);
    json_decref(payload);
    json_decref(ep);
    if (body)
        api_reply(r, 202, body);
    else if (!api_failed(r))
        api_error(r, 500, "server_error", "the message was not stored");
}
