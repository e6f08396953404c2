/* The admin view; see admin.h. Pages are rendered on the loop from JSON that
 * a DB job produced with the same queries as `hookd dlq` (dlq.c), so the CLI
 * and the page can never disagree. */
#include "admin.h"

#include <event2/buffer.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <jansson.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>

#include "clock.h"
#include "db.h"
#include "dlq.h"
#include "encoding.h"
#include "http_server.h"
#include "log.h"
#include "ctx.h"
#include "heartbeat.h"
#include "sched.h"
#include "xmalloc.h"

enum page { PAGE_LIST, PAGE_DETAIL, PAGE_REPLAY };

struct admin {
    struct hookd_ctx *ctx;
    const struct heartbeat *hb; /* borrowed: queue depths and live workers */
};

struct job {
    struct admin *a;
    struct evhttp_request *req; /* NULL once the client went away */
    enum page page;
    char id[64];
    char source[16], partner[112], event_type[112];
    json_t *result;
    struct dlq_replayed replayed;
    char err[512];
};

/* ---- auth ------------------------------------------------------------------ */

/* hex(HMAC-SHA256(token, label)): the session cookie and the CSRF token are
 * derived from the admin token, so they change when it does. */
static void derive(const char *token, const char *label, char out[65])
{
    unsigned char mac[32];
    unsigned int len = sizeof mac;
    HMAC(EVP_sha256(), token, (int)strlen(token), (const unsigned char *)label, strlen(label), mac, &len);
    if (enc_hex_encode(mac, sizeof mac, out, 65) != 0)
        out[0] = '\0';
}

static bool same(const char *a, const char *b)
{
    size_t n = strlen(a);
    return n == strlen(b) && n > 0 && CRYPTO_memcmp(a, b, n) == 0;
}

static bool authorised(struct admin *a, struct evhttp_request *req)
{
    const char *token = a->ctx->cfg->admin_token.text;
    struct evkeyvalq *h = evhttp_request_get_input_headers(req);
    const char *auth = evhttp_find_header(h, "Authorization");
    if (auth && strncasecmp(auth, "Bearer ", 7) == 0)
        return same(auth + 7, token);
    if (auth && strncasecmp(auth, "Basic ", 6) == 0) {
        unsigned char dec[512];
        size_t n;
        const char *b64 = auth + 6;
        if (enc_base64_decode(b64, strlen(b64), dec, sizeof dec - 1, &n) != 0)
            return false;
        dec[n] = '\0';
        const char *colon = strchr((const char *)dec, ':');
        bool ok = colon && same(colon + 1, token);
        OPENSSL_cleanse(dec, sizeof dec);
        return ok;
    }
    const char *cookie = evhttp_find_header(h, "Cookie");
    const char *c = cookie ? strstr(cookie, "hookd_admin=") : NULL;
    if (!c)
        return false;
    char given[65], want[65];
    snprintf(given, sizeof given, "%.*s", (int)strcspn(c + 12, "; "), c + 12);
    derive(token, "hookd-admin-session", want);
    return same(given, want);
}

/* ---- HTML ---------------------------------------------------------------------- */

static void esc(struct evbuffer *b, const char *s)
{
    for (; s && *s; s++) {
        switch (*s) {
        case '<': evbuffer_add(b, "&lt;", 4); break;
        case '>': evbuffer_add(b, "&gt;", 4); break;
        case '&': evbuffer_add(b, "&amp;", 5); break;
        case '"': evbuffer_add(b, "&quot;", 6); break;
        case '\'': evbuffer_add(b, "&#39;", 5); break;
        default: evbuffer_add(b, s, 1);
        }
    }
}

static const char *jstr(json_t *o, const char *k)
{
    const char *s = json_string_value(json_object_get(o, k));
    return s ? s : "";
}

static const char style[] =
    "<style>body{font:14px system-ui,sans-serif;margin:2em;color:#222}table{border-collapse:collapse}"
    "td,th{border-bottom:1px solid #ddd;padding:4px 8px;text-align:left;vertical-align:top}"
    "pre{background:#f6f6f6;padding:8px;overflow:auto}.msg{background:#e8f5e9;padding:8px}"
    ".err{background:#fdecea;padding:8px}nav a{margin-right:1em}</style>";

