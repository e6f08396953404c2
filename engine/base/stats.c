/* Counters; see stats.h. The names are the `hookd:stats` hash fields. */
#include "stats.h"

static const char *const names[STAT__COUNT] = {
    "ingested", "duplicate", "rejected",  "applied",         "noop",     "ignored",   "routed",       "deferred",
    "retried",  "dead",      "delivered", "delivery_failed", "replayed", "db_errors", "redis_errors",
};

static const char *const reject_names[REJECT__COUNT] = {
    "unknown_partner",  "missing_signature", "malformed_signature", "bad_signature",
    "timestamp",        "bad_body",          "too_large",           "method",
    "content_type",     "unavailable",       "address_not_allowed", "event_type_not_allowed",
    "bad_verify_token",
};

static const char *const fanout_names[FANOUT__COUNT] = {"pass_succeeded", "pass_failed", "handed_over", "scheduled"};

void stats_add(struct stats *s, enum stat_id id, uint64_t n)
{
    s->total[id] += n;
    s->unflushed[id] += n;
}

void stats_reject(struct stats *s, enum reject_reason r)
{
    s->rejected[r]++;
    s->rejected_unflushed[r]++;
    stats_add(s, STAT_REJECTED, 1);
}

const char *stats_name(enum stat_id id)
{
    return names[id];
}

const char *stats_reject_name(enum reject_reason r)
{
    return reject_names[r];
}

const char *stats_fanout_name(enum fanout_path p)
{
    return fanout_names[p];
}

const double histogram_bounds[HIST_BUCKETS] = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                               0.1,   0.25,   0.5,   1.0,  2.5,   10.0};

void histogram_observe(struct histogram *h, double seconds)
{
    int i = 0;
    while (i < HIST_BUCKETS && seconds > histogram_bounds[i])
        i++;
    h->counts[i]++;
    h->n++;
    h->sum += seconds;
}
