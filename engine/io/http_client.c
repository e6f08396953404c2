/* http_client.c — asynchronous webhook POSTs over evhttp (see http_client.h).
 *
 * A request moves QUEUED (in its key's FIFO) → RESOLVING (evdns) →
 * SENDING (on a connection: connect, TLS, request, response) → DONE. It
 * holds one of its key's in-flight slots and one of the client's total
 * slots from leaving the queue until its callback has run. Every outcome -
 * response, failure, timeout - goes through the client's `done` queue and
 * is reported from one deferred event (on_deliver), never from inside an
 * evhttp, evdns or bufferevent callback. That single rule is what makes
 * the rest safe: evhttp connections are freed only from our own events,
 * never while evhttp is on the stack, and the caller's callback can call
 * http_client_post or even http_client_free.
 *
 * Failures are classified from what evhttp tells us: the error callback's
 * reason and the socket error it restores in errno, whether the connection
 * had been established (evhttp's close callback fires only for connected
 * connections), and the first certificate error, which our OpenSSL verify
 * callback records as it happens: evhttp resets the connection (and with it
 * the SSL object, which some libevent versions SSL_clear()) before it tells
 * us anything. */
#include "http_client.h"

#include "clock.h"
#include "errbuf.h"
#include "netguard.h"
#include "xmalloc.h"

#include <arpa/inet.h>
#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/dns.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/util.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/queue.h>
#include <sys/socket.h>
#include <time.h>

#define uthash_malloc(sz) xmalloc(sz) /* allocation failure aborts in one place */
#include <uthash.h>

#define DEFAULT_MAX_RESPONSE 4096
#define DEFAULT_MAX_INFLIGHT 256
#define DEFAULT_TIMEOUT_MS 30000
#define IDLE_TIMEOUT_S 30 /* keep-alive connections unused this long are closed */
#define DEFAULT_MAX_IDLE_TOTAL 1000
#define DEFAULT_MAX_IDLE_ORIGIN 256
#define DEFAULT_MAX_ORIGIN 64
#define ORIGIN_MAX 280          /* "https://" + host + ":" + port */
#define MAX_ADDRS 8             /* resolved addresses tried, in resolver order */
#define MAX_HEADER_BYTES 65536  /* response status line + headers */
#define DISCARD_LIMIT 65536     /* body bytes read past the cap before the connection is cut */
#define BODY_LIMIT_EXTRA 262144 /* evhttp's own body limit: cap + this (see conn_new) */
#define RETRY_AFTER_MAX 128
#define ERROR_MAX 256

enum req_phase {
    REQ_QUEUED,    /* in its key's FIFO, holds no slot */
    REQ_RESOLVING, /* waiting for evdns */
    REQ_SENDING,   /* on a connection; evhttp callbacks are live */
    REQ_RETRY,     /* in the done queue, to be started again on a new connection */
    REQ_DONE,      /* outcome known; in the done queue or being reported */
};

struct hc_request;
struct hc_conn;
TAILQ_HEAD(req_list, hc_request);
TAILQ_HEAD(conn_list, hc_conn);
TAILQ_HEAD(key_list, hc_key);

struct hc_origin;

/* One endpoint key: its FIFO and its in-flight count. Owned by client->keys
 * (a uthash keyed by name); lives while a request points at it (refs: one
 * per request from http_client_post to request_free, wherever the request
 * is - waiting, on the wire, or in the done queue, reported or taken back
 * unsent) and is freed by key_release when the last one goes. A key with
 * waiting requests and a free slot is either ready (in client->ready) or,
 * when its next request's origin has no free slot, blocked on that origin. */
struct hc_key {
    char *name;
    UT_hash_handle hh;
    size_t refs; /* requests that point at it */
    struct req_list waiting;
    int nwaiting;
    int inflight;
    int max_inflight;
    int on_ready; /* in client->ready */
    TAILQ_ENTRY(hc_key) ready_link;
    struct hc_origin *blocked_on; /* in blocked_on->blocked, or NULL */
    TAILQ_ENTRY(hc_key) blocked_link;
    struct hc_origin *woken_by; /* holds one of that origin's slots in reserve (origin_fill) */
};

/* One origin (scheme, host, port): the requests in flight to it, across
 * keys, and its idle keep-alive connections, shared by every key whose URL
 * has that origin, most recently used first. Owned by client->origins (a
 * uthash keyed by name); lives while anything points at it - a request
 * (refs, from http_client_post to request_free), an idle connection (nidle;
 * a connection in use belongs to a request, which holds the origin), a key
 * waiting for one of its slots (blocked) or holding one in reserve (nwoken)
 * - and is freed by origin_maybe_free when the last of them lets go. */
struct hc_origin {
    char name[ORIGIN_MAX];
    UT_hash_handle hh;
    struct conn_list idle;
    int nidle;
    int inflight;            /* requests holding one of its slots */
    int nwoken;              /* slots held in reserve for keys taken off blocked */
    size_t refs;             /* requests (queued or active) whose URL has this origin */
    struct key_list blocked; /* keys waiting for one of its slots, in turn */
};

/* One evhttp connection to one checked address. While idle it is in its
 * origin's list and in the client's idle_lru; in use it is in neither and
 * belongs to the request it carries. */
struct hc_conn {
    struct http_client *client;
    struct hc_origin *origin;       /* alive: the conn is idle in it, or carries a request that refers to it */
    TAILQ_ENTRY(hc_conn) idle_link; /* origin->idle */
    TAILQ_ENTRY(hc_conn) lru_link;  /* client->idle_lru */
    struct evhttp_connection *evcon;
    struct bufferevent *bev; /* owned by evcon */
    SSL *ssl;                /* owned by bev; NULL for http */
    struct event *idle_timer;
    char host[256]; /* the URL's host: what TLS verified, what Host says */
    int port;
    int tls;
    char addr[INET6_ADDRSTRLEN]; /* the address actually connected to */
    int idle;
    int closed;      /* evhttp reset it: never reuse */
    int counted;     /* counted in conns_opened: conn_free counts it closed */
    int established; /* TCP (and TLS) handshake completed at least once */
    int verify_err;  /* first X509_V_ERR_* seen while verifying the server */
};

/* Owned by evdns until it reports: a cancelled lookup still calls back,
 * later, so the request must not be what evdns points at. */
struct dns_lookup {
    struct hc_request *req; /* NULL once the request stopped waiting */
    struct evdns_getaddrinfo_request *handle;
};

struct hc_header {
    char *name;
    char *value;
};

struct hc_request {
    struct http_client *client;
    struct hc_key *key;                  /* counted in key->refs */
    struct hc_origin *origin;            /* counted in origin->refs */
    TAILQ_ENTRY(hc_request) link;        /* key->waiting or client->done */
    TAILQ_ENTRY(hc_request) active_link; /* client->active while holding slots */
    enum req_phase phase;
    int in_done;
    int has_slot;
    int unsent; /* taken back from the queue (http_client_cancel_queued) */

    struct netguard_url url;
    int literal_family; /* AF_INET/AF_INET6 when the host is an IP literal, else 0 */
    struct hc_header *hdrs;
    size_t nhdrs;
    int has_user_agent;
    char *body;
    size_t body_len;
    int timeout_ms;
    http_client_cb cb;
    void *arg;

    struct event *timer;
    struct dns_lookup *dns;
    struct hc_conn *conn;
    struct sockaddr_storage addrs[MAX_ADDRS];
    int naddrs;
    int next_addr;
    int reused;        /* sent on a kept-alive connection */
    int retried_stale; /* already retried once after a kept-alive connection died */
    int retry_fresh;   /* REQ_RETRY: resolve again instead of trying the next address */
    int64_t started_us;
    int64_t duration_us;

