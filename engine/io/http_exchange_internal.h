/* http_exchange_internal.h — one attempt of an outbound HTTP request
 * (http_exchange.c): resolve the host, check and connect to its address,
 * write the request and read the response, and classify what went wrong;
 * only the client's own files use it (see http_client_internal.h). */
#ifndef HOOKD_HTTP_EXCHANGE_INTERNAL_H
#define HOOKD_HTTP_EXCHANGE_INTERNAL_H

struct http_conn;
struct http_request;

/* Resolves the request's host (evdns, or the IP literal itself), refuses a
 * private address unless allowed, and connects to the first address. Every
 * failure finishes the request. */
void http_exchange_resolve(struct http_request *r);

/* Connects to the request's next resolved address and sends it there. */
void http_exchange_connect_next(struct http_request *r);

/* Sends the request on conn, which it now carries. */
void http_exchange_send(struct http_request *r, struct http_conn *conn);

#endif
