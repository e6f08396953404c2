/* http_conn.c — one connection of the outbound HTTP client (see
 * http_conn_internal.h): an evhttp connection on a plain or TLS
 * bufferevent to one address that was checked before, with the TLS context
 * and session that verify the URL's host.
 *
 * Failures are classified later (http_exchange.c) from what evhttp tells
 * us, and the first certificate error is part of that: our OpenSSL verify
 * callback records it on the connection as it happens, because evhttp
 * resets the connection (and with it the SSL object, which some libevent
 * versions SSL_clear()) before it tells us anything. */
#include "http_conn_internal.h"

#include "errbuf.h"
#include "http_client_internal.h"
#include "http_request_internal.h"
#include "xmalloc.h"

#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>
#include <event2/http.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <stdio.h>
#include <stdlib.h>

#define MAX_HEADER_BYTES 65536  /* response status line + headers */
#define BODY_LIMIT_EXTRA 262144 /* evhttp's own body limit: cap + this (see http_conn_new) */

void http_conn_addr_string(const struct sockaddr *sa, char *buf, size_t len)
{
    const void *a = sa->sa_family == AF_INET
                        ? (const void *)&((const struct sockaddr_in *)(const void *)sa)->sin_addr
                        : (const void *)&((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr;
    if (!evutil_inet_ntop(sa->sa_family, a, buf, len))
        snprintf(buf, len, "?");
}

void http_conn_openssl_reason(unsigned long e, char *buf, size_t len)
{
    const char *reason = ERR_reason_error_string(e);
    if (reason)
        snprintf(buf, len, "%s", reason);
    else
        ERR_error_string_n(e, buf, len);
}

/* ---- TLS ------------------------------------------------------------------ */

/* Remembers the first verification error on the connection. Reading
 * SSL_get_verify_result() afterwards would depend on what evhttp's reset did
 * to the SSL object first (libevent versions whose be_openssl_set_fd() calls
 * SSL_clear() erase it). */
static int on_tls_verify(int preverify_ok, X509_STORE_CTX *store)
{
    SSL *ssl;
    struct http_conn *conn;

    if (preverify_ok)
        return 1;
    ssl = X509_STORE_CTX_get_ex_data(store, SSL_get_ex_data_X509_STORE_CTX_idx());
    conn = ssl ? SSL_get_app_data(ssl) : NULL;
    if (conn && conn->verify_err == 0)
        conn->verify_err = X509_STORE_CTX_get_error(store);
    return 0;
}

SSL_CTX *http_conn_tls_ctx_new(const char *ca_file, char *err, size_t errlen)
{
    char reason[160];
    SSL_CTX *ctx;

    ERR_clear_error();
    ctx = SSL_CTX_new(TLS_client_method());
    if (!ctx) {
        http_conn_openssl_reason(ERR_get_error(), reason, sizeof(reason));
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
        http_conn_openssl_reason(ERR_get_error(), reason, sizeof(reason));
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
static SSL *tls_session_new(struct http_client *c, struct http_conn *conn, int literal, char *err, size_t errlen)
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

int http_conn_is_open(const struct http_conn *conn)
{
    return !conn->closed && bufferevent_getfd(conn->bev) >= 0;
}

void http_conn_free(struct http_conn *conn)
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
    struct http_conn *conn = arg;
    (void)evcon;
    conn->closed = 1;
    conn->established = 1;
    if (conn->idle)
        event_active(conn->idle_timer, EV_TIMEOUT, 1);
}

static size_t body_limit(size_t cap)
{
    size_t max = (size_t)EV_SSIZE_MAX - BODY_LIMIT_EXTRA;
    return (cap < max ? cap : max) + BODY_LIMIT_EXTRA;
}

struct http_conn *http_conn_new(struct http_client *c, const struct http_request *r, const struct sockaddr *sa,
                                event_callback_fn on_idle, char *err, size_t errlen)
{
    struct http_conn *conn = xcalloc(1, sizeof(*conn));

    conn->client = c;
    conn->origin = r->origin;
    conn->port = r->url.port;
    conn->tls = r->url.tls;
    snprintf(conn->host, sizeof(conn->host), "%s", r->url.host);
    http_conn_addr_string(sa, conn->addr, sizeof(conn->addr));
    conn->idle_timer = evtimer_new(c->base, on_idle, conn);
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
    http_conn_free(conn);
    return NULL;
}
