/* Tests for engine/http_client.c against real sockets on 127.0.0.1, all in
 * one process and one event loop: an evhttp server (plain or TLS through
 * bufferevent_openssl, with certificates that tests/fixtures/tls/make-certs.sh
 * generates into a temporary directory), a listener that accepts and never
 * answers, a raw server that drops a kept-alive connection, and a small
 * evdns server for names that resolve to chosen addresses. Run under
 * ASan/LSan: every path (timeouts, refusals, TLS failures, cancellation)
 * must free what it allocates. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/dns.h>
#include <event2/dns_struct.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <event2/listener.h>
#include <ftw.h>
#include <libgen.h>
#include <netinet/in.h>
#include <openssl/ssl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "http_client.h"

static char cert_dir[256];

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static const char *cert_path(const char *name)
{
    static char buf[4][512];
    static int next;
    char *p = buf[next++ % 4];
    snprintf(p, 512, "%s/%s", cert_dir, name);
    return p;
}

/* ---- the loop --------------------------------------------------------------- */

static void on_tick(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    (void)arg;
}

/* Runs the loop until *counter reaches target or timeout_ms passes. */
static int run_until(struct event_base *base, const int *counter, int target, int timeout_ms)
{
    struct event *tick = event_new(base, -1, EV_PERSIST, on_tick, NULL);
    struct timeval tv = {0, 10000};
    int64_t deadline = now_ms() + timeout_ms;

    event_add(tick, &tv);
    while (*counter < target && now_ms() < deadline)
        event_base_loop(base, EVLOOP_ONCE);
    event_free(tick);
    return *counter >= target;
}

static void run_for(struct event_base *base, int ms)
{
    int never = 0;
    run_until(base, &never, 1, ms);
}

/* ---- results ---------------------------------------------------------------- */

struct got {
    int calls;
    int status;
    int has_error;
    char error[256];
    char body[8192];
    size_t body_len;
    int has_retry_after;
    char retry_after[128];
    int64_t duration_us;
    int64_t at_ms;
    int unsent;
    int *counter; /* shared completion counter */
    int seq;      /* order of completion, across all results */
};

static int completions;

static void on_result(const struct http_client_result *res, void *arg)
{
    struct got *g = arg;
    g->calls++;
    g->status = res->status;
    g->has_error = res->error != NULL;
    snprintf(g->error, sizeof(g->error), "%s", res->error ? res->error : "");
    assert_non_null(res->body);
    assert_true(res->body_len <= sizeof(g->body));
    memcpy(g->body, res->body, res->body_len);
    g->body_len = res->body_len;
    g->has_retry_after = res->retry_after != NULL;
    snprintf(g->retry_after, sizeof(g->retry_after), "%s", res->retry_after ? res->retry_after : "");
    g->duration_us = res->duration_us;
    g->unsent = res->unsent;
    g->at_ms = now_ms();
    g->seq = ++completions;
    if (g->counter)
        (*g->counter)++;
}

/* ---- test environment -------------------------------------------------------- */

struct env {
    struct event_base *base;
    struct evdns_base *dns;
    struct http_client *client;
};

static void env_init(struct env *e, const struct http_client_config *cfg)
{
    char err[256] = "";
    completions = 0;
    e->base = event_base_new();
    assert_non_null(e->base);
    e->dns = evdns_base_new(e->base, 0); /* no nameservers: only what a test adds */
    assert_non_null(e->dns);
    assert_int_equal(evdns_base_load_hosts(e->dns, NULL), 0);
    e->client = http_client_new(e->base, e->dns, cfg, err, sizeof(err));
    if (!e->client)
        fail_msg("http_client_new: %s", err);
}

static void env_done(struct env *e)
{
    http_client_free(e->client);
    e->client = NULL;
    event_base_loop(e->base, EVLOOP_NONBLOCK); /* lets evdns report cancelled lookups */
    evdns_base_free(e->dns, 0);
    event_base_free(e->base);
}

static const struct http_client_config plain_cfg = {
    .allow_private_networks = 1,
    .max_response_bytes = 4096,
    .max_inflight_total = 64,
    .user_agent = "hookd-test/1",
};

static void post(struct env *e, const char *key, const char *url, const char *body, int timeout_ms, int max_for_key,
                 struct got *g)
{
    char err[256] = "";
    if (http_client_post(e->client, key, url, NULL, 0, body, body ? strlen(body) : 0, timeout_ms, max_for_key,
                         on_result, g, err, sizeof(err)) != 0)
        fail_msg("http_client_post %s: %s", url, err);
    assert_int_equal(g->calls, 0); /* never called back from inside post */
}

/* ---- evhttp test server --------------------------------------------------------- */

#define MAX_SEEN_HEADERS 32

struct srv {
    struct evhttp *http;
    struct event_base *base;
    SSL_CTX *tls;
    int port;
    int connections;
    int requests;
    int active;     /* /slow requests not answered yet */
    int max_active; /* the most of them at once */
    /* the last request */
    int method;
    char uri[512];
    char *body;
    size_t body_len;
    int nheaders;
    char hname[MAX_SEEN_HEADERS][64];
    char hvalue[MAX_SEEN_HEADERS][256];
};

static const char *srv_header(const struct srv *s, const char *name)
{
    for (int i = 0; i < s->nheaders; i++)
        if (strcasecmp(s->hname[i], name) == 0)
            return s->hvalue[i];
    return NULL;
}

static struct bufferevent *on_srv_bev(struct event_base *base, void *arg)
{
    struct srv *s = arg;
    s->connections++;
    if (s->tls)
        return bufferevent_openssl_socket_new(base, -1, SSL_new(s->tls), BUFFEREVENT_SSL_ACCEPTING,
                                              BEV_OPT_CLOSE_ON_FREE);
    return bufferevent_socket_new(base, -1, BEV_OPT_CLOSE_ON_FREE);
}

static void srv_record(struct srv *s, struct evhttp_request *req)
{
    struct evbuffer *in = evhttp_request_get_input_buffer(req);
    struct evkeyval *h;

    s->requests++;
    s->method = evhttp_request_get_command(req);
    snprintf(s->uri, sizeof(s->uri), "%s", evhttp_request_get_uri(req));
    free(s->body);
    s->body_len = evbuffer_get_length(in);
    s->body = malloc(s->body_len + 1);
    evbuffer_copyout(in, s->body, s->body_len);
    s->nheaders = 0;
    TAILQ_FOREACH (h, evhttp_request_get_input_headers(req), next) {
        if (s->nheaders == MAX_SEEN_HEADERS)
            break;
        snprintf(s->hname[s->nheaders], sizeof(s->hname[0]), "%s", h->key);
        snprintf(s->hvalue[s->nheaders], sizeof(s->hvalue[0]), "%s", h->value);
        s->nheaders++;
    }
}

struct slow_reply {
    struct srv *s;
    struct evhttp_request *req;
    struct event *timer;
};

static void on_slow_reply(evutil_socket_t fd, short what, void *arg)
{
    struct slow_reply *sr = arg;
    (void)fd;
    (void)what;
    sr->s->active--;
    evhttp_send_reply(sr->req, 200, "OK", NULL);
    event_free(sr->timer);
    free(sr);
}

/* Paths: /status/NNN, /retry (503 + Retry-After), /big/N (N body bytes),
 * /echo (the request body), /close (Connection: close), /slow (200 after
 * 30 ms, counting requests in progress); else 200 "ok". */
static void on_srv_request(struct evhttp_request *req, void *arg)
{
    struct srv *s = arg;
    const char *uri = evhttp_request_get_uri(req);
    struct evbuffer *out = evbuffer_new();
    struct evkeyvalq *oh = evhttp_request_get_output_headers(req);
    int code = 200;

    srv_record(s, req);
    if (strcmp(uri, "/slow") == 0) {
        struct slow_reply *sr = calloc(1, sizeof(*sr));
        struct timeval tv = {0, 30000};
        sr->s = s;
        sr->req = req;
        sr->timer = evtimer_new(s->base, on_slow_reply, sr);
        evtimer_add(sr->timer, &tv);
        if (++s->active > s->max_active)
            s->max_active = s->active;
        evbuffer_free(out);
        return;
    }
    if (strncmp(uri, "/status/", 8) == 0) {
        code = atoi(uri + 8);
        if (code != 204) /* evhttp would send a body even after 204 */
            evbuffer_add_printf(out, "status %d", code);
    } else if (strcmp(uri, "/retry") == 0) {
        code = 503;
        evhttp_add_header(oh, "Retry-After", "120");
        evbuffer_add_printf(out, "busy");
    } else if (strncmp(uri, "/big/", 5) == 0) {
        long n = atol(uri + 5);
        for (long i = 0; i < n; i++) {
            char ch = (char)('a' + i % 26);
            evbuffer_add(out, &ch, 1);
        }
    } else if (strncmp(uri, "/chunks/", 8) == 0 || strncmp(uri, "/bigchunk/", 10) == 0) {
        /* chunked: N chunks of 1000 bytes, or one chunk of N bytes */
        int many = uri[1] == 'c';
        long n = atol(uri + (many ? 8 : 10)), per = many ? 1000 : n, count = many ? n : 1;
        evhttp_send_reply_start(req, 200, "OK");
        for (long j = 0; j < count; j++) {
            for (long i = 0; i < per; i++) {
                char ch = (char)('a' + (j * per + i) % 26);
                evbuffer_add(out, &ch, 1);
            }
            evhttp_send_reply_chunk(req, out);
        }
        evhttp_send_reply_end(req);
        evbuffer_free(out);
        return;
    } else if (strcmp(uri, "/echo") == 0) {
        evbuffer_add(out, s->body, s->body_len);
    } else if (strcmp(uri, "/close") == 0) {
        evhttp_add_header(oh, "Connection", "close");
        evbuffer_add_printf(out, "bye");
    } else {
        evbuffer_add_printf(out, "ok");
    }
    evhttp_send_reply(req, code, NULL, out);
    evbuffer_free(out);
}

