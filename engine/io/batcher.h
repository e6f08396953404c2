/* Group commit on the loop: the one batcher. A role appends items (accepted
 * requests, claimed ids, verdicts) to an open batch; the batcher hands the
 * whole batch to the role's submit function — which starts one statement,
 * one job or one Redis call for the set — when the batch is full, at the end
 * of the current loop turn (linger BATCHER_LINGER_TURN), or when the role
 * says so (batcher_flush). With max_running set, at most that many batches
 * are out at once: items gather meanwhile and go as one batch when a batch
 * comes back (batcher_done), so batches grow under load by themselves and a
 * lone item waits for nothing.
 *
 * Items are stored by value (elem_size bytes each; a role that needs stable
 * addresses stores pointers). Loop thread only. */
#ifndef HOOKD_BATCHER_H
#define HOOKD_BATCHER_H

#include <stdbool.h>
#include <stddef.h>

struct event_base;
struct batcher;

/* When a batch that is not full goes out. */
enum batcher_linger {
    BATCHER_LINGER_NONE, /* only on batcher_flush() and batcher_done() */
    BATCHER_LINGER_TURN, /* also at the end of the loop turn of the first add */
};

struct batcher_config {
    size_t elem_size; /* bytes of one item */
    size_t max_items; /* a batch is full at this many items; 0: no limit */
    size_t max_bytes; /* ... or at this many bytes (as given to add); 0: no limit */
    int max_running;  /* batches out at once; 0: no limit (and no batcher_done) */
    enum batcher_linger linger;
};

/* Takes a batch: items (elem_size bytes each, n of them, `bytes` the sum
 * given to batcher_add) become the function's to free with free(). With
 * max_running > 0 the function (or the job it starts) must later call
 * batcher_done() exactly once for it; it may do so before returning. */
typedef void (*batcher_submit_fn)(void *arg, void *items, size_t n, size_t bytes);

/* fn and arg are borrowed until batcher_free. NULL if the loop event cannot
 * be created. */
__attribute__((warn_unused_result)) struct batcher *batcher_new(struct event_base *base,
                                                                const struct batcher_config *cfg, batcher_submit_fn fn,
                                                                void *arg);
/* Frees the open batch's array, not what its items point to: take them
 * first with batcher_take(). Accepts NULL. */
void batcher_free(struct batcher *b);

/* Appends a copy of *item (elem_size bytes) that weighs `bytes` towards
 * max_bytes. A batch this makes full is submitted before returning, even
 * when max_running batches are out (waiting would only grow it past its
 * limit). */
void batcher_add(struct batcher *b, const void *item, size_t bytes);
/* Submits the open batch if it has items and fewer than max_running
 * batches are out. */
void batcher_flush(struct batcher *b);
/* A submitted batch came back: one fewer out, and what waits goes. */
void batcher_done(struct batcher *b);
/* Shutdown: nothing is submitted any more (flushes, full batches and the
 * end of the turn do nothing); items still gather for batcher_take(). */
void batcher_stop(struct batcher *b);
/* New limits (a config reload); they apply from the next add. */
void batcher_set_limits(struct batcher *b, size_t max_items, size_t max_bytes);

/* The open batch, taken away without submitting (shutdown): the caller
 * frees the returned array (NULL when empty) and what its items own. */
void *batcher_take(struct batcher *b, size_t *n);
/* Items in the open batch, not yet submitted. */
size_t batcher_waiting(const struct batcher *b);
/* Batches submitted and not yet done (with max_running > 0). */
int batcher_running(const struct batcher *b);

#endif
