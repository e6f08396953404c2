/* Group commit on the loop; see batcher.h.
 *
 * The open batch is one growing array. Submitting hands the array itself to
 * the role (no copy) and starts a fresh one on the next add. Everything
 * that can submit detaches the batch and counts it as running before it
 * calls the role, so a role that completes at once (batcher_done from
 * inside submit, as db_pool_submit does when the pool is gone) finds a
 * consistent batcher. */
#include "batcher.h"

#include <event2/event.h>
#include <stdlib.h>
#include <string.h>

#include "xmalloc.h"

#define BATCHER_FIRST_CAP 16

struct batcher {
    struct batcher_config cfg;
    batcher_submit_fn fn;
    void *arg;
    struct event *turn_ev; /* active: a flush at the end of this loop turn */
    char *items;           /* the open batch */
    size_t n, cap, bytes;
    int running;
    bool stopped;
};

static void on_turn_end(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    batcher_flush(arg);
}

struct batcher *batcher_new(struct event_base *base, const struct batcher_config *cfg, batcher_submit_fn fn, void *arg)
{
    HOOKD_ASSERT(cfg->elem_size > 0 && cfg->max_running >= 0);
    struct batcher *b = xcalloc(1, sizeof *b);
    b->cfg = *cfg;
    b->fn = fn;
    b->arg = arg;
    if (cfg->linger == BATCHER_LINGER_TURN) {
        b->turn_ev = event_new(base, -1, 0, on_turn_end, b);
        if (!b->turn_ev) {
            free(b);
            return NULL;
        }
    }
    return b;
}

void batcher_free(struct batcher *b)
{
    if (!b)
        return;
    if (b->turn_ev)
        event_free(b->turn_ev);
    free(b->items);
    free(b);
}

static void submit(struct batcher *b)
{
    void *items = b->items;
    size_t n = b->n, bytes = b->bytes;
    b->items = NULL;
    b->n = b->cap = b->bytes = 0;
    if (b->cfg.max_running > 0)
        b->running++;
    b->fn(b->arg, items, n, bytes);
}

void batcher_add(struct batcher *b, const void *item, size_t bytes)
{
    if (b->n == b->cap) {
        b->cap = b->cap ? 2 * b->cap : BATCHER_FIRST_CAP;
        b->items = xrealloc(b->items, b->cap * b->cfg.elem_size);
    }
    memcpy(b->items + b->n * b->cfg.elem_size, item, b->cfg.elem_size);
    b->n++;
    b->bytes += bytes;
    if (b->stopped)
        return;
    if ((b->cfg.max_items && b->n >= b->cfg.max_items) || (b->cfg.max_bytes && b->bytes >= b->cfg.max_bytes)) {
        submit(b);
        return;
    }
    if (b->turn_ev)
        event_active(b->turn_ev, EV_TIMEOUT, 0);
}

void batcher_flush(struct batcher *b)
{
    if (b->n == 0 || b->stopped || (b->cfg.max_running > 0 && b->running >= b->cfg.max_running))
        return;
    submit(b);
}

void batcher_done(struct batcher *b)
{
    HOOKD_ASSERT(b->cfg.max_running > 0 && b->running > 0);
    b->running--;
    batcher_flush(b);
}

void batcher_stop(struct batcher *b)
{
    b->stopped = true;
}

void batcher_set_limits(struct batcher *b, size_t max_items, size_t max_bytes)
{
    b->cfg.max_items = max_items;
    b->cfg.max_bytes = max_bytes;
}

void *batcher_take(struct batcher *b, size_t *n)
{
    void *items = b->items;
    *n = b->n;
    b->items = NULL;
    b->n = b->cap = b->bytes = 0;
    return items;
}

size_t batcher_waiting(const struct batcher *b)
{
    return b->n;
}

int batcher_running(const struct batcher *b)
{
    return b->running;
}
