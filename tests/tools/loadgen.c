/*
 * loadgen — an HTTP/1.1 keep-alive load generator for `make bench`.
 *
 * N connections each keep exactly one POST in flight: when a response has
 * been read completely the connection sends the next request, until the
 * request budget (--requests) or the time budget (--duration) is spent.
 * Signed mode posts distinct Standard Webhooks events (a unique webhook-id
 * per request, the body template's %d filled with i % entities), all signed
 * before the clock starts when they fit in memory; --plain posts one fixed
 * unsigned body, to measure what a receiver can take at all (with
 * --idempotency: an `idempotency-key: PREFIX-i` header per request, and the
 * template's %d filled with i % entities, as the Svix SDKs send them). The response
 * parser understands Content-Length and chunked bodies, and reconnects when
 * the server closes. At the end one JSON line goes to stdout: requests, ok
 * (2xx), errors (transport errors + non-2xx), seconds, rps, ok_rps and the
 * latency percentiles of the answered requests. Everything is bounded: a
 * request timeout, and --max-seconds for the whole run.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <getopt.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "signature.h"
#include "xmalloc.h"

#define PREBUILD_MAX_BYTES (256u * 1024 * 1024)

enum parse_state { P_STATUS, P_HEADERS, P_BODY, P_CHUNK_SIZE, P_CHUNK_DATA, P_CHUNK_CRLF, P_TRAILER };

struct opts {
    char host[256], port[16], path[1024];
    int connections;
    long requests;
    double duration_s, max_seconds, timeout_s;
    bool plain;
    const char *secret, *scheme, *body_template, *id_prefix;
    const char *header; /* one extra header line ("Authorization: Bearer …"), or NULL */
    long entities;
    bool idempotency; /* an idempotency-key per request (id prefix, index), %d filled even when plain */
};

struct lg;

struct conn {
    struct lg *lg;
    struct bufferevent *bev;
    struct event *retry_ev;
    long cur; /* request index on the wire, -1 = idle */
    int64_t sent_us;
    enum parse_state st;
    int status;
    long long body_left;
    bool chunked, server_closes, done, connected;
    int consecutive_failures;
};

struct lg {
    struct opts o;
    struct event_base *base;
    struct sockaddr_storage addr;
    socklen_t addrlen;
    struct sig_key key;
    int64_t ts;
    /* prebuilt requests (NULL: built when sent) */
    char *arena;
    size_t *offsets; /* requests + 1 entries */
    long next;       /* next request index to send */
    long ok, non2xx, transport_errors, completed;
    double *lat_ms;
    size_t nlat, caplat;
    int64_t start_us, end_us, stop_issuing_us;
    int live_conns;
    struct conn *conns;
};

static int64_t now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static void die(const char *msg)
{
    fprintf(stderr, "loadgen: %s\n", msg);
    exit(2);
}

/* ---- building requests ---------------------------------------------------- */

/* The body template with every %d replaced by v and %% by %. */
static size_t fill_template(const char *tpl, long v, char *out, size_t cap)
{
    size_t n = 0;
    char num[24];
    int numlen = snprintf(num, sizeof num, "%ld", v);
    for (const char *p = tpl; *p; p++) {
        if (p[0] == '%' && p[1] == 'd') {
            if (n + (size_t)numlen >= cap)
                die("body too large");
            memcpy(out + n, num, (size_t)numlen);
            n += (size_t)numlen;
            p++;
            continue;
        }
        if (p[0] == '%' && p[1] == '%')
            p++;
        if (n + 1 >= cap)
            die("body too large");
        out[n++] = *p;
    }
    out[n] = '\0';
    return n;
}

