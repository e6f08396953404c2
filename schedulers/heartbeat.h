/* The worker's heartbeat: every heartbeat_interval it writes the hash
 * `<prefix>:worker:<id>` (host, pid, version, roles, started_at, last_beat,
 * config_generation, ready, counters) with a TTL of three intervals, bumps
 * the worker in the `<prefix>:workers` zset, and adds this worker's counter
 * deltas to the cluster-wide `<prefix>:stats` hash. A worker that dies stops
 * beating and its hash expires; `hookd status` reads all of this. */
#ifndef HOOKD_HEARTBEAT_H
#define HOOKD_HEARTBEAT_H

#include <jansson.h>
#include <stddef.h>

struct hookd_ctx;
struct heartbeat;

/* Items this worker holds (claimed, not yet finished), for the beat. */
typedef size_t (*heartbeat_inflight_fn)(void *arg);

/* What the beat read of the cluster, for /metrics and the admin view. */
struct heartbeat_view {
    long long depth[4];   /* inbox due, inbox inflight, delivery due, delivery inflight */
    json_t *live_workers; /* ids that beat recently */
    long dlq_size;        /* open dead letters, as last set; -1 unknown */
};

/* ctx is borrowed and must outlive the heartbeat. */
struct heartbeat *heartbeat_new(struct hookd_ctx *ctx, heartbeat_inflight_fn inflight, void *arg);
void heartbeat_free(struct heartbeat *hb); /* accepts NULL */
/* Borrowed; valid while the heartbeat lives. */
const struct heartbeat_view *heartbeat_view(const struct heartbeat *hb);
/* The open dead letters, counted by the worker's readiness check; written
 * to `<prefix>:dlq_size` with the next beat. */
void heartbeat_set_dlq_size(struct heartbeat *hb, long n);
/* Re-arms with the current config's interval (after a reload). */
void heartbeat_reschedule(struct heartbeat *hb);
/* Flushes counters and removes the worker's keys (graceful shutdown); done
 * runs when Redis answered, or at once when Redis is unreachable. */
void heartbeat_remove(struct heartbeat *hb, void (*done)(void *arg), void *arg);

#endif
