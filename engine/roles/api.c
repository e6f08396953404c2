/* The API role: routing, authentication, the request's transaction and
 * idempotency; see api.h. The operations live in api_app.c, api_endpoint.c,
 * api_message.c, api_attempt.c and api_event_type.c, the shared helpers in
 * api_util.c, the OpenAPI document in api_openapi.c.
 *
 * A request is parsed on the loop (path, query, JSON body, token digest),
 * then runs as one job on the shared pool: authenticate, BEGIN, claim the
 * idempotency key (a repeat waits on the key's index entry until the first
 * commits, then answers what the first answered), run the operation, store
 * the answer with the key, COMMIT — or ROLLBACK when the answer is an error,
 * so a refused request stores nothing. Back on the loop: the answer, the
 * throttle's count of failed authentications, and the Redis schedule of
 * deliveries the operation made due. */
#include "api.h"

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <openssl/crypto.h>
#include <openssl/sha.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admin_guard.h"
#include "api_internal.h"
#include "clock.h"
#include "config.h"
#include "ctx.h"
#include "db.h"
#include "encoding.h"
#include "http_server.h"
#include "log.h"
#include "portal_token.h"
#include "query.h"
#include "sched.h"
#include "xmalloc.h"

#define PREFIX "/api/v1/"
#define IDEMPOTENCY_KEY_MAX 256

/* Idempotency records older than 24 hours are purged this often, 1,000
 * at a time (sql/queries/api_idempotency_purge.sql). */
#define PURGE_INTERVAL_S 60

struct api {
    struct hookd_ctx *ctx;
    struct admin_guard *guard; /* failed authentications per client address */
    struct event *purge_ev;
    bool purging;
    size_t pending;
    struct api_msgs *msgs; /* message creations, batched (api_message.c) */
};

/* The four operations on one item of a resource (pattern "app/ *"): get,
 * update (PUT), patch and delete, Svix's ids "<ns>.get" … "<ns>.delete",
 * implemented by <fn>_get … <fn>_delete. */
