/* One RESP connection over a bufferevent; see redis_link.h.
 *
 * Writing: a command is formatted straight into the bufferevent's output
 * buffer (one reserved span, one copy of each argument — the copy hiredis's
 * own output buffer made too, without its intermediate formatted string).
 * Reading: each read callback feeds what arrived to the redisReader and
 * takes complete replies in a loop; each goes to the oldest pending callback.
 * The FIFO is a ring of (fn, arg) pairs, grown by doubling, so a command
 * costs no allocation of its own. */
#include "redis_link.h"

#include <arpa/inet.h>
#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>
#include <hiredis.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "errbuf.h"
#include "log.h"
#include "xmalloc.h"

/* ---- TLS ----------------------------------------------------------------- */

static void ossl_last(char *out, size_t outlen)
{
    unsigned long e = ERR_peek_last_error();
    if (e)
        ERR_error_string_n(e, out, outlen);
    else
        snprintf(out, outlen, "unknown error");
    ERR_clear_error();
}

SSL_CTX *redis_link_tls_ctx(const struct redis_tls_files *f, char *err, size_t errlen)
{
    char why[256];
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    if (!ctx) {
        ossl_last(why, sizeof why);
        err_set(err, errlen, "cannot create a TLS context: %s", why);
        return NULL;
    }
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
    SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS);
    if (f && f->ca_file) {
        if (SSL_CTX_load_verify_locations(ctx, f->ca_file, NULL) != 1) {
            ossl_last(why, sizeof why);
            err_set(err, errlen, "cannot load redis_ca_file %s: %s", f->ca_file, why);
            goto fail;
        }
    } else if (SSL_CTX_set_default_verify_paths(ctx) != 1) {
        ossl_last(why, sizeof why);
        err_set(err, errlen, "cannot load the system CA store: %s", why);
        goto fail;
    }
    if (f && (f->cert_file || f->key_file)) {
        if (!f->cert_file || !f->key_file) {
            err_set(err, errlen, "redis_cert_file and redis_key_file go together");
            goto fail;
        }
        if (SSL_CTX_use_certificate_chain_file(ctx, f->cert_file) != 1) {
            ossl_last(why, sizeof why);
            err_set(err, errlen, "cannot load redis_cert_file %s: %s", f->cert_file, why);
            goto fail;
        }
        if (SSL_CTX_use_PrivateKey_file(ctx, f->key_file, SSL_FILETYPE_PEM) != 1 ||
            SSL_CTX_check_private_key(ctx) != 1) {
            ossl_last(why, sizeof why);
            err_set(err, errlen, "cannot load redis_key_file %s: %s", f->key_file, why);
            goto fail;
        }
    }
    return ctx;
fail:
    SSL_CTX_free(ctx);
    return NULL;
}

int redis_link_tls_bind(SSL *ssl, const char *host)
{
    unsigned char addr[sizeof(struct in6_addr)];
    if (inet_pton(AF_INET, host, addr) == 1 || inet_pton(AF_INET6, host, addr) == 1)
        return X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), host) == 1 ? 0 : -1;
    if (SSL_set_tlsext_host_name(ssl, host) != 1)
        return -1;
    SSL_set_hostflags(ssl, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
    return SSL_set1_host(ssl, host) == 1 ? 0 : -1;
}

static const char *verify_check(long v)
{
    switch (v) {
    case X509_V_ERR_CERT_HAS_EXPIRED: return "expired";
    case X509_V_ERR_CERT_NOT_YET_VALID: return "not_yet_valid";
    case X509_V_ERR_HOSTNAME_MISMATCH:
    case X509_V_ERR_IP_ADDRESS_MISMATCH: return "name_mismatch";
    case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY:
    case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT:
    case X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN:
    case X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT:
    case X509_V_ERR_UNABLE_TO_VERIFY_LEAF_SIGNATURE: return "unknown_ca";
    default: return "certificate";
    }
}

