/* evhttp listener with a prefix router and the public listener's limits; see
 * http_server.h.
 *
 * evhttp 2.1 has no hook for a connection's life, so each connection's
 * bufferevent is made here (evhttp_set_bevcb): a pass-through filter over a
 * socket bufferevent. The filter's free callback tells us when evhttp has
 * let go of a connection (libevent finalises it one loop turn after
 * evhttp_connection_free), and its input callback sees every byte received,
 * which is where the bytes of a request still being received are counted
 * and the lines of its head too (evhttp turns each header line into three
 * allocations, ~110 bytes for a 3-byte line, so the count must be bounded
 * while the head arrives, not after). A connection is closed the way a
 * bufferevent timeout closes it (bufferevent_trigger_event), so evhttp frees
 * it by its own path. The handler of a request finds its connection through
 * the socket's fd (by_fd), since a bufferevent has no user pointer. */
#include "http_server.h"

#include <sys/queue.h> /* before keyvalq_struct.h: TAILQ_FOREACH */

#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/http_struct.h>
#include <event2/keyvalq_struct.h>
#include <event2/listener.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <time.h>

#include "cidr.h"
#include "clock.h"
#include "errbuf.h"
#include "log.h"
#include "loop_timer.h"
#include "xmalloc.h"

struct route {
    char *prefix;
    bool exact;
    http_handler_fn fn;
    void *arg;
};

/* One accepted connection. Owned by the server from the bevcb until libevent
 * finalises its bufferevent (on_conn_freed); srv is NULL once the server is
 * gone and only the free remains. */
struct http_conn {
    struct http_server *srv;
    struct bufferevent *bev;         /* the filter evhttp uses; owned by evhttp */
    struct event *deadline;          /* absolute: armed once per request, never pushed back */
    struct event *flush;             /* moves queued output down (on_queued) */
    int fd;                          /* -1 until the first bytes arrive */
    struct http_conn *prev, *next;   /* srv->conns */
    struct http_conn *rprev, *rnext; /* srv->recv_head..recv_tail, oldest first */
    bool receiving;                  /* waiting for or receiving a request: on the recv list */
    bool handled;                    /* a handler has the request; its response re-arms the deadline */
    bool closing;                    /* closed by us; libevent frees it on a later loop turn */
    bool kill;                       /* close at the next shed pass (too many header lines) */
    bool in_head;                    /* still counting lines of the request head */
    int64_t held;                    /* bytes of the current request counted in srv->buffered */
    int64_t lines;                   /* lines of the head so far, the request line included */
    int64_t line_len;
    int64_t armed_ms; /* when the deadline was armed */
};

/* Back-off after a failed accept: 10 ms, doubling to 1 s. */
#define ACCEPT_BACKOFF_MIN_MS 10
#define ACCEPT_BACKOFF_MAX_MS 1000
/* Evicted connections whose fds are not closed yet; beyond this many the
 * listener waits, so an accept burst cannot outrun the closes. */
#define CLOSING_MAX 8
/* A connection is evicted for a newcomer only after it has waited this long
 * (or half of request_timeout, if less) for its request: a burst of new
 * connections cannot push out requests that are arriving normally. */
#define EVICT_MIN_AGE_MS 1000
/* A line summing up the limits that acted, at most this often. */
#define LIMITS_LOG_MS 10000

struct http_server {
    struct event_base *base;
    struct evhttp *http;
    struct evhttp_bound_socket *sock;
    struct evconnlistener *listener; /* borrowed from sock; NULL once stopped */
    struct http_limits limits;       /* max_connections fitted to the fd limit */
    int port;
    struct route routes[32];
    int nroutes;

    struct http_conn *conns;                 /* every connection not yet freed */
    struct http_conn *recv_head, *recv_tail; /* receiving ones, by deadline */
    struct http_conn **by_fd;
    size_t nby_fd;
    int64_t nconns, nclosing, buffered;
    bool listening, backing_off;
    int64_t backoff_ms;
    struct event *accept_retry, *shed_ev, *log_ev, *resume_ev;
    /* accept errors since the last log line (at most one a second) */
    int64_t accept_errors, accept_log_ms;
    /* what the limits did, logged at most every LIMITS_LOG_MS */
    int64_t n_timeouts, n_evicted, n_shed, n_head_lines, n_logged[4], next_log_ms;
    struct http_server *next_server;
};

