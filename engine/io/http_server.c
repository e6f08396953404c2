/* evhttp listener with a prefix router; see http_server.h. */
#include "http_server.h"

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "xmalloc.h"

struct route {
    char *prefix;
    bool exact;
    http_handler_fn fn;
    void *arg;
};

struct http_server {
    struct evhttp *http;
    struct evhttp_bound_socket *sock;
    int port;
    struct route routes[32];
    int nroutes;
};

const char *http_reason(int code)
{
    switch (code) {
    case 200: return "OK";
    case 202: return "Accepted";
    case 303: return "See Other";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 409: return "Conflict";
    case 413: return "Payload Too Large";
    case 415: return "Unsupported Media Type";
    case 500: return "Internal Server Error";
    case 503: return "Service Unavailable";
    default: return "Status";
    }
}

void http_reply_json(struct evhttp_request *req, int code, json_t *body)
{
    char *text = json_dumps(body, JSON_COMPACT);
    json_decref(body);
    struct evbuffer *buf = evbuffer_new();
    if (text) {
        evbuffer_add(buf, text, strlen(text));
        evbuffer_add(buf, "\n", 1);
    }
    free(text);
    evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type", "application/json");
    evhttp_send_reply(req, code, http_reason(code), buf);
    evbuffer_free(buf);
}

void http_reply_error(struct evhttp_request *req, int code, const char *error_code, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    http_reply_json(req, code, json_pack("{s:s, s:s}", "error", error_code, "message", msg));
}

char *http_request_path(struct evhttp_request *req)
{
    const struct evhttp_uri *uri = evhttp_request_get_evhttp_uri(req);
    const char *path = uri ? evhttp_uri_get_path(uri) : NULL;
    if (!path)
        return NULL;
    return evhttp_uridecode(path, 0, NULL);
}

static void on_request(struct evhttp_request *req, void *arg)
{
    struct http_server *srv = arg;
    char *path = http_request_path(req);
    const struct route *best = NULL;
    size_t best_len = 0;
    for (int i = 0; path && i < srv->nroutes; i++) {
        const struct route *r = &srv->routes[i];
        size_t n = strlen(r->prefix);
        bool match = r->exact ? strcmp(path, r->prefix) == 0 : strncmp(path, r->prefix, n) == 0;
        if (match && n >= best_len) {
            best = r;
            best_len = n;
        }
    }
    free(path);
    if (!best) {
        http_reply_error(req, 404, "not_found", "no such path");
        return;
    }
    best->fn(req, best->arg);
}

struct http_server *http_server_new(struct event_base *base, const char *listen, char *err, size_t errlen)
{
    const char *colon = strrchr(listen, ':');
    if (!colon) {
        snprintf(err, errlen, "listen '%s' must be HOST:PORT", listen);
        return NULL;
    }
    char host[256];
    snprintf(host, sizeof host, "%.*s", (int)(colon - listen), listen);
    int port = atoi(colon + 1);
    struct http_server *srv = xcalloc(1, sizeof *srv);
    srv->http = evhttp_new(base);
    evhttp_set_timeout(srv->http, 30);
    evhttp_set_allowed_methods(srv->http, EVHTTP_REQ_GET | EVHTTP_REQ_POST | EVHTTP_REQ_PUT | EVHTTP_REQ_DELETE |
                                              EVHTTP_REQ_HEAD | EVHTTP_REQ_PATCH | EVHTTP_REQ_OPTIONS);
    evhttp_set_gencb(srv->http, on_request, srv);
    srv->sock = evhttp_bind_socket_with_handle(srv->http, host, (ev_uint16_t)port);
    if (!srv->sock) {
        snprintf(err, errlen, "cannot listen on %s", listen);
        evhttp_free(srv->http);
        free(srv);
        return NULL;
    }
    struct sockaddr_storage ss;
    socklen_t len = sizeof ss;
    evutil_socket_t fd = evhttp_bound_socket_get_fd(srv->sock);
    if (getsockname(fd, (struct sockaddr *)&ss, &len) == 0)
        srv->port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                                   : ((struct sockaddr_in *)&ss)->sin_port);
    return srv;
}

void http_server_free(struct http_server *srv)
{
    if (!srv)
        return;
    evhttp_free(srv->http);
    for (int i = 0; i < srv->nroutes; i++)
        free(srv->routes[i].prefix);
    free(srv);
}

void http_server_route(struct http_server *srv, const char *prefix, http_handler_fn fn, void *arg)
{
    HOOKD_ASSERT(srv->nroutes < 32);
    struct route *r = &srv->routes[srv->nroutes++];
    size_t n = strlen(prefix);
    r->exact = !(n > 0 && prefix[n - 1] == '*');
    r->prefix = xstrndup(prefix, r->exact ? n : n - 1);
    r->fn = fn;
    r->arg = arg;
}

void http_server_set_max_body(struct http_server *srv, int64_t bytes)
{
    evhttp_set_max_body_size(srv->http, (ev_ssize_t)bytes);
}

void http_server_stop_accepting(struct http_server *srv)
{
    if (srv->sock) {
        evhttp_del_accept_socket(srv->http, srv->sock);
        srv->sock = NULL;
    }
}

int http_server_port(const struct http_server *srv)
{
    return srv->port;
}
