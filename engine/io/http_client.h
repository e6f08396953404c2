/* http_client — the asynchronous HTTP(S) client the relay role delivers
 * outbox events with: one POST per attempt, from the worker's libevent loop.
 *
 * Built on evhttp's client side, with TLS through bufferevent_openssl. For
 * every request it resolves the host with evdns, refuses private addresses
 * (netguard.h) unless allowed, and connects to the address it checked while
 * sending the URL's host name in Host, SNI and certificate verification.
 * Connections are kept alive and shared per origin (scheme, host, port)
 * between all keys (the caller's endpoint ids): thousands of endpoints on
 * one receiver reuse a few connections. Each key still has its own
 * in-flight bound and FIFO, so a slow or dead endpoint only ever delays its
 * own deliveries.
 *
 * Threading: one client belongs to one event_base and is used only from that
 * loop's thread. The process must ignore SIGPIPE (a peer closing a socket
 * mid-write would otherwise kill the worker). */
#ifndef HOOKD_HTTP_CLIENT_H
#define HOOKD_HTTP_CLIENT_H

#include <stddef.h>
#include <stdint.h>

struct event_base;
struct evdns_base;
struct http_client;
struct http_header;

struct http_client_config {
    const char *ca_file;         /* PEM bundle to verify servers; NULL = OpenSSL's default store */
    int allow_private_networks;  /* 0: refuse loopback/private/link-local/... addresses */
    size_t max_response_bytes;   /* response body bytes kept for the caller; 0 = 4096 */
    int max_inflight_total;      /* requests on the wire across all keys; <= 0 = 256 */
    int max_inflight_per_origin; /* of them, to one origin (scheme, host, port), across keys; <= 0 = 64 */
    int max_idle_total;          /* idle keep-alive connections kept, all origins; <= 0 = 1000 */
    int max_idle_per_origin;     /* of them, to one origin (scheme, host, port); <= 0 = 256 */
    const char *user_agent;      /* NULL = "hookd" */
    /* Optional: called with a request's callback arg as the request leaves
     * its key's queue, just before it is written (again if it is re-sent on
     * a fresh connection); the *n headers it returns (owned by the caller,
     * valid until the request's callback) are added after the request's
     * own. For values that must be fresh when the request goes out, such as
     * a signed timestamp behind a long queue. */
    const struct http_header *(*headers_at_send)(void *arg, size_t *n);
};

/* Everything in config is copied. evdns is required (host names are resolved
 * with it) and, like base, must outlive the client. Returns NULL with the
 * reason in err (e.g. an unreadable ca_file). */
struct http_client *http_client_new(struct event_base *base, struct evdns_base *evdns,
                                    const struct http_client_config *config, char *err, size_t errlen)
    __attribute__((warn_unused_result));

/* Applies a changed config (a reload): allow_private_networks,
 * max_inflight_total, max_inflight_per_origin, the idle bounds and ca_file (a new TLS context for new
 * connections). Idle keep-alive connections are closed when the address
 * policy got stricter or the CAs changed, so the next request connects and
 * is checked afresh, and beyond lowered idle bounds; requests already on the
 * wire finish as they started. The other
 * fields are fixed at creation. -1 with err (and nothing changed) when the
 * new ca_file cannot be loaded. */
int http_client_reconfigure(struct http_client *c, const struct http_client_config *config, char *err, size_t errlen)
    __attribute__((warn_unused_result));

/* Cancels every request not yet reported: their callbacks run, before
 * http_client_free returns, with error "cancelled" (requests that had
 * already finished report their real result instead). May be called from
 * inside an http_client callback; a second call made from one of the
 * callbacks it triggers is ignored. Host-name lookups that were still
 * running are cancelled too, and evdns reports that from the loop later:
 * let the loop run once more (event_base_loop(base, EVLOOP_NONBLOCK))
 * before freeing the evdns_base and event_base, or their small records are
 * never released. Accepts NULL. */
