/* Prometheus exposition of the worker's counters; see metrics.h. Counter
 * names follow `hookd_<stat>_total`; rejected requests carry a `reason`
 * label. */
#include "ops.h"

#include <event2/buffer.h>
#include <event2/http.h>

#include "clock.h"
#include "ctx.h"
#include "db.h"
#include "outbound.h"
#include "heartbeat.h"
#include "http_client.h"
#include "http_server.h"
#include "inbound.h"
#include "retention.h"
#include "version.h"
#include "xmalloc.h"

struct metrics {
    struct hookd_ctx *ctx;
    const struct heartbeat *hb;      /* borrowed: queue depths, DLQ size */
    const struct inbox *inbox;       /* borrowed; NULL when the worker has no inbox role */
    const struct delivery *delivery; /* borrowed; NULL when the worker has no relay role */
    const struct retainer *ret;      /* borrowed: storage figures */
};

/* Each table's storage, as the retainer last measured it (nothing before
 * its first pass). */
static void storage_metrics(struct evbuffer *b, const struct retention_storage *st)
{
    static const struct {
        const char *name, *help;
    } g[] = {
        {"table_bytes", "Size of a table of hookd's with its indexes and TOAST, all partitions."},
        {"table_rows", "Estimated rows of a table (the planner's statistics)."},
        {"table_oldest_row_timestamp_seconds", "When the oldest row of a table was written (0: empty)."},
        {"table_next_expiry_timestamp_seconds", "When the next rows of a table expire (0: none to expire)."},
    };
    if (!st)
        return;
    for (size_t k = 0; k < sizeof g / sizeof g[0]; k++) {
        evbuffer_add_printf(b, "# HELP hookd_%s %s\n# TYPE hookd_%s gauge\n", g[k].name, g[k].help, g[k].name);
        for (size_t i = 0; i < st->n; i++) {
            const struct retention_table *t = &st->t[i];
            double v = k == 0   ? (double)t->bytes
                       : k == 1 ? (double)t->rows
                       : k == 2 ? (double)t->oldest_ms / 1000.0
                                : (double)t->next_expiry_ms / 1000.0;
            evbuffer_add_printf(b, "hookd_%s{table=\"%s\"} %.3f\n", g[k].name, t->name, v);
        }
    }
}

static void counter(struct evbuffer *b, const char *name, const char *help, unsigned long long v)
{
    evbuffer_add_printf(b, "# HELP hookd_%s_total %s\n# TYPE hookd_%s_total counter\nhookd_%s_total %llu\n", name,
                        help, name, name, v);
}

static void gauge(struct evbuffer *b, const char *name, const char *help, double v)
{
    evbuffer_add_printf(b, "# HELP hookd_%s %s\n# TYPE hookd_%s gauge\nhookd_%s %g\n", name, help, name, name, v);
}

static void histogram(struct evbuffer *b, const char *name, const char *help, const struct histogram *h)
{
    evbuffer_add_printf(b, "# HELP hookd_%s %s\n# TYPE hookd_%s histogram\n", name, help, name);
    uint64_t cum = 0;
    for (int i = 0; i < HIST_BUCKETS; i++) {
        cum += h->counts[i];
        evbuffer_add_printf(b, "hookd_%s_bucket{le=\"%g\"} %llu\n", name, histogram_bounds[i],
                            (unsigned long long)cum);
    }
    evbuffer_add_printf(b, "hookd_%s_bucket{le=\"+Inf\"} %llu\nhookd_%s_sum %.6f\nhookd_%s_count %llu\n", name,
                        (unsigned long long)h->n, name, h->sum, name, (unsigned long long)h->n);
}

/* The relay's fan-out (where its deliveries went) and the delivery role's
 * outbound HTTP client (connections, reuse). */
static void delivery_metrics(struct evbuffer *b, const struct stats *s, const struct delivery *d)
{
    if (!d)
        return;
    evbuffer_add_printf(b, "# HELP hookd_fanout_deliveries_total Deliveries the relay's fan-out created, by where "
                           "their first outcome was written.\n# TYPE hookd_fanout_deliveries_total counter\n");
    for (int i = 0; i < FANOUT__COUNT; i++)
        evbuffer_add_printf(b, "hookd_fanout_deliveries_total{path=\"%s\"} %llu\n", stats_fanout_name(i),
                            (unsigned long long)s->fanout[i]);
    histogram(b, "fanout_seconds", "Relay passes that fanned out events, claim to commit.", &s->fanout_seconds);
    counter(b, "fanout_window_closed", "Relay passes whose first_attempt_window ran out before every answer.",
            (unsigned long long)s->fanout_window_closed);
    struct http_client_stats h;
    delivery_http_stats(d, &h);
    counter(b, "outbound_connections_opened", "Outbound connections (TCP, and TLS) opened for deliveries.",
            (unsigned long long)h.connections_opened);
    counter(b, "outbound_connections_closed", "Outbound connections closed again.",
            (unsigned long long)h.connections_closed);
    counter(b, "outbound_requests", "Outbound delivery requests written on a connection.",
            (unsigned long long)h.requests_sent);
    counter(b, "outbound_requests_reused", "Outbound requests sent on a kept-alive connection.",
            (unsigned long long)h.requests_reused);
    gauge(b, "outbound_connections_idle", "Idle keep-alive outbound connections now.", (double)h.idle);
    gauge(b, "outbound_origins", "Origins (scheme, host, port) the outbound client knows now.",
          (double)h.idle_origins);
    gauge(b, "outbound_requests_active", "Outbound requests holding a slot now (resolving, connecting, on the wire).",
          (double)h.active);
    gauge(b, "outbound_requests_queued", "Outbound requests waiting behind their endpoint's or origin's bound now.",
          (double)h.queued);
}

