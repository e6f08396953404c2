/* http_client.c — asynchronous webhook POSTs over evhttp (see
 * http_client.h): the public API, the dispatch of queued requests to free
 * slots, and the reports.
 *
 * A request moves QUEUED (in its key's FIFO) → RESOLVING (evdns) →
 * SENDING (on a connection: connect, TLS, request, response) → DONE. It
 * holds one of its key's in-flight slots and one of the client's total
 * slots from leaving the queue until its callback has run. Every outcome -
 * response, failure, timeout - goes through the client's `done` queue and
 * is reported from one deferred event (on_deliver), never from inside an
 * evhttp, evdns or bufferevent callback. That single rule is what makes
 * the rest safe: evhttp connections are freed only from our own events,
 * never while evhttp is on the stack, and the caller's callback can call
 * http_client_post or even http_client_free.
 *
 * The client is made of modules, each owning one kind of state (see
 * http_client_internal.h): http_pool (keys, origins, idle connections),
 * http_conn (a connection and its TLS), http_request (a request and its
 * outcome) and http_exchange (an attempt on the wire). */
#include "http_client.h"

#include "clock.h"
#include "errbuf.h"
#include "http_client_internal.h"
#include "http_exchange_internal.h"
#include "loop_timer.h"
#include "netguard.h"
#include "xmalloc.h"

#include <event2/dns.h>
#include <event2/event.h>
#include <openssl/ssl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>
#include <time.h>

#define DEFAULT_MAX_RESPONSE 4096
#define DEFAULT_MAX_INFLIGHT 256
#define DEFAULT_MAX_IDLE_TOTAL 1000
#define DEFAULT_MAX_IDLE_ORIGIN 256
#define DEFAULT_MAX_ORIGIN 64

static void client_destroy(struct http_client *c);

/* ---- dispatch --------------------------------------------------------------- */

static void request_start(struct http_request *r)
{
    struct http_conn *conn;

    r->started_us = clock_mono_us();
    loop_timer_arm(r->timer, r->timeout_ms);
    conn = http_pool_conn_take(r->client, r->origin);
    if (conn) {
        r->reused = 1;
        r->client->conns_reused++;
        http_exchange_send(r, conn);
        return;
    }
    http_exchange_resolve(r);
}

/* Starts waiting requests while total slots last, taking keys in turn so a
 * busy key cannot starve the others. A request also takes a slot of its
 * origin: at most max_origin requests are in flight to one receiver, so
 * thousands of endpoints on it do not open thousands of connections at
 * once (a burst that overflows the receiver's accept queue, and whose
 * requests then wait behind each other there instead of here). A key's own
 * bound is smaller by default (max_inflight 16), so one slow endpoint
 * holds only a few of its origin's slots. */
static void dispatch(struct http_client *c)
{
    struct http_pool_key *k;

    while (!c->closing && c->nactive < c->max_total && (k = TAILQ_FIRST(&c->ready)) != NULL) {
        struct http_request *r = TAILQ_FIRST(&k->waiting);
        TAILQ_REMOVE(&c->ready, k, ready_link);
        k->on_ready = 0;
        int admitted = http_pool_origin_admits(c, r->origin, k);
        if (k->woken_by) { /* the reserve is used now, or (origin changed) given back */
            struct http_pool_origin *w = k->woken_by;
            k->woken_by = NULL;
            w->nwoken--;
            if (w != r->origin) {
                http_pool_origin_fill(c, w);
                http_pool_origin_maybe_free(c, w);
            }
        }
        if (!admitted) {
            /* its origin is busy: the key waits its turn there */
            TAILQ_INSERT_TAIL(&r->origin->blocked, k, blocked_link);
            k->blocked_on = r->origin;
            continue;
        }
        TAILQ_REMOVE(&k->waiting, r, link);
        k->nwaiting--;
        c->nqueued--;
        k->inflight++;
        r->origin->inflight++;
        c->nactive++;
        r->has_slot = 1;
        TAILQ_INSERT_TAIL(&c->active, r, active_link);
        http_pool_key_update_ready(c, k);
        request_start(r);
    }
}