/* evconnlistener's error callback gets evhttp's argument, not ours: the
 * servers are found by listener here (one event loop, so no lock). */
static struct http_server *servers;

const char *http_reason(int code)
{
    switch (code) {
    case 200: return "OK";
    case 201: return "Created";
    case 202: return "Accepted";
    case 204: return "No Content";
    case 303: return "See Other";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 409: return "Conflict";
    case 410: return "Gone";
    case 413: return "Payload Too Large";
    case 415: return "Unsupported Media Type";
    case 422: return "Unprocessable Entity";
    case 429: return "Too Many Requests";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 502: return "Bad Gateway";
    case 503: return "Service Unavailable";
    case 504: return "Gateway Timeout";
    case 505: return "HTTP Version Not Supported";
    default: return "Status";
    }
}

void http_reply_json(struct evhttp_request *req, int code, json_t *body)
{
    char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
    json_decref(body);
    struct evbuffer *buf = evbuffer_new();
    if (!text)
        text = xstrdup("{\"error\":\"internal\",\"message\":\"the answer could not be encoded\"}");
    evbuffer_add(buf, text, strlen(text));
    evbuffer_add(buf, "\n", 1);
    free(text);
    struct evkeyvalq *out = evhttp_request_get_output_headers(req);
    evhttp_add_header(out, "Content-Type", "application/json");
    if (code == 204) /* No Content: the answer is the status alone */
        evbuffer_drain(buf, evbuffer_get_length(buf));
    if (evhttp_request_get_command(req) == EVHTTP_REQ_HEAD) {
        /* evhttp 2.1 would send a body to HEAD too: a keep-alive client
         * would then read it as the start of the next response. */
        char len[24];
        snprintf(len, sizeof len, "%zu", evbuffer_get_length(buf));
        evhttp_add_header(out, "Content-Length", len);
        evbuffer_drain(buf, evbuffer_get_length(buf));
    }
    evhttp_send_reply(req, code, http_reason(code), buf);
    evbuffer_free(buf);
}

/* Valid UTF-8 only (JSON strings must be): a byte that does not belong to a
 * well-formed sequence - from a client's path, or a character cut in half
 * by a length limit - becomes '?'. */
static void utf8_sanitize(char *s)
{
    unsigned char *p = (unsigned char *)s;
    while (*p) {
        size_t n = *p < 0x80 ? 1 : (*p & 0xe0) == 0xc0 ? 2 : (*p & 0xf0) == 0xe0 ? 3 : (*p & 0xf8) == 0xf0 ? 4 : 0;
        bool ok = n > 0 && !(n == 2 && *p < 0xc2) && !(n == 4 && *p > 0xf4);
        for (size_t i = 1; ok && i < n; i++)
            ok = (p[i] & 0xc0) == 0x80;
        if (ok && n == 3)
            ok = !(p[0] == 0xe0 && p[1] < 0xa0) && !(p[0] == 0xed && p[1] >= 0xa0);
        if (ok && n == 4)
            ok = !(p[0] == 0xf0 && p[1] < 0x90) && !(p[0] == 0xf4 && p[1] >= 0x90);
        if (!ok) {
            *p++ = '?';
            continue;
        }
        p += n;
    }
}

json_t *http_error_vjson(const char *code_key, const char *code, const char *msg_key, const char *fmt, va_list ap)
{
    char msg[512];
    vsnprintf(msg, sizeof msg, fmt, ap);
    utf8_sanitize(msg);
    return json_pack("{s:s, s:s}", code_key, code, msg_key, msg);
}

void http_reply_error(struct evhttp_request *req, int code, const char *error_code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    json_t *body = http_error_vjson("error", error_code, "message", fmt, ap);
    va_end(ap);
    http_reply_json(req, code, body);
}

const char *http_request_peer(struct evhttp_request *req)
{
    char *addr = NULL;
    ev_uint16_t port = 0;
    struct evhttp_connection *conn = evhttp_request_get_connection(req);
    if (conn)
        evhttp_connection_get_peer(conn, &addr, &port);
    return addr ? addr : "unknown";
}

/* Every X-Forwarded-For header of the request, joined with ", " in
 * arrival order (a proxy may add a second header instead of appending);
 * NULL when there is none. Caller frees. */
