/* Prometheus exposition of the worker's counters and gauges; see ops.h.
 * Every metric is one row of metric_defs (name, type, labels, help): the
 * page is written from it and so is docs/reference/metrics.md
 * (metrics_reference, `hookd reference metrics`). Counter names follow
 * `hookd_<stat>_total`; rejected requests carry a `reason` label. */
#include "ops.h"

#include <event2/buffer.h>
#include <event2/http.h>
#include <stdlib.h>

#include "clock.h"
#include "ctx.h"
#include "db.h"
#include "heartbeat.h"
#include "http_client.h"
#include "http_server.h"
#include "inbound.h"
#include "outbound.h"
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

enum metric_id {
    M_BUILD_INFO,
    M_STAT, /* one counter per stats_name(), hookd_<stat>_total */
    M_DEAD_LETTERS,
    M_REJECTED,
    M_INGEST_SECONDS,
    M_DELIVERY_SECONDS,
    M_QUEUE_DEPTH,
    M_DLQ_SIZE,
    M_READY,
    M_DB_PENDING_JOBS,
    M_CLOCK_OFFSET,
    M_INBOX_INFLIGHT,
    M_INBOX_LATENESS,
    M_FANOUT_DELIVERIES,
    M_FANOUT_SECONDS,
    M_FANOUT_WINDOW_CLOSED,
    M_OUT_OPENED,
    M_OUT_CLOSED,
    M_OUT_REQUESTS,
    M_OUT_REUSED,
    M_OUT_IDLE,
    M_OUT_ORIGINS,
    M_OUT_ACTIVE,
    M_OUT_QUEUED,
    M_TABLE_BYTES,
    M_TABLE_ROWS,
    M_TABLE_OLDEST,
    M_TABLE_NEXT_EXPIRY,
    M__COUNT
};

/* when: who exports the metric (every worker, or only with that role). */
struct metric_def {
    const char *name; /* without "hookd_"; M_STAT: a pattern */
    const char *type;
    const char *labels;
    const char *when;
    const char *help;
};

static const struct metric_def metric_defs[M__COUNT] = {
    [M_BUILD_INFO] = {"build_info", "gauge", "version", "always", "Build information."},
    [M_STAT] = {"<stat>_total", "counter", "", "always", "Events counted by this worker since it started."},
    [M_DEAD_LETTERS] = {"dead_letters_total", "counter", "", "always",
                        "Items this worker moved to the dead-letter queue."},
    [M_REJECTED] = {"rejected_total", "counter", "reason", "always", "Inbound requests refused, by reason."},
    [M_INGEST_SECONDS] = {"ingest_seconds", "histogram", "", "always", "Inbound webhook requests, arrival to answer."},
    [M_DELIVERY_SECONDS] = {"delivery_seconds", "histogram", "", "always",
                            "Outbound delivery requests, start to outcome."},
    [M_QUEUE_DEPTH] = {"queue_depth", "gauge", "queue (inbox, delivery), set (due, inflight)", "always",
                       "Items in the Redis schedule (as of the last heartbeat)."},
    [M_DLQ_SIZE] = {"dlq_size", "gauge", "", "always", "Open dead letters (not replayed)."},
    [M_READY] = {"ready", "gauge", "", "always", "1 when Postgres and Redis are reachable and the schema is current."},
    [M_DB_PENDING_JOBS] = {"db_pending_jobs", "gauge", "", "always", "Database jobs queued or running."},
    [M_CLOCK_OFFSET] = {"clock_offset_seconds", "gauge", "", "always",
                        "Postgres's clock minus this machine's; due times are on Postgres's clock."},
    [M_INBOX_INFLIGHT] = {"inbox_inflight", "gauge", "", "inbox role",
                          "Inbox items claimed and not yet finished by this worker."},
    [M_INBOX_LATENESS] = {"inbox_lateness_seconds", "gauge", "quantile (0.5, 0.99)", "inbox role",
                          "Claim time minus due time, recent claims."},
    [M_FANOUT_DELIVERIES] = {"fanout_deliveries_total", "counter", "path", "relay role",
                             "Deliveries the relay's fan-out created, by where their first outcome was written."},
    [M_FANOUT_SECONDS] = {"fanout_seconds", "histogram", "", "relay role",
                          "Relay passes that fanned out events, claim to commit."},
    [M_FANOUT_WINDOW_CLOSED] = {"fanout_window_closed_total", "counter", "", "relay role",
                                "Relay passes whose first_attempt_window ran out before every answer."},
    [M_OUT_OPENED] = {"outbound_connections_opened_total", "counter", "", "relay role",
                      "Outbound connections (TCP, and TLS) opened for deliveries."},
    [M_OUT_CLOSED] = {"outbound_connections_closed_total", "counter", "", "relay role",
                      "Outbound connections closed again."},
    [M_OUT_REQUESTS] = {"outbound_requests_total", "counter", "", "relay role",
                        "Outbound delivery requests written on a connection."},
    [M_OUT_REUSED] = {"outbound_requests_reused_total", "counter", "", "relay role",
                      "Outbound requests sent on a kept-alive connection."},
    [M_OUT_IDLE] = {"outbound_connections_idle", "gauge", "", "relay role",
                    "Idle keep-alive outbound connections now."},
    [M_OUT_ORIGINS] = {"outbound_origins", "gauge", "", "relay role",
                       "Origins (scheme, host, port) the outbound client knows now."},
    [M_OUT_ACTIVE] = {"outbound_requests_active", "gauge", "", "relay role",
                      "Outbound requests holding a slot now (resolving, connecting, on the wire)."},
    [M_OUT_QUEUED] = {"outbound_requests_queued", "gauge", "", "relay role",
                      "Outbound requests waiting behind their endpoint's or origin's bound now."},
    [M_TABLE_BYTES] = {"table_bytes", "gauge", "table", "after the first storage measurement",
                       "Size of a table of hookd's with its indexes and TOAST, all partitions."},
    [M_TABLE_ROWS] = {"table_rows", "gauge", "table", "after the first storage measurement",
                      "Estimated rows of a table (the planner's statistics)."},
    [M_TABLE_OLDEST] = {"table_oldest_row_timestamp_seconds", "gauge", "table", "after the first storage measurement",
                        "When the oldest row of a table was written (0: empty)."},
    [M_TABLE_NEXT_EXPIRY] = {"table_next_expiry_timestamp_seconds", "gauge", "table",
                             "after the first storage measurement",
                             "When the next rows of a table expire (0: none to expire)."},
};

