/* Endpoints of an application: list, create, get, update (PUT), patch,
 * delete, the signing secret (get, rotate), custom headers (get, replace,
 * patch), recover (dead deliveries since a time go out again) and replay-missing
 * (messages since a time it never got go to it) as background tasks
 * (api_task.c), and statistics. The body
 * is read into one normalised JSON object of the columns to set (see
 * sql/queries/api_endpoint_create.sql), so create, update and patch share
 * one reader and two statements. Svix's field names are accepted with
 * hookd's: `eventTypes` or `filterTypes` (which must name event types of
 * the catalog), `throttleRate` or `rateLimit`; hookd adds `payloadFilter`
 * (payload_filter.h), `ordered` and `settings` (settings.h). Unknown fields are ignored, as Svix
 * does.
 *
 * Svix's operational-webhook endpoints are hookd's global endpoints (no
 * tenant; the operator's `hookd endpoint add` ones too), which receive the
 * operational events (sql/0013): the routes under operational-webhook/ run
 * the same operations on them, for organization tokens only, with the
 * endpoint in params[0], filters that need not be in the catalog, and the
 * operational event types when none are given. */
#include <openssl/crypto.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "api_internal.h"
#include "config.h"
#include "encoding.h"
#include "endpoint_headers.h"
#include "errbuf.h"
#include "payload_filter.h"
#include "settings.h"
#include "signature.h"
#include "token.h"
#include "xmalloc.h"

/* The event types an operational-webhook endpoint gets when it names none:
 * those hookd produces (sql/0013). */
static const char operational_types[] =
    "[\"endpoint.disabled\",\"message.attempt.exhausted\",\"message.attempt.failing\","
    "\"message.attempt.recovered\"]";

/* Whether the request is on an operational-webhook endpoint. */
static bool operational(const struct api_req *r)
{
    return strncmp(r->route->pattern, "operational-webhook/", 20) == 0;
}

/* The endpoint the path names (params[1]) in the application (params[0]),
 * or the operational-webhook endpoint params[0] names, into id; false after
 * answering 404 (403 for a tenant's token on an operational one). */
static bool resolve(PGconn *conn, struct api_req *r, char id[40])
{
    if (operational(r)) {
        const char *p[] = {r->params[0]};
        return api_global_token(r) &&
               api_find_one(conn, r, Q_API_OPERATIONAL_RESOLVE, p, API_OPERATIONAL_RESOLVE_ID, "Endpoint", id, 40);
    }
    if (!api_resolve_app(conn, r, r->params[0]))
        return false;
    const char *p[] = {r->app, r->params[1]};
    return api_find_one(conn, r, Q_API_ENDPOINT_RESOLVE, p, API_ENDPOINT_RESOLVE_ID, "Endpoint", id, 40);
}

static void reply_row(struct api_req *r, PGresult *res, int status)
{
    json_t *body = res && PQntuples(res) == 1 ? api_row_json(res, 0, 0) : NULL;
    if (body)
        api_reply(r, status, body);
    else if (!api_failed(r))
        api_not_found(r, "Endpoint");
    PQclear(res);
}

/* ---- reading the body ---- */

/* What one endpoint may store, past the rules of endpoint_headers.h and
 * payload_filter.h: event-type filters (a set; Svix sets no number), the
 * payload filter's size as compact JSON, and its custom headers' total size
 * (names and values), which every delivery carries. */
#define EVENT_TYPES_MAX 256
#define FILTER_BYTES_MAX 16384
#define HEADERS_BYTES_MAX 8192

/* Custom headers (endpoint_headers.h), names that differ in more than case
 * (HTTP's are case-insensitive: two would both be sent), at most
 * HEADERS_BYTES_MAX bytes in all; false after answering 422. */
