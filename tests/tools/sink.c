/*
 * sink — the smallest webhook receiver, for `make bench`: an evhttp server
 * that answers every POST (any path) with one fixed status and an empty
 * body, keeps connections alive, and counts what it answered. `GET /count`
 * returns {"count": N} without being counted, so a benchmark can watch it.
 * On SIGTERM or SIGINT it prints {"count": N, ...} on one line to stdout and
 * exits 0. With --port 0 it picks a free port; either way the first stdout
 * line is {"listening": PORT}.
 *
 * --fail-first N answers the first N POSTs of each `webhook-id` with
 * --fail-status (default 500), then the fixed status: the shape of the retry
 * benchmark (N failures, then success). `GET /count` then also reports the
 * failures answered.
 *
 * Both report `connections`: the TCP connections that carried at least one
 * POST (the /count polls are not counted), so a benchmark can tell how many
 * deliveries each connection carried.
 */
#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <getopt.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <netinet/in.h>

#include <uthash.h>

/* Requests seen per webhook-id (--fail-first). */
struct seen {
    UT_hash_handle hh;
    unsigned n;
    char id[];
};

/* Connections open now that carried a POST. */
struct conn_seen {
    UT_hash_handle hh;
    struct evhttp_connection *evcon;
    struct sink *s;
};

struct sink {
    struct event_base *base;
    int status, fail_status;
    unsigned fail_first;
    struct seen *seen;
    struct conn_seen *conns;
    uint64_t count, other, failed, connections;
};

static void on_conn_close(struct evhttp_connection *evcon, void *arg)
{
    struct conn_seen *c = arg;
    (void)evcon;
    HASH_DEL(c->s->conns, c);
    free(c);
}

static void note_connection(struct sink *s, struct evhttp_request *req)
{
    struct evhttp_connection *evcon = evhttp_request_get_connection(req);
    struct conn_seen *c;
    if (!evcon)
        return;
    HASH_FIND_PTR(s->conns, &evcon, c);
    if (c)
        return;
    c = calloc(1, sizeof *c);
    if (!c)
        abort();
    c->evcon = evcon;
    c->s = s;
    HASH_ADD_PTR(s->conns, evcon, c);
    evhttp_connection_set_closecb(evcon, on_conn_close, c);
    s->connections++;
}

/* The status for this POST: a failure while its webhook-id has been seen
 * fewer than fail_first times. */
static int status_for(struct sink *s, struct evhttp_request *req)
{
    if (s->fail_first == 0)
        return s->status;
    const char *id = evhttp_find_header(evhttp_request_get_input_headers(req), "webhook-id");
    if (!id)
        id = "";
    struct seen *e;
    size_t len = strlen(id);
    HASH_FIND(hh, s->seen, id, len, e);
    if (!e) {
        e = calloc(1, sizeof *e + len + 1);
        if (!e)
            abort();
        memcpy(e->id, id, len + 1);
        HASH_ADD_KEYPTR(hh, s->seen, e->id, len, e);
    }
    if (e->n++ < s->fail_first) {
        s->failed++;
        return s->fail_status;
    }
    return s->status;
}

static const char *reason(int status)
{
    switch (status) {
    case 200: return "OK";
    case 201: return "Created";
    case 202: return "Accepted";
    case 204: return "No Content";
    case 400: return "Bad Request";
    case 404: return "Not Found";
    case 410: return "Gone";
    case 429: return "Too Many Requests";
    case 500: return "Internal Server Error";
    case 503: return "Service Unavailable";
    default: return "Status";
    }
}

