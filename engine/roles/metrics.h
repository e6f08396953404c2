/* GET /metrics: this worker's counters and gauges in the Prometheus text
 * exposition format (version 0.0.4). */
#ifndef HOOKD_METRICS_H
#define HOOKD_METRICS_H

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

#endif
