/* The portal role: routes, the session and its cookie, the login link's
 * exchange, the static assets, and the security headers; see portal.h.
 * The pages live in portal_pages.c, the HTML writer in portal_html.c,
 * tokens in shared/token.c. */
#include "portal.h"

#include <event2/buffer.h>
#include <event2/http.h>
#include <openssl/crypto.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "clock.h"
#include "config.h"
#include "ctx.h"
#include "db.h"
#include "html_ui.h"
#include "http_server.h"
#include "log.h"
#include "portal_circuit.h"
#include "portal_internal.h"
#include "query.h"
#include "sched.h"
#include "xmalloc.h"

#define PREFIX "/portal/"
#define COOKIE "hookd_portal"
#define COOKIE_GRACE_S 86400LL            /* how long the cookie outlives its session */
#define LOGIN_COOKIE "hookd_portal_login" /* the login page's nonce (its form's CSRF key) */
#define FORM_MAX (64 * 1024)

/* Scripts only from the worker itself, no inline script or style, no
 * framing; images may come from the operator's https logo. */
#define CSP                                                                                                           \
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' https: data:; "                          \
    "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'; object-src 'none'"

struct portal {
    struct hookd_ctx *ctx;
    size_t pending;
};

/* The pages: method, path pattern below /portal/ ('*' = one segment), page. */
static const struct {
    bool post;
    const char *pattern;
    portal_page_fn *fn;
} routes[] = {
    {false, "", portal_endpoints},
    {true, "endpoint", portal_endpoint_create},
    {false, "endpoint/*", portal_endpoint_page},
    {true, "endpoint/*", portal_endpoint_update},
    {false, "endpoint/*/secret", portal_endpoint_secret},
    {true, "endpoint/*/enable", portal_endpoint_enable},
    {true, "endpoint/*/disable", portal_endpoint_disable},
    {true, "endpoint/*/delete", portal_endpoint_delete},
    {true, "endpoint/*/rotate", portal_endpoint_rotate},
    {true, "endpoint/*/headers", portal_endpoint_headers},
    {true, "endpoint/*/send-example", portal_endpoint_send_example},
    {true, "endpoint/*/recover", portal_endpoint_recover},
    {false, "messages", portal_messages},
    {false, "message/*", portal_message_view},
    {false, "message/*/payload", portal_message_payload},
    {true, "message/*/resend", portal_message_resend},
};

/* ---- the request ---------------------------------------------------------- */

static void req_free(struct portal_req *q)
{
    for (int i = 0; i < q->nsegs; i++)
        free(q->segs[i]);
    evhttp_clear_headers(&q->query);
    evhttp_clear_headers(&q->form);
    if (q->body)
        evbuffer_free(q->body);
    for (size_t i = 0; i < q->ndue; i++)
        free(q->due[i]);
    OPENSSL_cleanse(q->session, sizeof q->session);
    OPENSSL_cleanse(q->login_nonce, sizeof q->login_nonce);
    OPENSSL_cleanse(q->login_cookie, sizeof q->login_cookie);
    OPENSSL_cleanse(q->csrf, sizeof q->csrf);
    if (q->cfg)
        config_unref((struct hookd_config *)q->cfg);
    json_decref(q->circuits);
    free(q);
}

/* Splits path (below /portal/, no trailing slash) into decoded segments;
 * false when there are too many or one is empty. */
static bool split_path(struct portal_req *q, const char *path)
{
    while (*path) {
        size_t n = strcspn(path, "/");
        if (n == 0 || q->nsegs == PORTAL_MAX_SEGS)
            return false;
        char *seg = xstrndup(path, n);
        q->segs[q->nsegs++] = evhttp_uridecode(seg, 0, NULL);
        free(seg);
        path += n;
        if (*path == '/')
            path++;
    }
    return true;
}

static bool pattern_matches(const char *pattern, const struct portal_req *q)
{
    int i = 0;
    while (*pattern) {
        size_t n = strcspn(pattern, "/");
        if (i == q->nsegs)
            return false;
        if (!(n == 1 && pattern[0] == '*') && (strlen(q->segs[i]) != n || strncmp(q->segs[i], pattern, n) != 0))
            return false;
        i++;
        pattern += n;
        if (*pattern == '/')
            pattern++;
    }
    return i == q->nsegs;
}

