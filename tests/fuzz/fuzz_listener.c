/*
 * fuzz_listener.c — libFuzzer target for hookd's public listener: the input
 * is raw bytes a client sends on one TCP connection (one or more HTTP/1.x
 * requests, or garbage), delivered to the real listener and the real ingest
 * role, in-process, through their public APIs.
 *
 * LLVMFuzzerInitialize builds what `hookd run` builds for an ingest worker,
 * minus Redis: the config below (config_load(), one partner per signature
 * scheme), an event base, a struct hookd_ctx, http_server_new() on
 * 127.0.0.1 with an ephemeral port and the config's listener limits, and
 * ingest_new(), which routes /v1/inbox/ and starts the ingest role's own
 * Postgres pool. The database is a Unix socket directory that does not
 * exist, so every connect fails at once and every insert completes as
 * "unavailable" (503), without a server; ctx.redis is NULL (sched_seed()
 * and redis_conn_ready() accept that). /healthz is routed as worker.c does
 * (its handler is static there, so this file has its own two-line copy).
 *
 * Per input, a client socket connects to the listener's port over loopback
 * (evhttp is hidden inside http_server.c, so evhttp_get_request() on a
 * socketpair is not reachable; the real accept path is used instead) and
 * sends the input; the one event loop runs client and server callbacks
 * alike. The client shuts its write side once the server is quiet
 * (QUIET_TURNS loop turns with no new response byte, no change in the bytes
 * it holds of a request, nothing pending in ingest): evhttp ends a
 * connection at the client's EOF, so shutting at once would drop pipelined
 * requests unanswered. The exchange ends when the server closes, with a
 * deadline (EXCHANGE_MS) that counts as a hang; then the loop runs until the
 * server has freed the connection and ingest has nothing pending.
 *
 * Checked besides memory safety, UB and leaks:
 *   - every response has a well-formed HTTP/1.x status line, a status from
 *     the set hookd and evhttp send (STATUSES), a complete head, and (when
 *     the stream ended cleanly) the body its Content-Length announces;
 *   - every application/json response is one JSON object; an error has
 *     string "error" and "message", a 503 has Retry-After, a 405 has
 *     Allow: POST; a 200 is /healthz's {"status":"alive"} — Postgres is
 *     unreachable, so an ingest 200 ("accepted" or "duplicate") would claim
 *     durability it does not have;
 *   - no partner secret appears in a response (unless the input holds it);
 *   - the server closes every connection within EXCHANGE_MS, then frees it;
 *     no buffered body bytes and no ingest request remain afterwards;
 *   - every HEALTH_EVERY inputs, GET /healthz on a new connection answers
 *     200 {"status":"alive"}.
 * Also checked (each found by this target, then fixed in http_server.c): a
 * response without Content-Length is never followed by another on the same
 * connection (regressions/fuzz_listener-head-body: HEAD was answered with a
 * body), and an application/json response has a body (fuzz_listener-non-
 * utf8-partner, fuzz_listener-cut-utf8-partner: a message that was not
 * valid UTF-8 made json_pack() fail into an empty 404). With
 * FUZZ_LISTENER_STRICT=1 the status line must also say HTTP/1.0 or 1.1:
 * hookd's handlers answer other versions 505 as HTTP/1.1
 * (fuzz_listener-http-version-echo), but the 400 that evhttp itself sends
 * for a request it cannot parse still echoes the request's version, e.g.
 * "HTTP/1.-1" for a minor version past INT_MAX
 * (fuzz_listener-http-version-overflow); by default any "HTTP/" token
 * passes. FUZZ_LISTENER_VERBOSE=1 prints each exchange.
 *
 * Signatures: a fuzzer cannot forge a MAC, so mutated bodies stop at the
 * signature check. To let them reach the JSON, extraction and batching
 * steps, an input whose head holds the placeholder
 * "X-Hub-Signature-256: sha256=SIGN" has it replaced by the github scheme's
 * real MAC (OpenSSL HMAC-SHA256 with the github partner's secret) over the
 * bytes after the first blank line, as a partner would sign them; the rest
 * of the input is sent as it is. The wall clock is fixed at FUZZ_NOW (this
 * file defines time(), which ingest.c reads for the signature tolerance), so
 * the timestamped seeds signed then stay valid.
 */
/* fuzz.sh links: ALL */
#include <arpa/inet.h>
#include <errno.h>
#include <event2/event.h>
#include <event2/http.h>
#include <jansson.h>
#include <netinet/in.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "ctx.h"
#include "fuzz_check.h"
#include "http_server.h"
#include "inbound.h"
#include "log.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