static char *forwarded_for(struct evhttp_request *req)
{
    struct evkeyvalq *h = evhttp_request_get_input_headers(req);
    char *all = NULL;
    size_t len = 0;

    for (struct evkeyval *kv = h->tqh_first; kv; kv = kv->next.tqe_next) {
        if (strcasecmp(kv->key, "X-Forwarded-For") != 0)
            continue;
        size_t n = strlen(kv->value);
        all = xrealloc(all, len + n + 3);
        if (len) {
            memcpy(all + len, ", ", 2);
            len += 2;
        }
        memcpy(all + len, kv->value, n + 1);
        len += n;
    }
    return all;
}

int http_request_client(struct evhttp_request *req, const struct cidr_list *trusted, struct cidr_addr *out)
{
    struct cidr_addr peer;
    struct evhttp_connection *conn = evhttp_request_get_connection(req);
    if (!conn || cidr_addr_from_sockaddr(evhttp_connection_get_addr(conn), &peer) != 0)
        return -1;
    char *xff = forwarded_for(req);
    int rc = cidr_client_addr(&peer, xff, trusted, out);
    free(xff);
    return rc == 0 ? 0 : -2;
}

char *http_request_path(struct evhttp_request *req)
{
    const struct evhttp_uri *uri = evhttp_request_get_evhttp_uri(req);
    const char *path = uri ? evhttp_uri_get_path(uri) : NULL;
    if (!path)
        return NULL;
    return evhttp_uridecode(path, 0, NULL);
}

/* ---- limits: logging -------------------------------------------------- */

static void log_limits(struct http_server *srv)
{
    int64_t now[4] = {srv->n_timeouts, srv->n_evicted, srv->n_shed, srv->n_head_lines};
    if (memcmp(now, srv->n_logged, sizeof now) == 0)
        return;
    log_warn("http.limits",
             "request_timeout=%lld max_connections=%lld max_buffered_body=%lld max_headers=%lld "
             "connections=%lld buffered=%lld note=\"connections closed by each limit since the last line\"",
             (long long)(now[0] - srv->n_logged[0]), (long long)(now[1] - srv->n_logged[1]),
             (long long)(now[2] - srv->n_logged[2]), (long long)(now[3] - srv->n_logged[3]), (long long)srv->nconns,
             (long long)srv->buffered);
    memcpy(srv->n_logged, now, sizeof now);
    srv->next_log_ms = clock_mono_ms() + LIMITS_LOG_MS;
}

static void on_log_timer(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    log_limits(arg);
}

/* A limit closed a connection: log now, or once the quiet period is over. */
static void note_limit(struct http_server *srv)
{
    if (evtimer_pending(srv->log_ev, NULL))
        return;
    int64_t wait = srv->next_log_ms - clock_mono_ms();
    if (wait <= 0) {
        log_limits(srv);
        return;
    }
    loop_timer_arm(srv->log_ev, wait);
}

/* ---- limits: the listener --------------------------------------------- */

static void conn_close(struct http_conn *c);

static int64_t live_conns(const struct http_server *srv)
{
    return srv->nconns - srv->nclosing;
}

/* The connection to close for a newcomer: the one that has waited longest
 * for its request, if that is long enough; NULL otherwise. */
static struct http_conn *evictable(const struct http_server *srv)
{
    int64_t age = srv->limits.request_timeout / 2 < EVICT_MIN_AGE_MS ? srv->limits.request_timeout / 2
                                                                     : EVICT_MIN_AGE_MS;
    struct http_conn *c = srv->recv_head;
    return c && clock_mono_ms() - c->armed_ms >= age ? c : NULL;
}

/* Accepts while there is room: no back-off after an accept error, fewer
 * than max_connections open (or one to evict), not too many closes pending.
 * Full with nothing old enough to evict: look again when the oldest is. */
static void listener_update(struct http_server *srv)
{
    if (!srv->listener)
        return;
    int64_t live = live_conns(srv), max = srv->limits.max_connections;
    bool full = live > max || (live >= max && !evictable(srv));
    if (full && live <= max && srv->recv_head && !evtimer_pending(srv->resume_ev, NULL)) {
        loop_timer_arm(srv->resume_ev, 100);
    }
    bool want = !srv->backing_off && !full && srv->nclosing < CLOSING_MAX;
    if (want == srv->listening)
        return;
    if (want)
        evconnlistener_enable(srv->listener);
    else
        evconnlistener_disable(srv->listener);
    srv->listening = want;
}

static void on_resume(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    listener_update(arg);
}

static void on_accept_retry(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct http_server *srv = arg;
    srv->backing_off = false;
    listener_update(srv);
}

