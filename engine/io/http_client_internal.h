/* http_client_internal.h — the client's own state, shared by the files of
 * the outbound HTTP client only (http_client.c and the http_*.c modules it
 * is made of); callers use http_client.h.
 *
 * The client is split by responsibility: http_pool (endpoint keys, origins
 * and the idle keep-alive pool), http_conn (one evhttp connection and its
 * TLS), http_request (a request and its outcome), http_exchange (an attempt:
 * resolve, connect, send, read the response) and http_client (the public
 * API, the dispatch of queued requests and the reports). */
#ifndef HOOKD_HTTP_CLIENT_INTERNAL_H
#define HOOKD_HTTP_CLIENT_INTERNAL_H

#include "http_conn_internal.h"
#include "http_pool_internal.h"
#include "http_request_internal.h"

#include <openssl/ssl.h>
#include <stddef.h>
#include <stdint.h>

struct event;
struct event_base;
struct evdns_base;
struct http_header;

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

    struct http_pool_key *keys;       /* by name; owns its keys */
    struct http_pool_origin *origins; /* by name; owns its origins (and their idle connections) */
    int max_origin;                   /* requests in flight to one origin */
    struct http_conn_list idle_lru;   /* every idle connection, most recently used first */
    int nidle;                        /* length of idle_lru */
    int max_idle_total;
    int max_idle_origin;
    uint64_t conns_opened;           /* connections created (http_client_stats) */
    uint64_t conns_closed;           /* of them, freed */
    uint64_t requests_sent;          /* requests written on a connection */
    uint64_t conns_reused;           /* of them, on a kept-alive connection */
    size_t nqueued;                  /* requests in keys' FIFOs */
    struct http_pool_key_list ready; /* keys that could start a request now */
    struct http_request_list active; /* requests holding slots */
    struct http_request_list done;   /* outcomes waiting for on_deliver */
    struct event *deliver_ev;
    size_t pending; /* accepted, callback not yet run */
    int nactive;
    int delivering;      /* on_deliver is on the stack */
    int closing;         /* http_client_free has started */
    int destroy_pending; /* http_client_free ran inside on_deliver */
};

#endif