static void handle_metrics(struct evhttp_request *req, void *arg)
{
    const struct metrics *m = arg;
    const struct hookd_ctx *ctx = m->ctx;
    const struct heartbeat_view *v = heartbeat_view(m->hb);
    const struct stats *s = &ctx->stats;
    struct evbuffer *b = evbuffer_new();
    evbuffer_add_printf(b,
                        "# HELP hookd_build_info Build information.\n# TYPE hookd_build_info gauge\n"
                        "hookd_build_info{version=\"%s\"} 1\n",
                        HOOKD_VERSION);
    for (int i = 0; i < STAT__COUNT; i++) {
        if (i == STAT_REJECTED)
            continue;
        counter(b, stats_name(i), "Events counted by this worker since it started.", (unsigned long long)s->total[i]);
    }
    counter(b, "dead_letters", "Items this worker moved to the dead-letter queue.",
            (unsigned long long)s->total[STAT_DEAD]);
    evbuffer_add_printf(b, "# HELP hookd_rejected_total Inbound requests refused, by reason.\n"
                           "# TYPE hookd_rejected_total counter\n");
    for (int r = 0; r < REJECT__COUNT; r++)
        evbuffer_add_printf(b, "hookd_rejected_total{reason=\"%s\"} %llu\n", stats_reject_name(r),
                            (unsigned long long)s->rejected[r]);
    histogram(b, "ingest_seconds", "Inbound webhook requests, arrival to answer.", &s->ingest_seconds);
    histogram(b, "delivery_seconds", "Outbound delivery requests, start to outcome.", &s->delivery_seconds);
    evbuffer_add_printf(b,
                        "# HELP hookd_queue_depth Items in the Redis schedule (as of the last heartbeat).\n"
                        "# TYPE hookd_queue_depth gauge\n"
                        "hookd_queue_depth{queue=\"inbox\",set=\"due\"} %lld\n"
                        "hookd_queue_depth{queue=\"inbox\",set=\"inflight\"} %lld\n"
                        "hookd_queue_depth{queue=\"delivery\",set=\"due\"} %lld\n"
                        "hookd_queue_depth{queue=\"delivery\",set=\"inflight\"} %lld\n",
                        v->depth[0], v->depth[1], v->depth[2], v->depth[3]);
    if (v->dlq_size >= 0)
        gauge(b, "dlq_size", "Open dead letters (not replayed).", (double)v->dlq_size);
    gauge(b, "ready", "1 when Postgres and Redis are reachable and the schema is current.", ctx_ready(ctx));
    gauge(b, "db_pending_jobs", "Database jobs queued or running.", (double)db_pool_pending(ctx->db));
    evbuffer_add_printf(b,
                        "# HELP hookd_clock_offset_seconds Postgres's clock minus this machine's; due times "
                        "are on Postgres's clock.\n# TYPE hookd_clock_offset_seconds gauge\n"
                        "hookd_clock_offset_seconds %.3f\n",
                        (double)clock_offset_ms() / 1000.0);
    if (m->inbox) {
        int64_t p50, p99;
        inbox_lateness(m->inbox, &p50, &p99);
        gauge(b, "inbox_inflight", "Inbox items claimed and not yet finished by this worker.",
              (double)inbox_pending(m->inbox));
        evbuffer_add_printf(b,
                            "# HELP hookd_inbox_lateness_seconds Claim time minus due time, recent claims.\n"
                            "# TYPE hookd_inbox_lateness_seconds gauge\n"
                            "hookd_inbox_lateness_seconds{quantile=\"0.5\"} %g\n"
                            "hookd_inbox_lateness_seconds{quantile=\"0.99\"} %g\n",
                            (double)p50 / 1000.0, (double)p99 / 1000.0);
    }
    delivery_metrics(b, s, m->delivery);
    storage_metrics(b, retainer_storage(m->ret));
    evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type", "text/plain; version=0.0.4");
    evhttp_send_reply(req, 200, "OK", b);
    evbuffer_free(b);
}

struct metrics *metrics_new(struct hookd_ctx *ctx, struct http_server *http, const struct heartbeat *hb,
                            const struct inbox *inbox, const struct delivery *delivery, const struct retainer *ret)
{
    struct metrics *m = xcalloc(1, sizeof *m);
    m->delivery = delivery;
    m->ret = ret;
    m->ctx = ctx;
    m->hb = hb;
    m->inbox = inbox;
    http_server_route(http, "/metrics", handle_metrics, m);
    return m;
}

void metrics_free(struct metrics *m)
{
    free(m);
}
