/* The inbox role: evaluates claimed inbox events as proposed state
 * transitions of their entities (DESIGN.md §5). Claimed items become one
 * Postgres transaction per batch (batches grow while the DB threads are
 * busy). A batch is decided set-based: lock its rows (SKIP LOCKED; terminal
 * rows are acked, so a duplicate from Redis is harmless) and its entities
 * (SKIP LOCKED; a busy entity is retried in milliseconds without costing an
 * attempt), classify each event in receipt order in C, then write apply /
 * no-op / defer / dead-letter on conflict / retry on failure, and the
 * attempts, with a few statements for the whole batch (inbox_batch.c).
 * Should any statement fail, the failing events are isolated by bisection
 * (halves tried again as sets, each in a SAVEPOINT) and their failed
 * attempts recorded for the whole batch at once, so one bad event fails
 * alone and the good ones still go as sets. After the commit: Redis
 * verdicts, woken siblings (one script call per batch), alerts. */
#ifndef HOOKD_INBOX_H
#define HOOKD_INBOX_H

#include <stddef.h>
#include <stdint.h>

struct hookd_ctx;
struct alerter;
struct inbox;

/* Starts the role and its scheduler of the inbox queue. ctx and alerter
 * are borrowed and must outlive it. */
struct inbox *inbox_new(struct hookd_ctx *ctx, struct alerter *alerter);
/* Stops claiming (drain); claimed items still complete. */
void inbox_drain(struct inbox *ib);
/* Items claimed and not yet finished. */
size_t inbox_pending(const struct inbox *ib);
/* Lateness of recent claims (see sched_lateness). */
void inbox_lateness(const struct inbox *ib, int64_t *p50, int64_t *p99);
/* Accepts NULL. Free the Redis connections and the database pool first:
 * their pending callbacks reach the role while it lives. */
void inbox_free(struct inbox *ib);

#endif