/* The clock ingest.c sees (time(NULL)); the seeds are signed at this time. */
#define FUZZ_NOW 1700000000
/* Longest an exchange may take before it counts as a hang (the listener's
 * request_timeout below is 1 s). */
#define EXCHANGE_MS 3000
/* Longest the server may take to free a closed connection. */
#define SETTLE_MS 1000
#define HEALTH_EVERY 64

#define GITHUB_SECRET "It's a Secret to Everybody"
#define SIGN_PLACEHOLDER "X-Hub-Signature-256: sha256=SIGN"

static const char CONFIG[] = "[hookd]\n"
                             "database = host=/nonexistent-hookd-fuzz dbname=x connect_timeout=1\n"
                             "redis = redis://127.0.0.1:1\n"
                             "max_body = 64KiB\n"
                             "max_header_size = 4KiB\n"
                             "max_headers = 20\n"
                             "request_timeout = 1s\n"
                             "max_connections = 64\n"
                             "max_buffered_body = 1MiB\n"
                             "ingest_batch_max = 4\n"
                             "log_level = error\n"
                             "\n"
                             "[partner shop]\n"
                             "scheme = standard-webhooks\n"
                             "secret = whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw\n"
                             "entity_id = json:data.order_id\n"
                             "\n"
                             "[partner stripe]\n"
                             "scheme = stripe\n"
                             "secret = whsec_old_secret\n"
                             "secret = whsec_test_secret\n"
                             "tolerance = 5m\n"
                             "entity_id = json:data.object.metadata.order_id\n"
                             "\n"
                             "[partner github]\n"
                             "scheme = github\n"
                             "secret = " GITHUB_SECRET "\n"
                             "entity_id = json:order_id\n"
                             "entity_type = order\n"
                             "\n"
                             "[partner generic]\n"
                             "scheme = hmac-sha256\n"
                             "secret = generic-secret-0123\n"
                             "header = X-Signature\n"
                             "event_id = header:X-Request-Id\n"
                             "event_type = json:type\n"
                             "entity_id = json:items.0.sku\n"
                             "max_body = 4KiB\n"
                             "\n"
                             "[machine order]\n"
                             "initial = draft\n"
                             "transition order.started = draft -> started\n"
                             "transition order.paid = started -> paid\n"
                             "transition order.shipped = paid -> shipped\n"
                             "transition order.cancelled = draft, started, paid -> cancelled\n";

/* Must never appear in a response (unless the input itself holds it). */
static const char *const SECRETS[] = {"MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "whsec_old_secret", "whsec_test_secret",
                                      GITHUB_SECRET, "generic-secret-0123"};

/* What hookd's handlers and evhttp itself answer (100: Expect). */
static const int STATUSES[] = {100, 200, 400, 401, 404, 405, 411, 413, 415, 417, 431, 501, 503, 505};

static struct hookd_ctx ctx;
static struct http_server *srv;
static struct ingest *ingest;
static int port;
static bool verbose; /* FUZZ_LISTENER_VERBOSE=1: print each exchange */
static bool strict;  /* FUZZ_LISTENER_STRICT=1: also check the known open bugs (file comment) */

/* A fixed wall clock: see the file comment. */
time_t time(time_t *t)
{
    if (t != NULL)
        *t = FUZZ_NOW;
    return FUZZ_NOW;
}

