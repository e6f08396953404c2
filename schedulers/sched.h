/* The scheduler of one queue (inbox or delivery): libevent timers over the
 * Redis sorted sets `<prefix>:{<queue>}:due` and `:inflight`. It wakes at the
 * earliest due score (bounded by max_sleep) or at once when new work is
 * announced, claims a batch with the `claim` script (each member gets a lease
 * deadline), hands the batch to the role's processor with a bounded in-flight
 * count, and applies the processor's verdicts in batches: `ack` (done) or
 * `reschedule` (due again at a new time). A second timer reaps expired
 * leases, so a worker killed mid-batch costs its items only the lease time.
 * Redis says *when*; Postgres decides *what*: the processor re-reads every
 * item under a row lock, so an item handed out twice is harmless. */
#ifndef HOOKD_SCHED_H
#define HOOKD_SCHED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct hookd_ctx;
struct sched;

/* Called with a claimed batch: ids[i] (borrowed, valid during the call) was
 * due at due_ms[i]. The processor must eventually call sched_done() once
 * per id. */
typedef void (*sched_process_fn)(void *arg, struct sched *s, char **ids, const int64_t *due_ms, size_t n);

/* queue: "inbox" or "delivery". The scheduler subscribes to the queue's
 * wake channel `<prefix>:wake:<queue>` on ctx->redis_sub and claims at once
 * whenever ctx->redis (re)connects. ctx is borrowed and must outlive it. */
struct sched *sched_new(struct hookd_ctx *ctx, const char *queue, sched_process_fn fn, void *arg);
/* Accepts NULL. Free the Redis connections first: replies still pending are
 * delivered (as NULL) while the scheduler lives. */
void sched_free(struct sched *s);

/* New work may be due now: claim without waiting for the timer. */
void sched_wake(struct sched *s);
/* The processor's verdict for one id: next_due_ms < 0 acks (done; the row is
 * terminal), otherwise the id is due again at next_due_ms (wall-clock ms). */
void sched_done(struct sched *s, const char *id, int64_t next_due_ms);
/* Takes ids this worker created and is already processing as claimed (the
 * `adopt` script: inflight with a lease, renewed like any claim); each must
 * later get its sched_done(). */
void sched_adopt(struct sched *s, char **ids, size_t n);
/* Stop claiming (drain); in-flight items still complete. */
void sched_stop(struct sched *s);
size_t sched_inflight(const struct sched *s);
/* Redis keys of this queue. */
const char *sched_due_key(const struct sched *s);
const char *sched_inflight_key(const struct sched *s);
/* Lateness (claim time - due time) of recent claims, in ms: p50 and p99 over
 * a sliding window of the last 1024 claims; 0 when nothing was claimed. */
void sched_lateness(const struct sched *s, int64_t *p50, int64_t *p99);

/* Schedules ids (scores in wall-clock ms) with the `seed` script and
 * announces them on the queue's wake channel. Used after the commit that
 * made them due (only_missing false: the given score wins), and by the
 * reconciler (only_missing true: an id already due keeps its score, since a
 * worker may have rescheduled it after the reconciler read the row). Ids
 * held in inflight are never touched, nor, by the reconciler, ids parked
 * while their endpoint's circuit is open (`{queue}:parked_ids`, circuit.h):
 * they wait in their parked set, not due. Safe to call when Redis is down: then
 * the reconciler picks the rows up later. */
void sched_seed(struct hookd_ctx *ctx, const char *queue, char **ids, const int64_t *due_ms, size_t n,
                bool only_missing);

#endif