    /* what evhttp reported for a failure */
    int have_http_error;
    enum evhttp_request_error http_error;
    int sock_errno;

    /* outcome */
    int got_headers;
    int status;
    int keep_conn;
    char error[ERROR_MAX];
    char *resp;
    size_t resp_len;
    size_t resp_seen;
    char retry_after[RETRY_AFTER_MAX];
    int has_retry_after;
};

struct http_client {
    struct event_base *base;
    struct evdns_base *evdns;
    SSL_CTX *ssl_ctx;
    char *ca_file; /* what ssl_ctx verifies with; NULL = the default store */
    int allow_private;
    size_t max_response;
    int max_total;
    char *user_agent;
    const struct http_header *(*headers_at_send)(void *arg, size_t *n);

    struct hc_key *keys;       /* by name; owns its keys */
    struct hc_origin *origins; /* by name; owns its origins (and their idle connections) */
    int max_origin;            /* requests in flight to one origin */
    struct conn_list idle_lru; /* every idle connection, most recently used first */
    int nidle;                 /* length of idle_lru */
    int max_idle_total;
    int max_idle_origin;
    uint64_t conns_opened;  /* connections created (http_client_stats) */
    uint64_t conns_closed;  /* of them, freed */
    uint64_t requests_sent; /* requests written on a connection */
    uint64_t conns_reused;  /* of them, on a kept-alive connection */
    size_t nqueued;         /* requests in keys' FIFOs */
    struct key_list ready;  /* keys that could start a request now */
    struct req_list active; /* requests holding slots */
    struct req_list done;   /* outcomes waiting for on_deliver */
    struct event *deliver_ev;
    size_t pending; /* accepted, callback not yet run */
    int nactive;
    int delivering;      /* on_deliver is on the stack */
    int closing;         /* http_client_free has started */
    int destroy_pending; /* http_client_free ran inside on_deliver */
};

static void request_finish(struct hc_request *r);
static void request_resolve(struct hc_request *r);
static void on_timeout(evutil_socket_t fd, short what, void *arg);
static void client_destroy(struct http_client *c);

static void set_error(struct hc_request *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void set_error(struct hc_request *r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->error, sizeof(r->error), fmt, ap);
    va_end(ap);
}

static void addr_to_string(const struct sockaddr *sa, char *buf, size_t len)
{
    const void *a = sa->sa_family == AF_INET
                        ? (const void *)&((const struct sockaddr_in *)(const void *)sa)->sin_addr
                        : (const void *)&((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr;
    if (!evutil_inet_ntop(sa->sa_family, a, buf, len))
        snprintf(buf, len, "?");
}

static void openssl_reason(unsigned long e, char *buf, size_t len)
{
    const char *reason = ERR_reason_error_string(e);
    if (reason)
        snprintf(buf, len, "%s", reason);
    else
        ERR_error_string_n(e, buf, len);
}

/* ---- keys ----------------------------------------------------------------- */

/* The key of that name, created if new, with a reference taken for the
 * request about to point at it. */
static struct hc_key *key_hold(struct http_client *c, const char *name)
{
    struct hc_key *k;

    HASH_FIND_STR(c->keys, name, k);
    if (!k) {
        k = xcalloc(1, sizeof(*k));
        k->name = xstrdup(name);
        TAILQ_INIT(&k->waiting);
        HASH_ADD_KEYPTR(hh, c->keys, k->name, strlen(k->name), k);
    }
    k->refs++;
    return k;
}

/* Drops a request's reference. The last one frees the key: endpoints
 * removed from the config thereby cost nothing once their last request is
 * reported. A key nothing points at waits for nothing, so it is on no list
 * (waiting, in-flight slots, ready, blocked and woken all come from
 * requests of its own). */
static void key_release(struct http_client *c, struct hc_key *k)
{
    HOOKD_ASSERT(k->refs > 0);
    if (--k->refs > 0)
        return;
    HOOKD_ASSERT(k->inflight == 0 && TAILQ_EMPTY(&k->waiting) && !k->on_ready && !k->blocked_on && !k->woken_by);
    HASH_DEL(c->keys, k);
    free(k->name);
    free(k);
}

/* Keeps client->ready equal to the set of keys that could start a request
 * if a total slot were free. */
static void key_update_ready(struct http_client *c, struct hc_key *k)
{
    int ready = !TAILQ_EMPTY(&k->waiting) && k->inflight < k->max_inflight && !k->blocked_on;
    if (ready && !k->on_ready) {
        TAILQ_INSERT_TAIL(&c->ready, k, ready_link);
        k->on_ready = 1;
    } else if (!ready && k->on_ready) {
        TAILQ_REMOVE(&c->ready, k, ready_link);
        k->on_ready = 0;
    }
}

/* ---- TLS ------------------------------------------------------------------ */

/* Remembers the first verification error on the connection. Reading
 * SSL_get_verify_result() afterwards would depend on what evhttp's reset did
 * to the SSL object first (libevent versions whose be_openssl_set_fd() calls
 * SSL_clear() erase it). */
static int on_tls_verify(int preverify_ok, X509_STORE_CTX *store)
{
    SSL *ssl;
    struct hc_conn *conn;

    if (preverify_ok)
        return 1;
    ssl = X509_STORE_CTX_get_ex_data(store, SSL_get_ex_data_X509_STORE_CTX_idx());
    conn = ssl ? SSL_get_app_data(ssl) : NULL;
    if (conn && conn->verify_err == 0)
        conn->verify_err = X509_STORE_CTX_get_error(store);
    return 0;
}

static SSL_CTX *tls_ctx_new(const char *ca_file, char *err, size_t errlen)
{
    char reason[160];
    SSL_CTX *ctx;

    ERR_clear_error();
    ctx = SSL_CTX_new(TLS_client_method());
    if (!ctx) {
        openssl_reason(ERR_get_error(), reason, sizeof(reason));
        err_set(err, errlen, "tls: cannot create context: %s", reason);
        return NULL;
    }
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    SSL_CTX_set_options(ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION);
    /* idle keep-alive connections hold no buffers */
    SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS);
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, on_tls_verify);
    if (ca_file ? SSL_CTX_load_verify_locations(ctx, ca_file, NULL) != 1
                : SSL_CTX_set_default_verify_paths(ctx) != 1) {
        openssl_reason(ERR_get_error(), reason, sizeof(reason));
        if (ca_file)
            err_set(err, errlen, "tls: cannot load CA file %s: %s", ca_file, reason);
        else
            err_set(err, errlen, "tls: cannot load the default CA store: %s", reason);
        ERR_clear_error();
        SSL_CTX_free(ctx);
        return NULL;
    }
    return ctx;
}

/* The server is verified against the URL's host - never the address we
 * connect to - and SNI carries it (RFC 6066 forbids IP literals there). */
static SSL *tls_session_new(struct http_client *c, struct hc_conn *conn, int literal, char *err, size_t errlen)
{
    SSL *ssl = SSL_new(c->ssl_ctx);
    int ok;

    if (!ssl) {
        err_set(err, errlen, "tls: cannot create session");
        return NULL;
    }
    SSL_set_app_data(ssl, conn);
    if (literal) {
        ok = X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), conn->host) == 1;
    } else {
        SSL_set_hostflags(ssl, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
        ok = SSL_set_tlsext_host_name(ssl, conn->host) == 1 && SSL_set1_host(ssl, conn->host) == 1;
    }
    if (!ok) {
        ERR_clear_error();
        SSL_free(ssl);
        err_set(err, errlen, "tls: cannot set the expected server name %s", conn->host);
        return NULL;
    }
    return ssl;
}