/* The value of cookie name (shorter than TOKEN_LEN) into out, "" when absent. */
static void cookie_get(struct evhttp_request *req, const char *name, char out[TOKEN_LEN])
{
    out[0] = '\0';
    size_t len = strlen(name);
    const char *h = evhttp_find_header(evhttp_request_get_input_headers(req), "Cookie");
    for (const char *c = h; c && *c;) {
        while (*c == ' ' || *c == ';')
            c++;
        size_t n = strcspn(c, ";");
        if (n > len + 1 && strncmp(c, name, len) == 0 && c[len] == '=') {
            size_t v = n - len - 1;
            if (v < TOKEN_LEN)
                snprintf(out, TOKEN_LEN, "%.*s", (int)v, c + len + 1);
            return;
        }
        c += n;
    }
}

/* ---- sending ------------------------------------------------------------------ */

static void security_headers(struct evhttp_request *req)
{
    struct evkeyvalq *h = evhttp_request_get_output_headers(req);
    evhttp_add_header(h, "Content-Security-Policy", CSP);
    evhttp_add_header(h, "X-Content-Type-Options", "nosniff");
    evhttp_add_header(h, "X-Frame-Options", "DENY");
    evhttp_add_header(h, "Referrer-Policy", "no-referrer");
    evhttp_add_header(h, "Cache-Control", "no-store");
}

static void send_answer(struct portal_req *q)
{
    if (!q->req)
        return;
    evhttp_connection_set_closecb(evhttp_request_get_connection(q->req), NULL, NULL);
    struct evkeyvalq *h = evhttp_request_get_output_headers(q->req);
    security_headers(q->req);
    if (q->cookie[0])
        evhttp_add_header(h, "Set-Cookie", q->cookie);
    if (q->login_cookie[0])
        evhttp_add_header(h, "Set-Cookie", q->login_cookie);
    if (q->location[0]) {
        evhttp_add_header(h, "Location", q->location);
        evhttp_send_reply(q->req, 303, "See Other", NULL);
        return;
    }
    int status = q->status ? q->status : 500;
    evhttp_add_header(h, "Content-Type", q->content_type ? q->content_type : "text/html; charset=utf-8");
    if (q->disposition[0])
        evhttp_add_header(h, "Content-Disposition", q->disposition);
    evhttp_send_reply(q->req, status, http_reason(status), q->body);
}

static void on_client_closed(struct evhttp_connection *conn, void *arg)
{
    (void)conn;
    struct portal_req *q = arg;
    q->req = NULL;
}

/* ---- the job (DB thread) -------------------------------------------------- */

/* The session's tenant into q->tenant; false when there is none. */
static bool find_session(PGconn *conn, struct portal_req *q)
{
    if (!q->session[0])
        return false;
    char sha[65], err[256];
    token_digest(q->session, sha);
    const char *p[] = {sha};
    PGresult *res = query_prepared(conn, Q_PORTAL_SESSION_FIND, p, err, sizeof err);
    bool found = res && PQntuples(res) == 1;
    if (found) {
        snprintf(q->tenant, sizeof q->tenant, "%s", PQgetvalue(res, 0, PORTAL_SESSION_FIND_TENANT_ID));
        snprintf(q->tenant_name, sizeof q->tenant_name, "%s", PQgetvalue(res, 0, PORTAL_SESSION_FIND_NAME));
    }
    PQclear(res);
    return found;
}

/* A link that cannot be opened: the database did not answer, or the link
 * is used, expired or unknown. */
static void link_refused(struct portal_req *q, bool db_failed)
{
    if (db_failed)
        portal_message_page(q, 503, "The portal is unavailable", "Please try again in a moment.");
    else
        portal_message_page(q, 403, "This link has expired or was already used",
                            "A portal link opens once and only for a short time. Ask for a new link.");
}

/* GET /portal/login?token=…: a page whose button opens the link (a POST,
 * below). Nothing is used here, so a scanner that fetches the link (mail,
 * chat previews) leaves it to the person. The form's CSRF token is keyed
 * with a nonce in a SameSite=Strict cookie: a form posted from another
 * site carries no such cookie, so no site can sign a visitor in as its own
 * tenant. */
