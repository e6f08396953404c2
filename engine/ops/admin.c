/* The admin view; see admin.h. Pages are rendered on the loop from JSON that
 * a DB job produced with the same queries as `hookd dlq` (dlq.c), so the CLI
 * and the page can never disagree.
 *
 * Hostile clients: failed attempts are throttled per address
 * (admin_guard.c; 429 + Retry-After, never a held connection) and each is
 * logged with the address; sessions and CSRF tokens are random and
 * server-side; pages carry a CSP without 'unsafe-inline' (the little script
 * and style they need are served as /admin/app.js and /admin/app.css); and a
 * database error is logged under a reference, never shown. */
#include "ops.h"
#include "admin_guard.h"

#include <event2/buffer.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <jansson.h>
#include <openssl/crypto.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>
#include <time.h>

#include "clock.h"
#include "db.h"
#include "dlq.h"
#include "encoding.h"
#include "http_server.h"
#include "log.h"
#include "retention.h"
#include "ctx.h"
#include "heartbeat.h"
#include "html_ui.h"
#include "backoff.h"
#include "config.h"
#include "portal.h"
#include "portal_link.h"
#include "rand.h"
#include "sched.h"
#include "token.h"
#include "xmalloc.h"

enum page { PAGE_LIST, PAGE_DETAIL, PAGE_REPLAY, PAGE_PORTAL, PAGE_PAYLOAD };

struct admin {
    struct hookd_ctx *ctx;
    const struct heartbeat *hb;              /* borrowed: queue depths and live workers */
    const struct retainer *ret;              /* borrowed: storage figures */
    struct admin_guard *guard;               /* throttle and sessions */
    char token_digest[TOKEN_SHA_HEX];        /* the admin token the sessions were signed in with */
    char csrf_direct[ADMIN_GUARD_TOKEN_HEX]; /* CSRF token of bearer/basic requests: random per worker */
    bool secure_cookie;                      /* admin_listen is not loopback: the cookie is Secure */
};

/* How a request proved itself. */
enum auth_kind { AUTH_NONE, AUTH_BEARER, AUTH_BASIC, AUTH_COOKIE };
static const char *const auth_names[] = {"none", "bearer", "basic", "cookie"};

struct auth {
    enum auth_kind kind;
    bool ok;
    struct admin_session *session; /* borrowed; set when kind is AUTH_COOKIE and ok */
};

struct job {
    struct admin *a;
    struct evhttp_request *req; /* NULL once the client went away */
    enum page page;
    char id[64];
    char source[16], partner[112], event_type[112];
    json_t *result;
    char *payload; /* PAGE_PAYLOAD: the stored payload's text */
    struct dlq_replayed replayed;
    char err[512];
    char csrf[ADMIN_GUARD_TOKEN_HEX]; /* the requester's CSRF token, for the forms */
    bool session;                     /* signed in with a session: offer a logout */
    json_t *tenants;                  /* PAGE_LIST: the tenants, each with a portal button */
    struct hookd_config *cfg;         /* PAGE_PORTAL: a ref for the link's base and lifetime */
    char url[768];                    /* PAGE_PORTAL: the minted link */
};

/* ---- auth ------------------------------------------------------------------ */

static void client_addr(struct evhttp_request *req, char key[ADMIN_GUARD_ADDR_LEN])
{
    char *addr = NULL;
    ev_uint16_t port = 0;
    struct evhttp_connection *conn = evhttp_request_get_connection(req);
    if (conn)
        evhttp_connection_get_peer(conn, &addr, &port);
    admin_guard_client_key(addr ? addr : "unknown", key);
}

/* A token change ends every session that was signed in with the old one. */
static void sync_token(struct admin *a)
{
    char d[TOKEN_SHA_HEX];
    token_digest(a->ctx->cfg->admin_token.text, d);
    if (CRYPTO_memcmp(d, a->token_digest, sizeof d) != 0) {
        admin_guard_sessions_clear(a->guard);
        memcpy(a->token_digest, d, sizeof d);
    }
}

/* The value of cookie name in a Cookie header, into out (empty when absent). */
static void cookie_value(const char *header, const char *name, char *out, size_t outlen)
{
    out[0] = '\0';
    size_t nlen = strlen(name);
    for (const char *p = header; p && *p;) {
        p += strspn(p, " ;");
        size_t len = strcspn(p, ";");
        if (len > nlen && strncmp(p, name, nlen) == 0 && p[nlen] == '=') {
            snprintf(out, outlen, "%.*s", (int)(len - nlen - 1), p + nlen + 1);
            return;
        }
        p += len;
    }
}

