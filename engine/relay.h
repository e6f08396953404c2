/* The relay role's first half: turning committed outbox events into
 * deliveries. A listener thread waits for `NOTIFY hookd_outbox` (sent by the
 * outbox insert trigger at commit) and wakes the loop; a fallback poll runs
 * every second in case a notification was missed (listener reconnecting).
 * Each pass claims unfanned events with FOR UPDATE SKIP LOCKED and, in the
 * same statement, inserts one outbox_deliveries row per matching enabled
 * endpoint and marks the events fanned out (events nobody subscribes to are
 * processed at once). So an event is fanned out exactly once, and a relay
 * killed mid-pass leaves nothing half done. The new deliveries are then
 * scheduled in `<prefix>:{delivery}:due`. */
#ifndef HOOKD_RELAY_H
#define HOOKD_RELAY_H

#include <stddef.h>

struct worker;
struct relay;

struct relay *relay_new(struct worker *w);
/* Stops the listener thread and timers. Call before the DB pool is freed. */
void relay_stop(struct relay *r);
void relay_free(struct relay *r); /* accepts NULL */
/* Runs a fan-out pass now (or right after the one running). */
void relay_kick(struct relay *r);

#endif
