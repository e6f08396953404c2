/* The reconciler: makes Redis agree with Postgres again. At start-up, after
 * every Redis reconnect, and every reconcile_interval, it walks the rows that
 * are not terminal and due within reconcile_horizon (keyset-paged, 1,000 rows
 * a page, on the partial "due" indexes) and seeds any that are missing from
 * the queue's due and inflight sets. A flushed or restarted Redis, a lost
 * ZADD after a commit, a worker killed between commit and schedule: each
 * costs at most one interval of latency, never an event. */
#ifndef HOOKD_RECONCILE_H
#define HOOKD_RECONCILE_H

#include <stdint.h>

struct hookd_ctx;
struct reconcile;

/* ctx is borrowed and must outlive the reconciler. A pass starts at once and
 * after every reconnect of ctx->redis. */
struct reconcile *reconcile_new(struct hookd_ctx *ctx);
/* Stops scheduling passes; a page still in flight is dropped when it
 * completes. Call before the DB pool is freed, free after. */
void reconcile_stop(struct reconcile *r);
void reconcile_free(struct reconcile *r); /* accepts NULL */
/* Starts a pass now (or right after the one running). */
void reconcile_now(struct reconcile *r);
/* Passes completed, and rows seeded over all passes. */
uint64_t reconcile_passes(const struct reconcile *r);
uint64_t reconcile_seeded(const struct reconcile *r);

#endif