static struct auth authenticate(struct admin *a, struct evhttp_request *req)
{
    struct auth r = {AUTH_NONE, false, NULL};
    const char *token = a->ctx->cfg->admin_token.text;
    struct evkeyvalq *h = evhttp_request_get_input_headers(req);
    const char *auth = evhttp_find_header(h, "Authorization");
    if (auth && strncasecmp(auth, "Bearer ", 7) == 0) {
        r.kind = AUTH_BEARER;
        r.ok = admin_guard_same(auth + 7, token);
        return r;
    }
    if (auth && strncasecmp(auth, "Basic ", 6) == 0) {
        unsigned char dec[512];
        size_t n;
        const char *b64 = auth + 6;
        r.kind = AUTH_BASIC;
        if (enc_base64_decode(b64, strlen(b64), dec, sizeof dec - 1, &n) != 0)
            return r;
        dec[n] = '\0';
        const char *colon = strchr((const char *)dec, ':');
        r.ok = colon && admin_guard_same(colon + 1, token);
        OPENSSL_cleanse(dec, sizeof dec);
        return r;
    }
    char given[ADMIN_GUARD_TOKEN_HEX + 1];
    cookie_value(evhttp_find_header(h, "Cookie"), "hookd_admin", given, sizeof given);
    if (!given[0])
        return r;
    r.kind = AUTH_COOKIE;
    r.session = admin_guard_session_find(a->guard, given, a->ctx->cfg->admin_session_timeout, clock_wall_ms());
    r.ok = r.session != NULL;
    return r;
}

/* Counts and logs one failed attempt of the request's client. */
static void failed(struct admin *a, struct evhttp_request *req, const char *event, const char *method)
{
    char client[ADMIN_GUARD_ADDR_LEN];
    client_addr(req, client);
    bool blocked;
    int n = admin_guard_failed(a->guard, client, clock_wall_ms(), &blocked);
    log_warn(event, "client=%s method=%s failures=%d", client, method, n);
    if (blocked)
        log_warn("admin.client_blocked", "client=%s failures=%d retry_after=%ds", client, ADMIN_GUARD_MAX_FAILURES,
                 ADMIN_GUARD_BLOCK_MS / 1000);
}

static bool secure_request(struct admin *a, struct evhttp_request *req)
{
    const char *proto = evhttp_find_header(evhttp_request_get_input_headers(req), "X-Forwarded-Proto");
    return a->secure_cookie || (proto && strcasecmp(proto, "https") == 0);
}

static void set_cookie(struct admin *a, struct evhttp_request *req, const char *value, int64_t max_age_s)
{
    char cookie[256];
    snprintf(cookie, sizeof cookie, "hookd_admin=%s; Path=/admin; Max-Age=%lld; HttpOnly; SameSite=Strict%s", value,
             (long long)max_age_s, secure_request(a, req) ? "; Secure" : "");
    evhttp_add_header(evhttp_request_get_output_headers(req), "Set-Cookie", cookie);
}

/* ---- HTML ---------------------------------------------------------------------- */

/* The pages' stylesheet and script are the portal's (html_ui.h), served as
 * /admin/app.css and /admin/app.js so the CSP needs no 'unsafe-inline'. */
static const char csp[] = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
                          "form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

static void page_start(struct evbuffer *b, const char *title)
{
    static const struct html_ui_link nav[] = {{"/admin", "Dead letters", "dlq"}};
    const struct html_ui_frame f = {title, "hookd admin", NULL, "/admin/app.css", NULL, "/admin/app.js", nav, 1, NULL};
    html_ui_page_begin(b, &f);
    html_ui_main(b);
    html_ui_printf(b, "<h1>%s</h1>", title);
}

static void send_html(struct evhttp_request *req, int code, struct evbuffer *b)
{
    html_ui_page_end(b, "hookd");
    struct evkeyvalq *out = evhttp_request_get_output_headers(req);
    evhttp_add_header(out, "Content-Type", "text/html; charset=utf-8");
    evhttp_add_header(out, "Cache-Control", "no-store");
    evhttp_add_header(out, "X-Frame-Options", "DENY");
    evhttp_add_header(out, "Content-Security-Policy", csp);
    evhttp_add_header(out, "X-Content-Type-Options", "nosniff");
    evhttp_add_header(out, "Referrer-Policy", "no-referrer");
    evhttp_send_reply(req, code, http_reason(code), b);
    evbuffer_free(b);
}

static void login_page(struct evhttp_request *req, int code, const char *msg)
{
    struct evbuffer *b = evbuffer_new();
    page_start(b, "Sign in");
    if (msg)
        evbuffer_add_printf(b, "<p class=err>%s</p>", msg);
    evbuffer_add_printf(b, "<form method=post action=\"/admin/login\"><label>Admin token "
                           "<input type=password name=token id=token autofocus></label> "
                           "<button type=submit id=signin>Sign in</button></form>");
    send_html(req, code, b);
}