void redis_link_tls_reason(SSL *ssl, unsigned long ossl_err, char *out, size_t outlen)
{
    long v = ssl ? SSL_get_verify_result(ssl) : X509_V_OK;
    if (v != X509_V_OK) {
        snprintf(out, outlen, "server certificate rejected: %s (check=%s)", X509_verify_cert_error_string(v),
                 verify_check(v));
    } else if (ossl_err) {
        char buf[200];
        ERR_error_string_n(ossl_err, buf, sizeof buf);
        snprintf(out, outlen, "TLS handshake failed: %s (check=handshake)", buf);
    } else {
        snprintf(out, outlen, "TLS handshake failed: connection closed by the server (check=handshake)");
    }
    ERR_clear_error();
}

/* ---- the FIFO ---------------------------------------------------------- */

static void ring_push(struct redis_link *l, redis_link_reply_fn fn, void *arg)
{
    if (l->count == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 64;
        struct redis_link_pending *r = xmalloc(cap * sizeof *r);
        for (size_t i = 0; i < l->count; i++)
            r[i] = l->ring[(l->head + i) % l->cap];
        free(l->ring);
        l->ring = r;
        l->cap = cap;
        l->head = 0;
    }
    l->ring[(l->head + l->count) % l->cap] = (struct redis_link_pending){fn, arg};
    l->count++;
}

static struct redis_link_pending ring_pop(struct redis_link *l)
{
    struct redis_link_pending p = l->ring[l->head];
    l->head = (l->head + 1) % l->cap;
    l->count--;
    return p;
}

/* ---- reading ----------------------------------------------------------- */

static bool is_push(const redisReply *r)
{
    static const char *const kinds[] = {"message",    "pmessage",    "subscribe",
                                        "psubscribe", "unsubscribe", "punsubscribe"};
    if (r->type != REDIS_REPLY_ARRAY || r->elements < 1 || r->element[0]->type != REDIS_REPLY_STRING)
        return false;
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
        if (strcmp(r->element[0]->str, kinds[i]) == 0)
            return true;
    return false;
}

static void dispatch(struct redis_link *l, redisReply *r)
{
    if (l->subscribed && is_push(r)) {
        if (l->on_push)
            l->on_push(l, r, l->arg);
    } else if (l->count) {
        struct redis_link_pending p = ring_pop(l);
        if (p.fn)
            p.fn(l, r, p.arg);
    } else {
        log_warn("redis.unexpected_reply", "type=%d", r->type);
    }
}

static void lost(struct redis_link *l, enum redis_link_state state, const char *why)
{
    redis_link_close(l);
    if (l->on_state)
        l->on_state(l, state, why, l->arg);
}

static void on_read(struct bufferevent *bev, void *arg)
{
    struct redis_link *l = arg;
    struct evbuffer *in = bufferevent_get_input(bev);
    struct evbuffer_iovec v[16];
    size_t len;
    while ((len = evbuffer_get_length(in)) > 0) {
        int n = evbuffer_peek(in, (ev_ssize_t)len, NULL, v, 16);
        size_t fed = 0;
        for (int i = 0; i < n && i < 16; i++) {
            if (redisReaderFeed(l->reader, v[i].iov_base, v[i].iov_len) != REDIS_OK)
                return lost(l, REDIS_LINK_LOST, "cannot buffer the reply");
            fed += v[i].iov_len;
        }
        evbuffer_drain(in, fed);
    }
    uint64_t gen = l->gen;
    void *reply = NULL;
    while (l->gen == gen) {
        if (redisReaderGetReply(l->reader, &reply) != REDIS_OK) {
            char why[160];
            snprintf(why, sizeof why, "protocol error: %s", ((redisReader *)l->reader)->errstr);
            return lost(l, REDIS_LINK_LOST, why);
        }
        if (!reply)
            break;
        dispatch(l, reply);
        freeReplyObject(reply);
    }
}