static void handle_healthz(struct evhttp_request *req, void *arg)
{
    (void)arg;
    http_reply_json(req, 200, json_pack("{s:s}", "status", "alive"));
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    char path[64], err[512];
    int fd = memfd_create("hookd-fuzz-listener", MFD_CLOEXEC);

    (void)argc;
    (void)argv;
    signal(SIGPIPE, SIG_IGN); /* as hookd's main does: a client that went away is not fatal */
    if (fd < 0 || write(fd, CONFIG, sizeof CONFIG - 1) != (ssize_t)(sizeof CONFIG - 1)) {
        perror("fuzz_listener: memfd");
        abort();
    }
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    ctx.cfg = config_load(path, err, sizeof err);
    close(fd);
    if (ctx.cfg == NULL) {
        fprintf(stderr, "fuzz_listener: built-in config refused: %s\n", err);
        abort();
    }
    log_min_level = LOG_ERROR;
    verbose = getenv("FUZZ_LISTENER_VERBOSE") != NULL;
    strict = getenv("FUZZ_LISTENER_STRICT") != NULL;
    ctx.base = event_base_new();
    snprintf(ctx.id, sizeof ctx.id, "fuzz-%d", (int)getpid());
    snprintf(ctx.host, sizeof ctx.host, "fuzz");
    ctx.migrations_current = true;

    const struct hookd_config *c = ctx.cfg;
    const struct http_limits limits = {c->max_header_size, c->max_headers, c->request_timeout, c->max_connections,
                                       c->max_buffered_body};
    srv = ctx.base ? http_server_new(ctx.base, "127.0.0.1:0", &limits, err, sizeof err) : NULL;
    if (srv == NULL) {
        fprintf(stderr, "fuzz_listener: cannot start the listener: %s\n", ctx.base ? err : "no event base");
        abort();
    }
    http_server_route(srv, "/healthz", handle_healthz, &ctx);
    ingest = ingest_new(&ctx, srv, err, sizeof err);
    if (ingest == NULL) {
        fprintf(stderr, "fuzz_listener: ingest_new: %s\n", err);
        abort();
    }
    port = http_server_port(srv);
    return 0;
}

/* ---- the client side of one connection ------------------------------------ */

struct exchange {
    int fd;
    const uint8_t *out;
    size_t out_len, sent;
    struct event *rd, *wr, *timer;
    uint8_t *in; /* what the server sent */
    size_t in_len, in_cap;
    bool all_sent, shut;
    int quiet;  /* loop turns in a row in which nothing moved */
    bool eof;   /* the server closed (FIN) */
    bool reset; /* ... or reset the connection: the tail may be lost */
    bool timed_out;
};