static bool check_headers(struct api_req *r, const char *field, const json_t *h, bool nulls_ok)
{
    char err[256];
    if (endpoint_headers_check(h, nulls_ok, err, sizeof err) != 0) {
        api_invalid(r, "body", field, err, "value_error");
        return false;
    }
    size_t total = 0;
    const char *k, *k2;
    json_t *v, *v2;
    json_object_foreach((json_t *)h, k, v)
    {
        total += strlen(k) + (json_is_string(v) ? json_string_length(v) : 0);
        json_object_foreach((json_t *)h, k2, v2)
        {
            if (k2 != k && strcasecmp(k, k2) == 0) {
                err_set(err, sizeof err, "%s and %s name the same header", k, k2);
                api_invalid(r, "body", field, err, "value_error");
                return false;
            }
        }
    }
    if (total > HEADERS_BYTES_MAX) {
        api_invalid(r, "body", field, "at most " API_STR(HEADERS_BYTES_MAX) " bytes of names and values in all",
                    "value_error");
        return false;
    }
    return true;
}

/* settings (settings.h): an object of delivery settings. A patch merges it
 * into the stored one (a null removes a setting); create and PUT replace
 * it. Absent, it stays as it is: Svix's EndpointUpdate does not carry it,
 * so an SDK's PUT keeps what the CLI or portal set. */
static void read_settings(struct api_req *r, bool patch, json_t *out)
{
    char *text = api_settings_text(r, r->body);
    if (!text)
        return;
    json_object_set_new(out, "settings", json_loads(text, 0, NULL));
    if (patch)
        json_object_set_new(out, "settings_merge", json_true());
    free(text);
}

/* eventTypes / filterTypes: names of the catalog (or globs matching some). */
static void read_event_types(PGconn *conn, struct api_req *r, json_t *out)
{
    const char *field = json_object_get(r->body, "filterTypes") ? "filterTypes" : "eventTypes";
    json_t *v = json_object_get(r->body, field);
    if (!v)
        return;
    if (json_is_null(v) || (json_is_array(v) && json_array_size(v) == 0)) {
        json_object_set_new(out, "event_types", operational(r) ? json_loads(operational_types, 0, NULL) : json_null());
        return;
    }
    char *text = api_str_set_text(r, r->body, field, EVENT_TYPES_MAX);
    if (!text)
        return;
    if (operational(r)) { /* hookd's own events: not in the catalog */
        json_object_set_new(out, "event_types", json_loads(text, 0, NULL));
        free(text);
        return;
    }
    const char *p[] = {text};
    PGresult *res = api_exec(conn, r, Q_API_EVENT_TYPES_MISSING, p);
    if (res && PQntuples(res) > 0) {
        char msg[384];
        snprintf(msg, sizeof msg, "no such event type: %s", PQgetvalue(res, 0, API_EVENT_TYPES_MISSING_NAME));
        api_invalid(r, "body", field, msg, "value_error");
    } else if (res) {
        json_object_set_new(out, "event_types", json_loads(text, 0, NULL)); /* each once */
    }
    PQclear(res);
    free(text);
}