/* ---- connections ---------------------------------------------------------- */

static int conn_is_open(const struct hc_conn *conn)
{
    return !conn->closed && bufferevent_getfd(conn->bev) >= 0;
}

static void conn_free(struct hc_conn *conn)
{
    if (conn->counted)
        conn->client->conns_closed++;
    if (conn->evcon) {
        evhttp_connection_set_closecb(conn->evcon, NULL, NULL);
        if (conn->ssl)
            SSL_set_app_data(conn->ssl, NULL);
        /* Also frees a request still queued on it, without calling back. */
        evhttp_connection_free(conn->evcon);
    }
    if (conn->idle_timer)
        event_free(conn->idle_timer);
    free(conn);
}

/* evhttp resets a connected connection: the peer closed it, it failed, or
 * it asked for "Connection: close". An idle one is freed from our own
 * event, because evhttp is on the stack here. */
static void on_conn_close(struct evhttp_connection *evcon, void *arg)
{
    struct hc_conn *conn = arg;
    (void)evcon;
    conn->closed = 1;
    conn->established = 1;
    if (conn->idle)
        event_active(conn->idle_timer, EV_TIMEOUT, 1);
}

/* ---- the shared idle pool ----------------------------------------------------
 *
 * Idle keep-alive connections are pooled per origin, not per key: thousands
 * of endpoints on one receiver (a SaaS's customers behind one ingress) then
 * share a few warm connections instead of each opening its own, as Go's
 * http.Transport and hyper pool per scheme and authority. Nothing of a key
 * lives on a connection: headers, body and deadline are per request, and a
 * key's in-flight bound counts requests, wherever they are sent. What a
 * connection was checked for is the same for every key of its origin: the
 * address was checked against the client's policy when it connected (a
 * stricter policy or other CAs close every idle connection), and TLS
 * verified the URL's host, which is part of the origin, with the client's
 * one context. The pool is bounded per origin (so one busy receiver cannot
 * push every other origin's connections out) and in total (the least
 * recently used idle connection is closed for a new one). */

static void origin_name(char *buf, size_t len, const struct netguard_url *u)
{
    int v6 = strchr(u->host, ':') != NULL;
    snprintf(buf, len, "%s://%s%s%s:%d", u->tls ? "https" : "http", v6 ? "[" : "", u->host, v6 ? "]" : "", u->port);
}

/* The URL's origin, created if new; the caller counts its reference. */
static struct hc_origin *origin_get(struct http_client *c, const struct netguard_url *u)
{
    char name[ORIGIN_MAX];
    struct hc_origin *o = NULL;

    origin_name(name, sizeof(name), u);
    HASH_FIND_STR(c->origins, name, o);
    if (o)
        return o;
    o = xcalloc(1, sizeof(*o));
    snprintf(o->name, sizeof(o->name), "%s", name);
    TAILQ_INIT(&o->idle);
    TAILQ_INIT(&o->blocked);
    HASH_ADD_STR(c->origins, name, o);
    return o;
}

static void origin_maybe_free(struct http_client *c, struct hc_origin *o)
{
    if (o->refs || o->nidle || o->inflight || o->nwoken || !TAILQ_EMPTY(&o->blocked))
        return;
    HASH_DEL(c->origins, o);
    free(o);
}

/* Origin slots are handed out in turn: a key whose origin is full waits in
 * its blocked list; when slots come free, origin_fill takes as many keys off
 * the list as there are free slots and reserves one slot for each
 * (woken_by), so a key that keeps becoming ready - a busy endpoint - cannot
 * take every slot that frees before the keys that waited. */
static void origin_fill(struct http_client *c, struct hc_origin *o)
{
    struct hc_key *k;
    while (o->inflight + o->nwoken < c->max_origin && (k = TAILQ_FIRST(&o->blocked)) != NULL) {
        TAILQ_REMOVE(&o->blocked, k, blocked_link);
        k->blocked_on = NULL;
        k->woken_by = o;
        o->nwoken++;
        key_update_ready(c, k);
    }
}

/* Gives back a reserved slot the key did not use (its requests were taken
 * back), and takes the key off a blocked list. */
static void key_unblock(struct http_client *c, struct hc_key *k)
{
    struct hc_origin *o = k->blocked_on;
    if (o) {
        TAILQ_REMOVE(&o->blocked, k, blocked_link);
        k->blocked_on = NULL;
        origin_maybe_free(c, o);
    }
    o = k->woken_by;
    if (o) {
        k->woken_by = NULL;
        o->nwoken--;
        origin_fill(c, o);
        origin_maybe_free(c, o);
    }
    key_update_ready(c, k);
}

/* Whether key k may start its next request, to origin o, now; see
 * origin_fill. */
static int origin_admits(const struct http_client *c, const struct hc_origin *o, const struct hc_key *k)
{
    if (k->woken_by == o)
        return 1;
    return TAILQ_EMPTY(&o->blocked) && o->inflight + o->nwoken < c->max_origin;
}

/* Takes an idle connection out of the pool. */
static void idle_unlink(struct http_client *c, struct hc_conn *conn)
{
    struct hc_origin *o = conn->origin;

    TAILQ_REMOVE(&o->idle, conn, idle_link);
    o->nidle--;
    TAILQ_REMOVE(&c->idle_lru, conn, lru_link);
    c->nidle--;
    conn->idle = 0;
    event_del(conn->idle_timer);
}

static void idle_close(struct http_client *c, struct hc_conn *conn)
{
    struct hc_origin *o = conn->origin;
    idle_unlink(c, conn);
    conn_free(conn);
    origin_maybe_free(c, o);
}

/* Closes every idle keep-alive connection, so the next request connects
 * (and is checked) afresh. */
static void drop_idle(struct http_client *c)
{
    struct hc_conn *conn;
    while ((conn = TAILQ_FIRST(&c->idle_lru)) != NULL)
        idle_close(c, conn);
}

/* Closes idle connections beyond the (possibly lowered) bounds: the least
 * recently used first. */
static void trim_idle(struct http_client *c)
{
    struct hc_origin *o, *next;
    struct hc_conn *conn;

    while (c->nidle > c->max_idle_total && (conn = TAILQ_LAST(&c->idle_lru, conn_list)) != NULL)
        idle_close(c, conn);
    HASH_ITER(hh, c->origins, o, next)
    {
        /* max_idle_origin >= 1: o keeps a connection, so it is not freed here */
        while (o->nidle > c->max_idle_origin)
            idle_close(c, TAILQ_LAST(&o->idle, conn_list));
    }
}

static void on_idle_timer(evutil_socket_t fd, short what, void *arg)
{
    struct hc_conn *conn = arg;
    (void)fd;
    (void)what;
    idle_close(conn->client, conn);
}

static size_t body_limit(size_t cap)
{
    size_t max = (size_t)EV_SSIZE_MAX - BODY_LIMIT_EXTRA;
    return (cap < max ? cap : max) + BODY_LIMIT_EXTRA;
}

