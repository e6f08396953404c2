/* http_request_internal.h — one request of the outbound HTTP client
 * (http_request.c): what the caller asked for, where it is on its way, and
 * its outcome; only the client's own files use it (see
 * http_client_internal.h).
 *
 * A request moves QUEUED (in its key's FIFO) → RESOLVING (evdns) →
 * SENDING (on a connection) → DONE, or RETRY (in the done queue, to be
 * started again on a new connection). Every outcome goes through the
 * client's done queue (http_request_finish) and is reported from the
 * client's own deferred event, never from inside an evhttp, evdns or
 * bufferevent callback. */
#ifndef HOOKD_HTTP_REQUEST_INTERNAL_H
#define HOOKD_HTTP_REQUEST_INTERNAL_H

#include "netguard.h"

#include <event2/http.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/queue.h>
#include <sys/socket.h>

#define HTTP_REQUEST_MAX_ADDRS 8 /* resolved addresses tried, in resolver order */
#define HTTP_REQUEST_RETRY_AFTER_MAX 128
#define HTTP_REQUEST_ERROR_MAX 256

struct event;
struct evdns_getaddrinfo_request;
struct http_client;
struct http_client_result;
struct http_conn;
struct http_header;
struct http_pool_key;
struct http_pool_origin;

enum http_request_phase {
    HTTP_REQUEST_QUEUED,    /* in its key's FIFO, holds no slot */
    HTTP_REQUEST_RESOLVING, /* waiting for evdns */
    HTTP_REQUEST_SENDING,   /* on a connection; evhttp callbacks are live */
    HTTP_REQUEST_RETRY,     /* in the done queue, to be started again on a new connection */
    HTTP_REQUEST_DONE,      /* outcome known; in the done queue or being reported */
};

/* Owned by evdns until it reports: a cancelled lookup still calls back,
 * later, so the request must not be what evdns points at. */
struct http_request_dns {
    struct http_request *req; /* NULL once the request stopped waiting */
    struct evdns_getaddrinfo_request *handle;
};

struct http_request_header {
    char *name;
    char *value;
};

struct http_request {
    struct http_client *client;
    struct http_pool_key *key;             /* counted in key->refs */
    struct http_pool_origin *origin;       /* counted in origin->refs */
    TAILQ_ENTRY(http_request) link;        /* key->waiting or client->done */
    TAILQ_ENTRY(http_request) active_link; /* client->active while holding slots */
    enum http_request_phase phase;
    int in_done;
    int has_slot;
    int unsent; /* taken back from the queue (http_client_cancel_queued) */

    struct netguard_url url;
    int literal_family; /* AF_INET/AF_INET6 when the host is an IP literal, else 0 */
    struct http_request_header *hdrs;
    size_t nhdrs;
    int has_user_agent;
    char *body;
    size_t body_len;
    int timeout_ms;
    void (*cb)(const struct http_client_result *result, void *arg); /* http_client_cb */
    void *arg;

    struct event *timer;
    struct http_request_dns *dns;
    struct http_conn *conn;
    struct sockaddr_storage addrs[HTTP_REQUEST_MAX_ADDRS];
    int naddrs;
    int next_addr;
    int reused;        /* sent on a kept-alive connection */
    int retried_stale; /* already retried once after a kept-alive connection died */
    int retry_fresh;   /* HTTP_REQUEST_RETRY: resolve again instead of trying the next address */
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
    char error[HTTP_REQUEST_ERROR_MAX];
    char *resp;
    size_t resp_len;
    size_t resp_seen;
    char retry_after[HTTP_REQUEST_RETRY_AFTER_MAX];
    int has_retry_after;
};

TAILQ_HEAD(http_request_list, http_request);

/* Checks the caller's headers: names are tokens, values have no control
 * characters, and the client's own (Host, Content-Length,
 * Transfer-Encoding, Connection) are refused; *has_ua tells whether a
 * User-Agent is among them. -1 with the reason in err. */
int http_request_check_headers(const struct http_header *hdrs, size_t n, int *has_ua, char *err, size_t errlen)
    __attribute__((warn_unused_result));

/* A request of client c, with copies of url, hdrs and body; it points at no
 * key or origin yet (the caller sets them, taking their references). NULL
 * when its timer cannot be made. */
struct http_request *http_request_new(struct http_client *c, const struct netguard_url *url,
                                      const struct http_header *hdrs, size_t nhdrs, int has_ua, const char *body,
                                      size_t body_len, int timeout_ms,
                                      void (*cb)(const struct http_client_result *result, void *arg), void *arg)
    __attribute__((warn_unused_result));

/* Frees it and drops its references to its key and origin. */
void http_request_free(struct http_request *r);

/* Detaches its connection: back to the idle pool when the request ended
 * with an answer and the connection may carry another, else closed. Only
 * from the report event, never while evhttp is on the stack. */
void http_request_drop_conn(struct http_request *r);

/* Puts it in the client's done queue (once) and makes the report event due. */
void http_request_queue_done(struct http_request *r);

/* The outcome is known: stops the clock and queues the report. The
 * connection stays attached until the report, the only place it may be
 * freed (evhttp may be on the stack here). */
void http_request_finish(struct http_request *r);

/* Finishes it as failed with that reason, unless it is finished already
 * (the first outcome stands). */
void http_request_fail(struct http_request *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Sets the reason it failed without finishing it. */
void http_request_set_error(struct http_request *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Starts the attempt again on a new connection from the report event, once
 * the failed connection can be freed (fresh: resolve again, else the next
 * address); the deadline keeps running. */
void http_request_retry(struct http_request *r, int fresh);

#endif