static void redirect(struct evhttp_request *req, const char *to)
{
    evhttp_add_header(evhttp_request_get_output_headers(req), "Location", to);
    evhttp_send_reply(req, 303, "See Other", NULL);
}

static void utc(int64_t ms, char *buf, size_t len)
{
    time_t t = (time_t)(ms / 1000);
    struct tm tm;
    if (!ms || !gmtime_r(&t, &tm) || !strftime(buf, len, "%Y-%m-%d %H:%M:%SZ", &tm))
        snprintf(buf, len, "-");
}

/* Storage of each table (the retainer's last measurement). */
static void render_storage(struct evbuffer *b, const struct retention_storage *st)
{
    evbuffer_add_printf(b, "<h2>Storage</h2>");
    if (!st) {
        evbuffer_add_printf(b, "<p id=storage>Not measured yet (the first retention pass runs shortly after "
                               "start-up).</p>");
        return;
    }
    evbuffer_add_printf(b, "<table id=storage><tr><th>table</th><th>bytes</th><th>rows (estimate)</th>"
                           "<th>oldest row</th><th>next expiry</th></tr>");
    for (size_t i = 0; i < st->n; i++) {
        char oldest[32], next[32];
        utc(st->t[i].oldest_ms, oldest, sizeof oldest);
        utc(st->t[i].next_expiry_ms, next, sizeof next);
        evbuffer_add_printf(b, "<tr><td>");
        html_ui_esc(b, st->t[i].name);
        evbuffer_add_printf(b, "</td><td>%lld</td><td>%lld</td><td>%s</td><td>%s</td></tr>", (long long)st->t[i].bytes,
                            (long long)st->t[i].rows, oldest, next);
    }
    evbuffer_add_printf(b, "</table>");
}

static void render_overview(struct admin *a, struct evbuffer *b)
{
    const struct heartbeat_view *v = heartbeat_view(a->hb);
    evbuffer_add_printf(b,
                        "<h2>Queues</h2><table id=queues><tr><th>queue</th><th>due</th><th>inflight</th></tr>"
                        "<tr><td>inbox</td><td>%lld</td><td>%lld</td></tr>"
                        "<tr><td>delivery</td><td>%lld</td><td>%lld</td></tr></table>",
                        v->depth[0], v->depth[1], v->depth[2], v->depth[3]);
    evbuffer_add_printf(b, "<h2>Live workers</h2><ul id=workers>");
    size_t i;
    json_t *wk;
    json_array_foreach(v->live_workers, i, wk)
    {
        evbuffer_add_printf(b, "<li>");
        html_ui_esc(b, json_string_value(wk));
        evbuffer_add_printf(b, "</li>");
    }
    evbuffer_add_printf(b, "</ul>");
    render_storage(b, retainer_storage(a->ret));
}

/* A signed-in session gets a logout button (a POST with its CSRF token). */
static void logout_form(const struct job *j, struct evbuffer *b)
{
    if (j->session)
        evbuffer_add_printf(b,
                            "<form method=post action=\"/admin/logout\"><input type=hidden name=csrf "
                            "value=\"%s\"><button type=submit id=logout>Sign out</button></form>",
                            j->csrf);
}

static void render_list(struct job *j, struct evbuffer *b, const char *flash)
{
    page_start(b, "Dead letters");
    logout_form(j, b);
    if (flash) {
        evbuffer_add_printf(b, "<p class=msg id=flash>");
        html_ui_esc(b, flash);
        evbuffer_add_printf(b, "</p>");
    }
    evbuffer_add_printf(b,
                        "<form method=get action=\"/admin\">source <select name=source><option value=\"\">any</option>"
                        "<option%s>inbox</option><option%s>delivery</option></select> partner/endpoint "
                        "<input name=partner value=\"",
                        strcmp(j->source, "inbox") == 0 ? " selected" : "",
                        strcmp(j->source, "delivery") == 0 ? " selected" : "");
    html_ui_esc(b, j->partner);
    evbuffer_add_printf(b, "\"> event type <input name=event_type placeholder=\"order.*\" value=\"");
    html_ui_esc(b, j->event_type);
    evbuffer_add_printf(b, "\"> <button>Filter</button></form>");
    evbuffer_add_printf(b, "<table id=dlq><tr><th>id</th><th>source</th><th>partner</th><th>event type</th>"
                           "<th>entity</th><th>attempts</th><th>reason</th><th>dead since</th></tr>");
    size_t i;
    json_t *r;
    json_array_foreach(j->result, i, r)
    {
        evbuffer_add_printf(b, "<tr class=dead-letter><td><a href=\"/admin/dlq/");
        html_ui_esc(b, html_ui_str(r, "id"));
        evbuffer_add_printf(b, "\">");
        html_ui_esc(b, html_ui_str(r, "id"));
        const char *cols[] = {"source", "partner", "event_type", "entity"};
        for (size_t k = 0; k < 4; k++) {
            evbuffer_add_printf(b, k == 0 ? "</a></td><td>" : "</td><td>");
            html_ui_esc(b, html_ui_str(r, cols[k]));
        }
        evbuffer_add_printf(b, "</td><td>%lld</td><td>",
                            (long long)json_integer_value(json_object_get(r, "attempts")));
        html_ui_esc(b, html_ui_str(r, "reason"));
        evbuffer_add_printf(b, "</td><td>");
        html_ui_esc(b, html_ui_str(r, "dead_at"));
        evbuffer_add_printf(b, "</td></tr>");
    }
    evbuffer_add_printf(b, "</table><p id=count>%zu open dead letter%s</p>", json_array_size(j->result),
                        json_array_size(j->result) == 1 ? "" : "s");
    portal_admin_render_tenants(b, j->tenants, j->csrf);
    render_overview(j->a, b);
}