/* The body's fields as the columns to set. put: absent fields reset. */
static json_t *read_fields(PGconn *conn, struct api_req *r, bool url_required, bool put)
{
    const json_t *b = r->body;
    json_t *c = json_object();
    const char *url = api_str(r, b, "url", url_required);
    if (url && api_check_url(r, "url", url))
        json_object_set_new(c, "url", json_string(url));
    const char *desc = api_str(r, b, "description", false);
    if (desc || put)
        json_object_set_new(c, "description", json_string(desc ? desc : ""));
    if (json_object_get(b, "uid") || put) {
        const char *uid = api_str(r, b, "uid", false);
        if (uid && api_check_uid(r, "uid", uid, "ep"))
            json_object_set_new(c, "uid", json_string(uid));
        else if (!uid)
            json_object_set_new(c, "uid", json_null());
    }
    int disabled = api_bool(r, b, "disabled");
    if (disabled >= 0 || put)
        json_object_set_new(c, "enabled", json_boolean(disabled != 1));
    const char *rk = json_object_get(b, "rateLimit") ? "rateLimit" : "throttleRate";
    int64_t rate = api_int(r, b, rk, 1, 1000000);
    if (json_object_get(b, rk) || put)
        json_object_set_new(c, "rate_limit", rate > 0 ? json_integer(rate) : json_null());
    char *meta = api_metadata_text(r, b, "metadata");
    if (meta || put)
        json_object_set_new(c, "metadata", meta ? json_loads(meta, 0, NULL) : json_object());
    free(meta);
    json_t *h = json_object_get(b, "headers");
    if (h && !json_is_null(h) && check_headers(r, "headers", h, false))
        json_object_set(c, "headers", h);
    read_settings(r, !put && !url_required, c);
    json_t *pf = json_object_get(b, "payloadFilter");
    if (pf && !json_is_null(pf)) {
        char err[256];
        char *text = json_dumps(pf, JSON_COMPACT | JSON_ENCODE_ANY);
        if (text && strlen(text) > FILTER_BYTES_MAX)
            api_invalid(r, "body", "payloadFilter", "at most " API_STR(FILTER_BYTES_MAX) " bytes as compact JSON",
                        "value_error.payload_filter");
        else if (payload_filter_check(pf, err, sizeof err) != 0)
            api_invalid(r, "body", "payloadFilter", err, "value_error.payload_filter");
        else
            json_object_set(c, "payload_filter", pf);
        free(text);
    } else if (pf || put) {
        json_object_set_new(c, "payload_filter", json_null());
    }
    int ordered = api_bool(r, b, "ordered");
    if (ordered >= 0 || put)
        json_object_set_new(c, "ordered", json_boolean(ordered == 1));
    char *channels = NULL; /* Svix: 1 to 10 channels, or null: every message */
    if (api_name_set(r, b, "channels", 10, "-_.", &channels) && (channels || json_object_get(b, "channels") || put))
        json_object_set_new(c, "channels", channels ? json_loads(channels, 0, NULL) : json_null());
    free(channels);
    if (!api_failed(r))
        read_event_types(conn, r, c);
    if ((put || (url_required && operational(r))) && !json_object_get(c, "event_types"))
        json_object_set_new(c, "event_types", operational(r) ? json_loads(operational_types, 0, NULL) : json_null());
    if (api_failed(r)) {
        json_decref(c);
        return NULL;
    }
    return c;
}

/* A given secret (whsec_ + base64, or the base64 alone, as Svix takes it)
 * into out, or a new random one. false after answering 422. */
static bool make_secret(struct api_req *r, const char *given, const char *field, char out[128])
{
    if (given) {
        snprintf(out, 128, "%s%s", strncmp(given, "whsec_", 6) == 0 ? "" : "whsec_", given);
        struct sig_key key;
        char err[128];
        size_t len = strlen(out) - 6;
        if (len < 32 || len > 100 || sig_key_decode(SIG_STANDARD_WEBHOOKS, out, &key, err, sizeof err) != 0) {
            api_invalid(r, "body", field, "must be whsec_ followed by base64 of 24 to 75 bytes",
                        "value_error.str.regex");
            OPENSSL_cleanse(out, 128);
            return false;
        }
        sig_key_clear(&key);
        return true;
    }
    if (token_whsec_new(out, 128) != 0) {
        api_error(r, 500, "server_error", "no random bytes for a secret");
        return false;
    }
    return true;
}

/* ---- the application's budget ---- */

/* What an application's endpoints count against [hookd] tenant_max_endpoints
 * and tenant_max_filter_bytes. */
struct budget {
    long long endpoints, filter_bytes;
};

/* The application's endpoints now (api_endpoint_budget.sql); false after
 * answering. */
static bool budget_read(PGconn *conn, struct api_req *r, struct budget *b)
{
    const char *p[] = {r->app};
    PGresult *res = api_exec(conn, r, Q_API_ENDPOINT_BUDGET, p);
    if (!res)
        return false;
    b->endpoints = strtoll(PQgetvalue(res, 0, API_ENDPOINT_BUDGET_ENDPOINTS), NULL, 10);
    b->filter_bytes = strtoll(PQgetvalue(res, 0, API_ENDPOINT_BUDGET_FILTER_BYTES), NULL, 10);
    PQclear(res);
    return true;
}

/* Before a change of the application's endpoints: locks the application
 * (api_app_lock.sql: changes check the budget one after the other) and
 * reads what they count now into before. false after answering. */
static bool budget_begin(PGconn *conn, struct api_req *r, struct budget *before)
{
    const char *p[] = {r->app};
    PGresult *res = api_exec(conn, r, Q_API_APP_LOCK, p);
    bool found = res && PQntuples(res) == 1;
    PQclear(res);
    if (!found) {
        if (!api_failed(r))
            api_not_found(r, "Application");
        return false;
    }
    return budget_read(conn, r, before);
}

