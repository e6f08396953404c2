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
 * deliveries the operation made due.
 *
 * The throttle (admin_guard) counts wrong tokens per client address, the
 * address taken through `trusted_proxies`. A request without a token is
 * answered 401 and not counted: it guesses nothing. A token is always
 * looked up, even from a blocked address, and a valid one is never
 * refused, so no client can lock another out; a wrong one from a blocked
 * address is answered 429 with Retry-After instead of 401. What makes a
 * token unguessable is its 256 random bits (token.h); the throttle makes a
 * guessing client visible in the log and tells it to stop. */
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
#include "cidr.h"
#include "clock.h"
#include "config.h"
#include "ctx.h"
#include "db.h"
#include "encoding.h"
#include "http_server.h"
#include "log.h"
#include "loop_timer.h"
#include "token.h"
#include "query.h"
#include "sched.h"
#include "xmalloc.h"

#define PREFIX "/api/v1/"
#define INGEST_PREFIX "/ingest/api/v1/"
#define IDEMPOTENCY_KEY_MAX 256

/* Idempotency records older than 24 hours are purged this often, 1,000
 * at a time (sql/queries/api_idempotency_purge.sql). */
#define PURGE_INTERVAL_S 60


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

/* ---- answering -------------------------------------------------------------- */

static void reply_svix_error(struct evhttp_request *req, int status, const char *code, const char *detail)
{
    http_reply_json(req, status, json_pack("{s:s, s:s}", "code", code, "detail", detail));
}


static void on_client_closed(struct evhttp_connection *conn, void *arg)
{
    (void)conn;
    struct api_req *r = arg;
    r->req = NULL;
}

/* ---- the handler (loop) ------------------------------------------------------ */

/* The bearer token's SHA-256 in hex, or -1 when there is none. */
static int bearer_digest(struct evhttp_request *req, char out[TOKEN_SHA_HEX])
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
    token_digest(tok, out);
    return out[0] ? 0 : -1;
}

/* The key the throttle counts the request's client under: its address
 * through `trusted_proxies` (behind a proxy, each client its own), or the
 * peer's when a trusted proxy named no usable address. */
static void client_key(struct evhttp_request *req, const struct hookd_config *cfg, char key[ADMIN_GUARD_ADDR_LEN])
{
    struct cidr_addr addr;
    char text[64];
    if (http_request_client(req, &cfg->trusted, &addr) == 0)
        cidr_addr_format(&addr, text, sizeof text);
    else
        snprintf(text, sizeof text, "%s", http_request_peer(req));
    admin_guard_client_key(text, key);
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
    /* below /api/v1/ a path is matched relative; Svix's ingest API (below
     * /ingest/api/v1/) against the table's absolute patterns */
    bool below = raw && strncmp(raw, PREFIX, strlen(PREFIX)) == 0;
    if (!raw || (!below && strncmp(raw, INGEST_PREFIX, strlen(INGEST_PREFIX)) != 0)) {
        reply_svix_error(req, 404, "not_found", "Entity not found");
        return;
    }
    char *path = xstrdup(below ? raw + strlen(PREFIX) : raw);
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
    const struct api_route *route = api_route_find(method, path);
    struct api_req *r = xcalloc(1, sizeof *r);
    r->api = a;
    r->req = req;
    r->route = route;
    r->cfg = config_ref(a->ctx->cfg);
    snprintf(r->method, sizeof r->method, "%s", method);
    r->query.tqh_first = NULL;
    r->query.tqh_last = &r->query.tqh_first;
    if (route->pattern)
        (void)api_route_match(route->pattern, path, r);
    free(path);
    if (bearer_digest(req, r->token_sha) != 0) { /* no token: nothing guessed, nothing counted */
        reply_svix_error(req, 401, "authentication_failed", "Incorrect authentication credentials.");
        api_req_free(r);
        return;
    }
    client_key(req, r->cfg, r->client);
    r->blocked_s = admin_guard_retry_after(a->guard, r->client, clock_mono_ms());
    const char *q = uri ? evhttp_uri_get_query(uri) : NULL;
    if (q && evhttp_parse_query_str(q, &r->query) != 0) {
        reply_svix_error(req, 400, "bad_request", "the query string cannot be parsed");
        api_req_free(r);
        return;
    }
    const char *key = evhttp_find_header(evhttp_request_get_input_headers(req), "idempotency-key");
    if (key && strlen(key) > IDEMPOTENCY_KEY_MAX) {
        http_reply_json(req, 422,
                        json_pack("{s:[{s:[s,s], s:s, s:s}]}", "detail", "loc", "header", "idempotency-key", "msg",
                                  "longer than 256 characters", "type", "value_error"));
        api_req_free(r);
        return;
    }
    r->idem_key = key && *key ? xstrdup(key) : NULL;
    if (r->idem_key) {
        char scope[600];
        snprintf(scope, sizeof scope, "%s %.500s", method, raw);
        r->idem_scope = xstrdup(scope);
    }
    if (read_body(req, r) != 0) {
        api_req_free(r);
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
    loop_timer_arm(a->purge_ev, PURGE_INTERVAL_S * 1000);
    a->msgs = api_msgs_new(ctx); /* NULL: each creation runs alone */
    http_server_route(http, "/api/v1/*", handle_api, a);
    http_server_route(http, INGEST_PREFIX "*", handle_api, a);
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
