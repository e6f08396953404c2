/* http_pool.c — the outbound HTTP client's endpoint keys, origins and idle
 * keep-alive connections (see http_pool_internal.h): which key may start a
 * request now, within its own in-flight bound and its origin's, and which
 * warm connection carries it.
 *
 * Idle keep-alive connections are pooled per origin, not per key: thousands
 * of endpoints on one receiver (a SaaS's customers behind one ingress) then
 * share a few warm connections instead of each opening its own, as Go's
 * http.Transport and hyper pool per scheme and authority. Nothing of a key
 * lives on a connection: headers, body and deadline are per request, and a
 * key's in-flight bound counts requests, wherever they are sent. What a
 * connection was checked for is the same for every key of its origin: the
 * address was checked against the client's policy when it connected (a
 * stricter policy or other CAs close every idle connection), and TLS
 * verified the URL's host, which is part of the origin, with the client's
 * one context. The pool is bounded per origin (so one busy receiver cannot
 * push every other origin's connections out) and in total (the least
 * recently used idle connection is closed for a new one). */
#include "http_pool_internal.h"
#include "loop_timer.h"

#include "http_client_internal.h"
#include "netguard.h"

#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define IDLE_TIMEOUT_S 30 /* keep-alive connections unused this long are closed */

/* ---- keys ----------------------------------------------------------------- */

struct http_pool_key *http_pool_key_hold(struct http_client *c, const char *name)
{
    struct http_pool_key *k;

    HASH_FIND_STR(c->keys, name, k);
    if (!k) {
        k = xcalloc(1, sizeof(*k));
        k->name = xstrdup(name);
        TAILQ_INIT(&k->waiting);
        HASH_ADD_KEYPTR(hh, c->keys, k->name, strlen(k->name), k);
    }
    k->refs++;
    return k;
}

/* Endpoints removed from the config cost nothing once their last request is
 * reported. A key nothing points at waits for nothing, so it is on no list
 * (waiting, in-flight slots, ready, blocked and woken all come from
 * requests of its own). */
void http_pool_key_release(struct http_client *c, struct http_pool_key *k)
{
    HOOKD_ASSERT(k->refs > 0);
    if (--k->refs > 0)
        return;
    HOOKD_ASSERT(k->inflight == 0 && TAILQ_EMPTY(&k->waiting) && !k->on_ready && !k->blocked_on && !k->woken_by);
    HASH_DEL(c->keys, k);
    free(k->name);
    free(k);
}

void http_pool_key_update_ready(struct http_client *c, struct http_pool_key *k)
{
    int ready = !TAILQ_EMPTY(&k->waiting) && k->inflight < k->max_inflight && !k->blocked_on;
    if (ready && !k->on_ready) {
        TAILQ_INSERT_TAIL(&c->ready, k, ready_link);
        k->on_ready = 1;
    } else if (!ready && k->on_ready) {
        TAILQ_REMOVE(&c->ready, k, ready_link);
        k->on_ready = 0;
    }
}

/* ---- origins -------------------------------------------------------------- */

static void origin_name(char *buf, size_t len, const struct netguard_url *u)
{
    int v6 = strchr(u->host, ':') != NULL;
    snprintf(buf, len, "%s://%s%s%s:%d", u->tls ? "https" : "http", v6 ? "[" : "", u->host, v6 ? "]" : "", u->port);
}

struct http_pool_origin *http_pool_origin_get(struct http_client *c, const struct netguard_url *u)
{
    char name[HTTP_POOL_ORIGIN_MAX];
    struct http_pool_origin *o = NULL;

    origin_name(name, sizeof(name), u);
    HASH_FIND_STR(c->origins, name, o);
    if (o)
        return o;
    o = xcalloc(1, sizeof(*o));
    snprintf(o->name, sizeof(o->name), "%s", name);
    TAILQ_INIT(&o->idle);
    TAILQ_INIT(&o->blocked);
    HASH_ADD_STR(c->origins, name, o);
    return o;
}

void http_pool_origin_maybe_free(struct http_client *c, struct http_pool_origin *o)
{
    if (o->refs || o->nidle || o->inflight || o->nwoken || !TAILQ_EMPTY(&o->blocked))
        return;
    HASH_DEL(c->origins, o);
    free(o);
}

/* Origin slots are handed out in turn: a key whose origin is full waits in
 * its blocked list; when slots come free, this takes as many keys off the
 * list as there are free slots and reserves one slot for each (woken_by),
 * so a key that keeps becoming ready - a busy endpoint - cannot take every
 * slot that frees before the keys that waited. */
