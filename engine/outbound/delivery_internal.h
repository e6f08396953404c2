/* What the delivery role's files share (internal to engine/outbound/):
 * one delivery item from claim (or fan-out) to recorded outcome, a record
 * job, and the role itself. delivery.c sends and reports; delivery_record.c
 * writes a batch of outcomes on a DB thread. */
#ifndef HOOKD_DELIVERY_INTERNAL_H
#define HOOKD_DELIVERY_INTERNAL_H

#include <libpq-fe.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "delivery_sign.h"
#include "http_client.h"
#include "queries.h"

struct alerter;
struct db_array;
struct batcher;
struct circuit;
struct delivery_policy;
struct evdns_base;
struct hookd_config;
struct sched;

#define EXCERPT_MAX 512
#define RETRY_AFTER_MAX_MS (60LL * 60 * 1000)

/* R_BAD_URL: the endpoint's URL cannot be sent to at all (it does not parse
 * as an http(s) URL hookd accepts): permanent, dead-lettered at once. An
 * address refused by allow_private_networks is R_FAILED, retried: an
 * operator fixes that by config. */
enum result_kind {
    R_SUCCEEDED,
    R_FAILED,
    R_GONE,
    R_BAD_URL,
    R_SKIP_ACK,
    R_SKIP_LATER,
    R_ENDPOINT_DISABLED,
    R_ENDPOINT_DELETED,
    R_PAYLOAD_EXPIRED /* its message's payload retention ran out (sql/0020): never sent */
};

/* Where an item's outcome goes when its response arrives. */
enum stage {
    ST_CLAIMED, /* claimed from Redis (or adopted): to the next record job */
    ST_FIRST,   /* a fan-out's first attempt: to the pass (on_answered) */
    ST_CLOSED,  /* the pass stopped waiting: kept until it settles */
    ST_FORGET,  /* the pass rolled back: freed */
};

/* One delivery, from claim (or fan-out) to recorded outcome. */
struct delivery_item {
    struct delivery *d;
    enum stage stage;
    bool answered;
    bool responded; /* the outcome came from http_client (an answer, or a transport error) */
    void (*on_answered)(struct delivery_item *it, void *arg); /* delivery.h: delivery_answered_fn */
    void *answered_arg;
    char id[40], event_id[40], endpoint_name[112];
    char webhook_id[48]; /* the event id, or a tenant message's msg_ id */
    char *url, *payload, *secret, *prev_secret;
    char *headers; /* the endpoint's custom headers (JSON), NULL: none */
    /* the endpoint's and its tenant's delivery settings (JSON), NULL: none;
     * resolved with the config's when the item is sent (settings.h) */
    char *settings, *tenant_settings;
    char endpoint_id[40];
    int rate_limit;     /* deliveries per second, 0: none */
    int64_t blocked_ms; /* ordered: held this long behind its aggregate's earlier deliveries */
    bool ordered;       /* its endpoint is ordered: a success releases the aggregate's next delivery */
    int timeout_ms, max_inflight;
    char signature[DELIVERY_SIGNATURE_MAX]; /* webhook-signature; empty until signed */
    int64_t signed_at;                      /* webhook-timestamp */
    char timestamp[24];
    int signature_headers;                                           /* enum settings_signature_headers */
    struct http_header late_headers[DELIVERY_SIGN_LATE_HEADERS_MAX]; /* headers_at_send's answer */
    /* outcome */
    enum result_kind kind;
    int status;
    char *error, *excerpt;
    int64_t duration_us;
    int64_t answered_ms;    /* wall clock when the receiver answered: delivered_at */
    int64_t retry_after_ms; /* -1: none */
    int prev_attempts;      /* the row's attempts when loaded (or fanned out); -1: unknown */
    int64_t due_ms;         /* claimed: when it was due (a parked item keeps that score) */
    size_t batch_index;     /* in its record job (the set-based statements) */
    bool twice;             /* its id appears twice in its record job (handed out twice): one by one */
    /* recorded */
    int attempts;
    bool dead, recorded;
    int64_t next_due_ms;
};

struct load_job {
    struct delivery *d;
    struct delivery_item **items;
    size_t n;
    bool ok;
};

struct record_job {
    struct delivery *d;
    struct recorder_lane *lane;
    struct hookd_config *cfg;
    struct delivery_item **items;
    size_t n;
    bool committed;
    char worker_id[96];
    /* ordered endpoints: the deliveries its successes released, due at once
     * (delivery_ordered_next) */
    char **wake_ids;
    int64_t *wake_due;
    size_t nwake;
};

/* Outcomes are recorded in RECORD_LANES lanes, one record job out per
 * lane, an outcome's lane chosen by its event: a record job locks its
 * deliveries' events (to finish an event whose deliveries are all
 * terminal), so two jobs out at once that shared events would wait for
 * each other's commit. With one event's outcomes always in one lane, the
 * jobs out at once never share an event (an event fanned out to three
 * endpoints answered by all three within a turn or two made the second job
 * wait for the first, one batch after the other). */
#define RECORD_LANES 2

struct recorder_lane {
    struct delivery *d;
    struct batcher *batcher; /* owned */
};

struct delivery {
    struct hookd_ctx *ctx;
    struct alerter *alerter;        /* borrowed */
    struct sched *sched;            /* owned: the delivery queue */
    struct circuit *circuit;        /* owned: the endpoints' circuits */
    struct delivery_policy *policy; /* owned: headers, rateLimit */
    struct evdns_base *dns;
    struct http_client *http;
    struct recorder_lane lanes[RECORD_LANES]; /* outcomes, to record jobs (one out per lane) */
    struct batcher *unsent;                   /* claimed requests an opening circuit took back unsent: to park */
    size_t pending;
    bool stopping;
};

/* DB thread: writes a record job's outcomes (a struct record_job *) in a
 * few set-based statements, each outcome left unwritten one by one; sets
 * job->committed and each item's attempts, dead and next due time. */
void delivery_record_work(PGconn *conn, void *job);
/* A prepared statement whose one parameter is a binary uuid[] (ids). */
PGresult *delivery_record_query_ids(PGconn *conn, enum query_id id, const struct db_array *ids, char *err,
                                    size_t errlen);
/* How long a failed attempt of it waits before the next (its endpoint's
 * retry schedule, a Retry-After within bounds); -1: no attempt is left. */
int64_t delivery_record_retry_wait(const struct hookd_config *cfg, const struct delivery_item *it, int attempts);

#endif