static void srv_start(struct srv *s, struct event_base *base, const char *cert, const char *key)
{
    struct evhttp_bound_socket *bound;
    struct sockaddr_in sin;
    socklen_t len = sizeof(sin);

    memset(s, 0, sizeof(*s));
    s->base = base;
    if (cert) {
        s->tls = SSL_CTX_new(TLS_server_method());
        assert_non_null(s->tls);
        assert_int_equal(SSL_CTX_use_certificate_chain_file(s->tls, cert_path(cert)), 1);
        assert_int_equal(SSL_CTX_use_PrivateKey_file(s->tls, cert_path(key), SSL_FILETYPE_PEM), 1);
    }
    s->http = evhttp_new(base);
    assert_non_null(s->http);
    evhttp_set_bevcb(s->http, on_srv_bev, s);
    evhttp_set_gencb(s->http, on_srv_request, s);
    bound = evhttp_bind_socket_with_handle(s->http, "127.0.0.1", 0);
    assert_non_null(bound);
    assert_int_equal(getsockname(evhttp_bound_socket_get_fd(bound), (struct sockaddr *)&sin, &len), 0);
    s->port = ntohs(sin.sin_port);
}

static void srv_stop(struct srv *s)
{
    evhttp_free(s->http);
    if (s->tls)
        SSL_CTX_free(s->tls);
    free(s->body);
}

static const char *url_for(const char *scheme, const char *host, int port, const char *path)
{
    static char buf[4][512];
    static int next;
    char *p = buf[next++ % 4];
    snprintf(p, 512, "%s://%s:%d%s", scheme, host, port, path);
    return p;
}

/* ---- a listener that accepts and never answers -------------------------------------- */

struct hang {
    struct evconnlistener *listener;
    int port;
    int accepted;
    evutil_socket_t fds[64];
};

static void on_hang_accept(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa, int socklen, void *arg)
{
    struct hang *h = arg;
    (void)l;
    (void)sa;
    (void)socklen;
    if (h->accepted < 64)
        h->fds[h->accepted] = fd;
    else
        evutil_closesocket(fd);
    h->accepted++;
}

static int listen_port(evutil_socket_t fd)
{
    struct sockaddr_in sin;
    socklen_t len = sizeof(sin);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&sin, &len), 0);
    return ntohs(sin.sin_port);
}

static struct evconnlistener *listen_local(struct event_base *base, evconnlistener_cb cb, void *arg)
{
    struct sockaddr_in sin;
    struct evconnlistener *l;

    memset(&sin, 0, sizeof(sin));
    sin.sin_family = AF_INET;
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    l = evconnlistener_new_bind(base, cb, arg, LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE, 64, (struct sockaddr *)&sin,
                                sizeof(sin));
    assert_non_null(l);
    return l;
}

static void hang_start(struct hang *h, struct event_base *base)
{
    memset(h, 0, sizeof(*h));
    h->listener = listen_local(base, on_hang_accept, h);
    h->port = listen_port(evconnlistener_get_fd(h->listener));
}

static void hang_stop(struct hang *h)
{
    for (int i = 0; i < h->accepted && i < 64; i++)
        evutil_closesocket(h->fds[i]);
    evconnlistener_free(h->listener);
}

/* A port nothing listens on. */
static int closed_port(void)
{
    struct sockaddr_in sin;
    socklen_t len = sizeof(sin);
    int fd = socket(AF_INET, SOCK_STREAM, 0), port;

    memset(&sin, 0, sizeof(sin));
    sin.sin_family = AF_INET;
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(bind(fd, (struct sockaddr *)&sin, sizeof(sin)), 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&sin, &len), 0);
    port = ntohs(sin.sin_port);
    close(fd);
    return port;
}

/* ---- tests ------------------------------------------------------------------------------ */

static void test_post_exact_body_and_headers(void **state)
{
    struct env e;
    struct srv s;
    struct got g = {0};
    static const char body[] = "{\"id\":\"evt_1\",\"bin\":\"\0\x01\xff\"}";
    const struct http_header hdrs[] = {
        {"Content-Type", "application/json"},
        {"webhook-id", "msg_2KWPBgLlAfxdpx2AI54pPJ85f4W"},
        {"webhook-timestamp", "1674087231"},
        {"webhook-signature", "v1,K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN/H/pI4="},
    };
    char err[256];
    char host[64];
    (void)state;

    env_init(&e, &plain_cfg);
    srv_start(&s, e.base, NULL, NULL);
    assert_int_equal(http_client_post(e.client, "ep1", url_for("http", "127.0.0.1", s.port, "/hook?x=1&y=%20"), hdrs,
                                      4, body, sizeof(body) - 1, 5000, 2, on_result, &g, err, sizeof(err)),
                     0);
    assert_int_equal(http_client_inflight(e.client), 1);
    assert_true(run_until(e.base, &g.calls, 1, 5000));

    assert_string_equal(g.error, "");
    assert_int_equal(g.status, 200);
    assert_int_equal(g.body_len, 2);
    assert_memory_equal(g.body, "ok", 2);
    assert_false(g.has_retry_after);
    assert_true(g.duration_us > 0);
    assert_int_equal(http_client_inflight(e.client), 0);

    assert_int_equal(s.requests, 1);
    assert_int_equal(s.method, EVHTTP_REQ_POST);
    assert_string_equal(s.uri, "/hook?x=1&y=%20");
    assert_int_equal(s.body_len, sizeof(body) - 1);
    assert_memory_equal(s.body, body, sizeof(body) - 1);
    for (int i = 0; i < 4; i++)
        assert_string_equal(srv_header(&s, hdrs[i].name), hdrs[i].value);
    snprintf(host, sizeof(host), "127.0.0.1:%d", s.port);
    assert_string_equal(srv_header(&s, "Host"), host);
    assert_string_equal(srv_header(&s, "User-Agent"), "hookd-test/1");
    snprintf(host, sizeof(host), "%zu", sizeof(body) - 1);
    assert_string_equal(srv_header(&s, "Content-Length"), host);

    env_done(&e);
    srv_stop(&s);
}

static void test_caller_user_agent_wins(void **state)
{
    struct env e;
    struct srv s;
    struct got g = {0};
    const struct http_header hdrs[] = {{"User-Agent", "partner-relay/2"}};
    char err[256];
    (void)state;

    env_init(&e, &plain_cfg);
    srv_start(&s, e.base, NULL, NULL);
    assert_int_equal(http_client_post(e.client, "ep", url_for("http", "127.0.0.1", s.port, "/"), hdrs, 1, "x", 1, 5000,
                                      1, on_result, &g, err, sizeof(err)),
                     0);
    assert_true(run_until(e.base, &g.calls, 1, 5000));
    assert_int_equal(g.status, 200);
    assert_string_equal(srv_header(&s, "User-Agent"), "partner-relay/2");
    env_done(&e);
    srv_stop(&s);
}

/* headers_at_send: asked as the request is written, with the request's
 * callback arg, once per request; a request that waited in its key's queue
 * gets the value current when it leaves the queue. */
static int late_calls;
static char late_value[32];
static struct http_header late_hdr[1];

static const struct http_header *late_headers(void *arg, size_t *n)
{
    struct got *g = arg;
    late_calls++;
    snprintf(late_value, sizeof(late_value), "sent-as-%d-after-%d", late_calls, g->counter ? *g->counter : -1);
    late_hdr[0] = (struct http_header){"x-late", late_value};
    *n = 1;
    return late_hdr;
}

static void test_headers_at_send(void **state)
{
    struct env e;
    struct srv s;
    int done = 0;
    struct got g1 = {.counter = &done}, g2 = {.counter = &done};
    struct http_client_config cfg = plain_cfg;
    (void)state;

    cfg.headers_at_send = late_headers;
    late_calls = 0;
    env_init(&e, &cfg);
    srv_start(&s, e.base, NULL, NULL);
    /* one slot for the key: the second request waits for the first */
    post(&e, "ep", url_for("http", "127.0.0.1", s.port, "/"), "a", 5000, 1, &g1);
    post(&e, "ep", url_for("http", "127.0.0.1", s.port, "/"), "b", 5000, 1, &g2);
    assert_true(run_until(e.base, &done, 2, 5000));
    assert_int_equal(g1.status, 200);
    assert_int_equal(g2.status, 200);
    assert_int_equal(late_calls, 2);
    /* the last request the server saw is the second; it was written after the first finished */
    assert_string_equal(srv_header(&s, "x-late"), "sent-as-2-after-1");
    env_done(&e);
    srv_stop(&s);
}

static void test_statuses_passed_through(void **state)
{
    static const int codes[] = {200, 201, 204, 400, 410, 500};
    struct env e;
    struct srv s;
    (void)state;

    env_init(&e, &plain_cfg);
    srv_start(&s, e.base, NULL, NULL);
    for (size_t i = 0; i < sizeof(codes) / sizeof(codes[0]); i++) {
        struct got g = {0};
        char path[32], want[32];
        snprintf(path, sizeof(path), "/status/%d", codes[i]);
        post(&e, "ep", url_for("http", "127.0.0.1", s.port, path), "{}", 5000, 1, &g);
        assert_true(run_until(e.base, &g.calls, 1, 5000));
        assert_int_equal(g.calls, 1);
        assert_string_equal(g.error, "");
        assert_int_equal(g.status, codes[i]);
        if (codes[i] == 204) {
            assert_int_equal(g.body_len, 0); /* 204 has no body */
        } else {
            snprintf(want, sizeof(want), "status %d", codes[i]);
            assert_int_equal(g.body_len, strlen(want));
            assert_memory_equal(g.body, want, strlen(want));
        }
    }
    env_done(&e);
    srv_stop(&s);
}

static void test_retry_after_passed(void **state)
{
    struct env e;
    struct srv s;
    struct got g = {0}, h = {0};
    (void)state;

    env_init(&e, &plain_cfg);
    srv_start(&s, e.base, NULL, NULL);
    post(&e, "ep", url_for("http", "127.0.0.1", s.port, "/retry"), "{}", 5000, 1, &g);
    assert_true(run_until(e.base, &g.calls, 1, 5000));
    assert_int_equal(g.status, 503);
    assert_true(g.has_retry_after);
    assert_string_equal(g.retry_after, "120");
    assert_memory_equal(g.body, "busy", 4);

    post(&e, "ep", url_for("http", "127.0.0.1", s.port, "/"), "{}", 5000, 1, &h);
    assert_true(run_until(e.base, &h.calls, 1, 5000));
    assert_int_equal(h.status, 200);
    assert_false(h.has_retry_after);
    env_done(&e);
    srv_stop(&s);
}