/* ---- reporting ---------------------------------------------------------------- */

static void request_restart(struct http_request *r)
{
    r->error[0] = '\0';
    r->status = 0;
    r->got_headers = 0;
    r->has_retry_after = 0;
    r->resp_len = 0;
    r->resp_seen = 0;
    if (r->retry_fresh) {
        r->reused = 0;
        r->retried_stale = 1;
        http_exchange_resolve(r);
    } else {
        http_exchange_connect_next(r);
    }
}

static void request_report(struct http_request *r)
{
    struct http_client *c = r->client;
    struct http_pool_key *k = r->key;
    struct http_client_result res;
    int ok = r->error[0] == '\0';

    if (r->has_slot) {
        r->has_slot = 0;
        TAILQ_REMOVE(&c->active, r, active_link);
        k->inflight--;
        r->origin->inflight--;
        c->nactive--;
        http_pool_key_update_ready(c, k);
        http_pool_origin_fill(c, r->origin);
    }
    memset(&res, 0, sizeof(res));
    res.status = ok ? r->status : 0;
    res.error = ok ? NULL : r->error;
    res.body = ok && r->resp ? r->resp : "";
    res.body_len = ok ? r->resp_len : 0;
    res.retry_after = ok && r->has_retry_after ? r->retry_after : NULL;
    res.duration_us = r->duration_us;
    res.unsent = r->unsent;
    c->pending--;
    r->cb(&res, r->arg);
    http_request_free(r); /* the key and the origin live until here, whatever the callback did */
}

/* Reports every queued outcome; see the comment at the top of the file. */
static void on_deliver(evutil_socket_t fd, short what, void *arg)
{
    struct http_client *c = arg;
    struct http_request *r;
    (void)fd;
    (void)what;

    c->delivering = 1;
    while (!c->destroy_pending && (r = TAILQ_FIRST(&c->done)) != NULL) {
        TAILQ_REMOVE(&c->done, r, link);
        r->in_done = 0;
        http_request_drop_conn(r);
        if (r->phase == HTTP_REQUEST_RETRY)
            request_restart(r);
        else
            request_report(r);
    }
    c->delivering = 0;
    if (c->destroy_pending) {
        client_destroy(c);
        return;
    }
    dispatch(c);
}

/* ---- public API ------------------------------------------------------------ */

static void set_idle_bounds(struct http_client *c, const struct http_client_config *config)
{
    c->max_idle_total = config->max_idle_total > 0 ? config->max_idle_total : DEFAULT_MAX_IDLE_TOTAL;
    c->max_idle_origin = config->max_idle_per_origin > 0 ? config->max_idle_per_origin : DEFAULT_MAX_IDLE_ORIGIN;
    c->max_origin = config->max_inflight_per_origin > 0 ? config->max_inflight_per_origin : DEFAULT_MAX_ORIGIN;
}

static void client_destroy(struct http_client *c)
{
    struct http_pool_key *k, *next;
    struct http_pool_origin *o, *onext;
    http_pool_drop_idle(c);
    HASH_ITER(hh, c->origins, o, onext)
    {
        HASH_DEL(c->origins, o);
        free(o);
    }
    HASH_ITER(hh, c->keys, k, next)
    {
        HASH_DEL(c->keys, k);
        free(k->name);
        free(k);
    }
    if (c->deliver_ev)
        event_free(c->deliver_ev);
    if (c->ssl_ctx)
        SSL_CTX_free(c->ssl_ctx);
    free(c->ca_file);
    free(c->user_agent);
    free(c);
}