void http_pool_origin_fill(struct http_client *c, struct http_pool_origin *o)
{
    struct http_pool_key *k;
    while (o->inflight + o->nwoken < c->max_origin && (k = TAILQ_FIRST(&o->blocked)) != NULL) {
        TAILQ_REMOVE(&o->blocked, k, blocked_link);
        k->blocked_on = NULL;
        k->woken_by = o;
        o->nwoken++;
        http_pool_key_update_ready(c, k);
    }
}

void http_pool_key_unblock(struct http_client *c, struct http_pool_key *k)
{
    struct http_pool_origin *o = k->blocked_on;
    if (o) {
        TAILQ_REMOVE(&o->blocked, k, blocked_link);
        k->blocked_on = NULL;
        http_pool_origin_maybe_free(c, o);
    }
    o = k->woken_by;
    if (o) {
        k->woken_by = NULL;
        o->nwoken--;
        http_pool_origin_fill(c, o);
        http_pool_origin_maybe_free(c, o);
    }
    http_pool_key_update_ready(c, k);
}

int http_pool_origin_admits(const struct http_client *c, const struct http_pool_origin *o,
                            const struct http_pool_key *k)
{
    if (k->woken_by == o)
        return 1;
    return TAILQ_EMPTY(&o->blocked) && o->inflight + o->nwoken < c->max_origin;
}

/* ---- the idle pool -------------------------------------------------------- */

/* Takes an idle connection out of the pool. */
static void idle_unlink(struct http_client *c, struct http_conn *conn)
{
    struct http_pool_origin *o = conn->origin;

    TAILQ_REMOVE(&o->idle, conn, idle_link);
    o->nidle--;
    TAILQ_REMOVE(&c->idle_lru, conn, lru_link);
    c->nidle--;
    conn->idle = 0;
    event_del(conn->idle_timer);
}

static void idle_close(struct http_client *c, struct http_conn *conn)
{
    struct http_pool_origin *o = conn->origin;
    idle_unlink(c, conn);
    http_conn_free(conn);
    http_pool_origin_maybe_free(c, o);
}

void http_pool_drop_idle(struct http_client *c)
{
    struct http_conn *conn;
    while ((conn = TAILQ_FIRST(&c->idle_lru)) != NULL)
        idle_close(c, conn);
}

void http_pool_trim_idle(struct http_client *c)
{
    struct http_pool_origin *o, *next;
    struct http_conn *conn;

    while (c->nidle > c->max_idle_total && (conn = TAILQ_LAST(&c->idle_lru, http_conn_list)) != NULL)
        idle_close(c, conn);
    HASH_ITER(hh, c->origins, o, next)
    {
        /* max_idle_origin >= 1: o keeps a connection, so it is not freed here */
        while (o->nidle > c->max_idle_origin)
            idle_close(c, TAILQ_LAST(&o->idle, http_conn_list));
    }
}

void http_pool_on_idle_timer(evutil_socket_t fd, short what, void *arg)
{
    struct http_conn *conn = arg;
    (void)fd;
    (void)what;
    idle_close(conn->client, conn);
}

/* A closed idle connection stays in the pool until its timer (made due by
 * http_conn.c when its peer closes it) frees it. */
struct http_conn *http_pool_conn_take(struct http_client *c, struct http_pool_origin *o)
{
    struct http_conn *conn;

    TAILQ_FOREACH (conn, &o->idle, idle_link) {
        if (http_conn_is_open(conn)) {
            idle_unlink(c, conn);
            return conn;
        }
    }
    return NULL;
}

/* A full pool closes its least recently used connection to make room. The
 * request the connection carried still refers to its origin, so the origin
 * outlives this. */
void http_pool_conn_release(struct http_conn *conn, int reusable)
{
    struct http_client *c = conn->client;
    struct http_pool_origin *o = conn->origin;

    if (!reusable || c->closing || !http_conn_is_open(conn) || o->nidle >= c->max_idle_origin) {
        http_conn_free(conn);
        return;
    }
    if (c->nidle >= c->max_idle_total) /* max_idle_total >= 1: not empty; never frees o (o->refs) */
        idle_close(c, TAILQ_LAST(&c->idle_lru, http_conn_list));
    conn->idle = 1;
    TAILQ_INSERT_HEAD(&o->idle, conn, idle_link);
    o->nidle++;
    TAILQ_INSERT_HEAD(&c->idle_lru, conn, lru_link);
    c->nidle++;
    loop_timer_arm(conn->idle_timer, IDLE_TIMEOUT_S * 1000);
}