static void assert_pattern(const struct got *g, size_t n)
{
    assert_int_equal(g->body_len, n);
    for (size_t i = 0; i < n; i++)
        if (g->body[i] != (char)('a' + i % 26))
            fail_msg("body byte %zu is %d", i, g->body[i]);
}

static void test_response_body_capped(void **state)
{
    struct http_client_config cfg = plain_cfg;
    struct env e;
    struct srv s;
    struct got small = {0}, big = {0}, huge = {0}, after = {0};
    (void)state;

    cfg.max_response_bytes = 100;
    env_init(&e, &cfg);
    srv_start(&s, e.base, NULL, NULL);

    post(&e, "ep", url_for("http", "127.0.0.1", s.port, "/big/60"), "", 5000, 1, &small);
    assert_true(run_until(e.base, &small.calls, 1, 5000));
    assert_int_equal(small.status, 200);
    assert_pattern(&small, 60);

    post(&e, "ep", url_for("http", "127.0.0.1", s.port, "/big/10000"), "", 5000, 1, &big);
    assert_true(run_until(e.base, &big.calls, 1, 5000));
    assert_int_equal(big.status, 200);
    assert_pattern(&big, 100);

    /* a chunked body far past the cap: read, kept up to the cap, then cut */
    post(&e, "ep", url_for("http", "127.0.0.1", s.port, "/chunks/300"), "", 5000, 1, &huge);
    assert_true(run_until(e.base, &huge.calls, 1, 5000));
    assert_string_equal(huge.error, "");
    assert_int_equal(huge.status, 200);
    assert_pattern(&huge, 100);

    post(&e, "ep", url_for("http", "127.0.0.1", s.port, "/big/5"), "", 5000, 1, &after);
    assert_true(run_until(e.base, &after.calls, 1, 5000));
    assert_int_equal(after.status, 200);
    assert_pattern(&after, 5);
    /* the first three shared one connection; the cut one was not reused */
    assert_int_equal(s.connections, 2);

    /* bodies evhttp would have to hold whole (a 3 MB Content-Length or one
     * 3 MB chunk) are refused up front, before any of them is kept; the
     * status still comes through */
    memset(&huge, 0, sizeof(huge));
    post(&e, "ep", url_for("http", "127.0.0.1", s.port, "/big/3000000"), "", 5000, 1, &huge);
    assert_true(run_until(e.base, &huge.calls, 1, 5000));
    assert_string_equal(huge.error, "");
    assert_int_equal(huge.status, 200);
    assert_int_equal(huge.body_len, 0);
    memset(&huge, 0, sizeof(huge));
    post(&e, "ep", url_for("http", "127.0.0.1", s.port, "/bigchunk/3000000"), "", 5000, 1, &huge);
    assert_true(run_until(e.base, &huge.calls, 1, 5000));
    assert_string_equal(huge.error, "");
    assert_int_equal(huge.status, 200);
    assert_int_equal(huge.body_len, 0);
    memset(&after, 0, sizeof(after));
    post(&e, "ep", url_for("http", "127.0.0.1", s.port, "/big/7"), "", 5000, 1, &after);
    assert_true(run_until(e.base, &after.calls, 1, 5000));
    assert_pattern(&after, 7);
    assert_int_equal(s.connections, 4);

    env_done(&e);
    srv_stop(&s);
}

static void test_timeout_when_server_never_answers(void **state)
{
    struct env e;
    struct hang h;
    struct got g = {0};
    int64_t t0;
    (void)state;

    env_init(&e, &plain_cfg);
    hang_start(&h, e.base);
    t0 = now_ms();
    post(&e, "ep", url_for("http", "127.0.0.1", h.port, "/"), "{}", 200, 1, &g);
    assert_true(run_until(e.base, &g.calls, 1, 5000));
    assert_int_equal(g.calls, 1);
    assert_string_equal(g.error, "timeout");
    assert_int_equal(g.status, 0);
    assert_int_equal(g.body_len, 0);
    assert_true(g.at_ms - t0 >= 190);
    assert_true(g.at_ms - t0 < 2000);
    assert_true(g.duration_us >= 190000);
    assert_int_equal(h.accepted, 1);
    run_for(e.base, 50);
    assert_int_equal(g.calls, 1); /* exactly once */
    env_done(&e);
    hang_stop(&h);
}

static void test_connection_refused(void **state)
{
    struct env e;
    struct got g = {0};
    (void)state;

    env_init(&e, &plain_cfg);
    post(&e, "ep", url_for("http", "127.0.0.1", closed_port(), "/"), "{}", 5000, 1, &g);
    assert_true(run_until(e.base, &g.calls, 1, 5000));
    assert_string_equal(g.error, "connection refused");
    assert_int_equal(g.status, 0);
    env_done(&e);
}

static void test_keepalive_reuse(void **state)
{
    struct env e;
    struct srv s;
    struct got g[5], closing = {0}, after = {0};
    (void)state;

    memset(g, 0, sizeof(g));
    env_init(&e, &plain_cfg);
    srv_start(&s, e.base, NULL, NULL);
    for (int i = 0; i < 5; i++) {
        post(&e, "ep", url_for("http", "127.0.0.1", s.port, "/echo"), "hello", 5000, 4, &g[i]);
        assert_true(run_until(e.base, &g[i].calls, 1, 5000));
        assert_int_equal(g[i].status, 200);
        assert_memory_equal(g[i].body, "hello", 5);
    }
    assert_int_equal(s.requests, 5);
    assert_int_equal(s.connections, 1);

    /* a response with Connection: close is not kept */
    post(&e, "ep", url_for("http", "127.0.0.1", s.port, "/close"), "x", 5000, 4, &closing);
    assert_true(run_until(e.base, &closing.calls, 1, 5000));
    assert_int_equal(closing.status, 200);
    post(&e, "ep", url_for("http", "127.0.0.1", s.port, "/"), "x", 5000, 4, &after);
    assert_true(run_until(e.base, &after.calls, 1, 5000));
    assert_int_equal(after.status, 200);
    assert_int_equal(s.connections, 2);

    /* connections are per origin: another key reuses the idle one */
    memset(&after, 0, sizeof(after));
    post(&e, "other", url_for("http", "127.0.0.1", s.port, "/"), "x", 5000, 4, &after);
    assert_true(run_until(e.base, &after.calls, 1, 5000));
    assert_int_equal(after.status, 200);
    assert_int_equal(s.requests, 8);
    assert_int_equal(s.connections, 2);

    env_done(&e);
    srv_stop(&s);
}

static void test_slow_key_does_not_delay_other_keys(void **state)
{
    struct env e;
    struct srv fast;
    struct hang slow;
    struct got sg[4], fg[3];
    int slow_done = 0, fast_done = 0;
    int64_t t0;
    (void)state;

    memset(sg, 0, sizeof(sg));
    memset(fg, 0, sizeof(fg));
    env_init(&e, &plain_cfg);
    srv_start(&fast, e.base, NULL, NULL);
    hang_start(&slow, e.base);

    t0 = now_ms();
    for (int i = 0; i < 4; i++) {
        sg[i].counter = &slow_done;
        post(&e, "slow", url_for("http", "127.0.0.1", slow.port, "/"), "{}", 600, 2, &sg[i]);
    }
    for (int i = 0; i < 3; i++) {
        fg[i].counter = &fast_done;
        post(&e, "fast", url_for("http", "127.0.0.1", fast.port, "/"), "{}", 5000, 1, &fg[i]);
    }
    assert_int_equal(http_client_inflight(e.client), 7);

    assert_true(run_until(e.base, &fast_done, 3, 5000));
    for (int i = 0; i < 3; i++)
        assert_int_equal(fg[i].status, 200);
    assert_int_equal(slow_done, 0); /* all four still pending */
    assert_true(now_ms() - t0 < 500);
    /* the fast key's bound of 1 kept it on one connection */
    assert_int_equal(fast.connections, 1);
    assert_true(run_until(e.base, &slow.accepted, 2, 1000));
    run_for(e.base, 100);
    assert_int_equal(slow.accepted, 2); /* only max_inflight_for_key on the wire */
    assert_int_equal(http_client_inflight(e.client), 4);

    assert_true(run_until(e.base, &slow_done, 4, 5000));
    for (int i = 0; i < 4; i++)
        assert_string_equal(sg[i].error, "timeout");
    assert_int_equal(slow.accepted, 4);
    /* FIFO: the last two waited for the first two to time out */
    assert_true(sg[2].at_ms - t0 >= 1100);
    assert_true(sg[3].at_ms - t0 >= 1100);
    assert_true(sg[0].at_ms <= sg[2].at_ms && sg[1].at_ms <= sg[2].at_ms);
    assert_int_equal(http_client_inflight(e.client), 0);

    env_done(&e);
    srv_stop(&fast);
    hang_stop(&slow);
}

static void test_total_inflight_bound(void **state)
{
    struct http_client_config cfg = plain_cfg;
    struct env e;
    struct hang h;
    struct got g[3];
    int done = 0;
    (void)state;

    memset(g, 0, sizeof(g));
    cfg.max_inflight_total = 2;
    env_init(&e, &cfg);
    hang_start(&h, e.base);
    for (int i = 0; i < 3; i++) {
        char key[32];
        snprintf(key, sizeof(key), "key%d", i);
        g[i].counter = &done;
        post(&e, key, url_for("http", "127.0.0.1", h.port, "/"), "{}", 400, 5, &g[i]);
    }
    assert_true(run_until(e.base, &h.accepted, 2, 1000));
    run_for(e.base, 100);
    assert_int_equal(h.accepted, 2);
    assert_int_equal(done, 0);
    assert_true(run_until(e.base, &done, 3, 5000));
    assert_int_equal(h.accepted, 3);
    for (int i = 0; i < 3; i++)
        assert_string_equal(g[i].error, "timeout");
    env_done(&e);
    hang_stop(&h);
}