static void on_client_write(evutil_socket_t fd, short what, void *arg)
{
    struct exchange *x = arg;

    (void)what;
    while (x->sent < x->out_len) {
        ssize_t n = send(fd, x->out + x->sent, x->out_len - x->sent, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return;
        if (n <= 0) /* the server closed early (EPIPE, ECONNRESET): nothing more to send */
            break;
        x->sent += (size_t)n;
    }
    x->all_sent = true; /* the write side is shut once the server is quiet */
    event_del(x->wr);
}

static void on_client_read(evutil_socket_t fd, short what, void *arg)
{
    struct exchange *x = arg;

    (void)what;
    for (;;) {
        if (x->in_cap - x->in_len < 4096) {
            x->in_cap = x->in_cap ? x->in_cap * 2 : 8192;
            x->in = realloc(x->in, x->in_cap);
            if (x->in == NULL)
                abort();
        }
        ssize_t n = recv(fd, x->in + x->in_len, x->in_cap - x->in_len, 0);
        if (n > 0) {
            x->in_len += (size_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return;
        if (n < 0)
            x->reset = true;
        x->eof = true;
        event_base_loopbreak(ctx.base);
        return;
    }
}

static void on_client_timeout(evutil_socket_t fd, short what, void *arg)
{
    struct exchange *x = arg;

    (void)fd;
    (void)what;
    x->timed_out = true;
    event_base_loopbreak(ctx.base);
}

/* Loop turns without a new response byte, a change in the bytes the server
 * holds of a request, or an ingest request pending, before the client shuts
 * its write side. */
#define QUIET_TURNS 3

/* One loop turn that does not block, once everything is sent and ingest
 * has nothing pending; shuts the write side after QUIET_TURNS quiet turns.
 * Loopback delivers the bytes within send(), so a quiet server has read and
 * answered every whole request: pipelined requests are each answered before
 * the client's EOF, which evhttp takes as the end of the connection. */
static void wait_quiet(struct exchange *x)
{
    size_t in_len = x->in_len;
    int64_t buffered = http_server_buffered(srv);

    event_base_loop(ctx.base, EVLOOP_NONBLOCK);
    if (x->in_len == in_len && http_server_buffered(srv) == buffered && ingest_pending(ingest) == 0)
        x->quiet++;
    else
        x->quiet = 0;
    if (x->quiet >= QUIET_TURNS && !x->eof) {
        shutdown(x->fd, SHUT_WR);
        x->shut = true;
    }
}

/* Sends data on a new connection to the listener and collects the response
 * bytes until the server closes. The caller frees x->in. */
static void exchange_run(struct exchange *x, const uint8_t *data, size_t size)
{
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    struct timeval tv = {EXCHANGE_MS / 1000, (EXCHANGE_MS % 1000) * 1000};

    memset(x, 0, sizeof *x);
    x->out = data;
    x->out_len = size;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    x->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    CHECK(x->fd >= 0);
    /* Blocking connect: loopback completes the handshake from the listen
     * backlog, before the loop accepts. */
    CHECK(connect(x->fd, (struct sockaddr *)&sa, sizeof sa) == 0);
    CHECK(evutil_make_socket_nonblocking(x->fd) == 0);
    x->rd = event_new(ctx.base, x->fd, EV_READ | EV_PERSIST, on_client_read, x);
    x->wr = event_new(ctx.base, x->fd, EV_WRITE | EV_PERSIST, on_client_write, x);
    x->timer = evtimer_new(ctx.base, on_client_timeout, x);
    CHECK(x->rd && x->wr && x->timer);
    event_add(x->rd, NULL);
    event_add(x->wr, NULL);
    evtimer_add(x->timer, &tv);
    while (!x->eof && !x->timed_out) {
        if (x->all_sent && !x->shut && ingest_pending(ingest) == 0) {
            wait_quiet(x);
            continue;
        }
        event_base_loop(ctx.base, EVLOOP_ONCE);
    }
    event_free(x->rd);
    event_free(x->wr);
    event_free(x->timer);
    close(x->fd);
}

static void on_settle_tick(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    (void)arg;
}

/* Runs the loop until the server has freed every connection and ingest has
 * answered everything (bounded by SETTLE_MS). */
static void settle(void)
{
    struct event *tick = evtimer_new(ctx.base, on_settle_tick, NULL);
    struct timeval tv = {0, 1000};
    int waited = 0;

    CHECK(tick != NULL);
    while ((http_server_connections(srv) > 0 || ingest_pending(ingest) > 0) && waited < SETTLE_MS) {
        evtimer_add(tick, &tv);
        event_base_loop(ctx.base, EVLOOP_ONCE);
        waited++;
    }
    event_free(tick);
    if (http_server_connections(srv) != 0 || ingest_pending(ingest) != 0)
        fprintf(stderr, "fuzz_listener: after %d ms: connections=%lld ingest_pending=%zu\n", SETTLE_MS,
                (long long)http_server_connections(srv), ingest_pending(ingest));
    CHECK(http_server_connections(srv) == 0);
    CHECK(ingest_pending(ingest) == 0);
    CHECK(http_server_buffered(srv) == 0);
}

/* ---- checking the response stream ------------------------------------------ */

struct response {
    int status;
    const uint8_t *body;
    size_t body_len;
    bool json, retry_after, allow_post;
    bool no_body;  /* 1xx, or the answer to HEAD */
    bool unframed; /* no Content-Length, yet another response follows */
};

/* The value of header `name` in head[0..len) (each line "Name: value\r\n"),
 * or NULL; *vlen gets its length. */
static const char *head_value(const uint8_t *head, size_t len, const char *name, size_t *vlen)
{
    size_t nlen = strlen(name);
    const uint8_t *p = head, *end = head + len;

    while (p < end) {
        const uint8_t *eol = memmem(p, (size_t)(end - p), "\r\n", 2);
        if (eol == NULL)
            eol = end;
        if ((size_t)(eol - p) > nlen && strncasecmp((const char *)p, name, nlen) == 0 && p[nlen] == ':') {
            const uint8_t *v = p + nlen + 1;
            while (v < eol && *v == ' ')
                v++;
            *vlen = (size_t)(eol - v);
            return (const char *)v;
        }
        p = eol + 2;
    }
    return NULL;
}

static bool status_known(int status)
{
    for (size_t i = 0; i < sizeof STATUSES / sizeof STATUSES[0]; i++)
        if (STATUSES[i] == status)
            return true;
    return false;
}

/* Parses the response at buf[*off..len); returns false when the stream is
 * cut short inside it (allowed only after a reset). sent_head: the input
 * holds a HEAD request, so a last response whose head ends the stream is
 * its answer (no body), not a cut one. */
static bool parse_response(const uint8_t *buf, size_t len, size_t *off, struct response *r, bool sent_head)
{
    const uint8_t *p = buf + *off;
    size_t left = len - *off, vlen;
    const uint8_t *eol, *end_head;
    const char *v;

    memset(r, 0, sizeof *r);
    eol = memmem(p, left, "\r\n", 2);
    if (eol == NULL)
        return false;
    /* "HTTP/1.1 DDD Reason"; evhttp echoes the request's version, even as
     * "HTTP/1.12" or, past INT_MAX, "HTTP/1.-1" (strict mode refuses those) */
    const uint8_t *c, *sp = memchr(p, ' ', (size_t)(eol - p));
    bool v11;

    CHECK(left >= 5 && memcmp(p, "HTTP/", 5) == 0 && sp != NULL && sp > p + 5);
    v11 = sp - p == 8 && p[5] == '1' && (p[7] == '0' || p[7] == '1');
    if (strict && !v11)
        fprintf(stderr, "fuzz_listener: status line of version %.*s (known: evhttp echoes the request's)\n",
                (int)(sp - p), (const char *)p);
    CHECK(!strict || v11);
    CHECK(eol - sp >= 5);
    CHECK(sp[1] >= '1' && sp[1] <= '5' && sp[2] >= '0' && sp[2] <= '9' && sp[3] >= '0' && sp[3] <= '9');
    CHECK(sp[4] == ' ');
    for (c = sp + 5; c < eol; c++)
        CHECK(*c >= 0x20 && *c < 0x7f);
    r->status = (sp[1] - '0') * 100 + (sp[2] - '0') * 10 + (sp[3] - '0');
    if (!status_known(r->status))
        fprintf(stderr, "fuzz_listener: unexpected status %d\n", r->status);
    CHECK(status_known(r->status));
    end_head = memmem(p, left, "\r\n\r\n", 4);
    if (end_head == NULL)
        return false;
    const uint8_t *head = eol + 2;
    size_t head_len = (size_t)(end_head + 2 - head);
    size_t at = (size_t)(end_head + 4 - buf);

    v = head_value(head, head_len, "Content-Type", &vlen);
    r->json = v != NULL && vlen >= 16 && strncmp(v, "application/json", 16) == 0;
    r->retry_after = head_value(head, head_len, "Retry-After", &vlen) != NULL;
    v = head_value(head, head_len, "Allow", &vlen);
    r->allow_post = v != NULL && vlen == 4 && strncmp(v, "POST", 4) == 0;
    v = head_value(head, head_len, "Content-Length", &vlen);
    if (r->status < 200 || (len - at >= 5 && memcmp(buf + at, "HTTP/", 5) == 0) || (sent_head && at == len)) {
        r->no_body = true; /* 1xx, or the answer to a HEAD request */
    } else if (v != NULL) {
        char num[24];
        snprintf(num, sizeof num, "%.*s", (int)(vlen < 23 ? vlen : 23), v);
        r->body_len = strtoull(num, NULL, 10);
    } else {
        /* No length: the body runs to the close (HTTP/1.0), which is only
         * framed if no other response follows on this connection. A body
         * of hookd's or evhttp's ends with a newline. */
        const uint8_t *next = memmem(buf + at, len - at, "\nHTTP/", 6); /* JSON escapes a newline */
        r->body_len = next != NULL ? (size_t)(next + 1 - (buf + at)) : len - at;
        r->unframed = next != NULL;
    }
    if (len - at < r->body_len)
        return false;
    r->body = buf + at;
    *off = at + r->body_len;
    return true;
}

static void check_json(const struct response *r)
{
    json_error_t jerr;
    json_t *obj;

    if (r->body_len == 0)
        fprintf(stderr, "fuzz_listener: a %d application/json response with an empty body\n", r->status);
    CHECK(r->body_len != 0);
    if (r->body_len == 0)
        return;
    obj = json_loadb((const char *)r->body, r->body_len, 0, &jerr);

    CHECK(json_is_object(obj));
    if (r->status >= 400) {
        CHECK(json_is_string(json_object_get(obj, "error")));
        CHECK(json_is_string(json_object_get(obj, "message")));
    }
    if (r->status == 200) /* only /healthz: Postgres is unreachable, nothing can be accepted */
        CHECK(json_is_string(json_object_get(obj, "status")) &&
              strcmp(json_string_value(json_object_get(obj, "status")), "alive") == 0);
    if (r->status == 503)
        CHECK(r->retry_after);
    if (r->status == 405)
        CHECK(r->allow_post);
    json_decref(obj);
}

/* Checks every response in x->in; returns how many there were and the
 * status of the last one. */
static size_t check_responses(const struct exchange *x, const uint8_t *data, size_t size, int *last)
{
    size_t off = 0, n = 0;
    struct response r;

    *last = 0;
    while (off < x->in_len) {
        if (!parse_response(x->in, x->in_len, &off, &r, memmem(data, size, "HEAD ", 5) != NULL)) {
            if (!x->reset)
                fprintf(stderr, "fuzz_listener: response cut short at byte %zu of %zu\n", off, x->in_len);
            CHECK(x->reset); /* a clean close comes after whole responses */
            break;
        }
        if (r.json && !r.no_body)
            check_json(&r);
        if (r.unframed)
            fprintf(stderr,
                    "fuzz_listener: a %d response without Content-Length is followed by another "
                    "response on the same connection\n",
                    r.status);
        CHECK(!r.unframed);
        *last = r.status;
        n++;
    }
    for (size_t i = 0; i < sizeof SECRETS / sizeof SECRETS[0]; i++)
        if (memmem(data, size, SECRETS[i], strlen(SECRETS[i])) == NULL)
            CHECK(memmem(x->in, x->in_len, SECRETS[i], strlen(SECRETS[i])) == NULL);
    return n;
}

/* ---- signing the placeholder ----------------------------------------------- */

/* A copy of the input with SIGN_PLACEHOLDER's "SIGN" replaced by the github
 * MAC of the bytes after the first blank line; NULL when there is none. */
static uint8_t *sign_placeholder(const uint8_t *data, size_t size, size_t *out_size)
{
    const uint8_t *ph = memmem(data, size, SIGN_PLACEHOLDER, strlen(SIGN_PLACEHOLDER));
    const uint8_t *crlf = memmem(data, size, "\r\n\r\n", 4), *lf = memmem(data, size, "\n\n", 2);
    const uint8_t *body;
    unsigned char mac[EVP_MAX_MD_SIZE];
    unsigned int mac_len = 0;
    size_t at, body_len;
    uint8_t *out;

    if (ph == NULL)
        return NULL;
    if (crlf != NULL && (lf == NULL || crlf < lf))
        body = crlf + 4;
    else if (lf != NULL)
        body = lf + 2;
    else
        body = data + size;
    if (ph >= body) /* in the body, not the head */
        return NULL;
    body_len = (size_t)(data + size - body);
    CHECK(HMAC(EVP_sha256(), GITHUB_SECRET, (int)strlen(GITHUB_SECRET), body, body_len, mac, &mac_len) != NULL);
    at = (size_t)(ph - data) + strlen(SIGN_PLACEHOLDER) - 4;
    *out_size = size - 4 + 2 * mac_len;
    out = malloc(*out_size);
    CHECK(out != NULL);
    memcpy(out, data, at);
    for (unsigned i = 0; i < mac_len; i++) {
        out[at + 2 * i] = (uint8_t) "0123456789abcdef"[mac[i] >> 4];
        out[at + 2 * i + 1] = (uint8_t) "0123456789abcdef"[mac[i] & 15];
    }
    memcpy(out + at + 2 * mac_len, data + at + 4, size - at - 4);
    return out;
}

/* ---- one input ------------------------------------------------------------- */

static void check_health(void)
{
    static const char req[] = "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n";
    static const char want[] = "{\"status\":\"alive\"}\n";
    struct exchange x;
    size_t off = 0;
    struct response r;

    exchange_run(&x, (const uint8_t *)req, sizeof req - 1);
    CHECK(!x.timed_out && !x.reset);
    CHECK(parse_response(x.in, x.in_len, &off, &r, false));
    CHECK(r.status == 200 && r.json && r.body_len == sizeof want - 1 && memcmp(r.body, want, r.body_len) == 0);
    CHECK(off == x.in_len);
    free(x.in);
    settle();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static unsigned long runs;
    size_t signed_size = 0;
    uint8_t *signed_data = sign_placeholder(data, size, &signed_size);
    const uint8_t *send_data = signed_data ? signed_data : data;
    size_t send_size = signed_data ? signed_size : size;
    struct exchange x;
    int last;

    exchange_run(&x, send_data, send_size);
    if (x.timed_out)
        fprintf(stderr, "fuzz_listener: the server neither answered nor closed within %d ms (%zu bytes read)\n",
                EXCHANGE_MS, x.in_len);
    if (verbose)
        fprintf(stderr, "fuzz_listener: %s after %zu bytes:\n%.*s\n", x.reset ? "reset" : "closed", x.in_len,
                (int)x.in_len, (const char *)x.in);
    CHECK(!x.timed_out);
    size_t n = check_responses(&x, send_data, send_size, &last);
    if (verbose)
        fprintf(stderr, "fuzz_listener: %zu response(s), the last %d\n", n, last);
    free(x.in);
    free(signed_data);
    settle();
    if (++runs % HEALTH_EVERY == 0)
        check_health();
    return 0;
}