struct http_client *http_client_new(struct event_base *base, struct evdns_base *evdns,
                                    const struct http_client_config *config, char *err, size_t errlen)
{
    struct http_client *c;
    const char *ua;

    if (!base || !evdns || !config) {
        err_set(err, errlen, "http client needs an event base, an evdns base and a config");
        return NULL;
    }
    ua = config->user_agent ? config->user_agent : "hookd";
    for (const unsigned char *p = (const unsigned char *)ua; *p; p++) {
        if (*p < 0x20 || *p == 0x7f) {
            err_set(err, errlen, "user_agent contains a control character");
            return NULL;
        }
    }
    c = xcalloc(1, sizeof(*c));
    c->base = base;
    c->evdns = evdns;
    c->allow_private = config->allow_private_networks != 0;
    c->max_response = config->max_response_bytes ? config->max_response_bytes : DEFAULT_MAX_RESPONSE;
    c->max_total = config->max_inflight_total > 0 ? config->max_inflight_total : DEFAULT_MAX_INFLIGHT;
    c->user_agent = xstrdup(ua);
    c->headers_at_send = config->headers_at_send;
    set_idle_bounds(c, config);
    TAILQ_INIT(&c->idle_lru);
    TAILQ_INIT(&c->ready);
    TAILQ_INIT(&c->active);
    TAILQ_INIT(&c->done);
    c->deliver_ev = event_new(base, -1, 0, on_deliver, c);
    if (!c->deliver_ev) {
        err_set(err, errlen, "cannot create the delivery event");
        goto fail;
    }
    c->ssl_ctx = http_conn_tls_ctx_new(config->ca_file, err, errlen);
    if (!c->ssl_ctx)
        goto fail;
    c->ca_file = config->ca_file ? xstrdup(config->ca_file) : NULL;
    return c;

fail:
    client_destroy(c);
    return NULL;
}

int http_client_reconfigure(struct http_client *c, const struct http_client_config *config, char *err, size_t errlen)
{
    const char *old_ca = c->ca_file, *new_ca = config->ca_file;
    int ca_changed = (old_ca == NULL) != (new_ca == NULL) || (old_ca && strcmp(old_ca, new_ca) != 0);
    if (ca_changed) {
        SSL_CTX *ssl = http_conn_tls_ctx_new(new_ca, err, errlen);
        if (!ssl)
            return -1;
        /* Connections made with the old context keep their reference. */
        SSL_CTX_free(c->ssl_ctx);
        c->ssl_ctx = ssl;
        free(c->ca_file);
        c->ca_file = new_ca ? xstrdup(new_ca) : NULL;
    }
    int tighter = c->allow_private && !config->allow_private_networks;
    c->allow_private = config->allow_private_networks != 0;
    c->max_total = config->max_inflight_total > 0 ? config->max_inflight_total : DEFAULT_MAX_INFLIGHT;
    set_idle_bounds(c, config);
    struct http_pool_origin *o, *onext;
    HASH_ITER(hh, c->origins, o, onext)
    http_pool_origin_fill(c, o); /* a larger bound lets waiting keys go */
    /* A connection to an address now refused, or verified with the old CAs,
     * must not carry another request. */
    if (ca_changed || tighter)
        http_pool_drop_idle(c);
    http_pool_trim_idle(c);
    dispatch(c); /* a larger max_inflight_total may start queued requests */
    return 0;
}

/* Cancels everything outstanding and reports it; see http_client.h. */
static void cancel_all(struct http_client *c)
{
    struct http_request *r;

    TAILQ_FOREACH (r, &c->active, active_link) {
        if (r->phase != HTTP_REQUEST_DONE)
            http_request_fail(r, "cancelled");
    }
    struct http_pool_key *k, *next;
    HASH_ITER(hh, c->keys, k, next)
    {
        while ((r = TAILQ_FIRST(&k->waiting)) != NULL) {
            TAILQ_REMOVE(&k->waiting, r, link);
            k->nwaiting--;
            c->nqueued--;
            http_request_set_error(r, "cancelled");
            r->phase = HTTP_REQUEST_DONE;
            http_request_queue_done(r);
        }
        http_pool_key_unblock(c, k);
    }
    http_pool_drop_idle(c);
    while ((r = TAILQ_FIRST(&c->done)) != NULL) {
        TAILQ_REMOVE(&c->done, r, link);
        r->in_done = 0;
        http_request_drop_conn(r);
        request_report(r);
    }
}