static void test_private_addresses_refused(void **state)
{
    struct http_client_config cfg = plain_cfg;
    struct env e;
    struct srv s;
    struct got a = {0}, b = {0}, c = {0}, d = {0}, m = {0};
    (void)state;

    cfg.allow_private_networks = 0;
    env_init(&e, &cfg);
    srv_start(&s, e.base, NULL, NULL);

    post(&e, "ep", "http://10.0.0.1/hook", "{}", 5000, 1, &a);
    post(&e, "ep2", url_for("http", "127.0.0.1", s.port, "/"), "{}", 5000, 1, &b);
    post(&e, "ep3", url_for("http", "[::ffff:127.0.0.1]", s.port, "/"), "{}", 5000, 1, &c);
    post(&e, "ep4", url_for("http", "localhost", s.port, "/"), "{}", 5000, 1, &d);
    post(&e, "ep5", "https://169.254.169.254/latest/meta-data/", "", 5000, 1, &m);
    assert_true(run_until(e.base, &d.calls, 1, 5000));
    assert_true(run_until(e.base, &m.calls, 1, 5000));

    assert_string_equal(a.error, "refused private address 10.0.0.1 (allow_private_networks is off)");
    assert_string_equal(b.error, "refused private address 127.0.0.1 (allow_private_networks is off)");
    assert_string_equal(c.error, "refused private address ::ffff:127.0.0.1 (allow_private_networks is off)");
    /* a host name is checked after resolution (here from /etc/hosts) */
    assert_string_equal(d.error, "refused private address 127.0.0.1 (allow_private_networks is off)");
    assert_string_equal(m.error, "refused private address 169.254.169.254 (allow_private_networks is off)");
    assert_int_equal(a.status + b.status + c.status + d.status, 0);
    assert_int_equal(s.connections, 0); /* nothing was even connected */
    env_done(&e);
    srv_stop(&s);
}

/* ---- a tiny DNS server: names resolve to what the test says --------------------------- */

struct dns_srv {
    struct evdns_server_port *port;
    evutil_socket_t fd;
    int udp_port;
    int queries;
};

static void on_dns_query(struct evdns_server_request *req, void *arg)
{
    static const struct {
        const char *name;
        const char *a[2];
    } zone[] = {
        {"rebind.test", {"10.0.0.5", NULL}},
        {"mixed.test", {"127.0.0.1", "203.0.113.7"}},
        {"app.test", {"127.0.0.1", NULL}},
        {"dual.test", {"127.0.0.2", "127.0.0.1"}}, /* nothing listens on .2 */
    };
    struct dns_srv *d = arg;
    int found = 0;

    d->queries++;
    for (int i = 0; i < req->nquestions; i++) {
        const struct evdns_server_question *q = req->questions[i];
        for (size_t z = 0; z < sizeof(zone) / sizeof(zone[0]); z++) {
            if (strcasecmp(q->name, zone[z].name) != 0)
                continue;
            found = 1;
            if (q->type != EVDNS_TYPE_A)
                continue; /* NOERROR, no AAAA records */
            for (int j = 0; j < 2 && zone[z].a[j]; j++) {
                struct in_addr a;
                inet_pton(AF_INET, zone[z].a[j], &a);
                evdns_server_request_add_a_reply(req, q->name, 1, &a, 60);
            }
        }
    }
    evdns_server_request_respond(req, found ? 0 : DNS_ERR_NOTEXIST);
}

static void dns_srv_start(struct dns_srv *d, struct env *e)
{
    struct sockaddr_in sin;
    socklen_t len = sizeof(sin);
    char ns[64];

    memset(d, 0, sizeof(*d));
    d->fd = socket(AF_INET, SOCK_DGRAM, 0);
    assert_true(d->fd >= 0);
    evutil_make_socket_nonblocking(d->fd);
    memset(&sin, 0, sizeof(sin));
    sin.sin_family = AF_INET;
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(bind(d->fd, (struct sockaddr *)&sin, sizeof(sin)), 0);
    assert_int_equal(getsockname(d->fd, (struct sockaddr *)&sin, &len), 0);
    d->udp_port = ntohs(sin.sin_port);
    d->port = evdns_add_server_port_with_base(e->base, d->fd, 0, on_dns_query, d);
    assert_non_null(d->port);
    snprintf(ns, sizeof(ns), "127.0.0.1:%d", d->udp_port);
    assert_int_equal(evdns_base_nameserver_ip_add(e->dns, ns), 0);
}

static void dns_srv_stop(struct dns_srv *d)
{
    evdns_close_server_port(d->port);
    evutil_closesocket(d->fd);
}

static void test_dns_answers_are_checked(void **state)
{
    struct http_client_config cfg = plain_cfg;
    struct env e;
    struct dns_srv d;
    struct got rebind = {0}, mixed = {0}, missing = {0};
    (void)state;

    cfg.allow_private_networks = 0;
    env_init(&e, &cfg);
    dns_srv_start(&d, &e);
    post(&e, "a", "https://rebind.test/hook", "{}", 5000, 1, &rebind);
    post(&e, "b", "https://mixed.test/hook", "{}", 5000, 1, &mixed);
    post(&e, "c", "https://missing.test/hook", "{}", 5000, 1, &missing);
    assert_true(run_until(e.base, &rebind.calls, 1, 5000));
    assert_true(run_until(e.base, &mixed.calls, 1, 5000));
    assert_true(run_until(e.base, &missing.calls, 1, 5000));
    assert_string_equal(rebind.error, "refused private address 10.0.0.5 (allow_private_networks is off)");
    /* one private answer among public ones refuses the name */
    assert_string_equal(mixed.error, "refused private address 127.0.0.1 (allow_private_networks is off)");
    assert_non_null(strstr(missing.error, "dns: cannot resolve missing.test: "));
    assert_true(d.queries > 0);
    env_done(&e);
    dns_srv_stop(&d);
}

static void test_dns_name_connects_to_resolved_address(void **state)
{
    struct env e;
    struct dns_srv d;
    struct srv s;
    struct got g = {0}, dual = {0};
    char host[64];
    (void)state;

    env_init(&e, &plain_cfg);
    dns_srv_start(&d, &e);
    srv_start(&s, e.base, NULL, NULL);
    post(&e, "a", url_for("http", "app.test", s.port, "/x"), "{}", 5000, 1, &g);
    assert_true(run_until(e.base, &g.calls, 1, 5000));
    assert_string_equal(g.error, "");
    assert_int_equal(g.status, 200);
    /* connected to the checked address, but the server sees the name */
    snprintf(host, sizeof(host), "app.test:%d", s.port);
    assert_string_equal(srv_header(&s, "Host"), host);

    /* first address refuses: the next one is tried within the same attempt */
    post(&e, "b", url_for("http", "dual.test", s.port, "/"), "{}", 5000, 1, &dual);
    assert_true(run_until(e.base, &dual.calls, 1, 5000));
    assert_string_equal(dual.error, "");
    assert_int_equal(dual.status, 200);
    env_done(&e);
    srv_stop(&s);
    dns_srv_stop(&d);
}

static void test_dns_timeout_and_cancel(void **state)
{
    struct env e;
    struct got g = {0}, q = {0};
    int64_t t0 = now_ms();
    (void)state;

    /* no nameserver: the lookup never completes, the deadline ends it */
    env_init(&e, &plain_cfg);
    post(&e, "a", "https://nowhere.test/", "{}", 150, 1, &g);
    assert_true(run_until(e.base, &g.calls, 1, 5000));
    assert_string_equal(g.error, "timeout");
    assert_true(now_ms() - t0 >= 140);
    /* and a pending lookup at free time is cancelled cleanly */
    post(&e, "a", "https://nowhere.test/", "{}", 5000, 1, &q);
    run_for(e.base, 20);
    http_client_free(e.client);
    e.client = NULL;
    assert_int_equal(q.calls, 1);
    assert_string_equal(q.error, "cancelled");
    env_done(&e);
}

/* ---- TLS ------------------------------------------------------------------------------- */

static struct http_client_config tls_cfg(void)
{
    struct http_client_config cfg = plain_cfg;
    cfg.ca_file = cert_path("ca.pem");
    return cfg;
}

static void test_tls_valid(void **state)
{
    struct http_client_config cfg = tls_cfg();
    struct env e;
    struct srv s;
    struct got a = {0}, b = {0}, c = {0};
    (void)state;

    env_init(&e, &cfg);
    srv_start(&s, e.base, "server.pem", "server.key");
    post(&e, "ep", url_for("https", "localhost", s.port, "/echo"), "secret payload", 5000, 2, &a);
    assert_true(run_until(e.base, &a.calls, 1, 5000));
    assert_string_equal(a.error, "");
    assert_int_equal(a.status, 200);
    assert_memory_equal(a.body, "secret payload", 14);
    /* kept alive over TLS too */
    post(&e, "ep", url_for("https", "localhost", s.port, "/"), "x", 5000, 2, &b);
    assert_true(run_until(e.base, &b.calls, 1, 5000));
    assert_int_equal(b.status, 200);
    assert_int_equal(s.connections, 1);
    /* an IP literal is verified against the certificate's IP SAN */
    post(&e, "ep", url_for("https", "127.0.0.1", s.port, "/"), "x", 5000, 2, &c);
    assert_true(run_until(e.base, &c.calls, 1, 5000));
    assert_string_equal(c.error, "");
    assert_int_equal(c.status, 200);
    env_done(&e);
    srv_stop(&s);
}

static void test_tls_wrong_hostname(void **state)
{
    struct http_client_config cfg = tls_cfg();
    struct env e;
    struct srv s;
    struct got g = {0}, ip = {0};
    (void)state;

    env_init(&e, &cfg);
    srv_start(&s, e.base, "wrong.pem", "wrong.key");
    post(&e, "ep", url_for("https", "localhost", s.port, "/"), "{}", 5000, 1, &g);
    assert_true(run_until(e.base, &g.calls, 1, 5000));
    assert_string_equal(g.error, "tls: certificate verify failed: hostname mismatch");
    assert_int_equal(g.status, 0);
    post(&e, "ep", url_for("https", "127.0.0.1", s.port, "/"), "{}", 5000, 1, &ip);
    assert_true(run_until(e.base, &ip.calls, 1, 5000));
    assert_string_equal(ip.error, "tls: certificate verify failed: IP address mismatch");
    assert_int_equal(s.requests, 0);
    env_done(&e);
    srv_stop(&s);
}