/* After the change, in its transaction: answers 422 (the router then rolls
 * the change back) when it made the application pass a limit it was within,
 * or grow while past one (an operator may have lowered it); a change that
 * grows nothing always passes. */
static bool budget_end(PGconn *conn, struct api_req *r, const struct budget *before)
{
    struct budget after;
    if (!r->cfg || !budget_read(conn, r, &after))
        return !api_failed(r);
    char msg[200];
    if (after.endpoints > before->endpoints && after.endpoints > r->cfg->tenant_max_endpoints) {
        snprintf(msg, sizeof msg, "an application may have at most %lld endpoints ([hookd] tenant_max_endpoints)",
                 (long long)r->cfg->tenant_max_endpoints);
        api_invalid(r, "body", NULL, msg, "value_error.budget");
        return false;
    }
    if (after.filter_bytes > before->filter_bytes && after.filter_bytes > r->cfg->tenant_max_filter_bytes) {
        snprintf(msg, sizeof msg,
                 "the event types and payload filters of an application's endpoints may take at most %lld bytes "
                 "([hookd] tenant_max_filter_bytes); this change makes them %lld",
                 (long long)r->cfg->tenant_max_filter_bytes, after.filter_bytes);
        api_invalid(r, "body", NULL, msg, "value_error.budget");
        return false;
    }
    return true;
}

/* Runs statement q (a change of the path's application's endpoints) within
 * the application's budget: the result, or NULL after answering. An
 * operational-webhook endpoint belongs to no application: no budget. */
static PGresult *within_budget(PGconn *conn, struct api_req *r, enum query_id q, const char *const *p)
{
    if (operational(r))
        return api_exec(conn, r, q, p);
    struct budget before;
    if (!budget_begin(conn, r, &before))
        return NULL;
    PGresult *res = api_exec(conn, r, q, p);
    if (res && !budget_end(conn, r, &before)) {
        PQclear(res);
        res = NULL;
    }
    return res;
}

/* ---- the operations ---- */

void api_endpoint_list(PGconn *conn, struct api_req *r)
{
    if (!api_resolve_app(conn, r, r->params[0]))
        return;
    const char *p[] = {r->app};
    api_list(conn, r, Q_API_ENDPOINT_LIST, p, 1, API_ORDER_DESC, API_ENDPOINT_LIST_BODY, API_ENDPOINT_LIST_API_ID);
}

/* Whether another operational-webhook endpoint has this uid (answered
 * 409). The unique index on (tenant, uid) does not see global endpoints:
 * NULLs differ. */
static bool operational_uid_taken(PGconn *conn, struct api_req *r, const char *uid)
{
    if (!uid)
        return false;
    const char *p[] = {uid};
    PGresult *res = api_exec(conn, r, Q_API_OPERATIONAL_RESOLVE, p);
    bool taken = !res || PQntuples(res) > 0;
    PQclear(res);
    if (taken && !api_failed(r))
        api_error(r, 409, "conflict", "an endpoint with uid %s already exists", uid);
    return taken;
}

/* Creates an endpoint of app (NULL: an operational-webhook endpoint) from
 * the body. */
static void create(PGconn *conn, struct api_req *r, const char *app, int status)
{
    json_t *c = read_fields(conn, r, true, false);
    char secret[128];
    if (!c || !make_secret(r, api_str(r, r->body, "secret", false), "secret", secret)) {
        json_decref(c);
        return;
    }
    char *text = json_dumps(c, JSON_COMPACT);
    const char *p[] = {app, text, secret};
    if (app || !operational_uid_taken(conn, r, json_string_value(json_object_get(c, "uid"))))
        reply_row(r, within_budget(conn, r, Q_API_ENDPOINT_CREATE, p), status);
    OPENSSL_cleanse(secret, sizeof secret);
    free(text);
    json_decref(c);
}

void api_endpoint_create(PGconn *conn, struct api_req *r)
{
    if (api_resolve_app(conn, r, r->params[0]))
        create(conn, r, r->app, 201);
}

