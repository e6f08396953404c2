/* The operations domain's public interface: the admin view, the metrics
 * endpoint and the retention pass of a worker. The domain's other headers
 * are internal to engine/ops/. */
#ifndef HOOKD_OPS_H
#define HOOKD_OPS_H

#include <jansson.h>

/* The admin view at /admin: server-rendered HTML (no build step) for the
 * people who handle the DLQ — open dead letters with filters, one entry with
 * its payload, headers and attempt history, a replay button (POST with a
 * CSRF token, confirmed in the browser), queue depths and live workers.
 * Disabled (404) unless [hookd] admin_token is set; then every request needs
 * the token as a bearer token, as the basic-auth password, or the session
 * cookie that /admin/login sets after the token was typed in. */

struct hookd_ctx;
struct http_server;
struct heartbeat;
struct retainer;
struct admin;

/* Registers the /admin routes on http. All arguments are borrowed and must
 * outlive the admin view (requests in flight hold it). */
struct admin *admin_new(struct hookd_ctx *ctx, struct http_server *http, const struct heartbeat *hb,
                        const struct retainer *ret); /* ret: storage figures (may be NULL) */
void admin_free(struct admin *a);                    /* accepts NULL */

/* GET /metrics: this worker's counters and gauges in the Prometheus text
 * exposition format (version 0.0.4). */

struct hookd_ctx;
struct http_server;
struct heartbeat;
struct inbox;
struct delivery;
struct metrics;
struct retainer;

/* Routes /metrics on http. All arguments are borrowed and must outlive it;
 * inbox is NULL when the worker runs no inbox role, delivery when it runs
 * no relay role (then no hookd_outbound_* figures); ret gives the storage
 * figures (hookd_table_*{table="…"}). */
struct metrics *metrics_new(struct hookd_ctx *ctx, struct http_server *http, const struct heartbeat *hb,
                            const struct inbox *inbox, const struct delivery *delivery, const struct retainer *ret);
void metrics_free(struct metrics *m); /* accepts NULL */
/* Every metric /metrics can export, as [{name, type, labels, when, help}]
 * (caller frees): the source of docs/reference/metrics.md. */
json_t *metrics_reference(void);

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