static struct hc_conn *conn_new(struct http_client *c, const struct hc_request *r, const struct sockaddr *sa,
                                char *err, size_t errlen)
{
    struct hc_conn *conn = xcalloc(1, sizeof(*conn));

    conn->client = c;
    conn->origin = r->origin;
    conn->port = r->url.port;
    conn->tls = r->url.tls;
    snprintf(conn->host, sizeof(conn->host), "%s", r->url.host);
    addr_to_string(sa, conn->addr, sizeof(conn->addr));
    conn->idle_timer = evtimer_new(c->base, on_idle_timer, conn);
    if (!conn->idle_timer) {
        err_set(err, errlen, "out of memory creating a connection");
        goto fail;
    }
    if (conn->tls) {
        conn->ssl = tls_session_new(c, conn, r->literal_family != 0, err, errlen);
        if (!conn->ssl)
            goto fail;
        /* On failure libevent frees the SSL itself (BEV_OPT_CLOSE_ON_FREE). */
        conn->bev = bufferevent_openssl_socket_new(c->base, -1, conn->ssl, BUFFEREVENT_SSL_CONNECTING,
                                                   BEV_OPT_CLOSE_ON_FREE);
        if (conn->bev) /* many servers skip close_notify */
            bufferevent_openssl_set_allow_dirty_shutdown(conn->bev, 1);
    } else {
        conn->bev = bufferevent_socket_new(c->base, -1, BEV_OPT_CLOSE_ON_FREE);
    }
    if (!conn->bev) {
        conn->ssl = NULL;
        err_set(err, errlen, "out of memory creating a connection");
        goto fail;
    }
    /* A numeric address: evhttp never resolves anything itself. */
    conn->evcon = evhttp_connection_base_bufferevent_new(c->base, NULL, conn->bev, conn->addr,
                                                         (ev_uint16_t)conn->port);
    if (!conn->evcon) {
        bufferevent_free(conn->bev);
        conn->ssl = NULL;
        err_set(err, errlen, "out of memory creating a connection");
        goto fail;
    }
    evhttp_connection_set_family(conn->evcon, sa->sa_family);
    evhttp_connection_set_retries(conn->evcon, 0); /* a POST is retried by the relay, not here */
    evhttp_connection_set_max_headers_size(conn->evcon, MAX_HEADER_BYTES);
    /* evhttp hands us a chunked body one complete chunk at a time, so one
     * huge chunk would sit in memory until the deadline; with this limit
     * evhttp refuses it (and a Content-Length above it) up front instead. */
    evhttp_connection_set_max_body_size(conn->evcon, (ev_ssize_t)body_limit(c->max_response));
    evhttp_connection_set_closecb(conn->evcon, on_conn_close, conn);
    c->conns_opened++;
    conn->counted = 1;
    return conn;

fail:
    conn_free(conn);
    return NULL;
}

/* The most recently used open idle connection to the request's origin,
 * taken out of the pool; NULL when there is none. A closed one stays until
 * its timer (made due by on_conn_close) frees it. */
static struct hc_conn *conn_take_idle(struct http_client *c, struct hc_origin *o)
{
    struct hc_conn *conn;

    TAILQ_FOREACH (conn, &o->idle, idle_link) {
        if (conn_is_open(conn)) {
            idle_unlink(c, conn);
            return conn;
        }
    }
    return NULL;
}

/* Back to its origin's idle pool (most recent first), or closed: when it
 * cannot carry another request, or its origin already keeps
 * max_idle_origin idle. A full pool closes its least recently used
 * connection to make room. The request it carried still refers to its
 * origin, so the origin outlives this. */
static void conn_release(struct hc_conn *conn, int reusable)
{
    struct http_client *c = conn->client;
    struct timeval tv = {IDLE_TIMEOUT_S, 0};
    struct hc_origin *o = conn->origin;

    if (!reusable || c->closing || !conn_is_open(conn) || o->nidle >= c->max_idle_origin) {
        conn_free(conn);
        return;
    }
    if (c->nidle >= c->max_idle_total) /* max_idle_total >= 1: not empty; never frees o (o->refs) */
        idle_close(c, TAILQ_LAST(&c->idle_lru, conn_list));
    conn->idle = 1;
    TAILQ_INSERT_HEAD(&o->idle, conn, idle_link);
    o->nidle++;
    TAILQ_INSERT_HEAD(&c->idle_lru, conn, lru_link);
    c->nidle++;
    evtimer_add(conn->idle_timer, &tv);
}

/* ---- requests --------------------------------------------------------------- */