void http_client_free(struct http_client *c)
{
    if (!c || c->closing)
        return; /* a second call, from a callback that this free is running */
    c->closing = 1;
    cancel_all(c);
    if (c->delivering) {
        /* on_deliver is below us on the stack; it frees the client when the
         * callback that called us returns. */
        c->destroy_pending = 1;
        return;
    }
    client_destroy(c);
}

int http_client_post(struct http_client *c, const char *key, const char *url, const struct http_header *hdrs,
                     size_t nhdrs, const char *body, size_t body_len, int timeout_ms, int max_inflight_for_key,
                     http_client_cb cb, void *arg, char *err, size_t errlen)
{
    struct netguard_url u;
    struct http_request *r;
    struct http_pool_key *k;
    char why[HTTP_REQUEST_ERROR_MAX];
    int has_ua;

    if (!c || !key || !*key || !url || !cb)
        return err_set(err, errlen, "http_client_post needs a client, a key, a URL and a callback");
    if (c->closing)
        return err_set(err, errlen, "http client is shutting down");
    if (netguard_parse_url(url, &u, why, sizeof(why)) < 0)
        return err_set(err, errlen, "invalid URL: %s", why);
    if (http_request_check_headers(hdrs, nhdrs, &has_ua, err, errlen) < 0)
        return -1;
    if (body_len && !body)
        return err_set(err, errlen, "body is NULL but body_len is %zu", body_len);

    r = http_request_new(c, &u, hdrs, nhdrs, has_ua, body, body_len, timeout_ms, cb, arg);
    if (!r)
        return err_set(err, errlen, "out of memory queueing the request");
    k = http_pool_key_hold(c, key);
    k->max_inflight = max_inflight_for_key > 0 ? max_inflight_for_key : 1;
    r->key = k;
    r->origin = http_pool_origin_get(c, &u);
    r->origin->refs++;
    r->phase = HTTP_REQUEST_QUEUED;
    TAILQ_INSERT_TAIL(&k->waiting, r, link);
    k->nwaiting++;
    c->nqueued++;
    c->pending++;
    http_pool_key_update_ready(c, k);
    dispatch(c);
    return 0;
}

size_t http_client_inflight(const struct http_client *c)
{
    return c ? c->pending : 0;
}

size_t http_client_key_backlog(const struct http_client *c, const char *key)
{
    const struct http_pool_key *k = NULL;
    if (c)
        HASH_FIND_STR(c->keys, key, k);
    return k ? (size_t)k->inflight + (size_t)k->nwaiting : 0;
}

size_t http_client_cancel_queued(struct http_client *c, const char *key)
{
    struct http_pool_key *k = NULL;
    if (!c || c->closing)
        return 0;
    HASH_FIND_STR(c->keys, key, k);
    if (!k)
        return 0;
    size_t n = 0;
    struct http_request *r;
    while ((r = TAILQ_FIRST(&k->waiting)) != NULL) {
        TAILQ_REMOVE(&k->waiting, r, link);
        k->nwaiting--;
        c->nqueued--;
        http_request_set_error(r, "not sent");
        r->unsent = 1;
        r->phase = HTTP_REQUEST_DONE;
        http_request_queue_done(r);
        n++;
    }
    http_pool_key_unblock(c, k);
    return n;
}

void http_client_stats(const struct http_client *c, struct http_client_stats *out)
{
    memset(out, 0, sizeof(*out));
    if (!c)
        return;
    out->connections_opened = c->conns_opened;
    out->connections_closed = c->conns_closed;
    out->requests_sent = c->requests_sent;
    out->requests_reused = c->conns_reused;
    out->idle = (size_t)c->nidle;
    out->idle_origins = (size_t)HASH_COUNT(c->origins);
    out->active = (size_t)c->nactive;
    out->queued = c->nqueued;
}