/* Request i as bytes, appended to out (an evbuffer). */
static void build_request(struct lg *lg, long i, struct evbuffer *out)
{
    static char body[65536];
    size_t len = fill_template(lg->o.body_template, lg->o.plain && !lg->o.idempotency ? 0 : i % lg->o.entities, body,
                               sizeof body);
    evbuffer_add_printf(out,
                        "POST %s HTTP/1.1\r\nHost: %s:%s\r\nContent-Type: application/json\r\n"
                        "Content-Length: %zu\r\n",
                        lg->o.path, lg->o.host, lg->o.port, len);
    if (lg->o.header)
        evbuffer_add_printf(out, "%s\r\n", lg->o.header);
    if (lg->o.idempotency)
        evbuffer_add_printf(out, "idempotency-key: %s-%ld\r\n", lg->o.id_prefix, i);
    if (!lg->o.plain) {
        char id[160], sig[SIG_STANDARD_SIGNATURE_SIZE];
        snprintf(id, sizeof id, "%s-%ld", lg->o.id_prefix, i);
        if (sig_sign_standard(&lg->key, id, lg->ts, (const unsigned char *)body, len, sig, sizeof sig) != 0)
            die("signing failed");
        evbuffer_add_printf(out, "webhook-id: %s\r\nwebhook-timestamp: %lld\r\nwebhook-signature: %s\r\n", id,
                            (long long)lg->ts, sig);
    }
    evbuffer_add(out, "\r\n", 2);
    evbuffer_add(out, body, len);
}

/* Signs every request up front when they fit, so the clock measures the
 * server and not our HMACs. */
static void prebuild(struct lg *lg)
{
    if (lg->o.requests <= 0 || lg->o.requests > 50 * 1000 * 1000)
        return;
    struct evbuffer *all = evbuffer_new();
    size_t *offsets = xcalloc((size_t)lg->o.requests + 1, sizeof *offsets);
    for (long i = 0; i < lg->o.requests; i++) {
        offsets[i] = evbuffer_get_length(all);
        build_request(lg, i, all);
        if (evbuffer_get_length(all) > PREBUILD_MAX_BYTES) {
            evbuffer_free(all);
            free(offsets);
            return; /* too big: build each request as it is sent */
        }
    }
    size_t total = evbuffer_get_length(all);
    offsets[lg->o.requests] = total;
    lg->arena = xmalloc(total + 1);
    evbuffer_remove(all, lg->arena, total);
    evbuffer_free(all);
    lg->offsets = offsets;
}

/* ---- connections ---------------------------------------------------------- */

static void conn_start(struct conn *c);
static void send_next(struct conn *c);

static void record_latency(struct lg *lg, double ms)
{
    if (lg->nlat == lg->caplat) {
        lg->caplat = lg->caplat ? lg->caplat * 2 : 4096;
        lg->lat_ms = xrealloc(lg->lat_ms, lg->caplat * sizeof *lg->lat_ms);
    }
    lg->lat_ms[lg->nlat++] = ms;
}

static void conn_finish(struct conn *c)
{
    if (c->done)
        return;
    c->done = true;
    if (c->bev) {
        bufferevent_free(c->bev);
        c->bev = NULL;
    }
    if (--c->lg->live_conns == 0)
        event_base_loopexit(c->lg->base, NULL);
}

static void response_done(struct conn *c)
{
    struct lg *lg = c->lg;
    int64_t t = now_us();
    lg->completed++;
    if (c->status >= 200 && c->status < 300)
        lg->ok++;
    else
        lg->non2xx++;
    record_latency(lg, (double)(t - c->sent_us) / 1000.0);
    lg->end_us = t;
    c->cur = -1;
    c->consecutive_failures = 0;
    if (c->server_closes) {
        bufferevent_free(c->bev);
        c->bev = NULL;
        conn_start(c);
        return;
    }
    send_next(c);
}

/* A broken connection: the request on it (if any) failed; connect again. */
static void conn_failed(struct conn *c)
{
    struct lg *lg = c->lg;
    if (c->cur < 0 && !c->connected && lg->next < lg->o.requests && now_us() < lg->stop_issuing_us)
        c->cur = lg->next++; /* could not connect: that costs the request it was to carry */
    if (c->cur >= 0) {
        lg->transport_errors++;
        lg->completed++;
        lg->end_us = now_us();
        c->cur = -1;
    }
    if (c->bev) {
        bufferevent_free(c->bev);
        c->bev = NULL;
    }
    c->connected = false;
    c->consecutive_failures++;
    if (lg->next >= lg->o.requests || now_us() >= lg->stop_issuing_us) {
        conn_finish(c);
        return;
    }
    /* back off a little so a dead server does not make us spin */
    int ms = c->consecutive_failures > 10 ? 100 : 5 * c->consecutive_failures;
    struct timeval tv = {0, ms * 1000};
    event_add(c->retry_ev, &tv);
}