#define ITEM_ROUTES(pattern, ns, fn, what, put_summary, put_schema, patch_schema, out, delete_summary)                \
    {"GET", pattern, ns ".get", fn##_get, "Get " what, 200, NULL, out},                                               \
        {"PUT", pattern, ns ".update", fn##_update, put_summary, 200, put_schema, out},                               \
        {"PATCH", pattern, ns ".patch", fn##_patch, "Partially update " what, 200, patch_schema, out},                \
    {                                                                                                                 \
        "DELETE", pattern, ns ".delete", fn##_delete, delete_summary, 204, NULL, NULL                                 \
    }
/* An operation of Svix's that hookd does not implement: answered 501. */
#define NOT_IMPLEMENTED(method, pattern, op)                                                                          \
    {                                                                                                                 \
        method, pattern, op, NULL, NULL, 0, NULL, NULL                                                                \
    }

/* Svix's operations, with hookd's implementation or NULL (answered 501). */
const struct api_route api_routes[] = {
    {"GET", "app", "v1.application.list", api_app_list, "List applications", 200, NULL, "ListResponseApplicationOut"},
    {"POST", "app", "v1.application.create", api_app_create,
     "Create an application (get_if_exists=true: get or create)", 201, "ApplicationIn", "ApplicationOut"},
    ITEM_ROUTES("app/*", "v1.application", api_app, "an application", "Update (or create) an application",
                "ApplicationIn", "ApplicationPatch", "ApplicationOut", "Delete an application and its endpoints"),
    {"GET", "app/*/endpoint", "v1.endpoint.list", api_endpoint_list, "List an application's endpoints", 200, NULL,
     "ListResponseEndpointOut"},
    {"POST", "app/*/endpoint", "v1.endpoint.create", api_endpoint_create, "Create an endpoint", 201, "EndpointIn",
     "EndpointOut"},
    ITEM_ROUTES("app/*/endpoint/*", "v1.endpoint", api_endpoint, "an endpoint", "Update an endpoint", "EndpointUpdate",
                "EndpointPatch", "EndpointOut", "Delete an endpoint"),
    {"GET", "app/*/endpoint/*/secret", "v1.endpoint.get-secret", api_endpoint_secret_get,
     "Get an endpoint's signing secret", 200, NULL, "EndpointSecretOut"},
    {"POST", "app/*/endpoint/*/secret/rotate", "v1.endpoint.rotate-secret", api_endpoint_secret_rotate,
     "Rotate an endpoint's signing secret (the old one signs too for a grace period)", 204, "EndpointSecretRotateIn",
     NULL},
    {"GET", "app/*/endpoint/*/headers", "v1.endpoint.get-headers", api_endpoint_headers_get,
     "Get an endpoint's custom headers", 200, NULL, "EndpointHeadersOut"},
    {"PUT", "app/*/endpoint/*/headers", "v1.endpoint.update-headers", api_endpoint_headers_update,
     "Replace an endpoint's custom headers", 204, "EndpointHeadersIn", NULL},
    {"PATCH", "app/*/endpoint/*/headers", "v1.endpoint.patch-headers", api_endpoint_headers_patch,
     "Set or remove some of an endpoint's custom headers", 204, "EndpointHeadersPatchIn", NULL},
    {"POST", "app/*/endpoint/*/recover", "v1.endpoint.recover", api_endpoint_recover,
     "Resend the failed messages of an endpoint since a time", 202, "RecoverIn", "RecoverOut"},
    {"POST", "app/*/endpoint/*/replay-missing", "v1.endpoint.replay-missing", api_endpoint_replay_missing,
     "Send an endpoint the messages since a time that it never got (and that its filters match)", 202, "ReplayIn",
     "ReplayOut"},
    NOT_IMPLEMENTED("POST", "app/*/endpoint/*/bulk-replay", "v1.endpoint.bulk-replay"),
    {"GET", "app/*/endpoint/*/stats", "v1.endpoint.get-stats", api_endpoint_stats,
     "An endpoint's attempts and open deliveries over a time range (default: the last 28 days)", 200, NULL,
     "EndpointStats"},
    {"POST", "app/*/endpoint/*/send-example", "v1.endpoint.send-example", api_endpoint_send_example,
     "Send the event type's example to this endpoint only (api_send_example.c)", 200, "EventExampleIn", "MessageOut"},
    NOT_IMPLEMENTED("GET", "app/*/endpoint/*/transformation", "v1.endpoint.transformation-get"),
    NOT_IMPLEMENTED("PATCH", "app/*/endpoint/*/transformation", "v1.endpoint.transformation-partial-update"),
    {"GET", "app/*/endpoint/*/msg", "v1.message-attempt.list-attempted-messages", api_attempt_list_messages,
     "List the messages an endpoint was attempted with, with their delivery's status", 200, NULL,
     "ListResponseEndpointMessageOut"},
    {"GET", "app/*/msg", "v1.message.list", api_message_list, "List an application's messages", 200, NULL,
     "ListResponseMessageOut"},
    {"POST", "app/*/msg", "v1.message.create", api_message_create, "Create a message (eventId unique per application)",
     202, "MessageIn", "MessageOut"},
    NOT_IMPLEMENTED("POST", "app/*/msg/precheck/active", "v1.message.precheck"),
    {"GET", "app/*/msg/*", "v1.message.get", api_message_get, "Get a message", 200, NULL, "MessageOut"},
    {"DELETE", "app/*/msg/*/content", "v1.message.expunge-content", api_content_expunge_message,
     "Delete a message's payload; it is never sent again (organization tokens only)", 204, NULL, NULL},
    {"GET", "app/*/msg/*/endpoint", "v1.message-attempt.list-attempted-destinations", api_attempt_list_destinations,
     "List the endpoints a message was attempted to, with their delivery's status", 200, NULL,
     "ListResponseMessageEndpointOut"},
    {"POST", "app/*/msg/*/endpoint/*/resend", "v1.message-attempt.resend", api_attempt_resend,
     "Send a message to an endpoint again", 202, NULL, "EmptyResponse"},
    {"GET", "app/*/msg/*/attempt/*", "v1.message-attempt.get", api_attempt_get, "Get a message's attempt", 200, NULL,
     "MessageAttemptOut"},
    {"DELETE", "app/*/msg/*/attempt/*/content", "v1.message-attempt.expunge-content", api_content_expunge_attempt,
     "Delete an attempt's response body (organization tokens only)", 204, NULL, NULL},
    {"GET", "app/*/attempt/msg/*", "v1.message-attempt.list-by-msg", api_attempt_list_by_msg,
     "List a message's attempts", 200, NULL, "ListResponseMessageAttemptOut"},
    {"GET", "app/*/attempt/endpoint/*", "v1.message-attempt.list-by-endpoint", api_attempt_list_by_endpoint,
     "List an endpoint's attempts", 200, NULL, "ListResponseMessageAttemptOut"},
    {"GET", "event-type", "v1.event-type.list", api_event_type_list, "List event types", 200, NULL,
     "ListResponseEventTypeOut"},
    {"POST", "event-type", "v1.event-type.create", api_event_type_create, "Create an event type", 201, "EventTypeIn",
     "EventTypeOut"},
    NOT_IMPLEMENTED("POST", "event-type/import/openapi", "v1.event-type.import-openapi"),
    ITEM_ROUTES("event-type/*", "v1.event-type", api_event_type, "an event type", "Update (or create) an event type",
                "EventTypeUpdate", "EventTypePatch", "EventTypeOut", "Archive an event type"),
    {"POST", "auth/app-portal-access/*", "v1.authentication.app-portal-access", portal_app_portal_access,
     "A single-use login link to the application's portal (portal_token.c)", 200, NULL, "AppPortalAccessOut"},
    NOT_IMPLEMENTED("POST", "auth/app/*/expire-all", "v1.authentication.expire-all"),
    NOT_IMPLEMENTED("POST", "auth/logout", "v1.authentication.logout"),
};
const size_t api_nroutes = sizeof api_routes / sizeof api_routes[0];

/* ---- routing ------------------------------------------------------------ */

/* Matches path (below /api/v1/, no trailing slash) against pattern; fills
 * the '*' segments (decoded copies) into r->params. */
static bool match(const char *pattern, const char *path, struct api_req *r)
{
    int n = 0;
    char *params[API_MAX_PARAMS];
    while (*pattern && *path) {
        size_t plen = strcspn(pattern, "/"), slen = strcspn(path, "/");
        if (plen == 1 && pattern[0] == '*') {
            if (slen == 0 || n == API_MAX_PARAMS)
                goto no;
            char *seg = xstrndup(path, slen);
            params[n] = evhttp_uridecode(seg, 0, NULL);
            free(seg);
            n++;
        } else if (plen != slen || strncmp(pattern, path, plen) != 0) {
            goto no;
        }
        pattern += plen;
        path += slen;
        if (*pattern != *path)
            goto no;
        if (*pattern == '/')
            pattern++, path++;
    }
    if (*pattern || *path)
        goto no;
    for (int i = 0; r && i < n; i++)
        r->params[i] = params[i];
    if (r)
        r->nparams = n;
    else
        for (int i = 0; i < n; i++)
            free(params[i]);
    return true;
no:
    for (int i = 0; i < n; i++)
        free(params[i]);
    return false;
}

static const char *method_name(enum evhttp_cmd_type t)
{
    switch (t) {
    case EVHTTP_REQ_GET: return "GET";
    case EVHTTP_REQ_POST: return "POST";
    case EVHTTP_REQ_PUT: return "PUT";
    case EVHTTP_REQ_PATCH: return "PATCH";
    case EVHTTP_REQ_DELETE: return "DELETE";
    default: return "OTHER";
    }
}

/* The route for method and path, or NULL; *path_known when another method
 * would have matched (405). */
static const struct api_route *find_route(const char *method, const char *path, bool *path_known)
{
    *path_known = false;
    for (size_t i = 0; i < api_nroutes; i++) {
        if (!match(api_routes[i].pattern, path, NULL))
            continue;
        if (strcmp(api_routes[i].method, method) == 0)
            return &api_routes[i];
        *path_known = true;
    }
    return NULL;
}

/* ---- answering -------------------------------------------------------------- */

static void reply_svix_error(struct evhttp_request *req, int status, const char *code, const char *detail)
{
    http_reply_json(req, status, json_pack("{s:s, s:s}", "code", code, "detail", detail));
}

static void req_free(struct api_req *r)
{
    for (int i = 0; i < r->nparams; i++)
        free(r->params[i]);
    evhttp_clear_headers(&r->query);
    json_decref(r->body);
    json_decref(r->reply);
    free(r->idem_key);
    free(r->idem_scope);
    for (size_t i = 0; i < r->ndue; i++)
        free(r->due[i]);
    OPENSSL_cleanse(r->token_sha, sizeof r->token_sha);
    if (r->cfg)
        config_unref((struct hookd_config *)r->cfg);
    free(r);
}

static void on_client_closed(struct evhttp_connection *conn, void *arg)
{
    (void)conn;
    struct api_req *r = arg;
    r->req = NULL;
}

static void send_answer(struct api_req *r)
{
    if (!r->req)
        return;
    evhttp_connection_set_closecb(evhttp_request_get_connection(r->req), NULL, NULL);
    if (r->status == 204 || !r->reply) {
        evhttp_send_reply(r->req, r->status ? r->status : 204, http_reason(r->status ? r->status : 204), NULL);
        return;
    }
    json_t *body = r->reply;
    r->reply = NULL;
    http_reply_json(r->req, r->status, body);
}

/* ---- the job (DB thread) -------------------------------------------------- */

static bool authenticate(PGconn *conn, struct api_req *r)
{
    const char *p[] = {r->token_sha};
    char err[256];
    PGresult *res = query_prepared(conn, Q_API_TOKEN_FIND, p, err, sizeof err);
    if (!res) {
        api_error(r, 503, "unavailable", "the database is unavailable");
        return false;
    }
    bool found = PQntuples(res) == 1;
    if (found)
        snprintf(r->tenant, sizeof r->tenant, "%s", PQgetvalue(res, 0, API_TOKEN_FIND_TENANT_ID));
    if (found && PQgetvalue(res, 0, API_TOKEN_FIND_STALE)[0] == 't') {
        const char *t[] = {PQgetvalue(res, 0, API_TOKEN_FIND_ID)};
        PGresult *u = query_prepared(conn, Q_API_TOKEN_TOUCH, t, err, sizeof err);
        PQclear(u); /* last_used_at is informative: a failure is not the request's */
    }
    PQclear(res);
    if (!found) {
        api_error(r, 401, "authentication_failed", "Incorrect authentication credentials.");
        return false;
    }
    r->auth_ok = true;
    return true;
}

/* The idempotency scope: the token's tenant, the method and the path
 * (read on the loop: the request is the loop's). */
void api_idem_scope(const struct api_req *r, char *out, size_t outlen)
{
    snprintf(out, outlen, "%s %s", r->tenant[0] ? r->tenant : "*", r->idem_scope ? r->idem_scope : "");
}

/* 1: the key was new (claimed in this transaction); 0: answered from the
 * record; -1: failed (answer set). */
static int claim_key(PGconn *conn, struct api_req *r, const char *scope)
{
    const char *p[] = {scope, r->idem_key};
    PGresult *res = api_exec(conn, r, Q_API_IDEMPOTENCY_CLAIM, p);
    if (!res)
        return -1;
    bool claimed = PQntuples(res) == 1;
    PQclear(res);
    if (claimed)
        return 1;
    if (!(res = api_exec(conn, r, Q_API_IDEMPOTENCY_GET, p)))
        return -1;
    if (PQntuples(res) != 1 || PQgetisnull(res, 0, API_IDEMPOTENCY_GET_STATUS)) {
        PQclear(res);
        api_error(r, 409, "conflict", "a request with this idempotency-key is in progress");
        return -1;
    }
    r->status = atoi(PQgetvalue(res, 0, API_IDEMPOTENCY_GET_STATUS));
    r->reply = PQgetisnull(res, 0, API_IDEMPOTENCY_GET_BODY) ? NULL : api_row_json(res, 0, API_IDEMPOTENCY_GET_BODY);
    r->replayed = true;
    PQclear(res);
    return 0;
}

static void store_answer(PGconn *conn, struct api_req *r, const char *scope)
{
    char status[16];
    snprintf(status, sizeof status, "%d", r->status);
    char *body = r->reply ? json_dumps(r->reply, JSON_COMPACT) : NULL;
    const char *p[] = {scope, r->idem_key, status, body};
    PGresult *res = api_exec(conn, r, Q_API_IDEMPOTENCY_STORE, p);
    free(body);
    PQclear(res);
}

static void run_op(PGconn *conn, struct api_req *r)
{
    char err[256], scope[512];
    if (db_run(conn, "BEGIN", 0, NULL, err, sizeof err) != 0) {
        api_error(r, 503, "unavailable", "the database is unavailable");
        return;
    }
    /* a portal link is never kept in an idempotency record (its token would
     * be stored in clear); a repeat just mints another link */
    bool keyed = r->idem_key && strcmp(r->method, "POST") == 0 && r->route->fn != portal_app_portal_access;
    if (keyed) {
        api_idem_scope(r, scope, sizeof scope);
        int c = claim_key(conn, r, scope);
        if (c <= 0) {
            if (c == 0 && db_run(conn, "COMMIT", 0, NULL, err, sizeof err) == 0)
                return;
            db_rollback(conn);
            return;
        }
    }
    r->route->fn(conn, r);
    if (!r->status)
        api_error(r, 500, "server_error", "the operation gave no answer");
    if (r->status >= 300) {
        db_rollback(conn);
        r->ndue = 0; /* nothing became due */
        return;
    }
    if (keyed)
        store_answer(conn, r, scope);
    if (r->status >= 300 || db_run(conn, "COMMIT", 0, NULL, err, sizeof err) != 0) {
        db_rollback(conn);
        if (r->status < 300) {
            json_decref(r->reply);
            r->reply = NULL;
            api_error(r, 503, "unavailable", "the transaction could not commit: %s", err);
        }
    }
}

void api_request_run(PGconn *conn, void *arg)
{
    struct api_req *r = arg;
    if (!conn) {
        api_error(r, 503, "unavailable", "the database is unavailable");
        return;
    }
    if (!authenticate(conn, r))
        return;
    if (!r->route->fn) {
        api_error(r, 501, "not_implemented", "%s is not implemented by hookd", r->route->op);
        return;
    }
    run_op(conn, r);
}

void api_request_done(void *arg)
{
    struct api_req *r = arg;
    struct api *a = r->api;
    a->pending--;
    if (!r->auth_ok && r->status == 401) {
        bool blocked = false;
        admin_guard_failed(a->guard, r->client, clock_mono_ms(), &blocked);
        log_info("api.auth_failed", "client=%s blocked=%s", r->client, blocked ? "yes" : "no");
    }
    if (r->ndue > 0) {
        int64_t *due = xcalloc(r->ndue, sizeof *due);
        int64_t now = clock_wall_ms();
        for (size_t i = 0; i < r->ndue; i++)
            due[i] = r->due_ms[i] > now ? r->due_ms[i] : now; /* a deliverAt still ahead */
        sched_seed(a->ctx, "delivery", r->due, due, r->ndue, false);
        free(due);
    }
    if (r->status >= 500)
        log_warn("api.failed", "op=%s status=%d", r->route->op, r->status);
    else
        log_debug("api.request", "op=%s status=%d replayed=%s", r->route->op, r->status, r->replayed ? "yes" : "no");
    send_answer(r);
    req_free(r);
}

/* ---- the handler (loop) ------------------------------------------------------ */

/* The bearer token's SHA-256 in hex, or -1 when there is none. */
static int token_digest(struct evhttp_request *req, char out[65])
{
    const char *h = evhttp_find_header(evhttp_request_get_input_headers(req), "Authorization");
    if (!h || strncasecmp(h, "Bearer ", 7) != 0)
        return -1;
    const char *tok = h + 7;
    while (*tok == ' ')
        tok++;
    size_t n = strlen(tok);
    if (n == 0 || n > 512)
        return -1;
    unsigned char md[SHA256_DIGEST_LENGTH];
    SHA256((const unsigned char *)tok, n, md);
    int rc = enc_hex_encode(md, sizeof md, out, 65); /* not 32 snprintf calls a request */
    OPENSSL_cleanse(md, sizeof md);
    return rc == 0 ? 0 : -1;
}

/* The JSON body of POST, PUT and PATCH (an object), or answers 422/400. */
static int read_body(struct evhttp_request *req, struct api_req *r)
{
    if (strcmp(r->method, "POST") != 0 && strcmp(r->method, "PUT") != 0 && strcmp(r->method, "PATCH") != 0)
        return 0;
    struct evbuffer *buf = evhttp_request_get_input_buffer(req);
    size_t len = evbuffer_get_length(buf);
    if (len == 0)
        return 0;
    if ((int64_t)len > r->cfg->max_body) {
        reply_svix_error(req, 413, "payload_too_large", "Request payload is too large.");
        return -1;
    }
    json_error_t jerr;
    r->body = json_loadb((const char *)evbuffer_pullup(buf, -1), len, JSON_REJECT_DUPLICATES, &jerr);
    r->body_len = len;
    if (!r->body || !json_is_object(r->body)) {
        char msg[256];
        snprintf(msg, sizeof msg, "the body is not a JSON object%s%s", r->body ? "" : ": ", r->body ? "" : jerr.text);
        http_reply_json(req, 422,
                        json_pack("{s:[{s:[s], s:s, s:s}]}", "detail", "loc", "body", "msg", msg, "type",
                                  "value_error.jsondecode"));
        return -1;
    }
    return 0;
}

static void handle_api(struct evhttp_request *req, void *arg)
{
    struct api *a = arg;
    char *full = http_request_path(req);
    if (!full) {
        reply_svix_error(req, 400, "bad_request", "the path cannot be decoded");
        return;
    }
    /* the raw path: segments are decoded one by one (an id may hold a '/') */
    const struct evhttp_uri *uri = evhttp_request_get_evhttp_uri(req);
    const char *raw = uri ? evhttp_uri_get_path(uri) : NULL;
    free(full);
    if (!raw || strncmp(raw, PREFIX, strlen(PREFIX)) != 0) {
        reply_svix_error(req, 404, "not_found", "Entity not found");
        return;
    }
    char *path = xstrdup(raw + strlen(PREFIX));
    size_t plen = strlen(path);
    while (plen > 0 && path[plen - 1] == '/')
        path[--plen] = '\0';
    const char *method = method_name(evhttp_request_get_command(req));
    if (strcmp(path, "openapi.json") == 0 && strcmp(method, "GET") == 0) {
        free(path);
        http_reply_json(req, 200, api_openapi());
        return;
    }
    if (strcmp(path, "health") == 0 && strcmp(method, "GET") == 0) {
        free(path);
        evhttp_send_reply(req, 204, "No Content", NULL);
        return;
    }
    if (a->ctx->draining) { /* SIGTERM: the requests in flight finish, new ones go elsewhere */
        free(path);
        evhttp_add_header(evhttp_request_get_output_headers(req), "Retry-After", "5");
        reply_svix_error(req, 503, "unavailable", "this worker is shutting down");
        return;
    }
    bool known = false;
    const struct api_route *route = find_route(method, path, &known);
    if (!route) {
        free(path);
        if (known)
            reply_svix_error(req, 405, "method_not_allowed", "Method not allowed");
        else
            reply_svix_error(req, 404, "not_found", "Entity not found");
        return;
    }
    struct api_req *r = xcalloc(1, sizeof *r);
    r->api = a;
    r->req = req;
    r->route = route;
    r->cfg = config_ref(a->ctx->cfg);
    snprintf(r->method, sizeof r->method, "%s", method);
    r->query.tqh_first = NULL;
    r->query.tqh_last = &r->query.tqh_first;
    (void)match(route->pattern, path, r);
    free(path);
    admin_guard_client_key(http_request_peer(req), r->client);
    int64_t wait = admin_guard_retry_after(a->guard, r->client, clock_mono_ms());
    if (wait > 0) {
        char s[24];
        snprintf(s, sizeof s, "%lld", (long long)wait);
        evhttp_add_header(evhttp_request_get_output_headers(req), "Retry-After", s);
        reply_svix_error(req, 429, "rate_limited", "too many failed authentications from this address");
        req_free(r);
        return;
    }
    if (token_digest(req, r->token_sha) != 0) {
        bool blocked = false;
        admin_guard_failed(a->guard, r->client, clock_mono_ms(), &blocked);
        reply_svix_error(req, 401, "authentication_failed", "Incorrect authentication credentials.");
        req_free(r);
        return;
    }
    const char *q = uri ? evhttp_uri_get_query(uri) : NULL;
    if (q && evhttp_parse_query_str(q, &r->query) != 0) {
        reply_svix_error(req, 400, "bad_request", "the query string cannot be parsed");
        req_free(r);
        return;
    }
    const char *key = evhttp_find_header(evhttp_request_get_input_headers(req), "idempotency-key");
    if (key && strlen(key) > IDEMPOTENCY_KEY_MAX) {
        http_reply_json(req, 422,
                        json_pack("{s:[{s:[s,s], s:s, s:s}]}", "detail", "loc", "header", "idempotency-key", "msg",
                                  "longer than 256 characters", "type", "value_error"));
        req_free(r);
        return;
    }
    r->idem_key = key && *key ? xstrdup(key) : NULL;
    if (r->idem_key) {
        char scope[600];
        snprintf(scope, sizeof scope, "%s %.500s", method, raw);
        r->idem_scope = xstrdup(scope);
    }
    if (read_body(req, r) != 0) {
        req_free(r);
        return;
    }
    a->pending++;
    evhttp_connection_set_closecb(evhttp_request_get_connection(req), on_client_closed, r);
    if (route->fn == api_message_create && a->msgs)
        api_msgs_add(a->msgs, r); /* group commit */
    else
        db_pool_submit(a->ctx->db, api_request_run, api_request_done, r);
}

/* ---- idempotency records: the purge --------------------------------------- */

static void work_purge(PGconn *conn, void *arg)
{
    (void)arg;
    char err[256];
    PGresult *res = conn ? query_exec(conn, Q_API_IDEMPOTENCY_PURGE, NULL, err, sizeof err) : NULL;
    PQclear(res);
}

static void done_purge(void *arg)
{
    struct api *a = arg;
    a->purging = false;
}

static void on_purge_timer(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct api *a = arg;
    if (a->purging || a->ctx->draining || !a->ctx->migrations_current)
        return;
    a->purging = true;
    db_pool_submit(a->ctx->db, work_purge, done_purge, a);
}

/* ---- life cycle --------------------------------------------------------------- */

struct api *api_new(struct hookd_ctx *ctx, struct http_server *http)
{
    struct api *a = xcalloc(1, sizeof *a);
    a->ctx = ctx;
    a->guard = admin_guard_new();
    a->purge_ev = event_new(ctx->base, -1, EV_PERSIST, on_purge_timer, a);
    struct timeval tv = {PURGE_INTERVAL_S, 0};
    event_add(a->purge_ev, &tv);
    a->msgs = api_msgs_new(ctx); /* NULL: each creation runs alone */
    http_server_route(http, "/api/v1/*", handle_api, a);
    return a;
}

size_t api_pending(const struct api *a)
{
    return a ? a->pending + (a->purging ? 1 : 0) : 0;
}

void api_close(struct api *a)
{
    if (a && a->purge_ev)
        event_del(a->purge_ev);
    if (a)
        api_msgs_close(a->msgs);
}

void api_free(struct api *a)
{
    if (!a)
        return;
    api_msgs_free(a->msgs);
    if (a->purge_ev)
        event_free(a->purge_ev);
    admin_guard_free(a->guard);
    free(a);
}