/* accept() failed with something other than EAGAIN/EINTR/ECONNABORTED,
 * typically EMFILE, ENFILE, ENOBUFS or ENOMEM: the connection stays in the
 * kernel's backlog, so retrying at once would spin. Pause and retry later. */
static void on_accept_error(struct evconnlistener *lev, void *arg)
{
    (void)arg; /* evhttp's */
    int err = EVUTIL_SOCKET_ERROR();
    struct http_server *srv = servers;
    while (srv && srv->listener != lev)
        srv = srv->next_server;
    if (!srv) {
        evconnlistener_disable(lev); /* cannot happen; never spin */
        return;
    }
    srv->backoff_ms = srv->backoff_ms ? srv->backoff_ms * 2 : ACCEPT_BACKOFF_MIN_MS;
    if (srv->backoff_ms > ACCEPT_BACKOFF_MAX_MS)
        srv->backoff_ms = ACCEPT_BACKOFF_MAX_MS;
    srv->accept_errors++;
    int64_t now = clock_mono_ms();
    if (now - srv->accept_log_ms >= 1000) {
        log_error("http.accept_failed", "error=\"%s\" count=%lld retry_in_ms=%lld connections=%lld",
                  evutil_socket_error_to_string(err), (long long)srv->accept_errors, (long long)srv->backoff_ms,
                  (long long)srv->nconns);
        srv->accept_errors = 0;
        srv->accept_log_ms = now;
    }
    /* Out of fds: the connection that has waited longest for its request
     * gives its fd back, so the retry can take a waiting client. */
    struct http_conn *old = evictable(srv);
    if ((err == EMFILE || err == ENFILE) && old) {
        srv->n_evicted++;
        conn_close(old);
        note_limit(srv);
    }
    srv->backing_off = true;
    listener_update(srv);
    loop_timer_arm(srv->accept_retry, srv->backoff_ms);
}

/* ---- limits: connections ---------------------------------------------- */

static void recv_unlink(struct http_conn *c)
{
    struct http_server *srv = c->srv;
    if (!c->receiving)
        return;
    c->receiving = false;
    *(c->rprev ? &c->rprev->rnext : &srv->recv_head) = c->rnext;
    *(c->rnext ? &c->rnext->rprev : &srv->recv_tail) = c->rprev;
    c->rprev = c->rnext = NULL;
    srv->buffered -= c->held;
    c->held = 0;
    c->in_head = false;
    event_del(c->deadline);
}

/* Starts waiting for a request: the deadline runs from now. */
static void conn_arm(struct http_conn *c)
{
    struct http_server *srv = c->srv;
    HOOKD_ASSERT(!c->receiving);
    c->receiving = true;
    c->in_head = true;
    c->lines = c->line_len = c->held = 0;
    c->armed_ms = clock_mono_ms();
    c->rprev = srv->recv_tail;
    c->rnext = NULL;
    *(srv->recv_tail ? &srv->recv_tail->rnext : &srv->recv_head) = c;
    srv->recv_tail = c;
    loop_timer_arm(c->deadline, srv->limits.request_timeout);
}

/* Closes c as a read timeout would: evhttp frees the connection (and any
 * request on it) by its own path; libevent frees c a loop turn later.
 * Never called from inside c's own bufferevent callbacks. */
static void conn_close(struct http_conn *c)
{
    struct http_server *srv = c->srv;
    if (c->closing)
        return;
    recv_unlink(c);
    c->closing = true;
    srv->nclosing++;
    bufferevent_trigger_event(c->bev, BEV_EVENT_READING | BEV_EVENT_TIMEOUT, 0);
}

static void on_deadline(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct http_conn *c = arg;
    if (!c->srv || !c->receiving)
        return;
    c->srv->n_timeouts++;
    note_limit(c->srv);
    conn_close(c);
    listener_update(c->srv);
}

/* Closes flagged connections, then the largest requests being received
 * until the buffered bytes fit again. Runs from its own event, outside any
 * connection's callbacks. */
static void on_shed(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct http_server *srv = arg;
    for (struct http_conn *c = srv->recv_head, *next; c; c = next) {
        next = c->rnext;
        if (c->kill) {
            srv->n_head_lines++;
            conn_close(c);
        }
    }
    while (srv->buffered > srv->limits.max_buffered_body) {
        struct http_conn *big = NULL;
        for (struct http_conn *c = srv->recv_head; c; c = c->rnext)
            if (!big || c->held > big->held)
                big = c;
        if (!big)
            break;
        srv->n_shed++;
        conn_close(big);
    }
    note_limit(srv);
    listener_update(srv);
}