static void test_tls_untrusted(void **state)
{
    struct http_client_config cfg = tls_cfg();
    struct env e;
    struct srv s, good;
    struct got g = {0}, sys = {0};
    (void)state;

    env_init(&e, &cfg);
    srv_start(&s, e.base, "untrusted.pem", "untrusted.key");
    post(&e, "ep", url_for("https", "localhost", s.port, "/"), "{}", 5000, 1, &g);
    assert_true(run_until(e.base, &g.calls, 1, 5000));
    if (strncmp(g.error, "tls: certificate verify failed: self", 36) != 0)
        fail_msg("unexpected error: %s", g.error);
    assert_int_equal(s.requests, 0);
    env_done(&e);
    srv_stop(&s);

    /* without ca_file the system store is used, which knows no test CA */
    env_init(&e, &plain_cfg);
    srv_start(&good, e.base, "server.pem", "server.key");
    post(&e, "ep", url_for("https", "localhost", good.port, "/"), "{}", 5000, 1, &sys);
    assert_true(run_until(e.base, &sys.calls, 1, 5000));
    assert_string_equal(sys.error, "tls: certificate verify failed: unable to get local issuer certificate");
    env_done(&e);
    srv_stop(&good);
}

static void test_tls_to_plain_server(void **state)
{
    struct http_client_config cfg = tls_cfg();
    struct env e;
    struct srv s;
    struct got g = {0};
    (void)state;

    env_init(&e, &cfg);
    srv_start(&s, e.base, NULL, NULL);
    post(&e, "ep", url_for("https", "localhost", s.port, "/"), "{}", 3000, 1, &g);
    assert_true(run_until(e.base, &g.calls, 1, 5000));
    if (strncmp(g.error, "tls: handshake failed: ", 23) != 0)
        fail_msg("unexpected error: %s", g.error);
    env_done(&e);
    srv_stop(&s);
}

/* ---- a kept-alive connection that the server drops --------------------------------------- */

struct flaky {
    struct evconnlistener *listener;
    struct event_base *base;
    int port;
    int accepted;
    int served;
};

struct flaky_conn {
    struct flaky *f;
    int index; /* 1-based accept order */
    int requests;
};

static void on_flaky_event(struct bufferevent *bev, short what, void *arg)
{
    (void)what;
    free(arg);
    bufferevent_free(bev);
}

/* Answers the first request on connection 1, then drops it when the second
 * one arrives - what a server closing an idle keep-alive connection looks
 * like to a client that just reused it. Later connections are answered. */
static void on_flaky_read(struct bufferevent *bev, void *arg)
{
    struct flaky_conn *fc = arg;
    struct evbuffer *in = bufferevent_get_input(bev);
    struct evbuffer_ptr end = evbuffer_search(in, "\r\n\r\n", 4, NULL);
    char head[2048];
    const char *cl;
    size_t hlen, blen = 0;

    if (end.pos < 0)
        return;
    hlen = (size_t)end.pos + 4;
    if (hlen >= sizeof(head))
        hlen = sizeof(head) - 1;
    evbuffer_copyout(in, head, hlen);
    head[hlen] = '\0';
    cl = strcasestr(head, "Content-Length:");
    if (cl)
        blen = (size_t)atol(cl + 15);
    if (evbuffer_get_length(in) < (size_t)end.pos + 4 + blen)
        return;
    evbuffer_drain(in, (size_t)end.pos + 4 + blen);
    fc->requests++;
    if (fc->index == 1 && fc->requests == 2) {
        on_flaky_event(bev, BEV_EVENT_EOF, fc);
        return;
    }
    fc->f->served++;
    evbuffer_add_printf(bufferevent_get_output(bev), "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nok%d", fc->index);
}

static void on_flaky_accept(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa, int socklen, void *arg)
{
    struct flaky *f = arg;
    struct flaky_conn *fc = calloc(1, sizeof(*fc));
    struct bufferevent *bev = bufferevent_socket_new(f->base, fd, BEV_OPT_CLOSE_ON_FREE);
    (void)l;
    (void)sa;
    (void)socklen;
    fc->f = f;
    fc->index = ++f->accepted;
    bufferevent_setcb(bev, on_flaky_read, NULL, on_flaky_event, fc);
    bufferevent_enable(bev, EV_READ | EV_WRITE);
}

static void test_dropped_keepalive_connection_is_retried(void **state)
{
    struct env e;
    struct flaky f;
    struct got a = {0}, b = {0};
    (void)state;

    env_init(&e, &plain_cfg);
    memset(&f, 0, sizeof(f));
    f.base = e.base;
    f.listener = listen_local(e.base, on_flaky_accept, &f);
    f.port = listen_port(evconnlistener_get_fd(f.listener));

    post(&e, "ep", url_for("http", "127.0.0.1", f.port, "/"), "{\"n\":1}", 5000, 1, &a);
    assert_true(run_until(e.base, &a.calls, 1, 5000));
    assert_int_equal(a.status, 200);
    assert_memory_equal(a.body, "ok1", 3);
    post(&e, "ep", url_for("http", "127.0.0.1", f.port, "/"), "{\"n\":2}", 5000, 1, &b);
    assert_true(run_until(e.base, &b.calls, 1, 5000));
    assert_string_equal(b.error, "");
    assert_int_equal(b.status, 200);
    assert_memory_equal(b.body, "ok2", 3);
    assert_int_equal(f.accepted, 2);
    assert_int_equal(f.served, 2);
    env_done(&e);
    evconnlistener_free(f.listener);
}

/* ---- API contract ------------------------------------------------------------------------- */

static void test_immediate_errors(void **state)
{
    struct env e;
    struct got g = {0};
    char err[256];
    const struct http_header host[] = {{"Host", "evil.example"}};
    const struct http_header crlf[] = {{"X-Sig", "a\r\nX-Injected: 1"}};
    const struct http_header badname[] = {{"X Sig", "a"}};
    (void)state;

    env_init(&e, &plain_cfg);
    assert_int_equal(http_client_post(e.client, "ep", "ftp://example.com/", NULL, 0, "", 0, 1000, 1, on_result, &g,
                                      err, sizeof(err)),
                     -1);
    assert_string_equal(err, "invalid URL: unsupported URL scheme (only http and https)");
    assert_int_equal(http_client_post(e.client, "ep", "https://example.com/", host, 1, "", 0, 1000, 1, on_result, &g,
                                      err, sizeof(err)),
                     -1);
    assert_string_equal(err, "header Host is set by the HTTP client");
    assert_int_equal(http_client_post(e.client, "ep", "https://example.com/", crlf, 1, "", 0, 1000, 1, on_result, &g,
                                      err, sizeof(err)),
                     -1);
    assert_string_equal(err, "header X-Sig: value contains a control character");
    assert_int_equal(http_client_post(e.client, "ep", "https://example.com/", badname, 1, "", 0, 1000, 1, on_result,
                                      &g, err, sizeof(err)),
                     -1);
    assert_int_equal(http_client_post(e.client, "", "https://example.com/", NULL, 0, "", 0, 1000, 1, on_result, &g,
                                      err, sizeof(err)),
                     -1);
    assert_int_equal(http_client_inflight(e.client), 0);
    run_for(e.base, 20);
    assert_int_equal(g.calls, 0);
    env_done(&e);

    {
        struct http_client_config cfg = plain_cfg;
        struct event_base *base = event_base_new();
        struct evdns_base *dns = evdns_base_new(base, 0);
        cfg.ca_file = "/nonexistent/ca.pem";
        assert_null(http_client_new(base, dns, &cfg, err, sizeof(err)));
        assert_non_null(strstr(err, "tls: cannot load CA file /nonexistent/ca.pem"));
        evdns_base_free(dns, 0);
        event_base_free(base);
    }
}

/* Requests still waiting in a key's FIFO are taken back unsent (reported
 * later from the loop, with unsent set); those on the wire and other keys'
 * requests are left alone. */
static void test_cancel_queued_takes_back_only_the_waiting(void **state)
{
    struct env e;
    struct hang h;
    struct srv other;
    struct got g[4], o;
    int done = 0, other_done = 0;
    (void)state;

    memset(g, 0, sizeof(g));
    memset(&o, 0, sizeof(o));
    env_init(&e, &plain_cfg);
    hang_start(&h, e.base);
    srv_start(&other, e.base, NULL, NULL);
    for (int i = 0; i < 4; i++) {
        g[i].counter = &done;
        post(&e, "ep", url_for("http", "127.0.0.1", h.port, "/"), "{}", 800, 1, &g[i]);
    }
    o.counter = &other_done;
    assert_true(run_until(e.base, &h.accepted, 1, 2000)); /* one on the wire, three queued */
    post(&e, "other", url_for("http", "127.0.0.1", other.port, "/"), "{}", 5000, 1, &o);
    assert_int_equal(http_client_cancel_queued(e.client, "ep"), 3);
    assert_int_equal(done, 0); /* reported from the loop, never inside the call */
    assert_int_equal(http_client_cancel_queued(e.client, "none"), 0);
    assert_true(run_until(e.base, &done, 3, 2000));
    for (int i = 1; i < 4; i++) {
        assert_int_equal(g[i].unsent, 1);
        assert_string_equal(g[i].error, "not sent");
        assert_int_equal(g[i].duration_us, 0);
    }
    assert_true(run_until(e.base, &done, 4, 5000));
    assert_int_equal(g[0].unsent, 0);
    assert_string_equal(g[0].error, "timeout");
    assert_int_equal(h.accepted, 1); /* the three were never sent */
    assert_true(run_until(e.base, &other_done, 1, 5000));
    assert_int_equal(o.status, 200);
    assert_int_equal(o.unsent, 0);
    assert_int_equal(http_client_inflight(e.client), 0);
    env_done(&e);
    hang_stop(&h);
    srv_stop(&other);
}