/* A JSON text of the dead letter (null when absent), bounded: the whole is
 * never parsed (html_ui_payload). */
static void render_json(struct evbuffer *b, const char *id, const json_t *text, const char *download)
{
    const char *s = json_is_string(text) ? json_string_value(text) : "null";
    size_t len = strlen(s);
    html_ui_payload(b, id, s, len, len, download);
}

static void render_detail(struct job *j, struct evbuffer *b)
{
    json_t *e = j->result;
    page_start(b, "Dead letter");
    logout_form(j, b);
    evbuffer_add_printf(b, "<table id=entry>");
    const char *keys[] = {"id",     "source",     "source_id", "partner",     "event_type",   "entity",
                          "reason", "last_error", "dead_at",   "replayed_at", "endpoint_url", "event_id"};
    for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
        if (!json_is_string(json_object_get(e, keys[k])))
            continue;
        evbuffer_add_printf(b, "<tr><th>%s</th><td>", keys[k]);
        html_ui_esc(b, html_ui_str(e, keys[k]));
        evbuffer_add_printf(b, "</td></tr>");
    }
    evbuffer_add_printf(b, "<tr><th>attempts</th><td>%lld</td></tr></table>",
                        (long long)json_integer_value(json_object_get(e, "attempts")));
    if (!json_is_string(json_object_get(e, "replayed_at"))) {
        evbuffer_add_printf(b, "<form method=post action=\"/admin/dlq/");
        html_ui_esc(b, html_ui_str(e, "id"));
        evbuffer_add_printf(b,
                            "/replay\" data-confirm=\"Replay this event through the normal path?\">"
                            "<input type=hidden name=csrf value=\"%s\"><button type=submit id=replay>Replay</button>"
                            "</form>",
                            j->csrf);
    }
    char download[128];
    snprintf(download, sizeof download, "/admin/dlq/%s/payload", html_ui_str(e, "id"));
    evbuffer_add_printf(b, "<h2>Payload</h2>");
    render_json(b, "payload", json_object_get(e, "payload"), download);
    evbuffer_add_printf(b, "<h2>Headers</h2>");
    render_json(b, "headers", json_object_get(e, "headers"), NULL);
    evbuffer_add_printf(b, "<h2>Attempts</h2><table id=attempts><tr><th>#</th><th>at</th><th>outcome</th>"
                           "<th>ms</th><th>status</th><th>error</th><th>response</th></tr>");
    size_t i;
    json_t *a;
    json_array_foreach(json_object_get(e, "attempts_history"), i, a)
    {
        evbuffer_add_printf(b, "<tr><td>%zu</td><td>", i + 1);
        html_ui_esc(b, html_ui_str(a, "at"));
        evbuffer_add_printf(b, "</td><td>");
        html_ui_esc(b, html_ui_str(a, "outcome"));
        evbuffer_add_printf(b, "</td><td>%.1f</td><td>", json_real_value(json_object_get(a, "duration_ms")));
        if (json_is_integer(json_object_get(a, "status_code")))
            evbuffer_add_printf(b, "%lld", (long long)json_integer_value(json_object_get(a, "status_code")));
        evbuffer_add_printf(b, "</td><td>");
        html_ui_esc(b, html_ui_str(a, "error"));
        evbuffer_add_printf(b, "</td><td>");
        html_ui_esc(b, html_ui_str(a, "response"));
        evbuffer_add_printf(b, "</td></tr>");
    }
    evbuffer_add_printf(b, "</table>");
}