static void work_login_page(PGconn *conn, struct portal_req *q)
{
    const char *token = portal_query(q, "token");
    char link_sha[65], nonce[TOKEN_LEN], nonce_sha[65], csrf[65], err[256];
    if (!token || strlen(token) >= TOKEN_LEN || token_new("hkpl_", nonce, nonce_sha) != 0) {
        portal_message_page(q, 400, "This link is not valid", "Ask for a new link to your webhook portal.");
        return;
    }
    token_digest(token, link_sha);
    const char *p[] = {link_sha};
    PGresult *res = query_prepared(conn, Q_PORTAL_LINK_CHECK, p, err, sizeof err);
    if (res && PQntuples(res) == 1) {
        token_csrf(nonce, csrf);
        snprintf(q->login_cookie, sizeof q->login_cookie,
                 LOGIN_COOKIE "=%s; Path=/portal/login; HttpOnly; SameSite=Strict; Max-Age=%lld%s", nonce,
                 (long long)(q->cfg->portal.link_ttl / 1000), q->https ? "; Secure" : "");
        portal_page_begin(q, "Open your webhook portal", "");
        portal_html(q,
                    "<section class=\"card login\"><h1>Your webhook portal</h1><p>Manage the endpoints of "
                    "<strong>%s</strong> and see every webhook sent to them.</p><form method=\"post\" "
                    "action=\"/portal/login\" id=\"login\"><input type=\"hidden\" name=\"token\" value=\"%s\">"
                    "<input type=\"hidden\" name=\"csrf\" value=\"%s\"><button class=\"primary\" id=\"open-portal\">"
                    "Open the portal</button></form><p class=\"muted\">This link opens once: keep the portal's tab "
                    "rather than the link.</p></section>",
                    PQgetvalue(res, 0, PORTAL_LINK_CHECK_TENANT_NAME), token, csrf);
        portal_page_end(q);
    } else {
        link_refused(q, !res);
    }
    PQclear(res);
    OPENSSL_cleanse(nonce, sizeof nonce);
}

/* POST /portal/login (the page's button): the link is used and exchanged,
 * in one statement, for a session cookie; then a redirect to /portal/. */
static void work_login(PGconn *conn, struct portal_req *q)
{
    const char *token = portal_form(q, "token");
    char link_sha[65], session_sha[65], session[TOKEN_LEN], err[256];
    if (!q->login_nonce[0] || !token_csrf_check(q->login_nonce, portal_form(q, "csrf"))) {
        log_info("portal.login_csrf_refused", "nonce=%s", q->login_nonce[0] ? "wrong" : "none");
        portal_message_page(q, 403, "This page has expired", "Open your portal link again.");
        return;
    }
    if (!token || strlen(token) >= TOKEN_LEN || token_new("hkps_", session, session_sha) != 0) {
        portal_message_page(q, 400, "This link is not valid", "Ask for a new link to your webhook portal.");
        return;
    }
    snprintf(q->login_cookie, sizeof q->login_cookie,
             LOGIN_COOKIE "=; Path=/portal/login; HttpOnly; SameSite=Strict; Max-Age=0%s", q->https ? "; Secure" : "");
    token_digest(token, link_sha);
    const char *p[] = {link_sha, session_sha};
    PGresult *res = query_prepared(conn, Q_PORTAL_LINK_REDEEM, p, err, sizeof err);
    if (res && PQntuples(res) == 1) {
        /* the cookie outlives the session by a day: a request after the
         * session ended still names it, and gets "your session has expired" */
        snprintf(q->cookie, sizeof q->cookie, COOKIE "=%s; Path=/portal; HttpOnly; SameSite=Strict; Max-Age=%lld%s",
                 session, atoll(PQgetvalue(res, 0, PORTAL_LINK_REDEEM_MAX_AGE_S)) + COOKIE_GRACE_S,
                 q->https ? "; Secure" : "");
        snprintf(q->location, sizeof q->location, "/portal/");
        log_info("portal.login", "tenant=%s", PQgetvalue(res, 0, PORTAL_LINK_REDEEM_TENANT_ID));
    } else {
        link_refused(q, !res);
    }
    PQclear(res);
    OPENSSL_cleanse(session, sizeof session);
}

static void work_logout(PGconn *conn, struct portal_req *q)
{
    char sha[65], err[256];
    token_digest(q->session, sha);
    const char *p[] = {sha};
    PQclear(query_prepared(conn, Q_PORTAL_SESSION_DELETE, p, err, sizeof err));
    snprintf(q->cookie, sizeof q->cookie, COOKIE "=; Path=/portal; HttpOnly; SameSite=Strict; Max-Age=0%s",
             q->https ? "; Secure" : "");
    q->tenant[0] = '\0';
    portal_message_page(q, 200, "Signed out", "You are signed out of the webhook portal.");
}

/* Whether the page shows circuits: they are read from Redis on the loop
 * (portal_circuit.h) once the session is known to be valid, then the page
 * runs in a second job. */
static bool shows_circuits(const struct portal_req *q)
{
    return q->page == portal_endpoints || q->page == portal_endpoint_page;
}