void api_endpoint_get(PGconn *conn, struct api_req *r)
{
    char id[40];
    if (!resolve(conn, r, id))
        return;
    const char *p[] = {id};
    reply_row(r, api_exec(conn, r, Q_API_ENDPOINT_GET, p), 200);
}

static void update(PGconn *conn, struct api_req *r, bool put)
{
    char id[40];
    if (!resolve(conn, r, id))
        return;
    json_t *c = read_fields(conn, r, put, put);
    if (!c)
        return;
    if (put)
        json_object_del(c, "headers"); /* PUT does not carry them (Svix: EndpointUpdate) */
    char *text = json_dumps(c, JSON_COMPACT);
    const char *p[] = {id, text};
    reply_row(r, within_budget(conn, r, Q_API_ENDPOINT_UPDATE, p), 200);
    free(text);
    json_decref(c);
}

void api_endpoint_update(PGconn *conn, struct api_req *r)
{
    update(conn, r, true);
}

void api_endpoint_patch(PGconn *conn, struct api_req *r)
{
    update(conn, r, false);
}

void api_endpoint_operational_list(PGconn *conn, struct api_req *r)
{
    if (api_global_token(r))
        api_list(conn, r, Q_API_OPERATIONAL_LIST, NULL, 0, API_ORDER_DESC, API_OPERATIONAL_LIST_BODY,
                 API_OPERATIONAL_LIST_API_ID);
}

void api_endpoint_operational_create(PGconn *conn, struct api_req *r)
{
    if (api_global_token(r))
        create(conn, r, NULL, 201);
}

/* Svix's upsert: updates the endpoint the path names, or creates one with
 * the path's uid; a path's uid stays the endpoint's unless the body gives
 * another. */
void api_endpoint_operational_upsert(PGconn *conn, struct api_req *r)
{
    if (!api_global_token(r))
        return;
    bool by_uid = strncmp(r->params[0], "ep_", 3) != 0;
    if (by_uid && json_is_object(r->body) && !json_object_get(r->body, "uid"))
        json_object_set_new(r->body, "uid", json_string(r->params[0]));
    const char *p[] = {r->params[0]};
    PGresult *res = api_exec(conn, r, Q_API_OPERATIONAL_RESOLVE, p);
    if (!res)
        return;
    bool found = PQntuples(res) == 1;
    PQclear(res);
    if (found)
        update(conn, r, true);
    else if (!by_uid)
        api_not_found(r, "Endpoint");
    else
        create(conn, r, NULL, 200);
}

void api_endpoint_delete(PGconn *conn, struct api_req *r)
{
    char id[40];
    if (!resolve(conn, r, id))
        return;
    const char *p[] = {id};
    PGresult *res = api_exec(conn, r, Q_API_ENDPOINT_DELETE, p);
    if (res)
        api_reply(r, 204, NULL);
    PQclear(res);
}

void api_endpoint_secret_get(PGconn *conn, struct api_req *r)
{
    char id[40];
    if (!resolve(conn, r, id))
        return;
    const char *p[] = {id};
    PGresult *res = api_exec(conn, r, Q_API_ENDPOINT_GET, p);
    if (res && PQntuples(res) == 1)
        api_reply(r, 200, json_pack("{s:s}", "key", PQgetvalue(res, 0, API_ENDPOINT_GET_SECRET)));
    PQclear(res);
}

void api_endpoint_secret_rotate(PGconn *conn, struct api_req *r)
{
    char id[40], secret[128];
    if (!resolve(conn, r, id) || !make_secret(r, api_str(r, r->body, "key", false), "key", secret))
        return;
    const char *p[] = {id, secret};
    PGresult *res = api_exec(conn, r, Q_API_ENDPOINT_ROTATE, p);
    if (res)
        api_reply(r, 204, NULL);
    PQclear(res);
    OPENSSL_cleanse(secret, sizeof secret);
}