static void by_fd_set(struct http_conn *c, int fd)
{
    struct http_server *srv = c->srv;
    if ((size_t)fd >= srv->nby_fd) {
        size_t n = srv->nby_fd ? srv->nby_fd : 256;
        while (n <= (size_t)fd)
            n *= 2;
        srv->by_fd = xrealloc(srv->by_fd, n * sizeof *srv->by_fd);
        memset(srv->by_fd + srv->nby_fd, 0, (n - srv->nby_fd) * sizeof *srv->by_fd);
        srv->nby_fd = n;
    }
    srv->by_fd[fd] = c;
    c->fd = fd;
}

/* Counts the lines of a request head in the first n bytes of buf, up to the
 * empty line that ends it. */
static void count_head(struct http_conn *c, struct evbuffer *buf, size_t n)
{
    size_t off = 0;
    while (off < n && c->in_head) {
        struct evbuffer_ptr at;
        struct evbuffer_iovec v[4];
        if (evbuffer_ptr_set(buf, &at, off, EVBUFFER_PTR_SET) != 0)
            return;
        int k = evbuffer_peek(buf, (ev_ssize_t)(n - off), &at, v, 4);
        if (k <= 0)
            return;
        for (int i = 0; i < k && i < 4 && c->in_head; i++) {
            const char *p = v[i].iov_base;
            size_t len = v[i].iov_len < n - off ? v[i].iov_len : n - off;
            for (size_t j = 0; j < len; j++) {
                if (p[j] == '\n') {
                    if (c->line_len == 0 && c->lines > 0) {
                        c->in_head = false; /* the empty line: the body follows */
                        break;
                    }
                    c->lines += c->line_len > 0;
                    c->line_len = 0;
                } else if (p[j] != '\r') {
                    c->line_len++;
                }
            }
            off += len;
        }
    }
}

static size_t move_bytes(struct evbuffer *src, struct evbuffer *dst, ev_ssize_t limit)
{
    size_t n = evbuffer_get_length(src);
    if (limit >= 0 && (size_t)limit < n)
        n = (size_t)limit;
    evbuffer_remove_buffer(src, dst, n);
    return n;
}

/* Bytes from the client, on their way to evhttp. */
static enum bufferevent_filter_result on_filter_in(struct evbuffer *src, struct evbuffer *dst, ev_ssize_t limit,
                                                   enum bufferevent_flush_mode mode, void *ctx)
{
    (void)mode;
    struct http_conn *c = ctx;
    struct http_server *srv = c->srv;
    if (!srv || c->closing || c->kill) {
        evbuffer_drain(src, evbuffer_get_length(src)); /* being closed: keep nothing */
        return BEV_OK;
    }
    if (c->fd < 0 && bufferevent_getfd(c->bev) >= 0)
        by_fd_set(c, bufferevent_getfd(c->bev));
    size_t n = evbuffer_get_length(src);
    if (limit >= 0 && (size_t)limit < n)
        n = (size_t)limit;
    if (c->receiving) {
        if (c->in_head)
            count_head(c, src, n);
        c->held += (int64_t)n;
        srv->buffered += (int64_t)n;
        if (c->lines > srv->limits.max_headers + 1)
            c->kill = true;
        if (c->kill || srv->buffered > srv->limits.max_buffered_body)
            event_active(srv->shed_ev, EV_TIMEOUT, 0);
    }
    move_bytes(src, dst, (ev_ssize_t)n);
    return BEV_OK;
}

/* Bytes to the client. The first bytes of a response start the wait for
 * the next request on this connection.
 *
 * BEV_OK would make the filter call evhttp's write callback at once, and
 * evhttp takes that as "response sent": after `Connection: close` it frees
 * the connection and shuts the socket down, losing a response still queued
 * in the socket bufferevent. So the write callback is left to on_sent. */
static enum bufferevent_filter_result on_filter_out(struct evbuffer *src, struct evbuffer *dst, ev_ssize_t limit,
                                                    enum bufferevent_flush_mode mode, void *ctx)
{
    (void)mode;
    struct http_conn *c = ctx;
    if (move_bytes(src, dst, limit) > 0 && c->handled && c->srv && !c->closing) {
        c->handled = false;
        conn_arm(c);
    }
    return BEV_NEED_MORE; /* never "processed": see above */
}