static void page_start(struct evbuffer *b, const char *title)
{
    evbuffer_add_printf(b, "<!doctype html><html><head><meta charset=utf-8><title>hookd — ");
    esc(b, title);
    evbuffer_add_printf(b, "</title>%s</head><body><nav><a href=\"/admin\">Dead letters</a></nav><h1>", style);
    esc(b, title);
    evbuffer_add_printf(b, "</h1>");
}

static void send_html(struct evhttp_request *req, int code, struct evbuffer *b)
{
    evbuffer_add_printf(b, "</body></html>\n");
    struct evkeyvalq *out = evhttp_request_get_output_headers(req);
    evhttp_add_header(out, "Content-Type", "text/html; charset=utf-8");
    evhttp_add_header(out, "Cache-Control", "no-store");
    evhttp_add_header(out, "X-Frame-Options", "DENY");
    evhttp_add_header(out, "Content-Security-Policy", "default-src 'self'; style-src 'unsafe-inline'; script-src 'unsafe-inline'");
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

static void render_overview(struct admin *a, struct evbuffer *b)
{
    const struct heartbeat_view *v = heartbeat_view(a->hb);
    evbuffer_add_printf(b, "<h2>Queues</h2><table id=queues><tr><th>queue</th><th>due</th><th>inflight</th></tr>"
                           "<tr><td>inbox</td><td>%lld</td><td>%lld</td></tr>"
                           "<tr><td>delivery</td><td>%lld</td><td>%lld</td></tr></table>",
                        v->depth[0], v->depth[1], v->depth[2], v->depth[3]);
    evbuffer_add_printf(b, "<h2>Live workers</h2><ul id=workers>");
    size_t i;
    json_t *wk;
    json_array_foreach(v->live_workers, i, wk)
    {
        evbuffer_add_printf(b, "<li>");
        esc(b, json_string_value(wk));
        evbuffer_add_printf(b, "</li>");
    }
    evbuffer_add_printf(b, "</ul>");
}

static void render_list(struct job *j, struct evbuffer *b, const char *flash)
{
    page_start(b, "Dead letters");
    if (flash) {
        evbuffer_add_printf(b, "<p class=msg id=flash>");
        esc(b, flash);
        evbuffer_add_printf(b, "</p>");
    }
    evbuffer_add_printf(b, "<form method=get action=\"/admin\">source <select name=source><option value=\"\">any</option>"
                           "<option%s>inbox</option><option%s>delivery</option></select> partner/endpoint "
                           "<input name=partner value=\"",
                        strcmp(j->source, "inbox") == 0 ? " selected" : "",
                        strcmp(j->source, "delivery") == 0 ? " selected" : "");
    esc(b, j->partner);
    evbuffer_add_printf(b, "\"> event type <input name=event_type placeholder=\"order.*\" value=\"");
    esc(b, j->event_type);
    evbuffer_add_printf(b, "\"> <button>Filter</button></form>");
    evbuffer_add_printf(b, "<table id=dlq><tr><th>id</th><th>source</th><th>partner</th><th>event type</th>"
                           "<th>entity</th><th>attempts</th><th>reason</th><th>dead since</th></tr>");
    size_t i;
    json_t *r;
    json_array_foreach(j->result, i, r)
    {
        evbuffer_add_printf(b, "<tr class=dead-letter><td><a href=\"/admin/dlq/");
        esc(b, jstr(r, "id"));
        evbuffer_add_printf(b, "\">");
        esc(b, jstr(r, "id"));
        const char *cols[] = {"source", "partner", "event_type", "entity"};
        for (size_t k = 0; k < 4; k++) {
            evbuffer_add_printf(b, k == 0 ? "</a></td><td>" : "</td><td>");
            esc(b, jstr(r, cols[k]));
        }
        evbuffer_add_printf(b, "</td><td>%lld</td><td>", (long long)json_integer_value(json_object_get(r, "attempts")));
        esc(b, jstr(r, "reason"));
        evbuffer_add_printf(b, "</td><td>");
        esc(b, jstr(r, "dead_at"));
        evbuffer_add_printf(b, "</td></tr>");
    }
    evbuffer_add_printf(b, "</table><p id=count>%zu open dead letter%s</p>", json_array_size(j->result),
                        json_array_size(j->result) == 1 ? "" : "s");
    render_overview(j->a, b);
}

static void render_detail(struct job *j, struct evbuffer *b)
{
    json_t *e = j->result;
    page_start(b, "Dead letter");
    evbuffer_add_printf(b, "<table id=entry>");
    const char *keys[] = {"id", "source", "source_id", "partner", "event_type", "entity", "reason", "last_error",
                          "dead_at", "replayed_at", "endpoint_url", "event_id"};
    for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
        if (!json_is_string(json_object_get(e, keys[k])))
            continue;
        evbuffer_add_printf(b, "<tr><th>%s</th><td>", keys[k]);
        esc(b, jstr(e, keys[k]));
        evbuffer_add_printf(b, "</td></tr>");
    }
    evbuffer_add_printf(b, "<tr><th>attempts</th><td>%lld</td></tr></table>",
                        (long long)json_integer_value(json_object_get(e, "attempts")));
    if (!json_is_string(json_object_get(e, "replayed_at"))) {
        char csrf[65];
        derive(j->a->ctx->cfg->admin_token.text, "hookd-admin-csrf", csrf);
        evbuffer_add_printf(b, "<form method=post action=\"/admin/dlq/");
        esc(b, jstr(e, "id"));
        evbuffer_add_printf(b, "/replay\" onsubmit=\"return confirm('Replay this event through the normal path?')\">"
                               "<input type=hidden name=csrf value=\"%s\"><button type=submit id=replay>Replay</button>"
                               "</form>",
                            csrf);
    }
    char *payload = json_dumps(json_object_get(e, "payload"), JSON_INDENT(2) | JSON_ENCODE_ANY);
    char *headers = json_dumps(json_object_get(e, "headers"), JSON_INDENT(2) | JSON_ENCODE_ANY);
    evbuffer_add_printf(b, "<h2>Payload</h2><pre id=payload>");
    esc(b, payload);
    evbuffer_add_printf(b, "</pre><h2>Headers</h2><pre>");
    esc(b, headers);
    free(payload);
    free(headers);
    evbuffer_add_printf(b, "</pre><h2>Attempts</h2><table id=attempts><tr><th>#</th><th>at</th><th>outcome</th>"
                           "<th>ms</th><th>status</th><th>error</th><th>response</th></tr>");
    size_t i;
    json_t *a;
    json_array_foreach(json_object_get(e, "attempts_history"), i, a)
    {
        evbuffer_add_printf(b, "<tr><td>%zu</td><td>", i + 1);
        esc(b, jstr(a, "at"));
        evbuffer_add_printf(b, "</td><td>");
        esc(b, jstr(a, "outcome"));
        evbuffer_add_printf(b, "</td><td>%.1f</td><td>", json_real_value(json_object_get(a, "duration_ms")));
        if (json_is_integer(json_object_get(a, "status_code")))
            evbuffer_add_printf(b, "%lld", (long long)json_integer_value(json_object_get(a, "status_code")));
        evbuffer_add_printf(b, "</td><td>");
        esc(b, jstr(a, "error"));
        evbuffer_add_printf(b, "</td><td>");
        esc(b, jstr(a, "response"));
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
        struct dlq_filter f = {j->source[0] ? j->source : NULL, j->partner[0] ? j->partner : NULL,
                               j->event_type[0] ? j->event_type : NULL, 0, 500};
        j->result = dlq_list(conn, &f, j->err, sizeof j->err);
    } else if (j->page == PAGE_DETAIL) {
        j->result = dlq_show(conn, j->id, j->err, sizeof j->err);
    } else if (dlq_replay(conn, j->id, false, &j->replayed, j->err, sizeof j->err) == 0) {
        j->result = json_true();
    }
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
            page_start(b, "Error");
            evbuffer_add_printf(b, "<p class=err id=error>");
            esc(b, j->err);
            evbuffer_add_printf(b, "</p>");
            send_html(req, strstr(j->err, "no dead letter") ? 404 : j->page == PAGE_REPLAY ? 409 : 503, b);
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
    free(j);
}

