/* http_exchange.c — one attempt of an outbound HTTP request (see
 * http_exchange_internal.h): resolve the URL's host with evdns, refuse
 * private addresses unless allowed, connect to the address that was
 * checked (while Host, SNI and certificate verification carry the URL's
 * host), write the request, read the status line, Retry-After and the first
 * bytes of the body, and tell what went wrong.
 *
 * Failures are classified from what evhttp tells us: the error callback's
 * reason and the socket error it restores in errno, whether the connection
 * had been established (evhttp's close callback fires only for connected
 * connections), and the first certificate error, which the connection
 * recorded as it happened (http_conn.c). Every outcome only queues the
 * request's report (http_request_finish): evhttp is on the stack here. */
#include "http_exchange_internal.h"

#include "clock.h"
#include "http_client.h"
#include "http_client_internal.h"
#include "netguard.h"
#include "xmalloc.h"

#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/dns.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <event2/util.h>
#include <netinet/in.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define DISCARD_LIMIT 65536 /* body bytes read past the cap before the connection is cut */

/* ---- the response ----------------------------------------------------------- */

static void body_take(struct http_request *r, struct evbuffer *in)
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
    struct http_request *r = arg;
    const char *ra;

    if (r->phase != HTTP_REQUEST_SENDING)
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
    struct http_request *r = arg;

    if (r->phase != HTTP_REQUEST_SENDING)
        return;
    body_take(r, evhttp_request_get_input_buffer(ereq));
    if (r->resp_seen - r->resp_len > DISCARD_LIMIT) { /* bytes thrown away past the cap */
        /* The caller has all it will see; reading on would only hold the
         * slot. A half-read response makes the connection unusable. */
        r->keep_conn = 0;
        http_request_finish(r);
    }
}

/* Runs just before on_http_done(NULL) with the socket error restored in
 * errno by evhttp_connection_fail_(); read it first. */