/* evhttp queues a response before it enables writing, and the filter moves
 * output only while writing is enabled or when flushed: flush on the next
 * loop turn, when evhttp has enabled writing and set its callback. */
static void on_queued(struct evbuffer *buf, const struct evbuffer_cb_info *info, void *arg)
{
    (void)buf;
    struct http_conn *c = arg;
    if (info->n_added)
        event_active(c->flush, EV_TIMEOUT, 0);
}

static void on_flush(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct http_conn *c = arg;
    bufferevent_event_cb errorcb = NULL;
    bufferevent_getcb(c->bev, NULL, NULL, &errorcb, NULL);
    if (errorcb) /* NULL once evhttp has freed the connection */
        bufferevent_flush(c->bev, EV_WRITE, BEV_FLUSH);
}

/* The socket bufferevent wrote to the kernel; once all is written, evhttp
 * may learn that its response went out (on a later loop turn, outside this
 * write). */
static void on_sent(struct evbuffer *buf, const struct evbuffer_cb_info *info, void *arg)
{
    struct http_conn *c = arg;
    if (info->n_deleted && evbuffer_get_length(buf) == 0 && evbuffer_get_length(bufferevent_get_output(c->bev)) == 0)
        bufferevent_trigger(c->bev, EV_WRITE, BEV_TRIG_DEFER_CALLBACKS);
}

/* libevent finalised the connection's bufferevent: the fd is about to close. */
static void on_conn_freed(void *ctx)
{
    struct http_conn *c = ctx;
    struct http_server *srv = c->srv;
    if (srv) {
        recv_unlink(c);
        if (c->fd >= 0 && (size_t)c->fd < srv->nby_fd && srv->by_fd[c->fd] == c)
            srv->by_fd[c->fd] = NULL;
        *(c->prev ? &c->prev->next : &srv->conns) = c->next;
        if (c->next)
            c->next->prev = c->prev;
        srv->nconns--;
        if (c->closing)
            srv->nclosing--;
        listener_update(srv);
    }
    if (c->deadline)
        event_free(c->deadline);
    event_free(c->flush);
    free(c);
}

/* evhttp accepted a connection and asks for its bufferevent. At the
 * connection cap, the connection that has waited longest for its request
 * makes room; if every connection is busy with a handler, the listener
 * pauses until one closes. */
static struct bufferevent *on_new_connection(struct event_base *base, void *arg)
{
    struct http_server *srv = arg;
    srv->backoff_ms = 0;
    struct http_conn *old = live_conns(srv) >= srv->limits.max_connections ? evictable(srv) : NULL;
    if (old) {
        srv->n_evicted++;
        conn_close(old);
        note_limit(srv);
    }
    struct http_conn *c = xcalloc(1, sizeof *c);
    c->srv = srv;
    c->fd = -1;
    struct bufferevent *sock = bufferevent_socket_new(base, -1, BEV_OPT_CLOSE_ON_FREE);
    HOOKD_ASSERT(sock);
    /* no removal needed: the socket bufferevent is freed (and writes no
     * more) before c is */
    HOOKD_ASSERT(evbuffer_add_cb(bufferevent_get_output(sock), on_sent, c));
    c->bev = bufferevent_filter_new(sock, on_filter_in, on_filter_out, BEV_OPT_CLOSE_ON_FREE, on_conn_freed, c);
    HOOKD_ASSERT(c->bev);
    c->deadline = evtimer_new(base, on_deadline, c);
    c->flush = event_new(base, -1, 0, on_flush, c);
    HOOKD_ASSERT(c->deadline && c->flush);
    HOOKD_ASSERT(evbuffer_add_cb(bufferevent_get_output(c->bev), on_queued, c));
    c->next = srv->conns;
    if (c->next)
        c->next->prev = c;
    srv->conns = c;
    srv->nconns++;
    conn_arm(c);
    listener_update(srv);
    return c->bev;
}

/* The connection a request arrived on, or NULL. */
static struct http_conn *conn_of(struct http_server *srv, struct evhttp_request *req)
{
    struct evhttp_connection *evcon = evhttp_request_get_connection(req);
    struct bufferevent *bev = evcon ? evhttp_connection_get_bufferevent(evcon) : NULL;
    evutil_socket_t fd = bev ? bufferevent_getfd(bev) : -1;
    if (fd < 0 || (size_t)fd >= srv->nby_fd)
        return NULL;
    struct http_conn *c = srv->by_fd[fd];
    return c && c->bev == bev ? c : NULL;
}