/* What each counter of hookd_<stat>_total counts (engine/base/stats.h). */
static const char *const stat_help[STAT__COUNT] = {
    [STAT_INGESTED] = "Inbound events accepted and stored.",
    [STAT_DUPLICATE] = "Inbound requests answered duplicate (stored nowhere).",
    [STAT_APPLIED] = "Inbound events applied to their entity.",
    [STAT_NOOP] = "Inbound events that changed nothing (the entity was already there).",
    [STAT_IGNORED] = "Inbound conflicts ignored (on_conflict = ignore).",
    [STAT_ROUTED] = "Outbox events written by routes ([route NAME]), one per inbound event and route.",
    [STAT_DEFERRED] = "Evaluations that deferred an out-of-order event.",
    [STAT_RETRIED] = "Failed inbound evaluations scheduled for a retry.",
    [STAT_DEAD] = "Items moved to the dead-letter queue (inbound and deliveries).",
    [STAT_DELIVERED] = "Deliveries answered 2xx.",
    [STAT_DELIVERY_FAILED] = "Failed delivery attempts (retried or dead-lettered).",
    [STAT_REPLAYED] = "Dead letters replayed from the admin view.",
    [STAT_DB_ERRORS] = "Ingest inserts Postgres could not take (answered 503) and inbox batches that did not commit.",
    [STAT_REDIS_ERRORS] = "Redis calls that failed.",
};

/* The "# HELP" and "# TYPE" lines of metric id, under name (NULL: its own). */
static void header(struct evbuffer *b, enum metric_id id, const char *name, const char *help)
{
    const struct metric_def *m = &metric_defs[id];
    name = name ? name : m->name;
    evbuffer_add_printf(b, "# HELP hookd_%s %s\n# TYPE hookd_%s %s\n", name, help ? help : m->help, name, m->type);
}

static void counter(struct evbuffer *b, enum metric_id id, unsigned long long v)
{
    header(b, id, NULL, NULL);
    evbuffer_add_printf(b, "hookd_%s %llu\n", metric_defs[id].name, v);
}

static void gauge(struct evbuffer *b, enum metric_id id, double v)
{
    header(b, id, NULL, NULL);
    evbuffer_add_printf(b, "hookd_%s %g\n", metric_defs[id].name, v);
}