void api_endpoint_headers_get(PGconn *conn, struct api_req *r)
{
    char id[40];
    if (!resolve(conn, r, id))
        return;
    const char *p[] = {id};
    PGresult *res = api_exec(conn, r, Q_API_ENDPOINT_GET, p);
    if (!res)
        return;
    json_t *all = api_row_json(res, 0, API_ENDPOINT_GET_HEADERS), *shown = json_object(), *hidden = json_array();
    const char *k;
    json_t *v;
    json_object_foreach(all, k, v)
    {
        if (endpoint_headers_sensitive(k))
            json_array_append_new(hidden, json_string(k));
        else
            json_object_set(shown, k, v);
    }
    json_decref(all);
    PQclear(res);
    api_reply(r, 200, json_pack("{s:o, s:o}", "headers", shown, "sensitive", hidden));
}

static void set_headers(PGconn *conn, struct api_req *r, const char *id, json_t *headers)
{
    json_t *c = json_pack("{s:O}", "headers", headers);
    char *text = json_dumps(c, JSON_COMPACT);
    const char *p[] = {id, text};
    PGresult *res = api_exec(conn, r, Q_API_ENDPOINT_UPDATE, p);
    if (res)
        api_reply(r, 204, NULL);
    PQclear(res);
    free(text);
    json_decref(c);
}

void api_endpoint_headers_update(PGconn *conn, struct api_req *r)
{
    char id[40];
    json_t *h = json_object_get(r->body, "headers");
    if (!h) {
        api_invalid(r, "body", "headers", "field required", "value_error.missing");
        return;
    }
    if (check_headers(r, "headers", h, false) && resolve(conn, r, id))
        set_headers(conn, r, id, h);
}

void api_endpoint_headers_patch(PGconn *conn, struct api_req *r)
{
    char id[40];
    json_t *h = json_object_get(r->body, "headers"), *del = json_object_get(r->body, "deleteHeaders");
    if (!h)
        api_invalid(r, "body", "headers", "field required", "value_error.missing");
    else if (del && !json_is_array(del))
        api_invalid(r, "body", "deleteHeaders", "value is not a valid list", "type_error.list");
    if (api_failed(r) || !check_headers(r, "headers", h, true) || !resolve(conn, r, id))
        return;
    const char *p[] = {id};
    PGresult *res = api_exec(conn, r, Q_API_ENDPOINT_GET, p);
    if (!res)
        return;
    json_t *cur = api_row_json(res, 0, API_ENDPOINT_GET_HEADERS);
    PQclear(res);
    if (!cur)
        cur = json_object();
    const char *k;
    json_t *v;
    json_object_foreach(h, k, v)
    {
        if (json_is_null(v))
            json_object_del(cur, k);
        else
            json_object_set(cur, k, v);
    }
    size_t i;
    json_array_foreach(del, i, v)
    {
        if (json_is_string(v))
            json_object_del(cur, json_string_value(v));
    }
    if (check_headers(r, "headers", cur, false))
        set_headers(conn, r, id, cur);
    json_decref(cur);
}

/* since and until of a RecoverIn / ReplayIn body; false after answering 422. */
static bool read_range(struct api_req *r, const char **since, const char **until)
{
    *since = api_str(r, r->body, "since", true);
    *until = api_str(r, r->body, "until", false);
    if (*since)
        api_check_time(r, "body", "since", *since);
    if (*until)
        api_check_time(r, "body", "until", *until);
    return !api_failed(r);
}

/* The task's parameters: the endpoint (its uuid) and the time range. */
static json_t *range_params(const char *endpoint, const char *since, const char *until)
{
    return json_pack("{s:s, s:s, s:s?}", "endpoint", endpoint, "since", since, "until", until);
}

/* Recover (Svix's): the endpoint's failed messages since a time go out
 * again, in a background task (task_runner.c). */
void api_endpoint_recover(PGconn *conn, struct api_req *r)
{
    char id[40];
    const char *since, *until;
    if (read_range(r, &since, &until) && resolve(conn, r, id))
        api_task_start(conn, r, "endpoint.recover", range_params(id, since, until));
}

/* Replay-missing (Svix's): the messages since a time that the endpoint
 * never got, because it did not exist or did not subscribe then, go to it
 * if its filters match them, in a background task (task_runner.c). */
void api_endpoint_replay_missing(PGconn *conn, struct api_req *r)
{
    char id[40];
    const char *since, *until;
    if (read_range(r, &since, &until) && resolve(conn, r, id))
        api_task_start(conn, r, "endpoint.replay", range_params(id, since, until));
}

