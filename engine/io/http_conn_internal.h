/* http_conn_internal.h — one evhttp connection of the outbound HTTP client
 * (http_conn.c), plain or TLS, to one checked address; only the client's
 * own files use it (see http_client_internal.h). */
#ifndef HOOKD_HTTP_CONN_INTERNAL_H
#define HOOKD_HTTP_CONN_INTERNAL_H

#include <event2/event.h>
#include <event2/util.h>
#include <netinet/in.h>
#include <openssl/ssl.h>
#include <stddef.h>
#include <sys/queue.h>
#include <sys/socket.h>

struct bufferevent;
struct event;
struct evhttp_connection;
struct http_client;
struct http_pool_origin;
struct http_request;

/* One evhttp connection to one checked address. While idle it is in its
 * origin's list and in the client's idle_lru; in use it is in neither and
 * belongs to the request it carries. */
struct http_conn {
    struct http_client *client;
    struct http_pool_origin *origin;  /* alive: the conn is idle in it, or carries a request that refers to it */
    TAILQ_ENTRY(http_conn) idle_link; /* origin->idle */
    TAILQ_ENTRY(http_conn) lru_link;  /* client->idle_lru */
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
    int counted;     /* counted in conns_opened: http_conn_free counts it closed */
    int established; /* TCP (and TLS) handshake completed at least once */
    int verify_err;  /* first X509_V_ERR_* seen while verifying the server */
};

TAILQ_HEAD(http_conn_list, http_conn);

/* The TLS context every connection's session is made from: TLS 1.2 or
 * later, peers verified against ca_file (NULL: OpenSSL's default store).
 * NULL with the reason in err. The caller frees it (SSL_CTX_free). */
SSL_CTX *http_conn_tls_ctx_new(const char *ca_file, char *err, size_t errlen) __attribute__((warn_unused_result));

/* A connection for request r (its origin, host, port and scheme) to the
 * checked address sa; nothing is sent yet. on_idle runs (with the
 * connection as its argument) from its idle timer, which the pool arms,
 * and at once when the peer closes it while idle. NULL with the reason in
 * err. */
struct http_conn *http_conn_new(struct http_client *c, const struct http_request *r, const struct sockaddr *sa,
                                event_callback_fn on_idle, char *err, size_t errlen)
    __attribute__((warn_unused_result));

/* Closes and frees it, without calling back a request still queued on it.
 * Never call it while evhttp is on the stack. */
void http_conn_free(struct http_conn *conn);

/* Whether it can carry another request: not reset by evhttp, socket open. */
int http_conn_is_open(const struct http_conn *conn);

/* sa's address as text ("?" if it cannot be written). */
void http_conn_addr_string(const struct sockaddr *sa, char *buf, size_t len);

/* OpenSSL's reason for error e, as text. */
void http_conn_openssl_reason(unsigned long e, char *buf, size_t len);

#endif
