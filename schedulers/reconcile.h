/* The reconciler: makes Redis agree with Postgres again. It walks the rows
 * that are not terminal and due within reconcile_horizon (keyset-paged,
 * 1,000 rows a page, on the partial "due" indexes) and seeds any that are
 * missing from the queue's due and inflight sets (and not parked under an
 * open circuit).
 *
 * At start-up, after every Redis reconnect and when Postgres answers again,
 * a pass walks every such row (full): a flushed, restarted or failed-over
 * Redis, or a promoted Postgres replica, may differ in anything. Every
 * reconcile_interval a periodic pass walks only the rows whose due time is
 * at or after the previous pass's start less RECONCILE_MARGIN_MS: every due
 * time written since then is there (new work, a retry, a deferral, a
 * replay, a released circuit: a row's next_attempt_at is never set earlier
 * than the transaction that writes it began), so a ZADD lost after a commit,
 * or a worker killed between its commit and its ZADD, costs at most one
 * interval of latency, as with a full pass; rows due earlier were walked by an
 * earlier pass and what Redis held of them is lost only with Redis itself
 * (a reconnect: full). A backlog of old rows (100,000 deliveries parked
 * under an open circuit) is thus read once, not every interval. Every
 * RECONCILE_FULL_EVERY-th periodic pass is full anyway, a safety net for
 * what no event announces (a member removed by hand). */
#ifndef HOOKD_RECONCILE_H
#define HOOKD_RECONCILE_H

#include <stdint.h>

struct hookd_ctx;
struct reconcile;

/* A periodic pass walks rows due at or after the previous pass's start
 * less this (a transaction that wrote now() as a due time and committed
 * later than that is covered by it, and by the next full pass). */
#define RECONCILE_MARGIN_MS (60 * 1000)
#define RECONCILE_FULL_EVERY 10

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
/* Of the passes, those that walked every row. */
uint64_t reconcile_full_passes(const struct reconcile *r);

#endif
