/* The retention pass inside a worker: every [retention] interval, on a
 * Postgres connection of its own (a pass may wait on DETACH PARTITION
 * CONCURRENTLY, which must not hold a connection of the shared pool), it
 * runs engine/core/retention.c's pass when it wins the pass's advisory lock
 * (one pass at a time across the cluster), and measures each table's
 * storage, which /metrics and /admin show. With [retention] interval = off
 * it runs no pass, only the storage figures (every minute); a pass refused
 * for want of privilege (the worker's role does not own the tables) is
 * logged once (retention.forbidden, with what to do) and not tried again
 * until the worker restarts. */
#ifndef HOOKD_RETAINER_H
#define HOOKD_RETAINER_H

struct hookd_ctx;
struct retainer;
struct retention_storage;

/* Starts the timer; the first pass runs a few seconds after start-up. ctx
 * is borrowed and must outlive it. */
struct retainer *retainer_new(struct hookd_ctx *ctx);
/* Stops the timer and closes the connection (a pass running finishes). */
void retainer_stop(struct retainer *r);
void retainer_free(struct retainer *r); /* accepts NULL */
/* The last storage figures, or NULL before the first measurement (or for a
 * NULL retainer). Borrowed; valid until the next loop turn. */
const struct retention_storage *retainer_storage(const struct retainer *r);

#endif
