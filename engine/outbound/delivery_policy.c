/* Per-endpoint delivery policies on the delivery path; see
 * delivery_policy.h. */
#include "delivery_policy.h"

#include <event2/event.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "clock.h"
#include "ctx.h"
#include "endpoint_headers.h"
#include "log.h"
#include "loop_timer.h"
#include "ratelimit.h"
#include "xmalloc.h"

/* A reserved slot at most this far ahead is waited for in memory; a later
 * one is not reserved, and the delivery goes back to the queue. */
#define PACE_MAX_WAIT_MS 1000

/* One delivery waiting for the limiter's answer or for its slot. */
struct waiter {
    struct delivery_policy *p; /* NULL: the policy was freed while Redis had it */
    struct waiter *prev, *next;
    struct event *ev; /* the reserved slot's timer, once known */
    delivery_policy_go_fn go;
    delivery_policy_later_fn later;
    void *arg;
};

struct delivery_policy {
    struct hookd_ctx *ctx;
    struct ratelimit *rl;
    struct waiter *waiters;
};

struct delivery_policy *delivery_policy_new(struct hookd_ctx *ctx)
{
    struct delivery_policy *p = xcalloc(1, sizeof *p);
    p->ctx = ctx;
    p->rl = ratelimit_new(ctx);
    return p;
}

static void unlink_waiter(struct waiter *w)
{
    if (w->prev)
        w->prev->next = w->next;
    else if (w->p)
        w->p->waiters = w->next;
    if (w->next)
        w->next->prev = w->prev;
    w->prev = w->next = NULL;
}

void delivery_policy_free(struct delivery_policy *p, void (*drop)(void *arg))
{
    if (!p)
        return;
    struct waiter *w = p->waiters;
    while (w) {
        struct waiter *next = w->next;
        if (drop)
            drop(w->arg);
        if (w->ev) { /* waiting for its slot: ours to free */
            event_free(w->ev);
            free(w);
        } else { /* Redis still has it: freed when its answer (or the connection's loss) comes */
            w->p = NULL;
            w->prev = w->next = NULL;
            w->arg = NULL;
        }
        w = next;
    }
    ratelimit_free(p->rl);
    free(p);
}

/* ---- custom static headers ------------------------------------------------- */

/* Names the HTTP client owns (http_client_post refuses them) or hookd sets. */
static bool reserved(const char *name, const struct http_header *base, size_t nbase)
{
    if (endpoint_headers_reserved(name))
        return true;
    for (size_t i = 0; i < nbase; i++)
        if (strcasecmp(name, base[i].name) == 0)
            return true;
    return false;
}

size_t delivery_policy_headers(const char *headers_json, const char *endpoint_name, const struct http_header *base,
                               size_t nbase, struct http_header **out, void **hold)
{
    json_t *h = headers_json && *headers_json ? json_loads(headers_json, 0, NULL) : NULL;
    size_t extra = json_is_object(h) ? json_object_size(h) : 0;
    struct http_header *all = xcalloc(nbase + extra + 1, sizeof *all);
    memcpy(all, base, nbase * sizeof *base);
    size_t n = nbase;
    const char *k;
    json_t *v;
    if (extra) {
        json_object_foreach(h, k, v)
        {
            if (!json_is_string(v))
                continue;
            if (reserved(k, base, nbase)) {
                /* stored before the name was reserved: never sent in place of hookd's */
                if (endpoint_name)
                    log_warn("delivery.header_dropped", "endpoint=%s header=%s reason=reserved", endpoint_name, k);
                continue;
            }
            all[n++] = (struct http_header){k, json_string_value(v)};
        }
    }
    *out = all;
    *hold = h;
    return n;
}

void delivery_policy_headers_release(struct http_header *out, void *hold)
{
    free(out);
    json_decref(hold);
}

/* ---- rateLimit --------------------------------------------------------------- */

static void on_slot(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct waiter *w = arg;
    unlink_waiter(w);
    event_free(w->ev);
    w->go(w->arg);
    free(w);
}

static void on_acquired(void *arg, int64_t wait_ms, bool slot)
{
    struct waiter *w = arg;
    if (!w->p) { /* the policy is gone: its delivery was dropped */
        free(w);
        return;
    }
    if (wait_ms < 0 || (slot && wait_ms == 0)) { /* Redis did not answer: a courtesy, not a reason to stall */
        unlink_waiter(w);
        w->go(w->arg);
        free(w);
    } else if (slot) {
        w->ev = evtimer_new(w->p->ctx->base, on_slot, w);
        loop_timer_arm(w->ev, wait_ms);
    } else {
        unlink_waiter(w);
        w->later(w->arg, clock_wall_ms() + wait_ms);
        free(w);
    }
}

void delivery_policy_pace(struct delivery_policy *p, const char *endpoint_id, int rate, delivery_policy_go_fn go,
                          delivery_policy_later_fn later, void *arg)
{
    if (rate <= 0) {
        go(arg);
        return;
    }
    struct waiter *w = xcalloc(1, sizeof *w);
    w->p = p;
    w->go = go;
    w->later = later;
    w->arg = arg;
    w->next = p->waiters;
    if (p->waiters)
        p->waiters->prev = w;
    p->waiters = w;
    ratelimit_acquire(p->rl, endpoint_id, rate, PACE_MAX_WAIT_MS, on_acquired, w);
}