static void test_free_cancels_pending(void **state)
{
    struct env e;
    struct hang h;
    struct got g[3];
    int done = 0;
    (void)state;

    memset(g, 0, sizeof(g));
    env_init(&e, &plain_cfg);
    hang_start(&h, e.base);
    for (int i = 0; i < 3; i++) {
        g[i].counter = &done;
        post(&e, "ep", url_for("http", "127.0.0.1", h.port, "/"), "{}", 5000, 2, &g[i]);
    }
    assert_true(run_until(e.base, &h.accepted, 2, 2000)); /* two in flight, one queued */
    http_client_free(e.client);
    e.client = NULL;
    assert_int_equal(done, 3); /* before free returned */
    for (int i = 0; i < 3; i++) {
        assert_int_equal(g[i].calls, 1);
        assert_string_equal(g[i].error, "cancelled");
        assert_int_equal(g[i].status, 0);
    }
    assert_int_equal(g[2].duration_us, 0); /* never left the queue */
    env_done(&e);
    hang_stop(&h);
}

struct free_in_cb {
    struct env *e;
    struct got fast;
    struct got hung;
    int post_during_free;
};

/* The hung request is cancelled by the free below; posting from its
 * callback, while the free runs, is refused. */
static void on_hung_cancelled(const struct http_client_result *res, void *arg)
{
    struct free_in_cb *f = arg;
    struct got dummy = {0};
    char err[256];

    on_result(res, &f->hung);
    f->post_during_free = http_client_post(f->e->client, "x", "http://127.0.0.1:1/", NULL, 0, "", 0, 100, 1, on_result,
                                           &dummy, err, sizeof(err));
    assert_string_equal(err, "http client is shutting down");
}

static void on_fast_then_free(const struct http_client_result *res, void *arg)
{
    struct free_in_cb *f = arg;

    on_result(res, &f->fast);
    http_client_free(f->e->client);
    f->e->client = NULL;
    assert_int_equal(f->hung.calls, 1); /* reported before free returned */
}

static void test_free_from_inside_a_callback(void **state)
{
    struct env e;
    struct srv s;
    struct hang h;
    struct free_in_cb f;
    char err[256];
    (void)state;

    memset(&f, 0, sizeof(f));
    f.e = &e;
    env_init(&e, &plain_cfg);
    srv_start(&s, e.base, NULL, NULL);
    hang_start(&h, e.base);
    assert_int_equal(http_client_post(e.client, "hung", url_for("http", "127.0.0.1", h.port, "/"), NULL, 0, "{}", 2,
                                      5000, 1, on_hung_cancelled, &f, err, sizeof(err)),
                     0);
    assert_int_equal(http_client_post(e.client, "fast", url_for("http", "127.0.0.1", s.port, "/"), NULL, 0, "{}", 2,
                                      5000, 1, on_fast_then_free, &f, err, sizeof(err)),
                     0);
    assert_true(run_until(e.base, &f.fast.calls, 1, 5000));
    assert_int_equal(f.fast.status, 200);
    assert_null(e.client);
    assert_int_equal(f.hung.calls, 1);
    assert_string_equal(f.hung.error, "cancelled");
    assert_int_equal(f.post_during_free, -1);
    run_for(e.base, 20);
    env_done(&e);
    srv_stop(&s);
    hang_stop(&h);
}

struct chain {
    struct env *e;
    int port;
    int left;
    int completed;
    int last_status;
};

static void on_chain(const struct http_client_result *res, void *arg)
{
    struct chain *ch = arg;
    char err[256];

    ch->completed++;
    ch->last_status = res->status;
    if (--ch->left > 0 && http_client_post(ch->e->client, "chain", url_for("http", "127.0.0.1", ch->port, "/"), NULL,
                                           0, "{}", 2, 5000, 1, on_chain, ch, err, sizeof(err)) != 0)
        fail_msg("post from callback: %s", err);
}

static void test_post_from_callback_reuses_connection(void **state)
{
    struct env e;
    struct srv s;
    struct chain ch = {0};
    char err[256];
    (void)state;

    env_init(&e, &plain_cfg);
    srv_start(&s, e.base, NULL, NULL);
    ch.e = &e;
    ch.port = s.port;
    ch.left = 4;
    assert_int_equal(http_client_post(e.client, "chain", url_for("http", "127.0.0.1", s.port, "/"), NULL, 0, "{}", 2,
                                      5000, 1, on_chain, &ch, err, sizeof(err)),
                     0);
    assert_true(run_until(e.base, &ch.completed, 4, 5000));
    assert_int_equal(ch.last_status, 200);
    assert_int_equal(s.requests, 4);
    assert_int_equal(s.connections, 1);
    env_done(&e);
    srv_stop(&s);
}


static void stats_of(struct env *e, struct http_client_stats *st)
{
    http_client_stats(e->client, st);
}

/* Many keys (endpoints) on one origin share its idle connections, in turn
 * and concurrently; another port, scheme or host name is another origin. */
static void test_keys_share_origin_connections(void **state)
{
    struct env e;
    struct srv s, s2;
    struct got g[40], other = {0};
    struct http_client_stats st;
    int done = 0;
    (void)state;

    memset(g, 0, sizeof(g));
    env_init(&e, &plain_cfg);
    srv_start(&s, e.base, NULL, NULL);
    srv_start(&s2, e.base, NULL, NULL);
    /* one after the other: 20 keys, one connection */
    for (int i = 0; i < 20; i++) {
        char key[32];
        snprintf(key, sizeof(key), "ep%d", i);
        post(&e, key, url_for("http", "127.0.0.1", s.port, "/echo"), key, 5000, 1, &g[i]);
        assert_true(run_until(e.base, &g[i].calls, 1, 5000));
        assert_int_equal(g[i].status, 200);
        assert_memory_equal(g[i].body, key, strlen(key)); /* each request its own body */
    }
    assert_int_equal(s.requests, 20);
    assert_int_equal(s.connections, 1);
    /* 4 at once, then 4 at once again from 4 other keys: the second wave
     * finds the first wave's 4 connections */
    for (int wave = 0; wave < 2; wave++) {
        int before = done;
        for (int i = 0; i < 4; i++) {
            char key[32];
            struct got *x = &g[20 + wave * 4 + i];
            snprintf(key, sizeof(key), "w%d-%d", wave, i);
            x->counter = &done;
            post(&e, key, url_for("http", "127.0.0.1", s.port, "/"), "{}", 5000, 1, x);
        }
        assert_true(run_until(e.base, &done, before + 4, 5000));
    }
    for (int i = 20; i < 28; i++)
        assert_int_equal(g[i].status, 200);
    assert_int_equal(s.requests, 28);
    assert_true(s.connections <= 4);
    stats_of(&e, &st);
    assert_int_equal(st.connections_opened, (uint64_t)s.connections);
    assert_int_equal(st.requests_sent, 28);
    assert_int_equal(st.requests_reused, (uint64_t)(28 - s.connections));
    assert_int_equal(st.connections_closed, 0); /* all kept alive, idle */
    assert_int_equal(st.idle, (size_t)s.connections);
    assert_int_equal(st.idle_origins, 1);
    assert_int_equal(st.active, 0);
    assert_int_equal(st.queued, 0);

    /* another port is another origin */
    post(&e, "ep0", url_for("http", "127.0.0.1", s2.port, "/"), "{}", 5000, 1, &other);
    assert_true(run_until(e.base, &other.calls, 1, 5000));
    assert_int_equal(other.status, 200);
    assert_int_equal(s2.connections, 1);
    stats_of(&e, &st);
    assert_int_equal(st.idle_origins, 2);
    env_done(&e);
    srv_stop(&s);
    srv_stop(&s2);
}

/* Sharing connections does not share in-flight slots: each key keeps its
 * own bound while the others use its origin. */
static void test_key_bound_holds_on_shared_origin(void **state)
{
    struct env e;
    struct srv s;
    struct got a[4], b[3], warm[6];
    int a_done = 0, b_done = 0, warm_done = 0;
    (void)state;

    memset(a, 0, sizeof(a));
    memset(b, 0, sizeof(b));
    memset(warm, 0, sizeof(warm));
    env_init(&e, &plain_cfg);
    /* an answering origin warmed with 6 idle connections by 6 keys */
    srv_start(&s, e.base, NULL, NULL);
    for (int i = 0; i < 6; i++) {
        char key[32];
        snprintf(key, sizeof(key), "warm%d", i);
        warm[i].counter = &warm_done;
        post(&e, key, url_for("http", "127.0.0.1", s.port, "/"), "{}", 5000, 1, &warm[i]);
    }
    assert_true(run_until(e.base, &warm_done, 6, 5000));
    int warmed = s.connections;
    assert_true(warmed >= 1);
    /* "a" (bound 2) and "b" (bound 1) on that origin: with idle connections
     * to spare, still only 2 + 1 requests go out, the rest wait their turn */
    for (int i = 0; i < 4; i++) {
        a[i].counter = &a_done;
        post(&e, "a", url_for("http", "127.0.0.1", s.port, "/echo"), "a", 5000, 2, &a[i]);
    }
    for (int i = 0; i < 3; i++) {
        b[i].counter = &b_done;
        post(&e, "b", url_for("http", "127.0.0.1", s.port, "/echo"), "b", 5000, 1, &b[i]);
    }
    assert_int_equal(http_client_key_backlog(e.client, "a"), 4);
    assert_int_equal(http_client_key_backlog(e.client, "b"), 3);
    assert_true(run_until(e.base, &a_done, 4, 5000));
    assert_true(run_until(e.base, &b_done, 3, 5000));
    for (int i = 0; i < 4; i++)
        assert_memory_equal(a[i].body, "a", 1);
    for (int i = 0; i < 3; i++)
        assert_memory_equal(b[i].body, "b", 1);

    /* and on the wire: slow answers, 6 idle connections to spare, still
     * at most 2 of a and 1 of b at once */
    memset(a, 0, sizeof(a));
    memset(b, 0, sizeof(b));
    a_done = b_done = 0;
    s.max_active = 0;
    for (int i = 0; i < 4; i++) {
        a[i].counter = &a_done;
        post(&e, "a", url_for("http", "127.0.0.1", s.port, "/slow"), "{}", 5000, 2, &a[i]);
    }
    assert_true(run_until(e.base, &a_done, 4, 5000));
    assert_int_equal(s.max_active, 2);
    s.max_active = 0;
    memset(a, 0, sizeof(a));
    for (int i = 0; i < 4; i++) {
        a[i].counter = &a_done;
        post(&e, "a", url_for("http", "127.0.0.1", s.port, "/slow"), "{}", 5000, 2, &a[i]);
    }
    for (int i = 0; i < 3; i++) {
        b[i].counter = &b_done;
        post(&e, "b", url_for("http", "127.0.0.1", s.port, "/slow"), "{}", 5000, 1, &b[i]);
    }
    assert_true(run_until(e.base, &a_done, 8, 5000));
    assert_true(run_until(e.base, &b_done, 3, 5000));
    assert_int_equal(s.max_active, 3);
    for (int i = 0; i < 3; i++)
        assert_int_equal(b[i].status, 200);
    assert_int_equal(s.connections, warmed); /* all on the warm connections */
    env_done(&e);
    srv_stop(&s);
}