static void histogram(struct evbuffer *b, enum metric_id id, const struct histogram *h)
{
    const char *name = metric_defs[id].name;
    header(b, id, NULL, NULL);
    uint64_t cum = 0;
    for (int i = 0; i < HIST_BUCKETS; i++) {
        cum += h->counts[i];
        evbuffer_add_printf(b, "hookd_%s_bucket{le=\"%g\"} %llu\n", name, histogram_bounds[i],
                            (unsigned long long)cum);
    }
    evbuffer_add_printf(b, "hookd_%s_bucket{le=\"+Inf\"} %llu\nhookd_%s_sum %.6f\nhookd_%s_count %llu\n", name,
                        (unsigned long long)h->n, name, h->sum, name, (unsigned long long)h->n);
}

/* Each table's storage, as the retainer last measured it (nothing before
 * its first pass). */
static void storage_metrics(struct evbuffer *b, const struct retention_storage *st)
{
    if (!st)
        return;
    for (enum metric_id id = M_TABLE_BYTES; id <= M_TABLE_NEXT_EXPIRY; id++) {
        header(b, id, NULL, NULL);
        for (size_t i = 0; i < st->n; i++) {
            const struct retention_table *t = &st->t[i];
            double v = id == M_TABLE_BYTES    ? (double)t->bytes
                       : id == M_TABLE_ROWS   ? (double)t->rows
                       : id == M_TABLE_OLDEST ? (double)t->oldest_ms / 1000.0
                                              : (double)t->next_expiry_ms / 1000.0;
            evbuffer_add_printf(b, "hookd_%s{table=\"%s\"} %.3f\n", metric_defs[id].name, t->name, v);
        }
    }
}

/* The relay's fan-out (where its deliveries went) and the delivery role's
 * outbound HTTP client (connections, reuse). */
static void delivery_metrics(struct evbuffer *b, const struct stats *s, const struct delivery *d)
{
    if (!d)
        return;
    header(b, M_FANOUT_DELIVERIES, NULL, NULL);
    for (int i = 0; i < FANOUT__COUNT; i++)
        evbuffer_add_printf(b, "hookd_%s{path=\"%s\"} %llu\n", metric_defs[M_FANOUT_DELIVERIES].name,
                            stats_fanout_name(i), (unsigned long long)s->fanout[i]);
    histogram(b, M_FANOUT_SECONDS, &s->fanout_seconds);
    counter(b, M_FANOUT_WINDOW_CLOSED, (unsigned long long)s->fanout_window_closed);
    struct http_client_stats h;
    delivery_http_stats(d, &h);
    counter(b, M_OUT_OPENED, (unsigned long long)h.connections_opened);
    counter(b, M_OUT_CLOSED, (unsigned long long)h.connections_closed);
    counter(b, M_OUT_REQUESTS, (unsigned long long)h.requests_sent);
    counter(b, M_OUT_REUSED, (unsigned long long)h.requests_reused);
    gauge(b, M_OUT_IDLE, (double)h.idle);
    gauge(b, M_OUT_ORIGINS, (double)h.idle_origins);
    gauge(b, M_OUT_ACTIVE, (double)h.active);
    gauge(b, M_OUT_QUEUED, (double)h.queued);
}

static void inbox_metrics(struct evbuffer *b, const struct inbox *ib)
{
    if (!ib)
        return;
    int64_t p50, p99;
    inbox_lateness(ib, &p50, &p99);
    gauge(b, M_INBOX_INFLIGHT, (double)inbox_pending(ib));
    header(b, M_INBOX_LATENESS, NULL, NULL);
    const char *name = metric_defs[M_INBOX_LATENESS].name;
    evbuffer_add_printf(b, "hookd_%s{quantile=\"0.5\"} %g\nhookd_%s{quantile=\"0.99\"} %g\n", name,
                        (double)p50 / 1000.0, name, (double)p99 / 1000.0);
}

static void counters(struct evbuffer *b, const struct stats *s)
{
    for (int i = 0; i < STAT__COUNT; i++) {
        if (i == STAT_REJECTED)
            continue;
        char name[64];
        snprintf(name, sizeof name, "%s_total", stats_name(i));
        header(b, M_STAT, name, stat_help[i]);
        evbuffer_add_printf(b, "hookd_%s %llu\n", name, (unsigned long long)s->total[i]);
    }
    counter(b, M_DEAD_LETTERS, (unsigned long long)s->total[STAT_DEAD]);
    header(b, M_REJECTED, NULL, NULL);
    for (int r = 0; r < REJECT__COUNT; r++)
        evbuffer_add_printf(b, "hookd_%s{reason=\"%s\"} %llu\n", metric_defs[M_REJECTED].name, stats_reject_name(r),
                            (unsigned long long)s->rejected[r]);
}