/* A name field of BulkReplayIn (channel, tag): NULL when absent; a string
 * of 1 to API_NAME_MAX characters of a-z, A-Z, 0-9 and extra's, 422
 * answered otherwise. */
static const char *name_field(struct api_req *r, const char *field, const char *extra)
{
    const char *v = api_str(r, r->body, field, false);
    if (!v)
        return NULL;
    json_t *one = json_pack("{s:[s]}", field, v);
    char *set = NULL;
    bool ok = api_name_set(r, one, field, 1, extra, &set);
    free(set);
    json_decref(one);
    return ok ? v : NULL;
}

/* The filters of a BulkReplayIn body into params; false after answering
 * 422. */
static bool read_replay_filters(struct api_req *r, json_t *params)
{
    char *types = api_str_set_text(r, r->body, "eventTypes", API_LIMIT_MAX);
    if (types)
        json_object_set_new(params, "eventTypes", json_loads(types, 0, NULL));
    free(types);
    const char *channel = name_field(r, "channel", "-_.:+"), *tag = name_field(r, "tag", "-_./\\#");
    if (channel)
        json_object_set_new(params, "channel", json_string(channel));
    if (tag)
        json_object_set_new(params, "tag", json_string(tag));
    int64_t status = api_int(r, r->body, "status", 0, 4), class = api_int(r, r->body, "statusCodeClass", 0, 500);
    if (class >= 0 && class % 100 != 0)
        api_invalid(r, "body", "statusCodeClass",
                    "value is not a valid enumeration member; permitted: 0, 100, 200, "
                    "300, 400, 500",
                    "type_error.enum");
    if (status >= 0)
        json_object_set_new(params, "status", json_integer(status));
    if (class >= 0)
        json_object_set_new(params, "statusCodeClass", json_integer(class));
    return !api_failed(r);
}

/* Bulk replay (Svix's): the endpoint's messages since a time, sent or
 * failed, that match the filters go to it again, in a background task
 * (task_runner.c). */
void api_endpoint_bulk_replay(PGconn *conn, struct api_req *r)
{
    char id[40];
    const char *since, *until;
    json_t *params = json_object();
    if (read_range(r, &since, &until) && read_replay_filters(r, params) && resolve(conn, r, id)) {
        json_t *range = range_params(id, since, until);
        json_object_update(params, range);
        json_decref(range);
        api_task_start(conn, r, "endpoint.bulk-replay", params);
    } else {
        json_decref(params);
    }
}

/* Svix's get-stats: until defaults to now, since to 28 days before it. */
void api_endpoint_stats(PGconn *conn, struct api_req *r)
{
    char id[40];
    const char *since = api_query(r, "since"), *until = api_query(r, "until");
    if ((since && !api_check_time(r, "query", "since", since)) ||
        (until && !api_check_time(r, "query", "until", until)) || !resolve(conn, r, id))
        return;
    const char *p[] = {id, since, until};
    PGresult *res = api_exec(conn, r, Q_API_ENDPOINT_STATS, p);
    if (!res)
        return;
    const char *bad = PQgetisnull(res, 0, API_ENDPOINT_STATS_BAD) ? NULL : PQgetvalue(res, 0, API_ENDPOINT_STATS_BAD);
    if (bad && strcmp(bad, "future") == 0)
        api_error(r, 400, "invalid_range", "'until' cannot be in the future");
    else if (bad)
        api_error(r, 400, "invalid_range", "'since' cannot be more than 28 days prior to 'until'");
    else
        api_reply(r, 200,
                  json_pack("{s:I, s:I, s:I, s:I, s:i}", "success",
                            (json_int_t)strtoll(PQgetvalue(res, 0, API_ENDPOINT_STATS_SUCCESS), NULL, 10), "pending",
                            (json_int_t)strtoll(PQgetvalue(res, 0, API_ENDPOINT_STATS_PENDING), NULL, 10), "sending",
                            (json_int_t)strtoll(PQgetvalue(res, 0, API_ENDPOINT_STATS_SENDING), NULL, 10), "fail",
                            (json_int_t)strtoll(PQgetvalue(res, 0, API_ENDPOINT_STATS_FAIL), NULL, 10), "canceled",
                            0));
    PQclear(res);
}
