/* Process-local counters: what this worker did since it started. The
 * heartbeat adds the not-yet-flushed deltas to the cluster-wide `hookd:stats`
 * hash in Redis in batches, and /metrics exports the totals. Loop thread only. */
#ifndef HOOKD_STATS_H
#define HOOKD_STATS_H

#include <stdint.h>

enum stat_id {
    STAT_INGESTED,
    STAT_DUPLICATE,
    STAT_REJECTED,
    STAT_APPLIED,
    STAT_NOOP,
    STAT_IGNORED,
    STAT_ROUTED, /* outbox events written by routes, one per inbound event and route */
    STAT_DEFERRED,
    STAT_RETRIED,
    STAT_DEAD,
    STAT_DELIVERED,
    STAT_DELIVERY_FAILED,
    STAT_REPLAYED,
    STAT_DB_ERRORS,
    STAT_REDIS_ERRORS,
    STAT__COUNT
};

/* Reasons an inbound request was refused; each counts under rejected too. */
enum reject_reason {
    REJECT_UNKNOWN_PARTNER,
    REJECT_MISSING_SIGNATURE,
    REJECT_MALFORMED_SIGNATURE,
    REJECT_BAD_SIGNATURE,
    REJECT_TIMESTAMP,
    REJECT_BAD_BODY,
    REJECT_TOO_LARGE,
    REJECT_METHOD,
    REJECT_CONTENT_TYPE,
    REJECT_UNAVAILABLE,
    REJECT_ADDRESS,      /* not from the partner's allow_ips */
    REJECT_EVENT_TYPE,   /* not one of the partner's event_types */
    REJECT_VERIFY_TOKEN, /* a subscription check (Meta) with the wrong verify_token */
    REJECT__COUNT
};

/* A Prometheus-style cumulative histogram of durations in seconds. */
#define HIST_BUCKETS 12
struct histogram {
    uint64_t counts[HIST_BUCKETS + 1]; /* per bucket; the last is +Inf */
    uint64_t n;
    double sum;
};
extern const double histogram_bounds[HIST_BUCKETS]; /* upper bounds, seconds */
void histogram_observe(struct histogram *h, double seconds);

/* Where the relay's fan-out put each delivery it created (worker-local, not
 * in `hookd:stats`): its first attempt's outcome written by the pass itself
 * (a success, or a failure to retry), handed to the regular path (still on
 * the wire, or answered after, when first_attempt_window closed), or not
 * sent by the pass (rateLimit, ordered, deliverAt, an open circuit, a
 * backlog): written PENDING and scheduled. */
enum fanout_path { FANOUT_PASS_SUCCEEDED, FANOUT_PASS_FAILED, FANOUT_HANDED_OVER, FANOUT_SCHEDULED, FANOUT__COUNT };

struct stats {
    struct histogram ingest_seconds;   /* inbound request: arrival to answer */
    struct histogram delivery_seconds; /* outbound POST: start to outcome */
    struct histogram fanout_seconds;   /* a relay pass that fanned out events: claim to commit */
    uint64_t fanout[FANOUT__COUNT];    /* deliveries created by the relay's passes, by path */
    uint64_t fanout_window_closed;     /* passes whose first_attempt_window ran out before every answer */
    uint64_t total[STAT__COUNT];
    uint64_t unflushed[STAT__COUNT];
    uint64_t rejected[REJECT__COUNT];
    uint64_t rejected_unflushed[REJECT__COUNT];
};

void stats_add(struct stats *s, enum stat_id id, uint64_t n);
void stats_reject(struct stats *s, enum reject_reason r);
const char *stats_name(enum stat_id id);             /* "ingested", ... */
const char *stats_reject_name(enum reject_reason r); /* "bad_signature", ... */
const char *stats_fanout_name(enum fanout_path p);   /* "pass_succeeded", ... */

#endif