static int is_tchar(unsigned char ch)
{
    return (ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
           (ch && strchr("!#$%&'*+-.^_`|~", ch) != NULL);
}

static int check_headers(const struct http_header *hdrs, size_t n, int *has_ua, char *err, size_t errlen)
{
    static const char *const reserved[] = {"Host", "Content-Length", "Transfer-Encoding", "Connection"};
    *has_ua = 0;
    if (n && !hdrs)
        return err_set(err, errlen, "headers missing");
    for (size_t i = 0; i < n; i++) {
        const char *name = hdrs[i].name, *value = hdrs[i].value;
        if (!name || !*name)
            return err_set(err, errlen, "header #%zu has an empty name", i + 1);
        for (const char *p = name; *p; p++)
            if (!is_tchar((unsigned char)*p))
                return err_set(err, errlen, "header #%zu has an invalid name", i + 1);
        for (size_t j = 0; j < sizeof(reserved) / sizeof(reserved[0]); j++)
            if (strcasecmp(name, reserved[j]) == 0)
                return err_set(err, errlen, "header %s is set by the HTTP client", name);
        if (!value)
            return err_set(err, errlen, "header %s has no value", name);
        for (const unsigned char *p = (const unsigned char *)value; *p; p++)
            if ((*p < 0x20 && *p != '\t') || *p == 0x7f)
                return err_set(err, errlen, "header %s: value contains a control character", name);
        if (strcasecmp(name, "User-Agent") == 0)
            *has_ua = 1;
    }
    return 0;
}

static int literal_family(const char *host)
{
    struct in6_addr a6;
    struct in_addr a4;
    if (evutil_inet_pton(AF_INET, host, &a4) == 1)
        return AF_INET;
    if (evutil_inet_pton(AF_INET6, host, &a6) == 1)
        return AF_INET6;
    return 0;
}

static void request_free(struct hc_request *r)
{
    if (r->key)
        key_release(r->client, r->key);
    if (r->origin) {
        r->origin->refs--;
        origin_maybe_free(r->client, r->origin);
    }
    for (size_t i = 0; i < r->nhdrs; i++) {
        free(r->hdrs[i].name);
        free(r->hdrs[i].value);
    }
    free(r->hdrs);
    free(r->body);
    free(r->resp);
    if (r->timer)
        event_free(r->timer);
    free(r);
}

static struct hc_request *request_new(struct http_client *c, const struct netguard_url *url,
                                      const struct http_header *hdrs, size_t nhdrs, int has_ua, const char *body,
                                      size_t body_len, int timeout_ms, http_client_cb cb, void *arg)
{
    struct hc_request *r = xcalloc(1, sizeof(*r));

    r->client = c;
    r->url = *url;
    r->literal_family = literal_family(url->host);
    r->timeout_ms = timeout_ms > 0 ? timeout_ms : DEFAULT_TIMEOUT_MS;
    r->cb = cb;
    r->arg = arg;
    r->has_user_agent = has_ua;
    r->hdrs = nhdrs ? xcalloc(nhdrs, sizeof(*r->hdrs)) : NULL;
    for (size_t i = 0; i < nhdrs; i++) {
        r->hdrs[i].name = xstrdup(hdrs[i].name);
        r->hdrs[i].value = xstrdup(hdrs[i].value);
    }
    r->nhdrs = nhdrs;
    r->body = xmalloc(body_len ? body_len : 1);
    if (body_len)
        memcpy(r->body, body, body_len);
    r->body_len = body_len;
    r->timer = evtimer_new(c->base, on_timeout, r);
    if (!r->timer) {
        request_free(r);
        return NULL;
    }
    return r;
}

/* ---- outcome bookkeeping -------------------------------------------------- */

static void queue_done(struct hc_request *r)
{
    struct http_client *c = r->client;
    if (!r->in_done) {
        TAILQ_INSERT_TAIL(&c->done, r, link);
        r->in_done = 1;
    }
    event_active(c->deliver_ev, EV_TIMEOUT, 1);
}

static void request_drop_dns(struct hc_request *r)
{
    struct dns_lookup *d = r->dns;
    if (!d)
        return;
    r->dns = NULL;
    d->req = NULL; /* on_dns frees d when evdns reports the cancellation */
    evdns_getaddrinfo_cancel(d->handle);
}

/* The outcome is known: stop the clock and queue the report. The
 * connection stays attached until on_deliver, the only place it may be
 * freed (evhttp may be on the stack here). */
static void request_finish(struct hc_request *r)
{
    if (r->phase == REQ_DONE)
        return;
    r->phase = REQ_DONE;
    r->duration_us = r->started_us ? clock_mono_us() - r->started_us : 0;
    if (r->timer)
        event_del(r->timer);
    request_drop_dns(r);
    queue_done(r);
}

static void request_fail(struct hc_request *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void request_fail(struct hc_request *r, const char *fmt, ...)
{
    va_list ap;
    if (r->phase == REQ_DONE)
        return; /* the first outcome stands */
    va_start(ap, fmt);
    vsnprintf(r->error, sizeof(r->error), fmt, ap);
    va_end(ap);
    r->status = 0;
    r->keep_conn = 0;
    request_finish(r);
}

/* Starts the attempt again on a new connection from on_deliver, once the
 * failed connection can be freed; the deadline keeps running. */
static void request_retry(struct hc_request *r, int fresh)
{
    r->retry_fresh = fresh;
    r->keep_conn = 0;
    r->phase = REQ_RETRY;
    queue_done(r);
}

static void on_timeout(evutil_socket_t fd, short what, void *arg)
{
    struct hc_request *r = arg;
    (void)fd;
    (void)what;
    request_fail(r, "timeout");
}

/* ---- sending ---------------------------------------------------------------- */

static void body_take(struct hc_request *r, struct evbuffer *in)
{
    size_t n = evbuffer_get_length(in), cap = r->client->max_response;

    if (n && r->resp_len < cap) {
        size_t want = n < cap - r->resp_len ? n : cap - r->resp_len;
        r->resp = xrealloc(r->resp, r->resp_len + want + 1);
        evbuffer_copyout(in, r->resp + r->resp_len, want);
        r->resp_len += want;
        r->resp[r->resp_len] = '\0';
    }
    r->resp_seen += n;
    evbuffer_drain(in, n);
}

static int on_http_header(struct evhttp_request *ereq, void *arg)
{
    struct hc_request *r = arg;
    const char *ra;

    if (r->phase != REQ_SENDING)
        return 0;
    r->got_headers = 1;
    r->conn->established = 1;
    r->status = evhttp_request_get_response_code(ereq);
    ra = evhttp_find_header(evhttp_request_get_input_headers(ereq), "Retry-After");
    r->has_retry_after = ra != NULL;
    if (ra)
        snprintf(r->retry_after, sizeof(r->retry_after), "%s", ra);
    return 0;
}

/* Called for each piece of body as it arrives; evhttp drains the buffer
 * afterwards, so nothing past the cap is ever kept. */
static void on_http_chunk(struct evhttp_request *ereq, void *arg)
{
    struct hc_request *r = arg;

    if (r->phase != REQ_SENDING)
        return;
    body_take(r, evhttp_request_get_input_buffer(ereq));
    if (r->resp_seen - r->resp_len > DISCARD_LIMIT) { /* bytes thrown away past the cap */
        /* The caller has all it will see; reading on would only hold the
         * slot. A half-read response makes the connection unusable. */
        r->keep_conn = 0;
        request_finish(r);
    }
}

/* Runs just before on_http_done(NULL) with the socket error restored in
 * errno by evhttp_connection_fail_(); read it first. */
static void on_http_error(enum evhttp_request_error error, void *arg)
{
    int saved = errno;
    struct hc_request *r = arg;
    r->have_http_error = 1;
    r->http_error = error;
    r->sock_errno = saved;
}

static int is_connect_errno(int e)
{
    switch (e) {
    case ENETUNREACH:
    case EHOSTUNREACH:
    case ENETDOWN:
    case EHOSTDOWN:
    case ETIMEDOUT:
    case EADDRNOTAVAIL:
    case EACCES:
    case EPERM: return 1;
    default: return 0;
    }
}

/* A failure before the connection (and its TLS handshake) was up. Returns 1
 * for TLS failures, which another address of the same host would not fix. */
static int describe_connect_failure(struct hc_request *r, struct hc_conn *conn)
{
    char reason[160];
    unsigned long e, first = 0;

    if (conn->tls) {
        while ((e = bufferevent_get_openssl_error(conn->bev)) != 0)
            if (!first)
                first = e;
        if (conn->verify_err) {
            set_error(r, "tls: certificate verify failed: %s", X509_verify_cert_error_string(conn->verify_err));
            return 1;
        }
        if (first) {
            openssl_reason(first, reason, sizeof(reason));
            set_error(r, "tls: handshake failed: %s", reason);
            return 1;
        }
    }
    if (r->sock_errno == ECONNREFUSED) {
        set_error(r, "connection refused");
    } else if (r->sock_errno == ECONNRESET) {
        set_error(r, "%sconnection reset by peer", conn->tls ? "tls: handshake failed: " : "");
        return conn->tls;
    } else if (is_connect_errno(r->sock_errno)) {
        set_error(r, "cannot connect to %s port %d: %s", conn->addr, conn->port, strerror(r->sock_errno));
    } else if (conn->tls) {
        set_error(r, "tls: handshake failed: connection closed by peer");
        return 1;
    } else {
        set_error(r, "cannot connect to %s port %d", conn->addr, conn->port);
    }
    return 0;
}

/* evhttp gave up on the request. connect_refused: evhttp's connect-cleanup
 * path, which reports through the done callback alone (no error callback,
 * errno already overwritten). It is taken for ECONNREFUSED, and for evhttp's
 * own connect timeout, which request_send sets past our deadline. */
static void request_failed_on_conn(struct hc_request *r, int connect_refused)
{
    struct hc_conn *conn = r->conn;
    int tls_failure = 0;

    r->keep_conn = 0;
    if (r->http_error == EVREQ_HTTP_DATA_TOO_LONG && r->got_headers && !connect_refused) {
        /* A body over evhttp's limit (or chunking it cannot parse): the
         * status line is the answer that matters, so report it with the
         * body read so far; the connection is not reused. */
        r->error[0] = '\0';
        request_finish(r);
        return;
    }
    r->status = 0;
    if (connect_refused) {
        set_error(r, "connection refused");
    } else if (r->http_error == EVREQ_HTTP_TIMEOUT) {
        set_error(r, "timeout");
        request_finish(r);
        return;
    } else if (r->http_error == EVREQ_HTTP_INVALID_HEADER) {
        set_error(r, "invalid HTTP response (malformed or oversized status line or headers)");
    } else if (!conn->established) {
        tls_failure = describe_connect_failure(r, conn);
    } else if (r->sock_errno == ECONNRESET) {
        set_error(r, "connection reset by peer before the response was complete");
    } else {
        set_error(r, "connection closed before the response was complete");
    }

    /* A kept-alive connection the server closed while it sat idle fails
     * this way; the request has not been seen, so send it once more on a
     * new connection (as curl and browsers do). */
    if (r->reused && !r->got_headers && !r->retried_stale && !connect_refused &&
        (r->http_error == EVREQ_HTTP_EOF || r->http_error == EVREQ_HTTP_BUFFER_ERROR)) {
        request_retry(r, 1);
        return;
    }
    /* The host has more addresses (e.g. IPv4 and IPv6): try the next one. */
    if (!conn->established && !tls_failure && r->next_addr < r->naddrs) {
        request_retry(r, 0);
        return;
    }
    request_finish(r);
}

static void on_http_done(struct evhttp_request *ereq, void *arg)
{
    struct hc_request *r = arg;

    if (r->phase != REQ_SENDING)
        return; /* already finished by the timer or the body cap */
    if (ereq && evhttp_request_get_response_code(ereq) != 0) {
        body_take(r, evhttp_request_get_input_buffer(ereq));
        r->status = evhttp_request_get_response_code(ereq);
        r->conn->established = 1;
        r->keep_conn = 1; /* conn_release checks that the socket is still open */
        r->error[0] = '\0';
        request_finish(r);
        return;
    }
    request_failed_on_conn(r, ereq != NULL && !r->have_http_error);
}

static void add_request_headers(struct hc_request *r, struct evkeyvalq *h)
{
    const struct netguard_url *u = &r->url;
    int default_port = u->port == (u->tls ? 443 : 80);
    char host[300];

    if (r->literal_family == AF_INET6)
        snprintf(host, sizeof(host), default_port ? "[%s]" : "[%s]:%d", u->host, u->port);
    else
        snprintf(host, sizeof(host), default_port ? "%s" : "%s:%d", u->host, u->port);
    evhttp_add_header(h, "Host", host);
    if (!r->has_user_agent)
        evhttp_add_header(h, "User-Agent", r->client->user_agent);
    for (size_t i = 0; i < r->nhdrs; i++)
        evhttp_add_header(h, r->hdrs[i].name, r->hdrs[i].value);
    if (r->client->headers_at_send) {
        size_t n = 0;
        const struct http_header *late = r->client->headers_at_send(r->arg, &n);
        for (size_t i = 0; late && i < n; i++)
            evhttp_add_header(h, late[i].name, late[i].value);
    }
}

/* A request on an open plain-TCP connection is written at once, not on the
 * next loop turn: a bufferevent only writes when the loop reports the socket
 * writable, so every request cost an extra turn and two epoll_ctl calls
 * (add, then drop, EPOLLOUT; measured: 4% of the relay's loop CPU at
 * 22,000 deliveries/s). What the socket does not take now the bufferevent
 * writes as before; when all of it went, the write callback evhttp waits
 * for (to start reading the response) is run here, as the bufferevent
 * itself would run it. TLS connections are left alone: their output is
 * plaintext for the TLS layer. */
static void write_now(struct hc_conn *conn)
{
#if LIBEVENT_VERSION_NUMBER < 0x02010000 || LIBEVENT_VERSION_NUMBER >= 0x02020000
    /* Written against 2.1's evhttp (one request per connection at a time,
     * the state moved on by the write callback): another series writes on
     * the next turn, as before. */
    (void)conn;
    return;
#endif
    if (conn->tls || !conn->established)
        return;
    struct bufferevent *bev = evhttp_connection_get_bufferevent(conn->evcon);
    evutil_socket_t fd = bev ? bufferevent_getfd(bev) : -1;
    struct evbuffer *out = bev ? bufferevent_get_output(bev) : NULL;
    if (fd < 0 || !out || evbuffer_get_length(out) == 0)
        return; /* not dispatched yet (evhttp is connecting) */
    /* As the bufferevent's own write does: its output's start is frozen
     * against draining by anyone else. -1 (EAGAIN, or a reset the
     * bufferevent's own write will report) writes nothing: the bufferevent
     * carries on alone. */
    evbuffer_unfreeze(out, 1);
    int n = evbuffer_write(out, fd);
    evbuffer_freeze(out, 1);
    if (n > 0 && evbuffer_get_length(out) == 0)
        bufferevent_trigger(bev, EV_WRITE, 0);
}

static void request_send(struct hc_request *r, struct hc_conn *conn)
{
    struct evhttp_request *ereq;
    int64_t left_ms = r->timeout_ms - (clock_mono_us() - r->started_us) / 1000;
    struct timeval tv;

    r->conn = conn;
    r->phase = REQ_SENDING;
    r->client->requests_sent++;
    r->have_http_error = 0;
    r->sock_errno = 0;
    r->got_headers = 0;
    ereq = evhttp_request_new(on_http_done, r);
    if (!ereq) {
        request_fail(r, "out of memory creating the request");
        return;
    }
    evhttp_request_set_header_cb(ereq, on_http_header);
    evhttp_request_set_chunked_cb(ereq, on_http_chunk);
    evhttp_request_set_error_cb(ereq, on_http_error);
    add_request_headers(r, evhttp_request_get_output_headers(ereq));
    evbuffer_add(evhttp_request_get_output_buffer(ereq), r->body, r->body_len);

    /* Our timer owns the deadline; evhttp's own timeouts (45-50 s by
     * default) are set just past it so they never fire first. */
    if (left_ms < 0)
        left_ms = 0;
    tv.tv_sec = (time_t)(left_ms / 1000 + 1);
    tv.tv_usec = (suseconds_t)(left_ms % 1000) * 1000;
    evhttp_connection_set_timeout_tv(conn->evcon, &tv);

    /* May call on_http_done before returning (connection refused at once);
     * that only queues the outcome. On -1 evhttp has freed ereq. */
    if (evhttp_make_request(conn->evcon, ereq, EVHTTP_REQ_POST, r->url.path) != 0) {
        if (r->phase == REQ_SENDING)
            request_fail(r, "cannot start the HTTP request");
        return;
    }
    write_now(conn);
}

/* ---- resolving and connecting ------------------------------------------------ */

static int refuse_private(struct hc_request *r, const struct sockaddr *sa)
{
    char a[INET6_ADDRSTRLEN];

    if (r->client->allow_private || !netguard_is_private(sa))
        return 0;
    addr_to_string(sa, a, sizeof(a));
    request_fail(r, "refused private address %s (allow_private_networks is off)", a);
    return 1;
}

static void connect_next(struct hc_request *r)
{
    char err[ERROR_MAX];
    const struct sockaddr *sa = (const struct sockaddr *)&r->addrs[r->next_addr++];
    struct hc_conn *conn = conn_new(r->client, r, sa, err, sizeof(err));

    if (!conn) {
        request_fail(r, "%s", err);
        return;
    }
    request_send(r, conn);
}

static void on_dns(int result, struct evutil_addrinfo *res, void *arg)
{
    struct dns_lookup *d = arg;
    struct hc_request *r = d->req;
    struct evutil_addrinfo *ai;

    free(d);
    if (!r) { /* cancelled by the timer or http_client_free */
        if (res)
            evutil_freeaddrinfo(res);
        return;
    }
    r->dns = NULL;
    if (result != 0) {
        if (res)
            evutil_freeaddrinfo(res);
        request_fail(r, "dns: cannot resolve %s: %s", r->url.host, evutil_gai_strerror(result));
        return;
    }
    /* Every address is checked, not only the ones we would try: a name that
     * mixes public and private answers is refused as a whole. */
    for (ai = res; ai; ai = ai->ai_next) {
        if (ai->ai_family != AF_INET && ai->ai_family != AF_INET6)
            continue;
        if (refuse_private(r, ai->ai_addr)) {
            evutil_freeaddrinfo(res);
            return;
        }
        if (r->naddrs < MAX_ADDRS && ai->ai_addrlen <= sizeof(r->addrs[0]))
            memcpy(&r->addrs[r->naddrs++], ai->ai_addr, ai->ai_addrlen);
    }
    if (res)
        evutil_freeaddrinfo(res);
    if (r->naddrs == 0) {
        request_fail(r, "dns: no IPv4 or IPv6 address for %s", r->url.host);
        return;
    }
    connect_next(r);
}

static void literal_to_addr(struct hc_request *r)
{
    memset(&r->addrs[0], 0, sizeof(r->addrs[0]));
    if (r->literal_family == AF_INET) {
        struct sockaddr_in *sin = (struct sockaddr_in *)(void *)&r->addrs[0];
        sin->sin_family = AF_INET;
        evutil_inet_pton(AF_INET, r->url.host, &sin->sin_addr);
    } else {
        struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)(void *)&r->addrs[0];
        sin6->sin6_family = AF_INET6;
        evutil_inet_pton(AF_INET6, r->url.host, &sin6->sin6_addr);
    }
    r->naddrs = 1;
}

static void request_resolve(struct hc_request *r)
{
    struct evutil_addrinfo hints;
    struct evdns_getaddrinfo_request *handle;
    struct dns_lookup *d;

    r->naddrs = 0;
    r->next_addr = 0;
    if (r->literal_family) {
        literal_to_addr(r);
        if (!refuse_private(r, (const struct sockaddr *)&r->addrs[0]))
            connect_next(r);
        return;
    }
    r->phase = REQ_RESOLVING;
    d = xcalloc(1, sizeof(*d));
    d->req = r;
    r->dns = d;
    memset(&hints, 0, sizeof(hints));
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_protocol = IPPROTO_TCP;
    handle = evdns_getaddrinfo(r->client->evdns, r->url.host, NULL, &hints, on_dns, d);
    /* NULL: on_dns already ran (an /etc/hosts answer or an error) and freed d. */
    if (handle)
        d->handle = handle;
}

static void request_start(struct hc_request *r)
{
    struct timeval tv = {r->timeout_ms / 1000, (r->timeout_ms % 1000) * 1000};
    struct hc_conn *conn;

    r->started_us = clock_mono_us();
    evtimer_add(r->timer, &tv);
    conn = conn_take_idle(r->client, r->origin);
    if (conn) {
        r->reused = 1;
        r->client->conns_reused++;
        request_send(r, conn);
        return;
    }
    request_resolve(r);
}

/* Starts waiting requests while total slots last, taking keys in turn so a
 * busy key cannot starve the others. A request also takes a slot of its
 * origin: at most max_origin requests are in flight to one receiver, so
 * thousands of endpoints on it do not open thousands of connections at
 * once (a burst that overflows the receiver's accept queue, and whose
 * requests then wait behind each other there instead of here). A key's own
 * bound is smaller by default (max_inflight 16), so one slow endpoint
 * holds only a few of its origin's slots. */
static void dispatch(struct http_client *c)
{
    struct hc_key *k;

    while (!c->closing && c->nactive < c->max_total && (k = TAILQ_FIRST(&c->ready)) != NULL) {
        struct hc_request *r = TAILQ_FIRST(&k->waiting);
        TAILQ_REMOVE(&c->ready, k, ready_link);
        k->on_ready = 0;
        int admitted = origin_admits(c, r->origin, k);
        if (k->woken_by) { /* the reserve is used now, or (origin changed) given back */
            struct hc_origin *w = k->woken_by;
            k->woken_by = NULL;
            w->nwoken--;
            if (w != r->origin) {
                origin_fill(c, w);
                origin_maybe_free(c, w);
            }
        }
        if (!admitted) {
            /* its origin is busy: the key waits its turn there */
            TAILQ_INSERT_TAIL(&r->origin->blocked, k, blocked_link);
            k->blocked_on = r->origin;
            continue;
        }
        TAILQ_REMOVE(&k->waiting, r, link);
        k->nwaiting--;
        c->nqueued--;
        k->inflight++;
        r->origin->inflight++;
        c->nactive++;
        r->has_slot = 1;
        TAILQ_INSERT_TAIL(&c->active, r, active_link);
        key_update_ready(c, k);
        request_start(r);
    }
}

/* ---- reporting ---------------------------------------------------------------- */

static void request_drop_conn(struct hc_request *r)
{
    struct hc_conn *conn = r->conn;
    if (!conn)
        return;
    r->conn = NULL;
    conn_release(conn, r->phase == REQ_DONE && r->keep_conn && !r->error[0]);
}

static void request_restart(struct hc_request *r)
{
    r->error[0] = '\0';
    r->status = 0;
    r->got_headers = 0;
    r->has_retry_after = 0;
    r->resp_len = 0;
    r->resp_seen = 0;
    if (r->retry_fresh) {
        r->reused = 0;
        r->retried_stale = 1;
        request_resolve(r);
    } else {
        connect_next(r);
    }
}

static void request_report(struct hc_request *r)
{
    struct http_client *c = r->client;
    struct hc_key *k = r->key;
    struct http_client_result res;
    int ok = r->error[0] == '\0';

    if (r->has_slot) {
        r->has_slot = 0;
        TAILQ_REMOVE(&c->active, r, active_link);
        k->inflight--;
        r->origin->inflight--;
        c->nactive--;
        key_update_ready(c, k);
        origin_fill(c, r->origin);
    }
    memset(&res, 0, sizeof(res));
    res.status = ok ? r->status : 0;
    res.error = ok ? NULL : r->error;
    res.body = ok && r->resp ? r->resp : "";
    res.body_len = ok ? r->resp_len : 0;
    res.retry_after = ok && r->has_retry_after ? r->retry_after : NULL;
    res.duration_us = r->duration_us;
    res.unsent = r->unsent;
    c->pending--;
    r->cb(&res, r->arg);
    request_free(r); /* the key and the origin live until here, whatever the callback did */
}

/* Reports every queued outcome; see the comment at the top of the file. */
static void on_deliver(evutil_socket_t fd, short what, void *arg)
{
    struct http_client *c = arg;
    struct hc_request *r;
    (void)fd;
    (void)what;

    c->delivering = 1;
    while (!c->destroy_pending && (r = TAILQ_FIRST(&c->done)) != NULL) {
        TAILQ_REMOVE(&c->done, r, link);
        r->in_done = 0;
        request_drop_conn(r);
        if (r->phase == REQ_RETRY)
            request_restart(r);
        else
            request_report(r);
    }
    c->delivering = 0;
    if (c->destroy_pending) {
        client_destroy(c);
        return;
    }
    dispatch(c);
}

/* ---- public API ------------------------------------------------------------ */

static void set_idle_bounds(struct http_client *c, const struct http_client_config *config)
{
    c->max_idle_total = config->max_idle_total > 0 ? config->max_idle_total : DEFAULT_MAX_IDLE_TOTAL;
    c->max_idle_origin = config->max_idle_per_origin > 0 ? config->max_idle_per_origin : DEFAULT_MAX_IDLE_ORIGIN;
    c->max_origin = config->max_inflight_per_origin > 0 ? config->max_inflight_per_origin : DEFAULT_MAX_ORIGIN;
}

static void client_destroy(struct http_client *c)
{
    struct hc_key *k, *next;
    struct hc_origin *o, *onext;
    drop_idle(c);
    HASH_ITER(hh, c->origins, o, onext)
    {
        HASH_DEL(c->origins, o);
        free(o);
    }
    HASH_ITER(hh, c->keys, k, next)
    {
        HASH_DEL(c->keys, k);
        free(k->name);
        free(k);
    }
    if (c->deliver_ev)
        event_free(c->deliver_ev);
    if (c->ssl_ctx)
        SSL_CTX_free(c->ssl_ctx);
    free(c->ca_file);
    free(c->user_agent);
    free(c);
}

struct http_client *http_client_new(struct event_base *base, struct evdns_base *evdns,
                                    const struct http_client_config *config, char *err, size_t errlen)
{
    struct http_client *c;
    const char *ua;

    if (!base || !evdns || !config) {
        err_set(err, errlen, "http client needs an event base, an evdns base and a config");
        return NULL;
    }
    ua = config->user_agent ? config->user_agent : "hookd";
    for (const unsigned char *p = (const unsigned char *)ua; *p; p++) {
        if (*p < 0x20 || *p == 0x7f) {
            err_set(err, errlen, "user_agent contains a control character");
            return NULL;
        }
    }
    c = xcalloc(1, sizeof(*c));
    c->base = base;
    c->evdns = evdns;
    c->allow_private = config->allow_private_networks != 0;
    c->max_response = config->max_response_bytes ? config->max_response_bytes : DEFAULT_MAX_RESPONSE;
    c->max_total = config->max_inflight_total > 0 ? config->max_inflight_total : DEFAULT_MAX_INFLIGHT;
    c->user_agent = xstrdup(ua);
    c->headers_at_send = config->headers_at_send;
    set_idle_bounds(c, config);
    TAILQ_INIT(&c->idle_lru);
    TAILQ_INIT(&c->ready);
    TAILQ_INIT(&c->active);
    TAILQ_INIT(&c->done);
    c->deliver_ev = event_new(base, -1, 0, on_deliver, c);
    if (!c->deliver_ev) {
        err_set(err, errlen, "cannot create the delivery event");
        goto fail;
    }
    c->ssl_ctx = tls_ctx_new(config->ca_file, err, errlen);
    if (!c->ssl_ctx)
        goto fail;
    c->ca_file = config->ca_file ? xstrdup(config->ca_file) : NULL;
    return c;

fail:
    client_destroy(c);
    return NULL;
}

int http_client_reconfigure(struct http_client *c, const struct http_client_config *config, char *err, size_t errlen)
{
    const char *old_ca = c->ca_file, *new_ca = config->ca_file;
    int ca_changed = (old_ca == NULL) != (new_ca == NULL) || (old_ca && strcmp(old_ca, new_ca) != 0);
    if (ca_changed) {
        SSL_CTX *ssl = tls_ctx_new(new_ca, err, errlen);
        if (!ssl)
            return -1;
        /* Connections made with the old context keep their reference. */
        SSL_CTX_free(c->ssl_ctx);
        c->ssl_ctx = ssl;
        free(c->ca_file);
        c->ca_file = new_ca ? xstrdup(new_ca) : NULL;
    }
    int tighter = c->allow_private && !config->allow_private_networks;
    c->allow_private = config->allow_private_networks != 0;
    c->max_total = config->max_inflight_total > 0 ? config->max_inflight_total : DEFAULT_MAX_INFLIGHT;
    set_idle_bounds(c, config);
    struct hc_origin *o, *onext;
    HASH_ITER(hh, c->origins, o, onext)
    origin_fill(c, o); /* a larger bound lets waiting keys go */
    /* A connection to an address now refused, or verified with the old CAs,
     * must not carry another request. */
    if (ca_changed || tighter)
        drop_idle(c);
    trim_idle(c);
    dispatch(c); /* a larger max_inflight_total may start queued requests */
    return 0;
}

/* Cancels everything outstanding and reports it; see http_client.h. */
static void cancel_all(struct http_client *c)
{
    struct hc_request *r;

    TAILQ_FOREACH (r, &c->active, active_link) {
        if (r->phase != REQ_DONE)
            request_fail(r, "cancelled");
    }
    struct hc_key *k, *next;
    HASH_ITER(hh, c->keys, k, next)
    {
        while ((r = TAILQ_FIRST(&k->waiting)) != NULL) {
            TAILQ_REMOVE(&k->waiting, r, link);
            k->nwaiting--;
            c->nqueued--;
            set_error(r, "cancelled");
            r->phase = REQ_DONE;
            queue_done(r);
        }
        key_unblock(c, k);
    }
    drop_idle(c);
    while ((r = TAILQ_FIRST(&c->done)) != NULL) {
        TAILQ_REMOVE(&c->done, r, link);
        r->in_done = 0;
        request_drop_conn(r);
        request_report(r);
    }
}

void http_client_free(struct http_client *c)
{
    if (!c || c->closing)
        return; /* a second call, from a callback that this free is running */
    c->closing = 1;
    cancel_all(c);
    if (c->delivering) {
        /* on_deliver is below us on the stack; it frees the client when the
         * callback that called us returns. */
        c->destroy_pending = 1;
        return;
    }
    client_destroy(c);
}

int http_client_post(struct http_client *c, const char *key, const char *url, const struct http_header *hdrs,
                     size_t nhdrs, const char *body, size_t body_len, int timeout_ms, int max_inflight_for_key,
                     http_client_cb cb, void *arg, char *err, size_t errlen)
{
    struct netguard_url u;
    struct hc_request *r;
    struct hc_key *k;
    char why[ERROR_MAX];
    int has_ua;

    if (!c || !key || !*key || !url || !cb)
        return err_set(err, errlen, "http_client_post needs a client, a key, a URL and a callback");
    if (c->closing)
        return err_set(err, errlen, "http client is shutting down");
    if (netguard_parse_url(url, &u, why, sizeof(why)) < 0)
        return err_set(err, errlen, "invalid URL: %s", why);
    if (check_headers(hdrs, nhdrs, &has_ua, err, errlen) < 0)
        return -1;
    if (body_len && !body)
        return err_set(err, errlen, "body is NULL but body_len is %zu", body_len);

    r = request_new(c, &u, hdrs, nhdrs, has_ua, body, body_len, timeout_ms, cb, arg);
    if (!r)
        return err_set(err, errlen, "out of memory queueing the request");
    k = key_hold(c, key);
    k->max_inflight = max_inflight_for_key > 0 ? max_inflight_for_key : 1;
    r->key = k;
    r->origin = origin_get(c, &u);
    r->origin->refs++;
    r->phase = REQ_QUEUED;
    TAILQ_INSERT_TAIL(&k->waiting, r, link);
    k->nwaiting++;
    c->nqueued++;
    c->pending++;
    key_update_ready(c, k);
    dispatch(c);
    return 0;
}

size_t http_client_inflight(const struct http_client *c)
{
    return c ? c->pending : 0;
}

size_t http_client_key_backlog(const struct http_client *c, const char *key)
{
    const struct hc_key *k = NULL;
    if (c)
        HASH_FIND_STR(c->keys, key, k);
    return k ? (size_t)k->inflight + (size_t)k->nwaiting : 0;
}

size_t http_client_cancel_queued(struct http_client *c, const char *key)
{
    struct hc_key *k = NULL;
    if (!c || c->closing)
        return 0;
    HASH_FIND_STR(c->keys, key, k);
    if (!k)
        return 0;
    size_t n = 0;
    struct hc_request *r;
    while ((r = TAILQ_FIRST(&k->waiting)) != NULL) {
        TAILQ_REMOVE(&k->waiting, r, link);
        k->nwaiting--;
        c->nqueued--;
        set_error(r, "not sent");
        r->unsent = 1;
        r->phase = REQ_DONE;
        queue_done(r);
        n++;
    }
    key_unblock(c, k);
    return n;
}

void http_client_stats(const struct http_client *c, struct http_client_stats *out)
{
    memset(out, 0, sizeof(*out));
    if (!c)
        return;
    out->connections_opened = c->conns_opened;
    out->connections_closed = c->conns_closed;
    out->requests_sent = c->requests_sent;
    out->requests_reused = c->conns_reused;
    out->idle = (size_t)c->nidle;
    out->idle_origins = (size_t)HASH_COUNT(c->origins);
    out->active = (size_t)c->nactive;
    out->queued = c->nqueued;
}