/* The idle pool keeps at most max_idle_per_origin connections of one
 * origin and max_idle_total in all, closing the least recently used. */
static void test_idle_pool_bounds(void **state)
{
    struct http_client_config cfg = plain_cfg;
    struct env e;
    struct srv s1, s2;
    struct got g[8];
    struct http_client_stats st;
    int done = 0;
    (void)state;

    memset(g, 0, sizeof(g));
    cfg.max_idle_per_origin = 2;
    cfg.max_idle_total = 3;
    env_init(&e, &cfg);
    srv_start(&s1, e.base, NULL, NULL);
    srv_start(&s2, e.base, NULL, NULL);
    /* 5 keys at once on s1: 5 connections, 2 of them kept */
    for (int i = 0; i < 5; i++) {
        char key[32];
        snprintf(key, sizeof(key), "k%d", i);
        g[i].counter = &done;
        post(&e, key, url_for("http", "127.0.0.1", s1.port, "/"), "{}", 5000, 1, &g[i]);
    }
    assert_true(run_until(e.base, &done, 5, 5000));
    assert_int_equal(s1.connections, 5);
    stats_of(&e, &st);
    assert_int_equal(st.idle, 2);
    assert_int_equal(st.idle_origins, 1);
    assert_int_equal(st.connections_opened, 5);
    assert_int_equal(st.connections_closed, 3); /* over max_idle_per_origin */
    /* 2 at once on s2: the total bound of 3 closes s1's older idle one */
    for (int i = 5; i < 7; i++) {
        g[i].counter = &done;
        post(&e, "k0", url_for("http", "127.0.0.1", s2.port, "/"), "{}", 5000, 2, &g[i]);
    }
    assert_true(run_until(e.base, &done, 7, 5000));
    assert_int_equal(s2.connections, 2);
    stats_of(&e, &st);
    assert_int_equal(st.idle, 3);
    assert_int_equal(st.idle_origins, 2);
    /* s1 still has one: the next request to it opens nothing new */
    g[7].counter = &done;
    post(&e, "k9", url_for("http", "127.0.0.1", s1.port, "/"), "{}", 5000, 1, &g[7]);
    assert_true(run_until(e.base, &done, 8, 5000));
    assert_int_equal(g[7].status, 200);
    assert_int_equal(s1.connections, 5);
    /* lowering the bounds on reload closes what is over them */
    cfg.max_idle_total = 1;
    char err[256];
    assert_int_equal(http_client_reconfigure(e.client, &cfg, err, sizeof(err)), 0);
    stats_of(&e, &st);
    assert_int_equal(st.idle, 1);
    assert_int_equal(st.connections_closed, st.connections_opened - 1); /* every one but the idle one */
    env_done(&e);
    srv_stop(&s1);
    srv_stop(&s2);
}

/* A TLS connection verified for one host name is never handed to another
 * name on the same address and port: the name is part of the origin, so
 * the other name connects and is verified (and refused) itself. */
static void test_tls_connection_not_shared_across_names(void **state)
{
    struct http_client_config cfg = tls_cfg();
    struct env e;
    struct dns_srv d;
    struct srv s;
    struct got good = {0}, other = {0}, again = {0};
    (void)state;

    env_init(&e, &cfg);
    dns_srv_start(&d, &e);
    srv_start(&s, e.base, "server.pem", "server.key"); /* valid for localhost and 127.0.0.1 */
    post(&e, "a", url_for("https", "localhost", s.port, "/"), "{}", 5000, 1, &good);
    assert_true(run_until(e.base, &good.calls, 1, 5000));
    assert_string_equal(good.error, "");
    assert_int_equal(s.connections, 1);
    /* app.test resolves to 127.0.0.1 too, but the certificate is not its */
    post(&e, "b", url_for("https", "app.test", s.port, "/"), "{}", 5000, 1, &other);
    assert_true(run_until(e.base, &other.calls, 1, 5000));
    assert_string_equal(other.error, "tls: certificate verify failed: hostname mismatch");
    assert_int_equal(s.requests, 1);
    /* plain http to the TLS port is another origin as well (and fails) */
    post(&e, "c", url_for("http", "localhost", s.port, "/"), "{}", 1000, 1, &again);
    assert_true(run_until(e.base, &again.calls, 1, 5000));
    assert_int_equal(again.status, 0);
    assert_int_equal(s.requests, 1);
    env_done(&e);
    srv_stop(&s);
    dns_srv_stop(&d);
}

/* A stricter address policy on reload closes the shared idle connections:
 * the next request of any key is checked afresh and refused. */
static void test_stricter_policy_closes_shared_idle(void **state)
{
    struct http_client_config cfg = plain_cfg;
    struct env e;
    struct srv s;
    struct got a = {0}, b = {0};
    struct http_client_stats st;
    char err[256];
    (void)state;

    env_init(&e, &cfg);
    srv_start(&s, e.base, NULL, NULL);
    post(&e, "a", url_for("http", "127.0.0.1", s.port, "/"), "{}", 5000, 1, &a);
    assert_true(run_until(e.base, &a.calls, 1, 5000));
    assert_int_equal(a.status, 200);
    stats_of(&e, &st);
    assert_int_equal(st.idle, 1);
    cfg.allow_private_networks = 0;
    assert_int_equal(http_client_reconfigure(e.client, &cfg, err, sizeof(err)), 0);
    stats_of(&e, &st);
    assert_int_equal(st.idle, 0);
    post(&e, "b", url_for("http", "127.0.0.1", s.port, "/"), "{}", 5000, 1, &b);
    assert_true(run_until(e.base, &b.calls, 1, 5000));
    assert_string_equal(b.error, "refused private address 127.0.0.1 (allow_private_networks is off)");
    assert_int_equal(s.requests, 1);
    env_done(&e);
    srv_stop(&s);
}


/* At most max_inflight_per_origin requests are on the wire to one origin,
 * whatever the keys; another origin is not held up by it. */
static void test_origin_bound(void **state)
{
    struct http_client_config cfg = plain_cfg;
    struct env e;
    struct srv s, other;
    struct got g[8], o = {0};
    int done = 0;
    (void)state;

    memset(g, 0, sizeof(g));
    cfg.max_inflight_per_origin = 3;
    env_init(&e, &cfg);
    srv_start(&s, e.base, NULL, NULL);
    srv_start(&other, e.base, NULL, NULL);
    for (int i = 0; i < 8; i++) {
        char key[32];
        snprintf(key, sizeof(key), "k%d", i);
        g[i].counter = &done;
        post(&e, key, url_for("http", "127.0.0.1", s.port, "/slow"), "{}", 5000, 4, &g[i]);
    }
    post(&e, "k0", url_for("http", "127.0.0.1", other.port, "/"), "{}", 5000, 4, &o);
    assert_true(run_until(e.base, &o.calls, 1, 5000));
    assert_int_equal(o.status, 200);
    assert_true(run_until(e.base, &done, 8, 5000));
    assert_true(o.seq < g[7].seq); /* not behind the busy origin's queue */
    for (int i = 0; i < 8; i++)
        assert_int_equal(g[i].status, 200);
    assert_int_equal(s.max_active, 3);
    assert_true(s.connections <= 3);
    env_done(&e);
    srv_stop(&s);
    srv_stop(&other);
}

/* Keys waiting for a busy origin get its slots in turn: a key with many
 * requests does not take every slot that frees before the keys that waited. */
static void test_origin_slots_taken_in_turn(void **state)
{
    struct http_client_config cfg = plain_cfg;
    struct env e;
    struct srv s;
    struct got busy[6], small[4];
    int done = 0;
    (void)state;

    memset(busy, 0, sizeof(busy));
    memset(small, 0, sizeof(small));
    cfg.max_inflight_per_origin = 2;
    env_init(&e, &cfg);
    srv_start(&s, e.base, NULL, NULL);
    for (int i = 0; i < 6; i++) {
        busy[i].counter = &done;
        post(&e, "busy", url_for("http", "127.0.0.1", s.port, "/slow"), "{}", 5000, 2, &busy[i]);
    }
    for (int i = 0; i < 4; i++) {
        char key[32];
        snprintf(key, sizeof(key), "small%d", i);
        small[i].counter = &done;
        post(&e, key, url_for("http", "127.0.0.1", s.port, "/slow"), "{}", 5000, 2, &small[i]);
    }
    assert_true(run_until(e.base, &done, 10, 5000));
    /* busy's first two were on the wire; every small one went before busy's third */
    for (int i = 0; i < 4; i++) {
        assert_int_equal(small[i].status, 200);
        assert_true(small[i].seq < busy[2].seq);
    }
    assert_int_equal(s.max_active, 2);
    env_done(&e);
    srv_stop(&s);
}

struct cancel_in_cb {
    struct env *e;
    struct got g;
    const char *cancel_key;
    size_t cancelled;
};

static void on_result_then_cancel(const struct http_client_result *res, void *arg)
{
    struct cancel_in_cb *x = arg;
    on_result(res, &x->g);
    x->cancelled = http_client_cancel_queued(x->e->client, x->cancel_key);
}

/* Asserts that every one of n results was reported once, unsent. */
static void assert_all_unsent(const struct got *g, int n)
{
    for (int i = 0; i < n; i++) {
        assert_int_equal(g[i].calls, 1);
        assert_int_equal(g[i].unsent, 1);
        assert_string_equal(g[i].error, "not sent");
    }
}