static void on_http_error(enum evhttp_request_error error, void *arg)
{
    int saved = errno;
    struct http_request *r = arg;
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
static int describe_connect_failure(struct http_request *r, struct http_conn *conn)
{
    char reason[160];
    unsigned long e, first = 0;

    if (conn->tls) {
        while ((e = bufferevent_get_openssl_error(conn->bev)) != 0)
            if (!first)
                first = e;
        if (conn->verify_err) {
            http_request_set_error(r, "tls: certificate verify failed: %s",
                                   X509_verify_cert_error_string(conn->verify_err));
            return 1;
        }
        if (first) {
            http_conn_openssl_reason(first, reason, sizeof(reason));
            http_request_set_error(r, "tls: handshake failed: %s", reason);
            return 1;
        }
    }
    if (r->sock_errno == ECONNREFUSED) {
        http_request_set_error(r, "connection refused");
    } else if (r->sock_errno == ECONNRESET) {
        http_request_set_error(r, "%sconnection reset by peer", conn->tls ? "tls: handshake failed: " : "");
        return conn->tls;
    } else if (is_connect_errno(r->sock_errno)) {
        http_request_set_error(r, "cannot connect to %s port %d: %s", conn->addr, conn->port, strerror(r->sock_errno));
    } else if (conn->tls) {
        http_request_set_error(r, "tls: handshake failed: connection closed by peer");
        return 1;
    } else {
        http_request_set_error(r, "cannot connect to %s port %d", conn->addr, conn->port);
    }
    return 0;
}

/* evhttp gave up on the request. connect_refused: evhttp's connect-cleanup
 * path, which reports through the done callback alone (no error callback,
 * errno already overwritten). It is taken for ECONNREFUSED, and for evhttp's
 * own connect timeout, which http_exchange_send sets past our deadline. */
static void request_failed_on_conn(struct http_request *r, int connect_refused)
{
    struct http_conn *conn = r->conn;
    int tls_failure = 0;

    r->keep_conn = 0;
    if (r->http_error == EVREQ_HTTP_DATA_TOO_LONG && r->got_headers && !connect_refused) {
        /* A body over evhttp's limit (or chunking it cannot parse): the
         * status line is the answer that matters, so report it with the
         * body read so far; the connection is not reused. */
        r->error[0] = '\0';
        http_request_finish(r);
        return;
    }
    r->status = 0;
    if (connect_refused) {
        http_request_set_error(r, "connection refused");
    } else if (r->http_error == EVREQ_HTTP_TIMEOUT) {
        http_request_set_error(r, "timeout");
        http_request_finish(r);
        return;
    } else if (r->http_error == EVREQ_HTTP_INVALID_HEADER) {
        http_request_set_error(r, "invalid HTTP response (malformed or oversized status line or headers)");
    } else if (!conn->established) {
        tls_failure = describe_connect_failure(r, conn);
    } else if (r->sock_errno == ECONNRESET) {
        http_request_set_error(r, "connection reset by peer before the response was complete");
    } else {
        http_request_set_error(r, "connection closed before the response was complete");
    }

    /* A kept-alive connection the server closed while it sat idle fails
     * this way; the request has not been seen, so send it once more on a
     * new connection (as curl and browsers do). */
    if (r->reused && !r->got_headers && !r->retried_stale && !connect_refused &&
        (r->http_error == EVREQ_HTTP_EOF || r->http_error == EVREQ_HTTP_BUFFER_ERROR)) {
        http_request_retry(r, 1);
        return;
    }
    /* The host has more addresses (e.g. IPv4 and IPv6): try the next one. */
    if (!conn->established && !tls_failure && r->next_addr < r->naddrs) {
        http_request_retry(r, 0);
        return;
    }
    http_request_finish(r);
}

static void on_http_done(struct evhttp_request *ereq, void *arg)
{
    struct http_request *r = arg;

    if (r->phase != HTTP_REQUEST_SENDING)
        return; /* already finished by the timer or the body cap */
    if (ereq && evhttp_request_get_response_code(ereq) != 0) {
        body_take(r, evhttp_request_get_input_buffer(ereq));
        r->status = evhttp_request_get_response_code(ereq);
        r->conn->established = 1;
        r->keep_conn = 1; /* http_pool_conn_release checks that the socket is still open */
        r->error[0] = '\0';
        http_request_finish(r);
        return;
    }
    request_failed_on_conn(r, ereq != NULL && !r->have_http_error);
}

/* ---- sending ---------------------------------------------------------------- */

static void add_request_headers(struct http_request *r, struct evkeyvalq *h)
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
 * writable, so every request would cost an extra turn and two epoll_ctl
 * calls (add, then drop, EPOLLOUT). What the socket does not take now, the
 * bufferevent writes on later turns; when all of it went, the write
 * callback evhttp waits for (to start reading the response) is run here,
 * as the bufferevent itself would run it. TLS connections are left alone:
 * their output is plaintext for the TLS layer. */
static void write_now(struct http_conn *conn)
{
#if LIBEVENT_VERSION_NUMBER < 0x02010000 || LIBEVENT_VERSION_NUMBER >= 0x02020000
    /* Written against 2.1's evhttp (one request per connection at a time,
     * the state moved on by the write callback): another series writes on
     * the next turn, as the bufferevent does. */
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

void http_exchange_send(struct http_request *r, struct http_conn *conn)
{
    struct evhttp_request *ereq;
    int64_t left_ms = r->timeout_ms - (clock_mono_us() - r->started_us) / 1000;
    struct timeval tv;

    r->conn = conn;
    r->phase = HTTP_REQUEST_SENDING;
    r->client->requests_sent++;
    r->have_http_error = 0;
    r->sock_errno = 0;
    r->got_headers = 0;
    ereq = evhttp_request_new(on_http_done, r);
    if (!ereq) {
        http_request_fail(r, "out of memory creating the request");
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
    tv = clock_tv_from_ms(left_ms + 1000);
    evhttp_connection_set_timeout_tv(conn->evcon, &tv);

    /* May call on_http_done before returning (connection refused at once);
     * that only queues the outcome. On -1 evhttp has freed ereq. */
    if (evhttp_make_request(conn->evcon, ereq, EVHTTP_REQ_POST, r->url.path) != 0) {
        if (r->phase == HTTP_REQUEST_SENDING)
            http_request_fail(r, "cannot start the HTTP request");
        return;
    }
    write_now(conn);
}

/* ---- resolving and connecting ------------------------------------------------ */

static int refuse_private(struct http_request *r, const struct sockaddr *sa)
{
    char a[INET6_ADDRSTRLEN];

    if (r->client->allow_private || !netguard_is_private(sa))
        return 0;
    http_conn_addr_string(sa, a, sizeof(a));
    http_request_fail(r, "refused private address %s (allow_private_networks is off)", a);
    return 1;
}

void http_exchange_connect_next(struct http_request *r)
{
    char err[HTTP_REQUEST_ERROR_MAX];
    const struct sockaddr *sa = (const struct sockaddr *)&r->addrs[r->next_addr++];
    struct http_conn *conn = http_conn_new(r->client, r, sa, http_pool_on_idle_timer, err, sizeof(err));

    if (!conn) {
        http_request_fail(r, "%s", err);
        return;
    }
    http_exchange_send(r, conn);
}

static void on_dns(int result, struct evutil_addrinfo *res, void *arg)
{
    struct http_request_dns *d = arg;
    struct http_request *r = d->req;
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
        http_request_fail(r, "dns: cannot resolve %s: %s", r->url.host, evutil_gai_strerror(result));
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
        if (r->naddrs < HTTP_REQUEST_MAX_ADDRS && ai->ai_addrlen <= sizeof(r->addrs[0]))
            memcpy(&r->addrs[r->naddrs++], ai->ai_addr, ai->ai_addrlen);
    }
    if (res)
        evutil_freeaddrinfo(res);
    if (r->naddrs == 0) {
        http_request_fail(r, "dns: no IPv4 or IPv6 address for %s", r->url.host);
        return;
    }
    http_exchange_connect_next(r);
}

static void literal_to_addr(struct http_request *r)
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

void http_exchange_resolve(struct http_request *r)
{
    struct evutil_addrinfo hints;
    struct evdns_getaddrinfo_request *handle;
    struct http_request_dns *d;

    r->naddrs = 0;
    r->next_addr = 0;
    if (r->literal_family) {
        literal_to_addr(r);
        if (!refuse_private(r, (const struct sockaddr *)&r->addrs[0]))
            http_exchange_connect_next(r);
        return;
    }
    r->phase = HTTP_REQUEST_RESOLVING;
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
