/* The outbound domain's public interface: the relay role that fans
 * committed outbox events out to endpoints, and the delivery role that
 * sends, retries and dead-letters them. The domain's other headers are
 * internal to engine/outbound/. */
#ifndef HOOKD_OUTBOUND_H
#define HOOKD_OUTBOUND_H

#include <stdbool.h>
#include <stddef.h>

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

/* The relay role's second half: sending deliveries. Claimed delivery ids
 * (from `<prefix>:{delivery}:due`) are loaded with their event and endpoint,
 * POSTed from the event loop through http_client (keep-alive per endpoint,
 * bounded in flight per endpoint and in total), signed with Standard
 * Webhooks headers (webhook-id = the outbox event id, stable across
 * retries; during a secret rotation both signatures are sent), and their
 * outcomes are recorded in batches: 2xx succeeded; 410 disables the endpoint
 * and dead-letters; anything else retries per [retry] and its
 * `endpoint:NAME` override, honouring Retry-After within bounds; the last
 * failure dead-letters. Every attempt is a row in `attempts` with status,
 * duration, error and the first bytes of the response. An event is
 * processed when all of its deliveries succeeded or died. */

struct alerter;
struct http_client_stats;

/* Starts the sender and its scheduler of the delivery queue. ctx and
 * alerter are borrowed and must outlive it. NULL with err when the HTTP
 * client cannot start (e.g. unreadable ca_file). */
struct delivery *delivery_new(struct hookd_ctx *ctx, struct alerter *alerter, char *err, size_t errlen);
/* Stops claiming (drain); requests on the wire still complete. */
void delivery_drain(struct delivery *d);
/* ctx->cfg changed: applies allow_private_networks, ca_file and
 * max_inflight to the HTTP client (logged when the new ca_file fails). */
void delivery_reload(struct delivery *d);
/* Cancels requests on the wire (their deliveries are retried after their
 * lease) and frees. Free the Redis connections and the database pool
 * first: their pending callbacks reach the role while it lives. Accepts
 * NULL. */
void delivery_free(struct delivery *d);
/* Requests on the wire plus outcomes not yet recorded. */
size_t delivery_pending(const struct delivery *d);
/* Deliveries claimed from the queue (or adopted) and not yet finished. */
size_t delivery_inflight(const struct delivery *d);
/* The outbound HTTP client's connection and request counters (http_client.h). */
void delivery_http_stats(const struct delivery *d, struct http_client_stats *out);

/* The background tasks' runner (Svix's background tasks: the API's recover
 * and replay-missing start them, sql/0032_background_tasks.sql keeps them).
 * Every second while idle it claims the oldest running task that no worker
 * holds, for [hookd] lease, and works through it in bounded batches, one
 * transaction each, that store the task's cursor, data and a renewed lease
 * with the batch's work: a task survives its worker (kill -9 included) and
 * the next worker to claim it, once the lease expired, resumes it where the
 * last committed batch ended, so no batch is done twice. The deliveries a
 * batch makes due are scheduled after its commit. */

struct task_runner;

/* ctx is borrowed and must outlive the runner; its jobs run on ctx->db. */
struct task_runner *task_runner_new(struct hookd_ctx *ctx);
/* Takes no more batches (the one running completes). */
void task_runner_stop(struct task_runner *t);
/* Batches running (0 or 1: a draining worker waits for zero). */
size_t task_runner_pending(const struct task_runner *t);
void task_runner_free(struct task_runner *t); /* accepts NULL */

#endif