/* ---- routing ----------------------------------------------------------- */

static bool too_many_headers(const struct http_server *srv, struct evhttp_request *req)
{
    int64_t n = 0;
    const struct evkeyval *h;
    TAILQ_FOREACH (h, evhttp_request_get_input_headers(req), next)
        n++;
    return n > srv->limits.max_headers;
}

static void on_request(struct evhttp_request *req, void *arg)
{
    struct http_server *srv = arg;
    struct http_conn *c = conn_of(srv, req);
    if (c && !c->closing) {
        recv_unlink(c); /* received whole: the deadline stops, its bytes are the handler's */
        c->handled = true;
        listener_update(srv);
    }
    if (req->major != 1 || (req->minor != 0 && req->minor != 1)) {
        /* evhttp echoes the request's version in the status line
         * ("HTTP/0.1 200", "HTTP/1.-1 400"): answer as HTTP/1.1 instead. */
        req->major = 1;
        req->minor = 1;
        evhttp_add_header(evhttp_request_get_output_headers(req), "Connection", "close");
        http_reply_error(req, 505, "http_version_not_supported", "only HTTP/1.0 and HTTP/1.1 are served");
        return;
    }
    if (too_many_headers(srv, req)) {
        /* a pipelined head can pass the count in on_filter_in */
        evhttp_add_header(evhttp_request_get_output_headers(req), "Connection", "close");
        http_reply_error(req, 431, "too_many_headers", "more than %lld header lines",
                         (long long)srv->limits.max_headers);
        return;
    }
    char *path = http_request_path(req);
    const struct route *best = NULL;
    size_t best_len = 0;
    for (int i = 0; path && i < srv->nroutes; i++) {
        const struct route *r = &srv->routes[i];
        size_t n = strlen(r->prefix);
        bool match = r->exact ? strcmp(path, r->prefix) == 0 : strncmp(path, r->prefix, n) == 0;
        if (match && n >= best_len) {
            best = r;
            best_len = n;
        }
    }
    free(path);
    if (!best) {
        http_reply_error(req, 404, "not_found", "no such path");
        return;
    }
    best->fn(req, best->arg);
}

/* ---- the server --------------------------------------------------------- */

void http_server_raise_fd_limit(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0) {
        log_warn("process.fd_limit", "error=\"%s\"", strerror(errno));
        return;
    }
    rlim_t was = rl.rlim_cur;
    if (rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        if (setrlimit(RLIMIT_NOFILE, &rl) != 0) {
            log_warn("process.fd_limit", "soft=%llu hard=%llu error=\"cannot raise: %s\"", (unsigned long long)was,
                     (unsigned long long)rl.rlim_max, strerror(errno));
            return;
        }
    }
    log_info("process.fd_limit", "soft=%llu hard=%llu raised_from=%llu", (unsigned long long)rl.rlim_cur,
             (unsigned long long)rl.rlim_max, (unsigned long long)was);
}

/* max_connections, lowered so that the listener leaves a quarter of the fd
 * limit (at least 64) to Postgres, Redis, deliveries and the process. */
static int64_t fit_connections(int64_t wanted)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY)
        return wanted;
    int64_t limit = (int64_t)rl.rlim_cur, reserve = limit / 4 > 64 ? limit / 4 : 64;
    int64_t fit = limit - reserve > 16 ? limit - reserve : 16;
    if (wanted <= fit)
        return wanted;
    log_warn("http.max_connections",
             "configured=%lld fd_limit=%lld effective=%lld note=\"lowered to fit the fd limit\"", (long long)wanted,
             (long long)limit, (long long)fit);
    return fit;
}