static void handle_metrics(struct evhttp_request *req, void *arg)
{
    const struct metrics *m = arg;
    const struct hookd_ctx *ctx = m->ctx;
    const struct heartbeat_view *v = heartbeat_view(m->hb);
    const struct stats *s = &ctx->stats;
    struct evbuffer *b = evbuffer_new();
    header(b, M_BUILD_INFO, NULL, NULL);
    evbuffer_add_printf(b, "hookd_build_info{version=\"%s\"} 1\n", HOOKD_VERSION);
    counters(b, s);
    histogram(b, M_INGEST_SECONDS, &s->ingest_seconds);
    histogram(b, M_DELIVERY_SECONDS, &s->delivery_seconds);
    header(b, M_QUEUE_DEPTH, NULL, NULL);
    static const char *const sets[4][2] = {{"inbox", "due"},
                                           {"inbox", "inflight"},
                                           {"delivery", "due"},
                                           {"delivery", "inflight"}};
    for (int i = 0; i < 4; i++)
        evbuffer_add_printf(b, "hookd_queue_depth{queue=\"%s\",set=\"%s\"} %lld\n", sets[i][0], sets[i][1],
                            v->depth[i]);
    if (v->dlq_size >= 0)
        gauge(b, M_DLQ_SIZE, (double)v->dlq_size);
    gauge(b, M_READY, ctx_ready(ctx));
    gauge(b, M_DB_PENDING_JOBS, (double)db_pool_pending(ctx->db));
    header(b, M_CLOCK_OFFSET, NULL, NULL);
    evbuffer_add_printf(b, "hookd_clock_offset_seconds %.3f\n", (double)clock_offset_ms() / 1000.0);
    inbox_metrics(b, m->inbox);
    delivery_metrics(b, s, m->delivery);
    storage_metrics(b, retainer_storage(m->ret));
    evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type", "text/plain; version=0.0.4");
    evhttp_send_reply(req, 200, "OK", b);
    evbuffer_free(b);
}

/* One row of the reference: a metric, its type, labels, who exports it. */
static void reference_row(json_t *out, const char *name, const struct metric_def *m, const char *help)
{
    json_array_append_new(out, json_pack("{s:s+, s:s, s:s, s:s, s:s}", "name", "hookd_", name, "type", m->type,
                                         "labels", m->labels, "when", m->when, "help", help ? help : m->help));
}

/* "label (a, b, c)" from a list of label values. */
static char *label_values(const char *label, const char *(*name)(int), int n)
{
    struct evbuffer *b = evbuffer_new();
    evbuffer_add_printf(b, "%s (", label);
    for (int i = 0; i < n; i++)
        evbuffer_add_printf(b, "%s%s", i ? ", " : "", name(i));
    evbuffer_add(b, ")", 2);
    char *s = xstrdup((const char *)evbuffer_pullup(b, -1));
    evbuffer_free(b);
    return s;
}

static const char *reject_name(int i)
{
    return stats_reject_name((enum reject_reason)i);
}

static const char *fanout_name(int i)
{
    return stats_fanout_name((enum fanout_path)i);
}

json_t *metrics_reference(void)
{
    json_t *out = json_array();
    for (enum metric_id id = 0; id < M__COUNT; id++) {
        if (id == M_REJECTED || id == M_FANOUT_DELIVERIES) {
            struct metric_def m = metric_defs[id];
            char *labels = id == M_REJECTED ? label_values("reason", reject_name, REJECT__COUNT)
                                            : label_values("path", fanout_name, FANOUT__COUNT);
            m.labels = labels;
            reference_row(out, m.name, &m, NULL);
            free(labels);
            continue;
        }
        if (id != M_STAT) {
            reference_row(out, metric_defs[id].name, &metric_defs[id], NULL);
            continue;
        }
        for (int i = 0; i < STAT__COUNT; i++) {
            char name[64];
            snprintf(name, sizeof name, "%s_total", stats_name(i));
            if (i != STAT_REJECTED)
                reference_row(out, name, &metric_defs[id], stat_help[i]);
        }
    }
    return out;
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
