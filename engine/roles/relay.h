/* The relay role's first half: turning committed outbox events into
 * deliveries, and making each delivery's first attempt. A listener thread
 * waits for `NOTIFY hookd_outbox` (sent by the outbox insert trigger at
 * commit) and wakes the loop; a fallback poll runs every second in case a
 * notification was missed, and a busy relay polls every few milliseconds.
 *
 * A pass claims unfanned events with FOR UPDATE SKIP LOCKED, together with
 * the enabled endpoints whose filters match, and keeps that transaction
 * open while it POSTs each (event, endpoint) once (delivery_send_first).
 * When every receiver has answered, or after a short window, it inserts one
 * outbox_deliveries row per pair in the same transaction - SUCCEEDED with
 * its attempt row for a 2xx, PENDING for anything else - and marks the
 * events fanned out (and processed, when nothing is left open; at once for
 * events nobody subscribes to). So an event is fanned out exactly once; a
 * relay killed mid-pass leaves its events unfanned, to be claimed and sent
 * again, with the same webhook-id. PENDING deliveries continue on the
 * regular path: this worker's lease in `<prefix>:{delivery}:inflight` while
 * their first attempt is still out, or `<prefix>:{delivery}:due` when the
 * pass did not send them (a slow endpoint's backlog). */
#ifndef HOOKD_RELAY_H
#define HOOKD_RELAY_H

#include <stddef.h>

struct hookd_ctx;
struct delivery;
struct relay;

/* ctx and delivery (which sends and records the first attempts) are
 * borrowed and must outlive the relay. NULL when it cannot start. */
struct relay *relay_new(struct hookd_ctx *ctx, struct delivery *delivery);
/* Stops the listener thread and timers (drain). */
void relay_stop(struct relay *r);
/* Stops, settles the passes still waiting for answers, and closes the
 * relay's own database lanes (their last completions run). Call while the
 * delivery role and the shared pool live. */
void relay_close(struct relay *r);
void relay_free(struct relay *r); /* closes if needed; accepts NULL */
/* Runs a fan-out pass now (or right after the one running). */
void relay_kick(struct relay *r);
/* Passes running (a draining worker waits for zero). */
size_t relay_pending(const struct relay *r);

#endif