static void handle_request(struct evhttp_request *req, void *arg)
{
    struct sink *s = arg;
    enum evhttp_cmd_type cmd = evhttp_request_get_command(req);
    const char *uri = evhttp_request_get_uri(req);
    if (cmd == EVHTTP_REQ_GET && uri && strcmp(uri, "/count") == 0) {
        struct evbuffer *b = evbuffer_new();
        evbuffer_add_printf(b, "{\"count\": %llu, \"failed\": %llu, \"connections\": %llu}\n",
                            (unsigned long long)s->count, (unsigned long long)s->failed,
                            (unsigned long long)s->connections);
        evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type", "application/json");
        evhttp_send_reply(req, 200, "OK", b);
        evbuffer_free(b);
        return;
    }
    if (cmd != EVHTTP_REQ_POST) {
        s->other++;
        evhttp_send_reply(req, 405, "Method Not Allowed", NULL);
        return;
    }
    s->count++;
    note_connection(s, req);
    int status = status_for(s, req);
    evhttp_send_reply(req, status, reason(status), NULL);
}

static void on_signal(evutil_socket_t sig, short what, void *arg)
{
    (void)sig;
    (void)what;
    struct sink *s = arg;
    event_base_loopbreak(s->base);
}

int main(int argc, char **argv)
{
    struct sink s = {.status = 200, .fail_status = 500};
    const char *host = "127.0.0.1";
    int port = -1;
    static const struct option longopts[] = {
        {"port", required_argument, NULL, 'p'},        {"status", required_argument, NULL, 's'},
        {"host", required_argument, NULL, 'H'},        {"fail-first", required_argument, NULL, 'f'},
        {"fail-status", required_argument, NULL, 'F'}, {NULL, 0, NULL, 0},
    };
    int ch;
    while ((ch = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        switch (ch) {
        case 'p': port = atoi(optarg); break;
        case 's': s.status = atoi(optarg); break;
        case 'H': host = optarg; break;
        case 'f': s.fail_first = (unsigned)atoi(optarg); break;
        case 'F': s.fail_status = atoi(optarg); break;
        default:
            fprintf(stderr,
                    "usage: sink --port P [--status 200] [--host 127.0.0.1] [--fail-first N [--fail-status 500]]\n");
            return 2;
        }
    }
    if (port < 0 || port > 65535 || s.status < 100 || s.status > 599) {
        fprintf(stderr, "usage: sink --port P [--status 200] [--host 127.0.0.1]\n");
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    s.base = event_base_new();
    struct evhttp *http = evhttp_new(s.base);
    evhttp_set_allowed_methods(http, EVHTTP_REQ_GET | EVHTTP_REQ_POST | EVHTTP_REQ_PUT | EVHTTP_REQ_HEAD);
    evhttp_set_timeout(http, 60);
    evhttp_set_gencb(http, handle_request, &s);
    struct evhttp_bound_socket *bound = evhttp_bind_socket_with_handle(http, host, (ev_uint16_t)port);
    if (!bound) {
        fprintf(stderr, "sink: cannot listen on %s:%d\n", host, port);
        return 1;
    }
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    if (getsockname(evhttp_bound_socket_get_fd(bound), (struct sockaddr *)&ss, &sl) == 0) {
        if (ss.ss_family == AF_INET)
            port = ntohs(((struct sockaddr_in *)&ss)->sin_port);
        else if (ss.ss_family == AF_INET6)
            port = ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
    }
    printf("{\"listening\": %d}\n", port);
    fflush(stdout);
    struct event *term = evsignal_new(s.base, SIGTERM, on_signal, &s);
    struct event *intr = evsignal_new(s.base, SIGINT, on_signal, &s);
    event_add(term, NULL);
    event_add(intr, NULL);
    event_base_dispatch(s.base);
    printf("{\"count\": %llu, \"other\": %llu, \"failed\": %llu, \"connections\": %llu}\n",
           (unsigned long long)s.count, (unsigned long long)s.other, (unsigned long long)s.failed,
           (unsigned long long)s.connections);
    struct seen *e, *tmp;
    HASH_ITER(hh, s.seen, e, tmp)
    {
        HASH_DEL(s.seen, e);
        free(e);
    }
    fflush(stdout);
    event_free(term);
    event_free(intr);
    evhttp_free(http);
    struct conn_seen *c, *ctmp;
    HASH_ITER(hh, s.conns, c, ctmp)
    {
        HASH_DEL(s.conns, c);
        free(c);
    }
    event_base_free(s.base);
    return 0;
}
