/* The worker's heartbeat: every heartbeat_interval it writes the hash
 * `<prefix>:worker:<id>` (host, pid, version, roles, started_at, last_beat,
 * config_generation, ready, counters) with a TTL of three intervals, bumps
 * the worker in the `<prefix>:workers` zset, and adds this worker's counter
 * deltas to the cluster-wide `<prefix>:stats` hash. A worker that dies stops
 * beating and its hash expires; `hookd status` reads all of this. */
#ifndef HOOKD_HEARTBEAT_H
#define HOOKD_HEARTBEAT_H

struct worker;
struct heartbeat;

struct heartbeat *heartbeat_new(struct worker *w);
void heartbeat_free(struct heartbeat *hb); /* accepts NULL */
/* Re-arms with the current config's interval (after a reload). */
void heartbeat_reschedule(struct heartbeat *hb);
/* Flushes counters and removes the worker's keys (graceful shutdown); done
 * runs when Redis answered, or at once when Redis is unreachable. */
void heartbeat_remove(struct heartbeat *hb, void (*done)(void *arg), void *arg);

#endif