static void submit(struct admin *a, struct evhttp_request *req, struct job *j)
{
    j->a = a;
    j->req = req;
    evhttp_connection_set_closecb(evhttp_request_get_connection(req), on_client_closed, j);
    db_pool_submit(a->ctx->db, work, done, j);
}

/* ---- routing ---------------------------------------------------------------------- */

static void handle_login(struct admin *a, struct evhttp_request *req)
{
    if (evhttp_request_get_command(req) != EVHTTP_REQ_POST) {
        login_page(req, 200, NULL);
        return;
    }
    struct evbuffer *in = evhttp_request_get_input_buffer(req);
    size_t len = evbuffer_get_length(in);
    char *body = xstrndup(len ? (const char *)evbuffer_pullup(in, -1) : "", len);
    struct evkeyvalq form;
    TAILQ_INIT(&form);
    const char *token = evhttp_parse_query_str(body, &form) == 0 ? evhttp_find_header(&form, "token") : NULL;
    if (token && same(token, a->ctx->cfg->admin_token.text)) {
        char session[65], cookie[160];
        derive(a->ctx->cfg->admin_token.text, "hookd-admin-session", session);
        snprintf(cookie, sizeof cookie, "hookd_admin=%s; HttpOnly; SameSite=Strict; Path=/admin", session);
        evhttp_add_header(evhttp_request_get_output_headers(req), "Set-Cookie", cookie);
        redirect(req, "/admin");
    } else {
        log_warn("admin.login_failed", "%s", "");
        login_page(req, 401, "That token is not right.");
    }
    evhttp_clear_headers(&form);
    OPENSSL_cleanse(body, len);
    free(body);
}

