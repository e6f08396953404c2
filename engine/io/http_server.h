/* The worker's HTTP listener: libevent's evhttp with a small prefix router
 * and JSON reply helpers. Handlers run on the loop; a handler may answer
 * later (after a database commit) by keeping the request pointer. */
#ifndef HOOKD_HTTP_SERVER_H
#define HOOKD_HTTP_SERVER_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

struct event_base;
struct evhttp_request;
struct http_server;

typedef void (*http_handler_fn)(struct evhttp_request *req, void *arg);

/* listen is "HOST:PORT". NULL with err when it cannot bind. */
__attribute__((warn_unused_result)) struct http_server *http_server_new(struct event_base *base, const char *listen,
                                                                        char *err, size_t errlen);
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

/* Sends body (reference stolen) as application/json. */
void http_reply_json(struct evhttp_request *req, int code, json_t *body);
/* {"error": code_word, "message": msg} */
void http_reply_error(struct evhttp_request *req, int code, const char *error_code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
const char *http_reason(int code);
/* The path without query string, decoded (caller frees), or NULL. */
char *http_request_path(struct evhttp_request *req);

#endif