struct http_server *http_server_new(struct event_base *base, const char *listen, const struct http_limits *limits,
                                    char *err, size_t errlen)
{
    const char *colon = strrchr(listen, ':');
    if (!colon) {
        err_set(err, errlen, "listen '%s' must be HOST:PORT", listen);
        return NULL;
    }
    if (limits->max_header_size < 1 || limits->max_headers < 1 || limits->request_timeout < 1 ||
        limits->max_connections < 1 || limits->max_buffered_body < 1) {
        err_set(err, errlen, "listener limits must be positive");
        return NULL;
    }
    char host[256];
    snprintf(host, sizeof host, "%.*s", (int)(colon - listen), listen);
    int port = atoi(colon + 1);
    struct http_server *srv = xcalloc(1, sizeof *srv);
    srv->base = base;
    srv->limits = *limits;
    srv->limits.max_connections = fit_connections(limits->max_connections);
    srv->http = evhttp_new(base);
    /* idle timeout: a safety net for writes; receiving has the absolute deadline */
    evhttp_set_timeout(srv->http, 30);
    evhttp_set_max_headers_size(srv->http, (ev_ssize_t)limits->max_header_size);
    evhttp_set_allowed_methods(srv->http, EVHTTP_REQ_GET | EVHTTP_REQ_POST | EVHTTP_REQ_PUT | EVHTTP_REQ_DELETE |
                                              EVHTTP_REQ_HEAD | EVHTTP_REQ_PATCH | EVHTTP_REQ_OPTIONS);
    evhttp_set_gencb(srv->http, on_request, srv);
    evhttp_set_bevcb(srv->http, on_new_connection, srv);
    srv->accept_retry = evtimer_new(base, on_accept_retry, srv);
    srv->shed_ev = event_new(base, -1, 0, on_shed, srv);
    srv->log_ev = evtimer_new(base, on_log_timer, srv);
    srv->resume_ev = evtimer_new(base, on_resume, srv);
    HOOKD_ASSERT(srv->accept_retry && srv->shed_ev && srv->log_ev && srv->resume_ev);
    srv->sock = evhttp_bind_socket_with_handle(srv->http, host, (ev_uint16_t)port);
    if (!srv->sock) {
        err_set(err, errlen, "cannot listen on %s", listen);
        http_server_free(srv);
        return NULL;
    }
    srv->listener = evhttp_bound_socket_get_listener(srv->sock);
    srv->listening = true;
    evconnlistener_set_error_cb(srv->listener, on_accept_error);
    srv->next_server = servers;
    servers = srv;
    struct sockaddr_storage ss;
    socklen_t len = sizeof ss;
    evutil_socket_t fd = evhttp_bound_socket_get_fd(srv->sock);
    if (getsockname(fd, (struct sockaddr *)&ss, &len) == 0)
        srv->port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                                   : ((struct sockaddr_in *)&ss)->sin_port);
    return srv;
}

void http_server_free(struct http_server *srv)
{
    if (!srv)
        return;
    for (struct http_server **p = &servers; *p; p = &(*p)->next_server)
        if (*p == srv) {
            *p = srv->next_server;
            break;
        }
    /* evhttp_free closes the connections; libevent frees them later, when
     * this server is gone: detach them first. */
    for (struct http_conn *c = srv->conns; c; c = c->next) {
        c->srv = NULL;
        event_free(c->deadline);
        c->deadline = NULL;
    }
    if (srv->http)
        evhttp_free(srv->http);
    struct event *evs[] = {srv->accept_retry, srv->shed_ev, srv->log_ev, srv->resume_ev};
    for (size_t i = 0; i < sizeof evs / sizeof evs[0]; i++)
        if (evs[i])
            event_free(evs[i]);
    for (int i = 0; i < srv->nroutes; i++)
        free(srv->routes[i].prefix);
    free(srv->by_fd);
    free(srv);
}

void http_server_route(struct http_server *srv, const char *prefix, http_handler_fn fn, void *arg)
{
    HOOKD_ASSERT(srv->nroutes < 32);
    struct route *r = &srv->routes[srv->nroutes++];
    size_t n = strlen(prefix);
    r->exact = !(n > 0 && prefix[n - 1] == '*');
    r->prefix = xstrndup(prefix, r->exact ? n : n - 1);
    r->fn = fn;
    r->arg = arg;
}

void http_server_set_max_body(struct http_server *srv, int64_t bytes)
{
    evhttp_set_max_body_size(srv->http, (ev_ssize_t)bytes);
}

void http_server_stop_accepting(struct http_server *srv)
{
    if (srv->sock) {
        evhttp_del_accept_socket(srv->http, srv->sock);
        srv->sock = NULL;
        srv->listener = NULL;
        event_del(srv->accept_retry);
        event_del(srv->resume_ev);
    }
}

int http_server_port(const struct http_server *srv)
{
    return srv->port;
}

int64_t http_server_connections(const struct http_server *srv)
{
    return srv->nconns;
}

int64_t http_server_buffered(const struct http_server *srv)
{
    return srv->buffered;
}