static int parse(struct conn *c)
{
    struct evbuffer *in = bufferevent_get_input(c->bev);
    for (;;) {
        switch (c->st) {
        case P_STATUS: {
            size_t n;
            char *line = evbuffer_readln(in, &n, EVBUFFER_EOL_CRLF);
            if (!line)
                return 0;
            if (n == 0) { /* stray CRLF */
                free(line);
                continue;
            }
            int status = 0;
            if (sscanf(line, "HTTP/%*d.%*d %d", &status) != 1) {
                free(line);
                return -1;
            }
            free(line);
            c->status = status;
            c->body_left = 0;
            c->chunked = false;
            c->server_closes = false;
            c->st = P_HEADERS;
            break;
        }
        case P_HEADERS: {
            size_t n;
            char *line = evbuffer_readln(in, &n, EVBUFFER_EOL_CRLF);
            if (!line)
                return 0;
            if (n == 0) {
                free(line);
                c->st = c->chunked ? P_CHUNK_SIZE : P_BODY;
                if (!c->chunked && c->body_left == 0) {
                    c->st = P_STATUS;
                    response_done(c);
                    return 1;
                }
                break;
            }
            if (strncasecmp(line, "Content-Length:", 15) == 0)
                c->body_left = strtoll(line + 15, NULL, 10);
            else if (strncasecmp(line, "Transfer-Encoding:", 18) == 0 && strcasestr(line + 18, "chunked"))
                c->chunked = true;
            else if (strncasecmp(line, "Connection:", 11) == 0 && strcasestr(line + 11, "close"))
                c->server_closes = true;
            free(line);
            break;
        }
        case P_BODY: {
            size_t have = evbuffer_get_length(in);
            size_t take = (size_t)c->body_left < have ? (size_t)c->body_left : have;
            evbuffer_drain(in, take);
            c->body_left -= (long long)take;
            if (c->body_left > 0)
                return 0;
            c->st = P_STATUS;
            response_done(c);
            return 1;
        }
        case P_CHUNK_SIZE: {
            size_t n;
            char *line = evbuffer_readln(in, &n, EVBUFFER_EOL_CRLF);
            if (!line)
                return 0;
            c->body_left = strtoll(line, NULL, 16);
            free(line);
            c->st = c->body_left == 0 ? P_TRAILER : P_CHUNK_DATA;
            break;
        }
        case P_CHUNK_DATA: {
            size_t have = evbuffer_get_length(in);
            size_t take = (size_t)c->body_left < have ? (size_t)c->body_left : have;
            evbuffer_drain(in, take);
            c->body_left -= (long long)take;
            if (c->body_left > 0)
                return 0;
            c->st = P_CHUNK_CRLF;
            break;
        }
        case P_CHUNK_CRLF: {
            size_t n;
            char *line = evbuffer_readln(in, &n, EVBUFFER_EOL_CRLF);
            if (!line)
                return 0;
            free(line);
            c->st = P_CHUNK_SIZE;
            break;
        }
        case P_TRAILER: {
            size_t n;
            char *line = evbuffer_readln(in, &n, EVBUFFER_EOL_CRLF);
            if (!line)
                return 0;
            free(line);
            if (n == 0) {
                c->st = P_STATUS;
                response_done(c);
                return 1;
            }
            break;
        }
        }
    }
}

static void on_read(struct bufferevent *bev, void *arg)
{
    (void)bev;
    struct conn *c = arg;
    while (c->bev && c->cur >= 0) {
        int rc = parse(c);
        if (rc < 0) {
            conn_failed(c);
            return;
        }
        if (rc == 0)
            return;
    }
}