/* ---- jobs ---------------------------------------------------------------------- */

static void on_client_closed(struct evhttp_connection *conn, void *arg)
{
    (void)conn;
    ((struct job *)arg)->req = NULL;
}

static void work(PGconn *conn, void *arg)
{
    struct job *j = arg;
    if (!conn) {
        snprintf(j->err, sizeof j->err, "database unavailable");
        return;
    }
    if (j->page == PAGE_LIST) {
        struct dlq_filter f = {j->source[0] ? j->source : NULL,
                               j->partner[0] ? j->partner : NULL,
                               j->event_type[0] ? j->event_type : NULL,
                               0,
                               500,
                               NULL};
        j->result = dlq_list(conn, &f, j->err, sizeof j->err);
        j->tenants = j->result ? portal_admin_tenants(conn) : NULL;
    } else if (j->page == PAGE_PORTAL) {
        char token[TOKEN_LEN];
        if (portal_link_mint(conn, j->cfg, j->id, NULL, j->url, sizeof j->url, token, j->err, sizeof j->err) == 0)
            j->result = json_true();
        OPENSSL_cleanse(token, sizeof token);
    } else if (j->page == PAGE_DETAIL) {
        j->result = dlq_show(conn, j->id, j->err, sizeof j->err);
    } else if (j->page == PAGE_PAYLOAD) {
        j->payload = dlq_payload(conn, j->id, j->err, sizeof j->err);
        j->result = j->payload ? json_true() : NULL;
    } else if (dlq_replay(conn, j->id, false, &j->replayed, j->err, sizeof j->err) == 0) {
        j->result = json_true();
    }
}

/* The status for an error dlq.c worded for the operator (a missing or
 * already replayed dead letter), or 0 for any other error: those come from
 * Postgres or the pool, and their text (SQL, table names, connection
 * details) stays in the log. */
static int shown_error(const struct job *j)
{
    const char *e = j->err;
    if (strncmp(e, "no dead letter ", 15) == 0 || (e[0] == '\'' && strstr(e, "' is not a dead letter id")))
        return 404;
    if (j->page != PAGE_REPLAY)
        return 0;
    if ((strncmp(e, "dead letter ", 12) == 0 && strstr(e, " was already replayed at ")) ||
        strncmp(e, "the inbox row ", 14) == 0 || strncmp(e, "the delivery row ", 17) == 0 ||
        (strncmp(e, "endpoint '", 10) == 0 && strstr(e, "' is disabled; enable it first")))
        return 409;
    return 0;
}

static void render_error(struct job *j, struct evbuffer *b, struct evhttp_request *req)
{
    static const char *const pages[] = {"list", "detail", "replay", "portal", "payload"};
    page_start(b, "Error");
    int code = shown_error(j);
    if (code) {
        evbuffer_add_printf(b, "<p class=err id=error>");
        html_ui_esc(b, j->err);
        evbuffer_add_printf(b, "</p>");
    } else {
        char ref[9];
        if (rand_hex(ref, 4) != 0)
            snprintf(ref, sizeof ref, "%08llx", (unsigned long long)clock_wall_ms() & 0xffffffffULL);
        log_error("admin.error", "ref=%s page=%s id=%s error=\"%s\"", ref, pages[j->page], j->id, j->err);
        evbuffer_add_printf(b,
                            "<p class=err id=error>The page could not be built: the database did not answer as "
                            "expected. Reference <code id=ref>%s</code> (the worker's log has the details under "
                            "admin.error ref=%s).</p>",
                            ref, ref);
        code = 503;
    }
    send_html(req, code, b);
}

/* The stored payload as a file (the page shows a bounded part of it). */
static void send_payload(struct evhttp_request *req, struct job *j)
{
    char disposition[128];
    snprintf(disposition, sizeof disposition, "attachment; filename=\"dead-letter-%s.json\"", j->id);
    struct evkeyvalq *out = evhttp_request_get_output_headers(req);
    evhttp_add_header(out, "Content-Type", "application/json");
    evhttp_add_header(out, "Content-Disposition", disposition);
    evhttp_add_header(out, "Cache-Control", "no-store");
    evhttp_add_header(out, "X-Content-Type-Options", "nosniff");
    evhttp_add_header(out, "Content-Security-Policy", csp);
    struct evbuffer *b = evbuffer_new();
    evbuffer_add(b, j->payload, strlen(j->payload));
    evhttp_send_reply(req, 200, "OK", b);
    evbuffer_free(b);
}

