/* The worker's HTTP listener: libevent's evhttp with a small prefix router
 * and JSON reply helpers. Handlers run on the loop; a handler may answer
 * later (after a database commit) by keeping the request pointer.
 *
 * The listener faces the internet, so it bounds what a client that never
 * authenticates can hold (struct http_limits): the size and count of the
 * request head, an absolute deadline for receiving a request, the number of
 * open connections, and the bytes of requests still being received across
 * all connections. Accept errors (out of file descriptors) pause the
 * listener with a growing back-off instead of spinning. */
#ifndef HOOKD_HTTP_SERVER_H
#define HOOKD_HTTP_SERVER_H

#include <jansson.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

struct event_base;
struct evhttp_request;
struct http_server;

typedef void (*http_handler_fn)(struct evhttp_request *req, void *arg);

/* What one client may hold on the listener. Every field must be positive. */
struct http_limits {
    int64_t max_header_size;   /* bytes of request line + headers (evhttp answers 400 beyond) */
    int64_t max_headers;       /* header lines per request (beyond: connection closed, or 431) */
    int64_t request_timeout;   /* ms from accept, or from the previous response, to a complete
                                * request; never extended by traffic */
    int64_t max_connections;   /* open connections; lowered to fit the fd limit. A new one beyond
                                * it closes the connection that has waited longest for its request */
    int64_t max_buffered_body; /* bytes of requests still being received, all connections together;
                                * beyond it the connection holding the most is closed */
};

/* listen is "HOST:PORT"; limits is copied. NULL with err when it cannot bind. */
__attribute__((warn_unused_result)) struct http_server *http_server_new(struct event_base *base, const char *listen,
                                                                        const struct http_limits *limits, char *err,
                                                                        size_t errlen);
void http_server_free(struct http_server *srv); /* accepts NULL */
/* Requests whose path starts with prefix go to fn (the longest prefix wins;
 * an exact route ends with no trailing '*'). */
void http_server_route(struct http_server *srv, const char *prefix, http_handler_fn fn, void *arg);
/* Largest request body evhttp accepts at all (bigger ones get 413 before any
 * handler runs). */
void http_server_set_max_body(struct http_server *srv, int64_t bytes);
/* Stops accepting new connections (drain on SIGTERM). */
void http_server_stop_accepting(struct http_server *srv);
/* The port actually bound (useful when listen asks for port 0). */
int http_server_port(const struct http_server *srv);
/* Connections open now (closing ones included) and bytes of requests being
 * received now, for metrics and tests. */
int64_t http_server_connections(const struct http_server *srv);
int64_t http_server_buffered(const struct http_server *srv);

/* Raises the process's soft RLIMIT_NOFILE to the hard limit and logs the
 * result. Call once at start, before http_server_new (which sizes
 * max_connections to the limit). */
void http_server_raise_fd_limit(void);

/* Sends body (reference stolen) as application/json; with 204, the status
 * alone (the body is dropped). */
void http_reply_json(struct evhttp_request *req, int code, json_t *body);
/* {code_key: code, msg_key: the formatted message}, the message cut at 511
 * bytes and made valid UTF-8 (a JSON string must be). */
json_t *http_error_vjson(const char *code_key, const char *code, const char *msg_key, const char *fmt, va_list ap)
    __attribute__((format(printf, 4, 0)));
/* {"error": code_word, "message": msg} */
void http_reply_error(struct evhttp_request *req, int code, const char *error_code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
const char *http_reason(int code);
/* The path without query string, decoded (caller frees), or NULL. */
char *http_request_path(struct evhttp_request *req);
/* The peer's address as text (borrowed from the connection), or "unknown". */
const char *http_request_peer(struct evhttp_request *req);
struct cidr_addr;
struct cidr_list;
/* The client's address: the peer's, or, when the peer is one of trusted
 * (NULL or empty: none), the one its X-Forwarded-For names
 * (cidr_client_addr over every X-Forwarded-For header of the request,
 * joined in arrival order). 0 with *out set; -1 when the peer's address
 * is unknown; -2 when a trusted proxy's X-Forwarded-For names no usable
 * address. */
int http_request_client(struct evhttp_request *req, const struct cidr_list *trusted, struct cidr_addr *out);

#endif
