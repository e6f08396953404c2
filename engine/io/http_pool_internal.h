/* http_pool_internal.h — the outbound HTTP client's endpoint keys, origins
 * and idle keep-alive connections (http_pool.c); only the client's own
 * files use it (see http_client_internal.h). */
#ifndef HOOKD_HTTP_POOL_INTERNAL_H
#define HOOKD_HTTP_POOL_INTERNAL_H

#include "http_conn_internal.h"
#include "http_request_internal.h"
#include "xmalloc.h"

#include <event2/util.h>
#include <stddef.h>
#include <sys/queue.h>

#define uthash_malloc(sz) xmalloc(sz) /* allocation failure aborts in one place */
#include <uthash.h>

#define HTTP_POOL_ORIGIN_MAX 280 /* "https://" + host + ":" + port */

struct http_client;
struct http_pool_origin;
struct netguard_url;

TAILQ_HEAD(http_pool_key_list, http_pool_key);

/* One endpoint key: its FIFO and its in-flight count. Owned by client->keys
 * (a uthash keyed by name); lives while a request points at it (refs: one
 * per request from http_client_post to http_request_free, wherever the
 * request is - waiting, on the wire, or in the done queue, reported or
 * taken back unsent) and is freed by http_pool_key_release when the last
 * one goes. A key with waiting requests and a free slot is either ready (in
 * client->ready) or, when its next request's origin has no free slot,
 * blocked on that origin. */
struct http_pool_key {
    char *name;
    UT_hash_handle hh;
    size_t refs; /* requests that point at it */
    struct http_request_list waiting;
    int nwaiting;
    int inflight;
    int max_inflight;
    int on_ready; /* in client->ready */
    TAILQ_ENTRY(http_pool_key) ready_link;
    struct http_pool_origin *blocked_on; /* in blocked_on->blocked, or NULL */
    TAILQ_ENTRY(http_pool_key) blocked_link;
    struct http_pool_origin *woken_by; /* holds one of that origin's slots in reserve (http_pool_origin_fill) */
};

/* One origin (scheme, host, port): the requests in flight to it, across
 * keys, and its idle keep-alive connections, shared by every key whose URL
 * has that origin, most recently used first. Owned by client->origins (a
 * uthash keyed by name); lives while anything points at it - a request
 * (refs, from http_client_post to http_request_free), an idle connection
 * (nidle; a connection in use belongs to a request, which holds the
 * origin), a key waiting for one of its slots (blocked) or holding one in
 * reserve (nwoken) - and is freed by http_pool_origin_maybe_free when the
 * last of them lets go. */
struct http_pool_origin {
    char name[HTTP_POOL_ORIGIN_MAX];
    UT_hash_handle hh;
    struct http_conn_list idle;
    int nidle;
    int inflight;                      /* requests holding one of its slots */
    int nwoken;                        /* slots held in reserve for keys taken off blocked */
    size_t refs;                       /* requests (queued or active) whose URL has this origin */
    struct http_pool_key_list blocked; /* keys waiting for one of its slots, in turn */
};

/* The key of that name, created if new, with a reference taken for the
 * request about to point at it. */
struct http_pool_key *http_pool_key_hold(struct http_client *c, const char *name);

/* Drops a request's reference; the last one frees the key (every request
 * pointing at a key holds one, so a key lives until the last of its
 * requests is reported, whatever took them back). */
void http_pool_key_release(struct http_client *c, struct http_pool_key *k);

/* Keeps client->ready equal to the set of keys that could start a request
 * if a total slot were free. */
void http_pool_key_update_ready(struct http_client *c, struct http_pool_key *k);

/* Gives back a reserved slot the key did not use (its requests were taken
 * back), and takes the key off a blocked list. */
void http_pool_key_unblock(struct http_client *c, struct http_pool_key *k);

/* The URL's origin, created if new; the caller counts its reference. */
struct http_pool_origin *http_pool_origin_get(struct http_client *c, const struct netguard_url *u);

/* Frees the origin when nothing points at it any more. */
void http_pool_origin_maybe_free(struct http_client *c, struct http_pool_origin *o);

/* Hands the origin's free slots to the keys blocked on it, in turn, each
 * held in reserve for its key (woken_by). */
void http_pool_origin_fill(struct http_client *c, struct http_pool_origin *o);

/* Whether key k may start its next request, to origin o, now: with the slot
 * held for it, or when nobody waits for o and o has a free slot. */
int http_pool_origin_admits(const struct http_client *c, const struct http_pool_origin *o,
                            const struct http_pool_key *k);

/* The most recently used open idle connection to origin o, taken out of
 * the pool; NULL when there is none. */
struct http_conn *http_pool_conn_take(struct http_client *c, struct http_pool_origin *o);

/* Back to its origin's idle pool (most recent first), or closed: when it is
 * not reusable (the caller's verdict), the client is closing, it cannot
 * carry another request, or its origin already keeps max_idle_origin idle. */
void http_pool_conn_release(struct http_conn *conn, int reusable);

/* A connection's on_idle callback (http_conn_new): it stayed idle too long,
 * or its peer closed it while idle; it is closed. */
void http_pool_on_idle_timer(evutil_socket_t fd, short what, void *arg);

/* Closes every idle keep-alive connection, so the next request connects
 * (and is checked) afresh. */
void http_pool_drop_idle(struct http_client *c);

/* Closes idle connections beyond the (possibly lowered) bounds: the least
 * recently used first. */
void http_pool_trim_idle(struct http_client *c);

#endif