/* A key that was given an origin slot but whose requests are taken back
 * before it used it passes the slot on: the next waiting key is sent. The
 * key then has nothing in flight and only its unsent requests refer to it,
 * so it lives until the last of them is reported. */
static void test_origin_slot_passed_on_after_cancel(void **state)
{
    struct http_client_config cfg = plain_cfg;
    struct env e;
    struct srv s;
    struct cancel_in_cb first = {0};
    struct got b[3], c = {0};
    int b_done = 0;
    char err[256];
    (void)state;

    memset(b, 0, sizeof(b));
    cfg.max_inflight_per_origin = 1;
    env_init(&e, &cfg);
    srv_start(&s, e.base, NULL, NULL);
    first.e = &e;
    first.cancel_key = "b";
    assert_int_equal(http_client_post(e.client, "a", url_for("http", "127.0.0.1", s.port, "/slow"), NULL, 0, "{}", 2,
                                      5000, 1, on_result_then_cancel, &first, err, sizeof(err)),
                     0);
    for (int i = 0; i < 3; i++) {
        b[i].counter = &b_done;
        post(&e, "b", url_for("http", "127.0.0.1", s.port, "/"), "{}", 5000, 1, &b[i]);
    }
    post(&e, "c", url_for("http", "127.0.0.1", s.port, "/"), "{}", 5000, 1, &c);
    assert_true(run_until(e.base, &c.calls, 1, 5000));
    assert_int_equal(first.g.status, 200);
    assert_int_equal(first.cancelled, 3);
    assert_int_equal(c.status, 200);
    assert_true(run_until(e.base, &b_done, 3, 5000));
    assert_all_unsent(b, 3);
    assert_int_equal(s.requests, 2);
    assert_int_equal(http_client_inflight(e.client), 0);
    env_done(&e);
    srv_stop(&s);
}

/* A key waiting for a full origin has nothing in flight: when its requests
 * are taken back from outside any callback (as a circuit that another
 * worker opened is seen from a Redis reply), only they refer to the key.
 * Each is reported once, and the key serves new requests afterwards. */
static void test_cancel_key_blocked_on_full_origin(void **state)
{
    struct http_client_config cfg = plain_cfg;
    struct env e;
    struct hang h;
    struct got a = {0}, b[3], again = {0};
    int b_done = 0;
    (void)state;

    memset(b, 0, sizeof(b));
    cfg.max_inflight_per_origin = 1;
    env_init(&e, &cfg);
    hang_start(&h, e.base);
    post(&e, "a", url_for("http", "127.0.0.1", h.port, "/"), "{}", 5000, 1, &a);
    for (int i = 0; i < 3; i++) {
        b[i].counter = &b_done;
        post(&e, "b", url_for("http", "127.0.0.1", h.port, "/"), "{}", 5000, 4, &b[i]);
    }
    assert_true(run_until(e.base, &h.accepted, 1, 2000)); /* a holds the origin's one slot */
    assert_int_equal(http_client_key_backlog(e.client, "b"), 3);
    assert_int_equal(http_client_cancel_queued(e.client, "b"), 3);
    assert_true(run_until(e.base, &b_done, 3, 2000));
    assert_all_unsent(b, 3);
    assert_int_equal(http_client_key_backlog(e.client, "b"), 0);
    assert_int_equal(http_client_inflight(e.client), 1); /* a, still on the wire */
    post(&e, "b", url_for("http", "127.0.0.1", h.port, "/"), "{}", 5000, 1, &again);
    assert_int_equal(http_client_key_backlog(e.client, "b"), 1);
    assert_int_equal(a.calls, 0);
    env_done(&e);
    assert_string_equal(a.error, "cancelled");
    assert_string_equal(again.error, "cancelled");
    hang_stop(&h);
}

/* A key's last in-flight results can wait in the report queue when its
 * waiting requests are taken back (a Redis reply read in the same loop turn
 * as the responses): the results are reported first, and the key still
 * lives for the unsent requests behind them. A refused private address
 * stands for any outcome: it is queued inside http_client_post, so the
 * order is certain. */
static void test_cancel_behind_reported_results(void **state)
{
    struct http_client_config cfg = plain_cfg;
    struct env e;
    struct got g[5];
    int done = 0, port = closed_port();
    (void)state;

    memset(g, 0, sizeof(g));
    cfg.allow_private_networks = 0;
    env_init(&e, &cfg);
    for (int i = 0; i < 5; i++) {
        g[i].counter = &done;
        post(&e, "ep", url_for("http", "127.0.0.1", port, "/"), "{}", 5000, 2, &g[i]);
    }
    assert_int_equal(http_client_cancel_queued(e.client, "ep"), 3); /* two finished, three waiting */
    assert_true(run_until(e.base, &done, 5, 2000));
    for (int i = 0; i < 2; i++) {
        assert_int_equal(g[i].calls, 1);
        assert_int_equal(g[i].unsent, 0);
        assert_non_null(strstr(g[i].error, "refused private address 127.0.0.1"));
        assert_true(g[i].seq <= 2); /* ahead of the unsent ones */
    }
    assert_all_unsent(g + 2, 3);
    assert_int_equal(http_client_inflight(e.client), 0);
    assert_int_equal(http_client_key_backlog(e.client, "ep"), 0);
    env_done(&e);
}

/* The callback of a key's last in-flight request takes back the key's
 * waiting requests (its circuit opens on this very result): the key has
 * nothing in flight when the callback returns and lives on for them. */
static void test_cancel_from_last_result_callback(void **state)
{
    struct env e;
    struct srv s;
    struct cancel_in_cb first = {0};
    struct got g[3];
    int done = 0;
    char err[256];
    (void)state;

    memset(g, 0, sizeof(g));
    env_init(&e, &plain_cfg);
    srv_start(&s, e.base, NULL, NULL);
    first.e = &e;
    first.cancel_key = "ep";
    assert_int_equal(http_client_post(e.client, "ep", url_for("http", "127.0.0.1", s.port, "/status/500"), NULL, 0,
                                      "{}", 2, 5000, 1, on_result_then_cancel, &first, err, sizeof(err)),
                     0);
    for (int i = 0; i < 3; i++) {
        g[i].counter = &done;
        post(&e, "ep", url_for("http", "127.0.0.1", s.port, "/status/500"), "{}", 5000, 1, &g[i]);
    }
    assert_true(run_until(e.base, &done, 3, 5000));
    assert_int_equal(first.g.calls, 1);
    assert_int_equal(first.g.status, 500);
    assert_int_equal(first.cancelled, 3);
    assert_all_unsent(g, 3);
    assert_int_equal(s.requests, 1);
    assert_int_equal(http_client_inflight(e.client), 0);
    env_done(&e);
    srv_stop(&s);
}

/* ---- fixtures ------------------------------------------------------------------------------ */

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(path);
}

static int group_setup(void **state)
{
    char script[512], cmd[1024];
    const char *env = getenv("HOOKD_TLS_FIXTURE_SCRIPT");
    (void)state;

    signal(SIGPIPE, SIG_IGN); /* as the daemon does: a peer may close mid-write */
    if (env) {
        snprintf(script, sizeof(script), "%s", env);
    } else {
        char here[512];
        snprintf(here, sizeof(here), "%s", __FILE__);
        snprintf(script, sizeof(script), "%s/../fixtures/tls/make-certs.sh", dirname(here));
    }
    snprintf(cert_dir, sizeof(cert_dir), "/tmp/hookd-tls-XXXXXX");
    if (!mkdtemp(cert_dir))
        return -1;
    snprintf(cmd, sizeof(cmd), "sh '%s' '%s'", script, cert_dir);
    if (system(cmd) != 0) {
        fprintf(stderr, "cannot generate TLS fixtures with %s\n", script);
        return -1;
    }
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    if (cert_dir[0])
        nftw(cert_dir, rm_entry, 8, FTW_DEPTH | FTW_PHYS);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_post_exact_body_and_headers),
        cmocka_unit_test(test_caller_user_agent_wins),
        cmocka_unit_test(test_headers_at_send),
        cmocka_unit_test(test_statuses_passed_through),
        cmocka_unit_test(test_retry_after_passed),
        cmocka_unit_test(test_response_body_capped),
        cmocka_unit_test(test_timeout_when_server_never_answers),
        cmocka_unit_test(test_connection_refused),
        cmocka_unit_test(test_keepalive_reuse),
        cmocka_unit_test(test_slow_key_does_not_delay_other_keys),
        cmocka_unit_test(test_total_inflight_bound),
        cmocka_unit_test(test_private_addresses_refused),
        cmocka_unit_test(test_dns_answers_are_checked),
        cmocka_unit_test(test_dns_name_connects_to_resolved_address),
        cmocka_unit_test(test_dns_timeout_and_cancel),
        cmocka_unit_test(test_tls_valid),
        cmocka_unit_test(test_tls_wrong_hostname),
        cmocka_unit_test(test_tls_untrusted),
        cmocka_unit_test(test_tls_to_plain_server),
        cmocka_unit_test(test_dropped_keepalive_connection_is_retried),
        cmocka_unit_test(test_immediate_errors),
        cmocka_unit_test(test_cancel_queued_takes_back_only_the_waiting),
        cmocka_unit_test(test_free_cancels_pending),
        cmocka_unit_test(test_free_from_inside_a_callback),
        cmocka_unit_test(test_post_from_callback_reuses_connection),
        cmocka_unit_test(test_keys_share_origin_connections),
        cmocka_unit_test(test_key_bound_holds_on_shared_origin),
        cmocka_unit_test(test_idle_pool_bounds),
        cmocka_unit_test(test_tls_connection_not_shared_across_names),
        cmocka_unit_test(test_stricter_policy_closes_shared_idle),
        cmocka_unit_test(test_origin_bound),
        cmocka_unit_test(test_origin_slots_taken_in_turn),
        cmocka_unit_test(test_origin_slot_passed_on_after_cancel),
        cmocka_unit_test(test_cancel_key_blocked_on_full_origin),
        cmocka_unit_test(test_cancel_behind_reported_results),
        cmocka_unit_test(test_cancel_from_last_result_callback),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