static void handle_replay(struct admin *a, struct evhttp_request *req, const char *id)
{
    if (evhttp_request_get_command(req) != EVHTTP_REQ_POST) {
        http_reply_error(req, 405, "method", "replay is a POST");
        return;
    }
    struct evbuffer *in = evhttp_request_get_input_buffer(req);
    size_t len = evbuffer_get_length(in);
    char *body = xstrndup(len ? (const char *)evbuffer_pullup(in, -1) : "", len);
    struct evkeyvalq form;
    TAILQ_INIT(&form);
    const char *csrf = evhttp_parse_query_str(body, &form) == 0 ? evhttp_find_header(&form, "csrf") : NULL;
    char want[65];
    derive(a->ctx->cfg->admin_token.text, "hookd-admin-csrf", want);
    bool ok = csrf && same(csrf, want);
    evhttp_clear_headers(&form);
    free(body);
    if (!ok) {
        log_warn("admin.csrf_refused", "id=%.64s", id);
        http_reply_error(req, 403, "csrf", "missing or wrong CSRF token");
        return;
    }
    struct job *j = xcalloc(1, sizeof *j);
    j->page = PAGE_REPLAY;
    snprintf(j->id, sizeof j->id, "%s", id);
    submit(a, req, j);
}

static void handle_admin(struct evhttp_request *req, void *arg)
{
    struct admin *a = arg;
    if (!a->ctx->cfg->admin_token.text) {
        http_reply_error(req, 404, "not_found", "the admin view is disabled (set [hookd] admin_token)");
        return;
    }
    char *path = http_request_path(req);
    const char *p = path ? path : "";
    if (strcmp(p, "/admin/login") == 0) {
        handle_login(a, req);
    } else if (!authorised(a, req)) {
        login_page(req, 401, NULL);
    } else if (strncmp(p, "/admin/dlq/", 11) == 0) {
        const char *id = p + 11;
        size_t n = strcspn(id, "/");
        char idbuf[64];
        snprintf(idbuf, sizeof idbuf, "%.*s", (int)(n < 63 ? n : 63), id);
        if (strcmp(id + n, "/replay") == 0) {
            handle_replay(a, req, idbuf);
        } else {
            struct job *j = xcalloc(1, sizeof *j);
            j->page = PAGE_DETAIL;
            snprintf(j->id, sizeof j->id, "%s", idbuf);
            submit(a, req, j);
        }
    } else if (strcmp(p, "/admin") == 0 || strcmp(p, "/admin/") == 0) {
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
        submit(a, req, j);
    } else {
        http_reply_error(req, 404, "not_found", "no such admin page");
    }
    free(path);
}

struct admin *admin_new(struct hookd_ctx *ctx, struct http_server *http, const struct heartbeat *hb)
{
    struct admin *a = xcalloc(1, sizeof *a);
    a->ctx = ctx;
    a->hb = hb;
    http_server_route(http, "/admin", handle_admin, a);
    http_server_route(http, "/admin/*", handle_admin, a);
    return a;
}

void admin_free(struct admin *a)
{
    free(a);
}
