/* http_request.c — one request of the outbound HTTP client (see
 * http_request_internal.h): the copies of what the caller asked for, the
 * references it holds on its key and origin, and the bookkeeping of its
 * outcome - every outcome, failure or timeout is queued in the client's
 * done queue and reported from there, never from inside the callback of
 * evhttp, evdns or a bufferevent that produced it. */
#include "http_request_internal.h"

#include "clock.h"
#include "errbuf.h"
#include "http_client.h"
#include "http_client_internal.h"
#include "xmalloc.h"

#include <event2/dns.h>
#include <event2/event.h>
#include <event2/util.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define DEFAULT_TIMEOUT_MS 30000

void http_request_set_error(struct http_request *r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->error, sizeof(r->error), fmt, ap);
    va_end(ap);
}

/* ---- the caller's request ------------------------------------------------- */

static int is_tchar(unsigned char ch)
{
    return (ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
           (ch && strchr("!#$%&'*+-.^_`|~", ch) != NULL);
}

int http_request_check_headers(const struct http_header *hdrs, size_t n, int *has_ua, char *err, size_t errlen)
{
    static const char *const reserved[] = {"Host", "Content-Length", "Transfer-Encoding", "Connection"};
    *has_ua = 0;
    if (n && !hdrs)
        return err_set(err, errlen, "headers missing");
    for (size_t i = 0; i < n; i++) {
        const char *name = hdrs[i].name, *value = hdrs[i].value;
        if (!name || !*name)
            return err_set(err, errlen, "header #%zu has an empty name", i + 1);
        for (const char *p = name; *p; p++)
            if (!is_tchar((unsigned char)*p))
                return err_set(err, errlen, "header #%zu has an invalid name", i + 1);
        for (size_t j = 0; j < sizeof(reserved) / sizeof(reserved[0]); j++)
            if (strcasecmp(name, reserved[j]) == 0)
                return err_set(err, errlen, "header %s is set by the HTTP client", name);
        if (!value)
            return err_set(err, errlen, "header %s has no value", name);
        for (const unsigned char *p = (const unsigned char *)value; *p; p++)
            if ((*p < 0x20 && *p != '\t') || *p == 0x7f)
                return err_set(err, errlen, "header %s: value contains a control character", name);
        if (strcasecmp(name, "User-Agent") == 0)
            *has_ua = 1;
    }
    return 0;
}

static int literal_family(const char *host)
{
    struct in6_addr a6;
    struct in_addr a4;
    if (evutil_inet_pton(AF_INET, host, &a4) == 1)
        return AF_INET;
    if (evutil_inet_pton(AF_INET6, host, &a6) == 1)
        return AF_INET6;
    return 0;
}

static void on_timeout(evutil_socket_t fd, short what, void *arg)
{
    struct http_request *r = arg;
    (void)fd;
    (void)what;
    http_request_fail(r, "timeout");
}

void http_request_free(struct http_request *r)
{
    if (r->key)
        http_pool_key_release(r->client, r->key);
    if (r->origin) {
        r->origin->refs--;
        http_pool_origin_maybe_free(r->client, r->origin);
    }
    for (size_t i = 0; i < r->nhdrs; i++) {
        free(r->hdrs[i].name);
        free(r->hdrs[i].value);
    }
    free(r->hdrs);
    free(r->body);
    free(r->resp);
    if (r->timer)
        event_free(r->timer);
    free(r);
}

struct http_request *http_request_new(struct http_client *c, const struct netguard_url *url,
                                      const struct http_header *hdrs, size_t nhdrs, int has_ua, const char *body,
                                      size_t body_len, int timeout_ms, http_client_cb cb, void *arg)
{
    struct http_request *r = xcalloc(1, sizeof(*r));

    r->client = c;
    r->url = *url;
    r->literal_family = literal_family(url->host);
    r->timeout_ms = timeout_ms > 0 ? timeout_ms : DEFAULT_TIMEOUT_MS;
    r->cb = cb;
    r->arg = arg;
    r->has_user_agent = has_ua;
    r->hdrs = nhdrs ? xcalloc(nhdrs, sizeof(*r->hdrs)) : NULL;
    for (size_t i = 0; i < nhdrs; i++) {
        r->hdrs[i].name = xstrdup(hdrs[i].name);
        r->hdrs[i].value = xstrdup(hdrs[i].value);
    }
    r->nhdrs = nhdrs;
    r->body = xmalloc(body_len ? body_len : 1);
    if (body_len)
        memcpy(r->body, body, body_len);
    r->body_len = body_len;
    r->timer = evtimer_new(c->base, on_timeout, r);
    if (!r->timer) {
        http_request_free(r);
        return NULL;
    }
    return r;
}

/* ---- outcome bookkeeping -------------------------------------------------- */

void http_request_drop_conn(struct http_request *r)
{
    struct http_conn *conn = r->conn;
    if (!conn)
        return;
    r->conn = NULL;
    http_pool_conn_release(conn, r->phase == HTTP_REQUEST_DONE && r->keep_conn && !r->error[0]);
}

void http_request_queue_done(struct http_request *r)
{
    struct http_client *c = r->client;
    if (!r->in_done) {
        TAILQ_INSERT_TAIL(&c->done, r, link);
        r->in_done = 1;
    }
    event_active(c->deliver_ev, EV_TIMEOUT, 1);
}

static void request_drop_dns(struct http_request *r)
{
    struct http_request_dns *d = r->dns;
    if (!d)
        return;
    r->dns = NULL;
    d->req = NULL; /* on_dns frees d when evdns reports the cancellation */
    evdns_getaddrinfo_cancel(d->handle);
}

void http_request_finish(struct http_request *r)
{
    if (r->phase == HTTP_REQUEST_DONE)
        return;
    r->phase = HTTP_REQUEST_DONE;
    r->duration_us = r->started_us ? clock_mono_us() - r->started_us : 0;
    if (r->timer)
        event_del(r->timer);
    request_drop_dns(r);
    http_request_queue_done(r);
}

void http_request_fail(struct http_request *r, const char *fmt, ...)
{
    va_list ap;
    if (r->phase == HTTP_REQUEST_DONE)
        return; /* the first outcome stands */
    va_start(ap, fmt);
    vsnprintf(r->error, sizeof(r->error), fmt, ap);
    va_end(ap);
    r->status = 0;
    r->keep_conn = 0;
    http_request_finish(r);
}

void http_request_retry(struct http_request *r, int fresh)
{
    r->retry_fresh = fresh;
    r->keep_conn = 0;
    r->phase = HTTP_REQUEST_RETRY;
    http_request_queue_done(r);
}