void http_client_free(struct http_client *client);

struct http_header {
    const char *name;
    const char *value;
};

struct http_client_result {
    int status;              /* HTTP status; 0 when there is no (complete) response */
    const char *error;       /* NULL when status is set; otherwise why the attempt failed:
                                "timeout", "connection refused",
                                "tls: certificate verify failed: hostname mismatch",
                                "refused private address 10.0.0.1 (allow_private_networks is off)",
                                "dns: ...", "cancelled", ... */
    const char *body;        /* first bytes of the response body; never NULL, NUL-terminated,
                                may itself contain NUL bytes */
    size_t body_len;         /* at most max_response_bytes; 0 when the body was refused
                                unread (Content-Length or one chunk far over the cap) */
    const char *retry_after; /* the response's Retry-After header, or NULL */
    int64_t duration_us;     /* from leaving the queue to the outcome (0 if never started) */
    int unsent;              /* 1: taken back from its key's queue by http_client_cancel_queued, never
                                sent (error "not sent") */
};

/* The result and every string in it are borrowed: valid only during the
 * callback. */
typedef void (*http_client_cb)(const struct http_client_result *result, void *arg);

/* Queues a POST of body to url. key names the endpoint: at most
 * max_inflight_for_key requests of a key are on the wire at once (values
 * below 1 mean 1; the latest call's value applies); further ones wait in
 * the key's FIFO. A request also waits while max_inflight_per_origin
 * requests (of any keys) are on the wire to its URL's origin; the keys
 * waiting for an origin get its free slots in turn. timeout_ms (<= 0: 30000) bounds resolve + connect + TLS +
 * request + response and starts when the request leaves the queue. hdrs
 * are added as given; Host, Content-Length, Transfer-Encoding and
 * Connection belong to the client and are refused, a User-Agent in hdrs
 * replaces the configured one. key, url, hdrs and body are copied. The
 * request goes out on an idle connection to its URL's origin if there is
 * one, whichever key used it before, else on a new one.
 *
 * Returns -1 with the reason in err for errors found at once (bad URL or
 * header, client shutting down); the callback then never runs. Otherwise
 * returns 0 and cb runs exactly once, later, from the loop - never inside
 * http_client_post. */
int http_client_post(struct http_client *client, const char *key, const char *url, const struct http_header *hdrs,
                     size_t nhdrs, const char *body, size_t body_len, int timeout_ms, int max_inflight_for_key,
                     http_client_cb cb, void *arg, char *err, size_t errlen) __attribute__((warn_unused_result));

/* Requests accepted and not yet reported to their callback (queued, in
 * flight, or finished and about to be reported). Lets a draining worker
 * wait for zero. */
size_t http_client_inflight(const struct http_client *client);

/* Requests of one key on the wire or waiting in its FIFO. */
size_t http_client_key_backlog(const struct http_client *client, const char *key);

/* Takes back the requests of one key still waiting in its FIFO (not yet
 * on the wire: nothing of them was sent): each callback runs later, from
 * the loop, with unsent set. Requests on the wire are left alone. Returns
 * how many were taken back. */
size_t http_client_cancel_queued(struct http_client *client, const char *key);

/* Counters since the client was created, and gauges of now. */
struct http_client_stats {
    uint64_t connections_opened; /* TCP (and TLS) connections created */
    uint64_t connections_closed; /* of them, closed again (by either side, failed, idle too long, or trimmed) */
    uint64_t requests_sent;      /* requests written on a connection (a re-send on a new one counts again) */
    uint64_t requests_reused;    /* of them, sent on a kept-alive connection */
    size_t idle;                 /* idle keep-alive connections now */
    size_t idle_origins;         /* origins known now (with idle connections or requests) */
    size_t active;               /* requests holding a slot now (resolving, on the wire, being reported) */
    size_t queued;               /* requests waiting in their keys' queues now */
};

void http_client_stats(const struct http_client *client, struct http_client_stats *out);

#endif