static void work_request(PGconn *conn, void *arg)
{
    struct portal_req *q = arg;
    if (!conn) {
        portal_message_page(q, 503, "The portal is unavailable", "Please try again in a moment.");
        return;
    }
    if (q->nsegs == 1 && strcmp(q->segs[0], "login") == 0) {
        if (q->post)
            work_login(conn, q);
        else
            work_login_page(conn, q);
        return;
    }
    if (!q->tenant[0] && !find_session(conn, q)) {
        if (q->session[0]) { /* a cookie whose session ended: the browser forgets it */
            snprintf(q->cookie, sizeof q->cookie, COOKIE "=; Path=/portal; HttpOnly; SameSite=Strict; Max-Age=0%s",
                     q->https ? "; Secure" : "");
            portal_message_page(q, 401, "Your session has expired",
                                "For your security, portal sessions end after a while. Ask for a new link to your "
                                "webhook portal to sign in again.");
        } else {
            portal_message_page(q, 401, "You are not signed in",
                                "Open the link to your webhook portal that you were given to sign in.");
        }
        return;
    }
    if (q->post && !token_csrf_check(q->session, portal_form(q, "csrf"))) {
        log_info("portal.csrf_refused", "tenant=%s", q->tenant);
        portal_message_page(q, 403, "This form has expired", "Reload the page and try again.");
        return;
    }
    if (q->nsegs == 1 && strcmp(q->segs[0], "logout") == 0 && q->post) {
        work_logout(conn, q);
        return;
    }
    if (!q->page) {
        portal_message_page(q, 404, "Not found", "There is no such page.");
        return;
    }
    if (shows_circuits(q) && !q->circuits_read) {
        q->circuits_wanted = true; /* done_request reads them, then runs this again */
        return;
    }
    q->page(conn, q);
    if (!q->status && !q->location[0])
        portal_message_page(q, 500, "Something went wrong", "The page could not be shown.");
}

static void on_circuits(void *arg, json_t *states);

static void done_request(void *arg)
{
    struct portal_req *q = arg;
    struct portal *p = q->portal;
    if (q->circuits_wanted && q->req) {
        q->circuits_wanted = false;
        q->circuits_read = true;
        const char *ep = q->page == portal_endpoint_page && strncmp(q->segs[1], "ep_", 3) == 0 ? q->segs[1] : NULL;
        portal_circuit_read(p->ctx, ep, on_circuits, q);
        return;
    }
    p->pending--;
    if (q->ndue > 0) {
        int64_t *due = xcalloc(q->ndue, sizeof *due);
        int64_t now = clock_wall_ms();
        for (size_t i = 0; i < q->ndue; i++)
            due[i] = now;
        sched_seed(p->ctx, "delivery", q->due, due, q->ndue, false);
        free(due);
    }
    if (q->status >= 500)
        log_warn("portal.failed", "status=%d", q->status);
    send_answer(q);
    req_free(q);
}

/* ---- static assets and the theme (loop) ----------------------------------- */

static bool serve_asset(struct evhttp_request *req, const char *name)
{
    const char *data, *type;
    size_t len;
    if (!html_ui_asset(name, &data, &len, &type))
        return false;
    struct evbuffer *b = evbuffer_new();
    evbuffer_add_reference(b, data, len, NULL, NULL);
    struct evkeyvalq *h = evhttp_request_get_output_headers(req);
    evhttp_add_header(h, "Content-Type", type);
    evhttp_add_header(h, "X-Content-Type-Options", "nosniff");
    evhttp_add_header(h, "Cache-Control", "public, max-age=300");
    evhttp_send_reply(req, 200, "OK", b);
    evbuffer_free(b);
    return true;
}

/* The operator's accent colour (config.c holds it to #rgb / #rrggbb). */
static void serve_theme(struct portal *p, struct evhttp_request *req)
{
    struct evbuffer *b = evbuffer_new();
    evbuffer_add_printf(b, ":root { --accent: %s; }\n", p->ctx->cfg->portal.accent_color);
    struct evkeyvalq *h = evhttp_request_get_output_headers(req);
    evhttp_add_header(h, "Content-Type", "text/css; charset=utf-8");
    evhttp_add_header(h, "X-Content-Type-Options", "nosniff");
    evhttp_add_header(h, "Cache-Control", "no-cache");
    evhttp_send_reply(req, 200, "OK", b);
    evbuffer_free(b);
}

/* ---- the handler (loop) --------------------------------------------------- */

static void reply_plain(struct evhttp_request *req, int status, const char *text)
{
    struct evbuffer *b = evbuffer_new();
    evbuffer_add(b, text, strlen(text));
    security_headers(req);
    evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type", "text/plain; charset=utf-8");
    evhttp_send_reply(req, status, http_reason(status), b);
    evbuffer_free(b);
}