static void done(void *arg)
{
    struct job *j = arg;
    struct evhttp_request *req = j->req;
    if (req)
        evhttp_connection_set_closecb(evhttp_request_get_connection(req), NULL, NULL);
    if (j->page == PAGE_REPLAY && j->result) {
        char *ids[] = {j->replayed.source_id};
        int64_t now = clock_wall_ms();
        sched_seed(j->a->ctx, j->replayed.source, ids, &now, 1, false);
        stats_add(&j->a->ctx->stats, STAT_REPLAYED, 1);
        log_info("admin.replayed", "id=%s source=%s source_id=%s", j->id, j->replayed.source, j->replayed.source_id);
    }
    if (req) {
        struct evbuffer *b = evbuffer_new();
        if (!j->result) {
            render_error(j, b, req);
        } else if (j->page == PAGE_PORTAL) {
            char ttl[BACKOFF_DURATION_BUFLEN];
            backoff_format_duration(j->cfg->portal.link_ttl, ttl, sizeof ttl);
            page_start(b, "Portal link");
            portal_admin_render_link(b, j->id, j->url, ttl);
            send_html(req, 200, b);
            log_info("admin.portal_link", "tenant=%s", j->id);
        } else if (j->page == PAGE_PAYLOAD) {
            evbuffer_free(b);
            send_payload(req, j);
        } else if (j->page == PAGE_REPLAY) {
            evbuffer_free(b);
            char to[128];
            snprintf(to, sizeof to, "/admin?replayed=%s", j->id);
            redirect(req, to);
        } else {
            if (j->page == PAGE_LIST) {
                const struct evhttp_uri *uri = evhttp_request_get_evhttp_uri(req);
                struct evkeyvalq q;
                TAILQ_INIT(&q);
                const char *query = evhttp_uri_get_query(uri);
                char flash[160] = "";
                if (query && evhttp_parse_query_str(query, &q) == 0 && evhttp_find_header(&q, "replayed"))
                    snprintf(flash, sizeof flash, "Replayed %.64s: it is back in the queue.",
                             evhttp_find_header(&q, "replayed"));
                evhttp_clear_headers(&q);
                render_list(j, b, flash[0] ? flash : NULL);
            } else {
                render_detail(j, b);
            }
            send_html(req, 200, b);
        }
    }
    json_decref(j->result);
    free(j->payload);
    json_decref(j->tenants);
    config_unref(j->cfg);
    OPENSSL_cleanse(j->url, sizeof j->url);
    free(j);
}

/* The requester's CSRF token and session go with the job: the pages render
 * forms with them after the database answered. */
static void submit(struct admin *a, struct evhttp_request *req, const struct auth *auth, struct job *j)
{
    j->a = a;
    j->req = req;
    j->session = auth->session != NULL;
    snprintf(j->csrf, sizeof j->csrf, "%s", auth->session ? auth->session->csrf : a->csrf_direct);
    evhttp_connection_set_closecb(evhttp_request_get_connection(req), on_client_closed, j);
    db_pool_submit(a->ctx->db, work, done, j);
}

/* ---- routing ---------------------------------------------------------------------- */

/* The value of field in a form-encoded request body, into out ("" when absent). */
static void form_field(struct evhttp_request *req, const char *field, char *out, size_t outlen)
{
    struct evbuffer *in = evhttp_request_get_input_buffer(req);
    size_t len = evbuffer_get_length(in);
    char *body = xstrndup(len ? (const char *)evbuffer_pullup(in, -1) : "", len);
    struct evkeyvalq form;
    TAILQ_INIT(&form);
    const char *v = evhttp_parse_query_str(body, &form) == 0 ? evhttp_find_header(&form, field) : NULL;
    snprintf(out, outlen, "%s", v ? v : "");
    evhttp_clear_headers(&form);
    OPENSSL_cleanse(body, len);
    free(body);
}

/* Whether the form carries the CSRF token of the session (or of direct
 * access); if not, the request is answered 403 here and counted as failed. */
static bool csrf_ok(struct admin *a, struct evhttp_request *req, const struct auth *auth)
{
    char given[ADMIN_GUARD_TOKEN_HEX + 1];
    form_field(req, "csrf", given, sizeof given);
    if (admin_guard_same(given, auth->session ? auth->session->csrf : a->csrf_direct))
        return true;
    failed(a, req, "admin.csrf_refused", auth_names[auth->kind]);
    http_reply_error(req, 403, "csrf", "missing or wrong CSRF token");
    return false;
}

/* A page that changes something: a POST with the CSRF token. Anything else
 * is answered here (405 saying `need`, or 403) and false returned. */
static bool post_ok(struct admin *a, struct evhttp_request *req, const struct auth *auth, const char *need)
{
    if (evhttp_request_get_command(req) != EVHTTP_REQ_POST) {
        http_reply_error(req, 405, "method", "%s", need);
        return false;
    }
    return csrf_ok(a, req, auth);
}

