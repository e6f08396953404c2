/* Endpoints of an application: list, create, get, update (PUT), patch,
 * delete, the signing secret (get, rotate), custom headers (get, replace,
 * patch) and recover (dead deliveries since a time go out again). The body
 * is read into one normalised JSON object of the columns to set (see
 * sql/queries/api_endpoint_create.sql), so create, update and patch share
 * one reader and two statements. Svix's field names are accepted with
 * hookd's: `eventTypes` or `filterTypes` (which must name event types of
 * the catalog), `throttleRate` or `rateLimit`; hookd adds `payloadFilter`
 * (payload_filter.h) and `ordered`. Unknown fields are ignored, as Svix
 * does. */
#include <openssl/crypto.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "api_internal.h"
#include "encoding.h"
#include "payload_filter.h"
#include "signature.h"
#include "xmalloc.h"

#define HEADERS_MAX 32

/* The endpoint the path names (params[1]) in the application (params[0]),
 * into id; false after answering 404. */
static bool resolve(PGconn *conn, struct api_req *r, char id[40])
{
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

static bool reserved_header(const char *name)
{
    static const char *const reserved[] = {"host",
                                           "content-length",
                                           "content-type",
                                           "transfer-encoding",
                                           "connection",
                                           "webhook-id",
                                           "webhook-timestamp",
                                           "webhook-signature",
                                           "user-agent",
                                           "keep-alive",
                                           "te",
                                           "upgrade"};
    for (size_t i = 0; i < sizeof reserved / sizeof reserved[0]; i++)
        if (strcasecmp(name, reserved[i]) == 0)
            return true;
    return false;
}

/* Custom headers: at most HEADERS_MAX, token names that are not reserved,
 * values without control characters. */
static bool check_headers(struct api_req *r, const char *field, const json_t *h, bool nulls_ok)
{
    if (!json_is_object(h)) {
        api_invalid(r, "body", field, "value is not a valid dict", "type_error.dict");
        return false;
    }
    if (json_object_size(h) > HEADERS_MAX) {
        api_invalid(r, "body", field, "at most 32 headers", "value_error");
        return false;
    }
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)h, k, v)
    {
        size_t n = strlen(k);
        bool name_ok = n > 0 && n <= 128 &&
                       strspn(k, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_") == n;
        if (!name_ok || reserved_header(k)) {
            api_invalid(r, "body", field, "a header name is malformed or reserved", "value_error");
            return false;
        }
        if (json_is_null(v) && nulls_ok)
            continue;
        const char *s = json_string_value(v);
        bool ok = s && strlen(s) <= 4096;
        for (const char *c = s; ok && *c; c++)
            ok = (unsigned char)*c >= 0x20 && *c != 0x7f;
        if (!ok) {
            api_invalid(r, "body", field, "a header value must be a string without control characters", "value_error");
            return false;
        }
    }
    return true;
}