static void on_event(struct bufferevent *bev, short what, void *arg)
{
    (void)bev;
    struct conn *c = arg;
    if (what & BEV_EVENT_CONNECTED) {
        c->connected = true;
        int one = 1;
        setsockopt(bufferevent_getfd(c->bev), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        send_next(c);
        return;
    }
    conn_failed(c); /* EOF, error or timeout */
}

static void send_next(struct conn *c)
{
    struct lg *lg = c->lg;
    if (lg->next >= lg->o.requests || now_us() >= lg->stop_issuing_us) {
        conn_finish(c);
        return;
    }
    long i = lg->next++;
    struct evbuffer *out = bufferevent_get_output(c->bev);
    if (lg->arena)
        evbuffer_add(out, lg->arena + lg->offsets[i], lg->offsets[i + 1] - lg->offsets[i]);
    else
        build_request(lg, i, out);
    c->cur = i;
    c->st = P_STATUS;
    c->sent_us = now_us();
}

static void conn_start(struct conn *c)
{
    struct lg *lg = c->lg;
    c->connected = false;
    c->bev = bufferevent_socket_new(lg->base, -1, BEV_OPT_CLOSE_ON_FREE);
    if (!c->bev)
        die("bufferevent_socket_new failed");
    bufferevent_setcb(c->bev, on_read, NULL, on_event, c);
    struct timeval tmo = {(time_t)lg->o.timeout_s,
                          (suseconds_t)((lg->o.timeout_s - (double)(time_t)lg->o.timeout_s) * 1e6)};
    bufferevent_set_timeouts(c->bev, &tmo, &tmo);
    bufferevent_enable(c->bev, EV_READ | EV_WRITE);
    if (bufferevent_socket_connect(c->bev, (struct sockaddr *)&lg->addr, (int)lg->addrlen) != 0)
        conn_failed(c);
}

static void on_retry(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    conn_start(arg);
}

static void on_deadline(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct lg *lg = arg;
    fprintf(stderr, "loadgen: --max-seconds reached; %ld requests unanswered\n", lg->next - lg->completed);
    for (int i = 0; i < lg->o.connections; i++) {
        struct conn *c = &lg->conns[i];
        if (c->cur >= 0) {
            lg->transport_errors++;
            lg->completed++;
            c->cur = -1;
        }
    }
    lg->end_us = now_us();
    event_base_loopbreak(lg->base);
}

/* ---- options and report ---------------------------------------------------- */

static void parse_url(const char *url, struct opts *o)
{
    if (strncmp(url, "http://", 7) != 0)
        die("--url must start with http://");
    const char *h = url + 7;
    const char *slash = strchr(h, '/');
    size_t hostport = slash ? (size_t)(slash - h) : strlen(h);
    snprintf(o->path, sizeof o->path, "%s", slash ? slash : "/");
    char hp[sizeof o->host];
    if (hostport >= sizeof hp)
        die("host too long");
    memcpy(hp, h, hostport);
    hp[hostport] = '\0';
    char *colon = strrchr(hp, ':');
    if (colon) {
        *colon = '\0';
        snprintf(o->port, sizeof o->port, "%s", colon + 1);
    } else {
        snprintf(o->port, sizeof o->port, "80");
    }
    snprintf(o->host, sizeof o->host, "%s", hp);
}

static void usage(void)
{
    fprintf(stderr,
            "usage: loadgen --url http://HOST:PORT/PATH [--connections N] [--requests N] [--duration S]\n"
            "               [--plain | --secret whsec_... --scheme standard-webhooks] [--header 'Name: value']\n"
            "               [--body-template JSON-with-%%d] [--entities N] [--id-prefix P] [--idempotency]\n"
            "               [--timeout S] [--max-seconds S]\n");
    exit(2);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double pct(const double *sorted, size_t n, double p)
{
    if (n == 0)
        return 0;
    size_t i = (size_t)(p * (double)(n - 1) + 0.5);
    return sorted[i < n ? i : n - 1];
}

int main(int argc, char **argv)
{
    static struct lg lg;
    struct opts *o = &lg.o;
    const char *url = NULL;
    char id_prefix[64];
    snprintf(id_prefix, sizeof id_prefix, "lg%lx%x", (unsigned long)time(NULL), (unsigned)getpid());
    o->connections = 16;
    o->requests = -1;
    o->timeout_s = 30;
    o->max_seconds = 300;
    o->scheme = "standard-webhooks";
    o->body_template = "{\"type\":\"order.started\",\"data\":{\"order_id\":\"o%d\"}}";
    o->id_prefix = id_prefix;
    static const struct option longopts[] = {
        {"url", required_argument, NULL, 'u'},
        {"connections", required_argument, NULL, 'c'},
        {"requests", required_argument, NULL, 'n'},
        {"duration", required_argument, NULL, 'd'},
        {"secret", required_argument, NULL, 's'},
        {"scheme", required_argument, NULL, 'S'},
        {"body-template", required_argument, NULL, 'b'},
        {"entities", required_argument, NULL, 'e'},
        {"plain", no_argument, NULL, 'p'},
        {"id-prefix", required_argument, NULL, 'i'},
        {"timeout", required_argument, NULL, 't'},
        {"max-seconds", required_argument, NULL, 'm'},
        {"header", required_argument, NULL, 'H'},
        {"idempotency", no_argument, NULL, 'I'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int ch;
    while ((ch = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        switch (ch) {
        case 'u': url = optarg; break;
        case 'c': o->connections = atoi(optarg); break;
        case 'n': o->requests = atol(optarg); break;
        case 'd': o->duration_s = atof(optarg); break;
        case 's': o->secret = optarg; break;
        case 'S': o->scheme = optarg; break;
        case 'b': o->body_template = optarg; break;
        case 'e': o->entities = atol(optarg); break;
        case 'p': o->plain = true; break;
        case 'i': o->id_prefix = optarg; break;
        case 't': o->timeout_s = atof(optarg); break;
        case 'm': o->max_seconds = atof(optarg); break;
        case 'H': o->header = optarg; break;
        case 'I': o->idempotency = true; break;
        default: usage();
        }
    }
    if (!url || o->connections < 1 || (o->requests < 0 && o->duration_s <= 0))
        usage();
    if (o->requests < 0)
        o->requests = INT64_MAX / 2;
    if (o->entities <= 0)
        o->entities = o->requests;
    parse_url(url, o);
    if (!o->plain) {
        if (!o->secret)
            die("--secret is required unless --plain");
        if (strcmp(o->scheme, "standard-webhooks") != 0)
            die("only --scheme standard-webhooks is supported");
        char err[128];
        if (sig_key_decode(SIG_STANDARD_WEBHOOKS, o->secret, &lg.key, err, sizeof err) != 0)
            die(err);
    }
    signal(SIGPIPE, SIG_IGN);

    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *res = NULL;
    if (getaddrinfo(o->host, o->port, &hints, &res) != 0 || !res)
        die("cannot resolve the URL's host");
    memcpy(&lg.addr, res->ai_addr, res->ai_addrlen);
    lg.addrlen = res->ai_addrlen;
    freeaddrinfo(res);

    lg.ts = (int64_t)time(NULL);
    prebuild(&lg);
    lg.base = event_base_new();
    lg.conns = xcalloc((size_t)o->connections, sizeof *lg.conns);
    lg.live_conns = o->connections;
    lg.start_us = lg.end_us = now_us();
    lg.stop_issuing_us = o->duration_s > 0 ? lg.start_us + (int64_t)(o->duration_s * 1e6) : INT64_MAX;
    struct event *deadline = evtimer_new(lg.base, on_deadline, &lg);
    struct timeval dl = {(time_t)o->max_seconds, 0};
    evtimer_add(deadline, &dl);
    for (int i = 0; i < o->connections; i++) {
        struct conn *c = &lg.conns[i];
        c->lg = &lg;
        c->cur = -1;
        c->retry_ev = evtimer_new(lg.base, on_retry, c);
        conn_start(c);
    }
    event_base_dispatch(lg.base);

    double secs = (double)(lg.end_us - lg.start_us) / 1e6;
    if (lg.nlat > 0)
        qsort(lg.lat_ms, lg.nlat, sizeof *lg.lat_ms, cmp_double);
    printf("{\"requests\": %ld, \"ok\": %ld, \"errors\": %ld, \"non_2xx\": %ld, \"transport_errors\": %ld, "
           "\"connections\": %d, \"seconds\": %.3f, \"rps\": %.1f, \"ok_rps\": %.1f, \"p50_ms\": %.3f, "
           "\"p99_ms\": %.3f, \"max_ms\": %.3f}\n",
           lg.completed, lg.ok, lg.non2xx + lg.transport_errors, lg.non2xx, lg.transport_errors, o->connections, secs,
           secs > 0 ? (double)lg.completed / secs : 0, secs > 0 ? (double)lg.ok / secs : 0,
           pct(lg.lat_ms, lg.nlat, 0.50), pct(lg.lat_ms, lg.nlat, 0.99), lg.nlat ? lg.lat_ms[lg.nlat - 1] : 0);
    fflush(stdout);

    for (int i = 0; i < o->connections; i++) {
        if (lg.conns[i].bev)
            bufferevent_free(lg.conns[i].bev);
        event_free(lg.conns[i].retry_ev);
    }
    event_free(deadline);
    event_base_free(lg.base);
    free(lg.conns);
    free(lg.lat_ms);
    free(lg.arena);
    free(lg.offsets);
    sig_key_clear(&lg.key);
    return lg.ok > 0 ? 0 : 1;
}