static void handle_login(struct admin *a, struct evhttp_request *req)
{
    if (evhttp_request_get_command(req) != EVHTTP_REQ_POST) {
        login_page(req, 200, NULL);
        return;
    }
    char token[1024];
    form_field(req, "token", token, sizeof token);
    bool ok = admin_guard_same(token, a->ctx->cfg->admin_token.text);
    OPENSSL_cleanse(token, sizeof token);
    if (!ok) {
        failed(a, req, "admin.login_failed", "login");
        login_page(req, 401, "That token is not right.");
        return;
    }
    struct admin_session *s = admin_guard_session_new(a->guard, clock_wall_ms());
    if (!s) {
        log_error("admin.session_failed", "error=\"no random bytes for a session\"");
        login_page(req, 503, "The worker could not start a session; try again.");
        return;
    }
    set_cookie(a, req, s->id, a->ctx->cfg->admin_session_timeout / 1000);
    redirect(req, "/admin");
}

static void handle_logout(struct admin *a, struct evhttp_request *req, const struct auth *auth)
{
    if (evhttp_request_get_command(req) != EVHTTP_REQ_POST) {
        http_reply_error(req, 405, "method", "logout is a POST");
        return;
    }
    if (!auth->session) {
        http_reply_error(req, 400, "no_session", "only a signed-in session can sign out");
        return;
    }
    if (!csrf_ok(a, req, auth))
        return;
    admin_guard_session_end(a->guard, auth->session);
    set_cookie(a, req, "", 0);
    redirect(req, "/admin/login");
}

static void handle_replay(struct admin *a, struct evhttp_request *req, const struct auth *auth, const char *id)
{
    if (!post_ok(a, req, auth, "replay is a POST"))
        return;
    struct job *j = xcalloc(1, sizeof *j);
    j->page = PAGE_REPLAY;
    snprintf(j->id, sizeof j->id, "%s", id);
    submit(a, req, auth, j);
}

static void handle_list(struct admin *a, struct evhttp_request *req, const struct auth *auth)
{
    struct job *j = xcalloc(1, sizeof *j);
    j->page = PAGE_LIST;
    struct evkeyvalq q;
    TAILQ_INIT(&q);
    const char *query = evhttp_uri_get_query(evhttp_request_get_evhttp_uri(req));
    if (query && evhttp_parse_query_str(query, &q) == 0) {
        const char *v;
        if ((v = evhttp_find_header(&q, "source")) && (!strcmp(v, "inbox") || !strcmp(v, "delivery")))
            snprintf(j->source, sizeof j->source, "%s", v);
        if ((v = evhttp_find_header(&q, "partner")))
            snprintf(j->partner, sizeof j->partner, "%s", v);
        if ((v = evhttp_find_header(&q, "event_type")))
            snprintf(j->event_type, sizeof j->event_type, "%s", v);
    }
    evhttp_clear_headers(&q);
    submit(a, req, auth, j);
}

static void send_asset(struct evhttp_request *req, const char *name)
{
    const char *body, *type;
    size_t len;
    if (!html_ui_asset(name, &body, &len, &type)) {
        http_reply_error(req, 404, "not_found", "no such admin page");
        return;
    }
    struct evkeyvalq *out = evhttp_request_get_output_headers(req);
    evhttp_add_header(out, "Content-Type", type);
    evhttp_add_header(out, "Cache-Control", "no-cache");
    evhttp_add_header(out, "X-Content-Type-Options", "nosniff");
    struct evbuffer *b = evbuffer_new();
    evbuffer_add(b, body, len);
    evhttp_send_reply(req, 200, "OK", b);
    evbuffer_free(b);
}

/* 429 while the client's address is blocked: answered at once, the
 * connection is not held. */
static bool throttled(struct admin *a, struct evhttp_request *req)
{
    char client[ADMIN_GUARD_ADDR_LEN];
    client_addr(req, client);
    int64_t wait = admin_guard_retry_after(a->guard, client, clock_wall_ms());
    if (wait <= 0)
        return false;
    char secs[24];
    snprintf(secs, sizeof secs, "%lld", (long long)wait);
    evhttp_add_header(evhttp_request_get_output_headers(req), "Retry-After", secs);
    struct evbuffer *b = evbuffer_new();
    page_start(b, "Too many attempts");
    evbuffer_add_printf(b,
                        "<p class=err id=error>Too many failed attempts from your address; try again in %lld "
                        "s.</p>",
                        (long long)wait);
    send_html(req, 429, b);
    return true;
}