static int read_form(struct evhttp_request *req, struct portal_req *q)
{
    struct evbuffer *buf = evhttp_request_get_input_buffer(req);
    size_t len = evbuffer_get_length(buf);
    if (len == 0)
        return 0;
    if (len > FORM_MAX)
        return -1;
    char *text = xstrndup((const char *)evbuffer_pullup(buf, -1), len);
    int rc = evhttp_parse_query_str(text, &q->form);
    free(text);
    return rc;
}

static void submit(struct portal_req *q)
{
    if (!q->portal->ctx->db) { /* shutting down: the pool is gone */
        portal_message_page(q, 503, "The portal is unavailable", "Please try again in a moment.");
        done_request(q);
        return;
    }
    db_pool_submit(q->portal->ctx->db, work_request, done_request, q);
}

/* portal_circuit_fn: the circuits read, the page's job next. */
static void on_circuits(void *arg, json_t *states)
{
    struct portal_req *q = arg;
    q->circuits = states;
    submit(q);
}

static void handle_portal(struct evhttp_request *req, void *arg)
{
    struct portal *p = arg;
    const struct evhttp_uri *uri = evhttp_request_get_evhttp_uri(req);
    const char *raw = uri ? evhttp_uri_get_path(uri) : NULL;
    enum evhttp_cmd_type cmd = evhttp_request_get_command(req);
    if (!raw || strncmp(raw, PREFIX, strlen(PREFIX)) != 0) {
        if (raw && strcmp(raw, "/portal") == 0) {
            evhttp_add_header(evhttp_request_get_output_headers(req), "Location", PREFIX);
            evhttp_send_reply(req, 303, "See Other", NULL);
        } else {
            reply_plain(req, 404, "not found\n");
        }
        return;
    }
    const char *path = raw + strlen(PREFIX);
    if (cmd == EVHTTP_REQ_GET && strncmp(path, "assets/", 7) == 0) {
        if (!serve_asset(req, path + 7))
            reply_plain(req, 404, "not found\n");
        return;
    }
    if (cmd == EVHTTP_REQ_GET && strcmp(path, "theme.css") == 0) {
        serve_theme(p, req);
        return;
    }
    if (cmd != EVHTTP_REQ_GET && cmd != EVHTTP_REQ_POST) {
        evhttp_add_header(evhttp_request_get_output_headers(req), "Allow", "GET, POST");
        reply_plain(req, 405, "method not allowed\n");
        return;
    }
    struct portal_req *q = xcalloc(1, sizeof *q);
    q->portal = p;
    q->req = req;
    q->cfg = config_ref(p->ctx->cfg);
    q->post = cmd == EVHTTP_REQ_POST;
    q->https = q->cfg->portal.base_url && strncmp(q->cfg->portal.base_url, "https://", 8) == 0;
    q->query.tqh_first = NULL;
    q->query.tqh_last = &q->query.tqh_first;
    q->form.tqh_first = NULL;
    q->form.tqh_last = &q->form.tqh_first;
    q->body = evbuffer_new();
    char *trimmed = xstrdup(path);
    size_t n = strlen(trimmed);
    while (n > 0 && trimmed[n - 1] == '/')
        trimmed[--n] = '\0';
    bool ok = split_path(q, trimmed);
    free(trimmed);
    const char *qs = uri ? evhttp_uri_get_query(uri) : NULL;
    if (!ok || (qs && evhttp_parse_query_str(qs, &q->query) != 0) || (q->post && read_form(req, q) != 0)) {
        reply_plain(req, 400, "bad request\n");
        req_free(q);
        return;
    }
    for (size_t i = 0; i < sizeof routes / sizeof routes[0]; i++)
        if (routes[i].post == q->post && pattern_matches(routes[i].pattern, q))
            q->page = routes[i].fn;
    cookie_get(req, COOKIE, q->session);
    if (q->nsegs == 1 && strcmp(q->segs[0], "login") == 0)
        cookie_get(req, LOGIN_COOKIE, q->login_nonce);
    if (q->session[0])
        token_csrf(q->session, q->csrf);
    p->pending++;
    evhttp_connection_set_closecb(evhttp_request_get_connection(req), on_client_closed, q);
    submit(q);
}

/* ---- life cycle --------------------------------------------------------------- */

struct portal *portal_new(struct hookd_ctx *ctx, struct http_server *http)
{
    struct portal *p = xcalloc(1, sizeof *p);
    p->ctx = ctx;
    http_server_route(http, "/portal", handle_portal, p);
    http_server_route(http, PREFIX "*", handle_portal, p);
    return p;
}

size_t portal_pending(const struct portal *p)
{
    return p ? p->pending : 0;
}

void portal_free(struct portal *p)
{
    free(p);
}