/* eventTypes / filterTypes: names of the catalog (or globs matching some). */
static void read_event_types(PGconn *conn, struct api_req *r, json_t *out)
{
    const char *field = json_object_get(r->body, "filterTypes") ? "filterTypes" : "eventTypes";
    json_t *v = json_object_get(r->body, field);
    if (!v)
        return;
    if (json_is_null(v) || (json_is_array(v) && json_array_size(v) == 0)) {
        json_object_set_new(out, "event_types", json_null());
        return;
    }
    char *text = api_str_array_text(r, r->body, field);
    if (!text)
        return;
    const char *p[] = {text};
    PGresult *res = api_exec(conn, r, Q_API_EVENT_TYPES_MISSING, p);
    free(text);
    if (!res)
        return;
    if (PQntuples(res) > 0) {
        char msg[384];
        snprintf(msg, sizeof msg, "no such event type: %s", PQgetvalue(res, 0, API_EVENT_TYPES_MISSING_NAME));
        api_invalid(r, "body", field, msg, "value_error");
    } else {
        json_object_set(out, "event_types", v);
    }
    PQclear(res);
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
        if (uid && api_check_uid(r, "uid", uid))
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
    char *meta = api_object_text(r, b, "metadata", true);
    if (meta || put)
        json_object_set_new(c, "metadata", meta ? json_loads(meta, 0, NULL) : json_object());
    free(meta);
    json_t *h = json_object_get(b, "headers");
    if (h && !json_is_null(h) && check_headers(r, "headers", h, false))
        json_object_set(c, "headers", h);
    json_t *pf = json_object_get(b, "payloadFilter");
    if (pf && !json_is_null(pf)) {
        char err[256];
        if (payload_filter_check(pf, err, sizeof err) != 0)
            api_invalid(r, "body", "payloadFilter", err, "value_error.payload_filter");
        else
            json_object_set(c, "payload_filter", pf);
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
    if (put && !json_object_get(c, "event_types"))
        json_object_set_new(c, "event_types", json_null());
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
    unsigned char raw[24];
    char b64[48];
    if (RAND_bytes(raw, sizeof raw) != 1 || enc_base64_encode(raw, sizeof raw, b64, sizeof b64) != 0) {
        api_error(r, 500, "server_error", "no random bytes for a secret");
        return false;
    }
    snprintf(out, 128, "whsec_%s", b64);
    OPENSSL_cleanse(raw, sizeof raw);
    return true;
}

/* ---- the operations ---- */

void api_endpoint_list(PGconn *conn, struct api_req *r)
{
    int limit;
    const char *it;
    if (api_page(r, &limit, &it) != 0 || !api_resolve_app(conn, r, r->params[0]))
        return;
    char n[16];
    snprintf(n, sizeof n, "%d", limit + 1);
    const char *p[] = {r->app, it, n};
    PGresult *res = api_exec(conn, r, Q_API_ENDPOINT_LIST, p);
    if (!res)
        return;
    api_reply_list(r, res, API_ENDPOINT_LIST_BODY, API_ENDPOINT_LIST_API_ID, limit);
    PQclear(res);
}

void api_endpoint_create(PGconn *conn, struct api_req *r)
{
    if (!api_resolve_app(conn, r, r->params[0]))
        return;
    json_t *c = read_fields(conn, r, true, false);
    char secret[128];
    if (!c || !make_secret(r, api_str(r, r->body, "secret", false), "secret", secret)) {
        json_decref(c);
        return;
    }
    char *text = json_dumps(c, JSON_COMPACT);
    const char *p[] = {r->app, text, secret};
    reply_row(r, api_exec(conn, r, Q_API_ENDPOINT_CREATE, p), 201);
    OPENSSL_cleanse(secret, sizeof secret);
    free(text);
    json_decref(c);
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
    reply_row(r, api_exec(conn, r, Q_API_ENDPOINT_UPDATE, p), 200);
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

static bool sensitive(const char *name)
{
    return strcasecmp(name, "authorization") == 0 || strcasecmp(name, "cookie") == 0 ||
           strcasecmp(name, "proxy-authorization") == 0 || strcasestr(name, "secret") || strcasestr(name, "token") ||
           strcasestr(name, "key");
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
        if (sensitive(k))
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
    if (json_object_size(cur) > HEADERS_MAX)
        api_invalid(r, "body", "headers", "at most 32 headers", "value_error");
    else
        set_headers(conn, r, id, cur);
    json_decref(cur);
}

void api_endpoint_recover(PGconn *conn, struct api_req *r)
{
    char id[40];
    const char *since = api_str(r, r->body, "since", true), *until = api_str(r, r->body, "until", false);
    if (api_failed(r) || !resolve(conn, r, id))
        return;
    const char *p[] = {id, since, until};
    PGresult *res = api_exec(conn, r, Q_API_ENDPOINT_RECOVER, p);
    if (!res)
        return;
    for (int i = 0; i < PQntuples(res) && r->ndue < API_DELIVERIES_MAX; i++)
        r->due[r->ndue++] = xstrdup(PQgetvalue(res, i, API_ENDPOINT_RECOVER_ID));
    /* more than API_DELIVERIES_MAX: the reconciler schedules the rest */
    PQclear(res);
    char now[32];
    time_t t = time(NULL);
    struct tm tm;
    strftime(now, sizeof now, "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&t, &tm));
    /* done in this request: the task is finished when the answer comes */
    api_reply(r, 202,
              json_pack("{s:s, s:s, s:s, s:s}", "id", "qtask_recover", "status", "finished", "task",
                        "endpoint.recover", "updatedAt", now));
}