/* POST /admin/tenants/{id}/portal: a portal login link for the tenant. */
static void handle_portal_link(struct admin *a, struct evhttp_request *req, const struct auth *auth, const char *rest)
{
    size_t n = strcspn(rest, "/");
    if (strcmp(rest + n, "/portal") != 0 || n == 0 || n > 63) {
        http_reply_error(req, 404, "not_found", "no such admin page");
        return;
    }
    if (!post_ok(a, req, auth, "a portal link is made by a POST"))
        return;
    struct job *j = xcalloc(1, sizeof *j);
    j->page = PAGE_PORTAL;
    j->cfg = config_ref(a->ctx->cfg);
    snprintf(j->id, sizeof j->id, "%.*s", (int)n, rest);
    submit(a, req, auth, j);
}

/* A request for a dead letter: its page, or its replay. */
static void handle_dlq(struct admin *a, struct evhttp_request *req, const struct auth *auth, const char *rest)
{
    size_t n = strcspn(rest, "/");
    char id[64];
    snprintf(id, sizeof id, "%.*s", (int)(n < 63 ? n : 63), rest);
    if (strcmp(rest + n, "/replay") == 0) {
        handle_replay(a, req, auth, id);
        return;
    }
    struct job *j = xcalloc(1, sizeof *j);
    j->page = strcmp(rest + n, "/payload") == 0 ? PAGE_PAYLOAD : PAGE_DETAIL;
    snprintf(j->id, sizeof j->id, "%s", id);
    submit(a, req, auth, j);
}

static void route(struct admin *a, struct evhttp_request *req, const char *p)
{
    if (strcmp(p, "/admin/app.js") == 0 || strcmp(p, "/admin/app.css") == 0) {
        send_asset(req, strcmp(p, "/admin/app.js") == 0 ? "portal.js" : "portal.css");
        return;
    }
    if (throttled(a, req))
        return;
    sync_token(a);
    if (strcmp(p, "/admin/login") == 0) {
        handle_login(a, req);
        return;
    }
    struct auth auth = authenticate(a, req);
    if (!auth.ok) {
        if (auth.kind != AUTH_NONE)
            failed(a, req, "admin.auth_failed", auth_names[auth.kind]);
        if (auth.kind == AUTH_COOKIE)
            set_cookie(a, req, "", 0); /* an ended session: the browser forgets it */
        login_page(req, 401, NULL);
    } else if (strcmp(p, "/admin/logout") == 0) {
        handle_logout(a, req, &auth);
    } else if (strcmp(p, "/admin") == 0 || strcmp(p, "/admin/") == 0) {
        handle_list(a, req, &auth);
    } else if (strncmp(p, "/admin/dlq/", 11) == 0) {
        handle_dlq(a, req, &auth, p + 11);
    } else if (strncmp(p, "/admin/tenants/", 15) == 0) {
        handle_portal_link(a, req, &auth, p + 15);
    } else {
        http_reply_error(req, 404, "not_found", "no such admin page");
    }
}

static void handle_admin(struct evhttp_request *req, void *arg)
{
    struct admin *a = arg;
    if (!a->ctx->cfg->admin_token.text) {
        http_reply_error(req, 404, "not_found", "the admin view is disabled (set [hookd] admin_token)");
        return;
    }
    char *path = http_request_path(req);
    route(a, req, path ? path : "");
    free(path);
}

/* Loopback hosts: a browser talks to them over plain HTTP, so a Secure
 * cookie would never come back. Anything else is reached over a network,
 * which must be TLS (a proxy in front): the cookie is Secure. */
static bool loopback(const char *listen)
{
    if (!listen)
        return true;
    return strncmp(listen, "127.", 4) == 0 || strncmp(listen, "localhost:", 10) == 0 ||
           strncmp(listen, "[::1]:", 6) == 0;
}

struct admin *admin_new(struct hookd_ctx *ctx, struct http_server *http, const struct heartbeat *hb,
                        const struct retainer *ret)
{
    struct admin *a = xcalloc(1, sizeof *a);
    a->ret = ret;
    a->ctx = ctx;
    a->hb = hb;
    a->guard = admin_guard_new();
    a->secure_cookie = !loopback(config_admin_listen(ctx->cfg));
    if (rand_hex(a->csrf_direct, 32) != 0)
        a->csrf_direct[0] = '\0'; /* never matches: replays need a session then */
    http_server_route(http, "/admin", handle_admin, a);
    http_server_route(http, "/admin/*", handle_admin, a);
    return a;
}

void admin_free(struct admin *a)
{
    if (!a)
        return;
    admin_guard_free(a->guard);
    OPENSSL_cleanse(a->csrf_direct, sizeof a->csrf_direct);
    free(a);
}