static void on_event(struct bufferevent *bev, short what, void *arg)
{
    struct redis_link *l = arg;
    if (what & BEV_EVENT_CONNECTED) {
        int one = 1;
        evutil_socket_t fd = bufferevent_getfd(bev);
        if (fd >= 0)
            (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        l->connected = true;
        if (l->on_state)
            l->on_state(l, REDIS_LINK_UP, NULL, l->arg);
        return;
    }
    char why[320];
    enum redis_link_state state = l->connected ? REDIS_LINK_LOST : REDIS_LINK_FAILED;
    unsigned long ossl = l->ssl ? bufferevent_get_openssl_error(bev) : 0;
    int sock_err = EVUTIL_SOCKET_ERROR();
    if (l->ssl && !l->connected &&
        !(sock_err && !ossl && SSL_get_verify_result(l->ssl) == X509_V_OK &&
          (sock_err == ECONNREFUSED || sock_err == EHOSTUNREACH))) {
        state = REDIS_LINK_TLS_FAILED;
        redis_link_tls_reason(l->ssl, ossl, why, sizeof why);
    } else if (what & BEV_EVENT_EOF) {
        snprintf(why, sizeof why, "connection closed by the server");
    } else if (what & BEV_EVENT_TIMEOUT) {
        snprintf(why, sizeof why, "timeout");
    } else if (ossl) {
        char buf[200];
        ERR_error_string_n(ossl, buf, sizeof buf);
        snprintf(why, sizeof why, "TLS error: %s", buf);
    } else {
        snprintf(why, sizeof why, "%s", evutil_socket_error_to_string(sock_err));
    }
    lost(l, state, why);
}

/* ---- life cycle ---------------------------------------------------------- */

void redis_link_init(struct redis_link *l, struct event_base *base, redis_link_state_fn on_state,
                     redis_link_push_fn on_push, void *arg)
{
    memset(l, 0, sizeof *l);
    l->base = base;
    l->on_state = on_state;
    l->on_push = on_push;
    l->arg = arg;
}

static int resolve(const char *host, int port, struct sockaddr_storage *ss, socklen_t *sslen, char *err, size_t errlen)
{
    struct evutil_addrinfo hints = {0}, *ai = NULL;
    char portbuf[8];
    snprintf(portbuf, sizeof portbuf, "%d", port);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = EVUTIL_AI_ADDRCONFIG;
    int rc = evutil_getaddrinfo(host, portbuf, &hints, &ai);
    if (rc != 0 || !ai) {
        err_set(err, errlen, "cannot resolve %s: %s", host, evutil_gai_strerror(rc));
        return -1;
    }
    memcpy(ss, ai->ai_addr, ai->ai_addrlen);
    *sslen = (socklen_t)ai->ai_addrlen;
    evutil_freeaddrinfo(ai);
    return 0;
}

bool redis_link_is_ip(const char *host)
{
    unsigned char buf[sizeof(struct in6_addr)];
    return inet_pton(AF_INET, host, buf) == 1 || inet_pton(AF_INET6, host, buf) == 1;
}

int redis_link_open(struct redis_link *l, const char *host, int port, SSL_CTX *tls_ctx, char *err, size_t errlen)
{
    return redis_link_open_as(l, host, port, tls_ctx, NULL, err, errlen);
}

int redis_link_open_as(struct redis_link *l, const char *host, int port, SSL_CTX *tls_ctx, const char *tls_name,
                       char *err, size_t errlen)
{
    struct sockaddr_storage ss;
    socklen_t sslen;
    redis_link_close(l);
    if (resolve(host, port, &ss, &sslen, err, errlen) != 0)
        return -1;
    SSL *ssl = NULL;
    struct bufferevent *bev;
    if (tls_ctx) {
        ssl = SSL_new(tls_ctx);
        if (!ssl || redis_link_tls_bind(ssl, tls_name ? tls_name : host) != 0) {
            err_set(err, errlen, "cannot set up TLS for %s", tls_name ? tls_name : host);
            SSL_free(ssl);
            return -1;
        }
        bev = bufferevent_openssl_socket_new(l->base, -1, ssl, BUFFEREVENT_SSL_CONNECTING, BEV_OPT_CLOSE_ON_FREE);
        if (!bev)
            SSL_free(ssl);
    } else {
        bev = bufferevent_socket_new(l->base, -1, BEV_OPT_CLOSE_ON_FREE);
    }
    if (!bev) {
        return err_set(err, errlen, "cannot create a connection");
    }
    /* Callbacks are set after connect: a socket that cannot even be created
     * is reported here, not through a callback inside this call. */
    if (bufferevent_socket_connect(bev, (struct sockaddr *)&ss, (int)sslen) != 0) {
        err_set(err, errlen, "cannot connect to %s:%d: %s", host, port,
                evutil_socket_error_to_string(EVUTIL_SOCKET_ERROR()));
        bufferevent_free(bev); /* frees ssl */
        return -1;
    }
    l->bev = bev;
    l->ssl = ssl;
    l->reader = redisReaderCreate();
    l->connected = false;
    l->subscribed = false;
    bufferevent_setcb(bev, on_read, NULL, on_event, l);
    bufferevent_enable(bev, EV_READ | EV_WRITE);
    return 0;
}

void redis_link_close(struct redis_link *l)
{
    if (!l->bev)
        return;
    bufferevent_free(l->bev); /* with BEV_OPT_CLOSE_ON_FREE: the socket and the SSL */
    l->bev = NULL;
    l->ssl = NULL;
    redisReaderFree(l->reader);
    l->reader = NULL;
    l->connected = false;
    l->subscribed = false;
    l->gen++;
    while (l->count) {
        struct redis_link_pending p = ring_pop(l);
        if (p.fn)
            p.fn(l, NULL, p.arg);
    }
}

void redis_link_release(struct redis_link *l)
{
    redis_link_close(l);
    free(l->ring);
    l->ring = NULL;
    l->cap = l->head = l->count = 0;
}

/* ---- writing ------------------------------------------------------------- */

static size_t put_header(char *p, char kind, size_t n)
{
    char tmp[24];
    size_t k = 0;
    do
        tmp[k++] = (char)('0' + n % 10);
    while ((n /= 10) > 0);
    size_t w = 0;
    p[w++] = kind;
    while (k)
        p[w++] = tmp[--k];
    p[w++] = '\r';
    p[w++] = '\n';
    return w;
}

int redis_link_argv(struct redis_link *l, redis_link_reply_fn fn, void *arg, int argc, const char **argv,
                    const size_t *argvlen)
{
    if (!l->bev)
        return -1;
    size_t total = 24;
    for (int i = 0; i < argc; i++)
        total += (argvlen ? argvlen[i] : strlen(argv[i])) + 26;
    struct evbuffer *out = bufferevent_get_output(l->bev);
    struct evbuffer_iovec v;
    if (evbuffer_reserve_space(out, (ev_ssize_t)total, &v, 1) != 1)
        return -1;
    char *p = v.iov_base;
    size_t w = put_header(p, '*', (size_t)argc);
    for (int i = 0; i < argc; i++) {
        size_t len = argvlen ? argvlen[i] : strlen(argv[i]);
        w += put_header(p + w, '$', len);
        memcpy(p + w, argv[i], len);
        w += len;
        p[w++] = '\r';
        p[w++] = '\n';
    }
    v.iov_len = w;
    if (evbuffer_commit_space(out, &v, 1) != 0)
        return -1;
    ring_push(l, fn, arg);
    return 0;
}

int redis_link_raw(struct redis_link *l, redis_link_reply_fn fn, void *arg, const char *cmd, size_t len)
{
    if (!l->bev || evbuffer_add(bufferevent_get_output(l->bev), cmd, len) != 0)
        return -1;
    ring_push(l, fn, arg);
    return 0;
}

static void free_formatted(const void *data, size_t len, void *extra)
{
    (void)len;
    (void)extra;
    free((void *)data);
}

int redis_link_take(struct redis_link *l, redis_link_reply_fn fn, void *arg, char *cmd, size_t len)
{
    if (!l->bev) {
        free(cmd);
        return -1;
    }
    if (evbuffer_add_reference(bufferevent_get_output(l->bev), cmd, len, free_formatted, NULL) != 0) {
        free(cmd);
        return -1;
    }
    ring_push(l, fn, arg);
    return 0;
}

int redis_link_subscribe(struct redis_link *l, const char *channel)
{
    const char *argv[2] = {"SUBSCRIBE", channel};
    if (redis_link_argv(l, NULL, NULL, 2, argv, NULL) != 0)
        return -1;
    /* The confirmation is a push, not a FIFO reply. */
    l->count--;
    l->subscribed = true;
    return 0;
}
