/* Counters; see stats.h. The names are the `hookd:stats` hash fields. */
#include "stats.h"

static const char *const names[STAT__COUNT] = {
    "ingested", "duplicate", "rejected", "applied", "noop", "ignored", "deferred", "retried",
    "dead", "delivered", "delivery_failed", "replayed", "db_errors", "redis_errors",
};

static const char *const reject_names[REJECT__COUNT] = {
    "unknown_partner", "missing_signature", "malformed_signature", "bad_signature", "timestamp",
    "bad_body", "too_large", "method", "content_type", "unavailable",
};

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
