/* Sending deliveries and reporting their outcomes; see delivery.h (the
 * outcomes are written by delivery_record.c, signatures made by
 * delivery_sign.c).
 *
 * No Postgres transaction is held open across an HTTP request: a delivery is
 * read, sent, and its outcome written conditionally (only while it is still
 * PENDING/RETRYING). The Redis lease keeps two workers from sending the same
 * delivery at once; if a worker dies between sending and recording, the
 * lease expires and the delivery is sent again with the same webhook-id
 * (at-least-once; receivers deduplicate on it). */
#include "delivery.h"

#include <event2/dns.h>
#include <jansson.h>
#include <event2/event.h>
#include <openssl/crypto.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "alert.h"
#include "batcher.h"
#include "circuit.h"
#include "clock.h"
#include "db.h"
#include "delivery_policy.h"
#include "errbuf.h"
#include "http_client.h"
#include "log.h"
#include "netguard.h"
#include "query.h"
#include "rand.h"
#include "sched.h"
#include "settings.h"
#include "signature.h"
#include "version.h"
#include "ctx.h"
#include "xmalloc.h"

#include "delivery_internal.h"

static void item_free(struct delivery_item *it)
{
    free(it->url);
    free(it->payload);
    free(it->headers);
    free(it->settings);
    free(it->tenant_settings);
    OPENSSL_cleanse(it->signature, sizeof it->signature);
    if (it->secret)
        OPENSSL_cleanse(it->secret, strlen(it->secret));
    if (it->prev_secret)
        OPENSSL_cleanse(it->prev_secret, strlen(it->prev_secret));
    free(it->secret);
    free(it->prev_secret);
    free(it->error);
    free(it->excerpt);
    free(it);
}

static void report(struct delivery *d, struct delivery_item *it)
{
    struct hookd_ctx *ctx = d->ctx;
    if (it->kind == R_SUCCEEDED) {
        stats_add(&ctx->stats, STAT_DELIVERED, 1);
        log_debug("delivery.succeeded", "id=%s event=%s endpoint=%s status=%d attempt=%d", it->id, it->event_id,
                  it->endpoint_name, it->status, it->attempts);
        return;
    }
    stats_add(&ctx->stats, STAT_DELIVERY_FAILED, 1);
    if (it->dead) {
        stats_add(&ctx->stats, STAT_DEAD, 1);
        alert_dead_letter(d->alerter, "delivery", it->id, it->endpoint_name, "", it->event_id, it->attempts,
                          it->error ? it->error : "");
    } else {
        log_warn("delivery.retry", "id=%s endpoint=%s status=%d attempt=%d due_in_ms=%lld error=\"%s\"", it->id,
                 it->endpoint_name, it->status, it->attempts, (long long)(it->next_due_ms - clock_wall_ms()),
                 it->error ? it->error : "");
    }
}

static void done_record(void *arg)
{
    struct record_job *job = arg;
    struct delivery *d = job->d;
    for (size_t i = 0; i < job->n; i++) {
        struct delivery_item *it = job->items[i];
        int64_t next = -1;
        if (it->kind == R_SKIP_LATER || !job->committed || (!it->recorded && it->kind != R_SKIP_ACK))
            next = clock_wall_ms() + 1000; /* not recorded: try again; Postgres decides */
        else if (it->kind == R_FAILED && !it->dead)
            next = it->next_due_ms;
        if (job->committed && it->recorded)
            report(d, it);
        sched_done(d->sched, it->id, next);
        item_free(it);
    }
    d->pending -= job->n;
    if (job->nwake > 0) /* after the acks: the successors are due now */
        sched_seed(d->ctx, "delivery", job->wake_ids, job->wake_due, job->nwake, false);
    for (size_t i = 0; i < job->nwake; i++)
        free(job->wake_ids[i]);
    free(job->wake_ids);
    free(job->wake_due);
    struct batcher *lane = job->lane->batcher;
    config_unref(job->cfg);
    free(job->items);
    free(job);
    batcher_done(lane);
}

/* batcher_submit_fn of a recorder lane: a batch of outcomes becomes one
 * record job (group commit; one out per lane, outcomes gather meanwhile). */
static void submit_record(void *arg, void *items, size_t n, size_t bytes)
{
    (void)bytes;
    struct recorder_lane *lane = arg;
    struct delivery *d = lane->d;
    struct record_job *job = xmalloc(sizeof *job);
    *job = (struct record_job){.d = d, .lane = lane, .cfg = config_ref(d->ctx->cfg), .items = items, .n = n};
    snprintf(job->worker_id, sizeof job->worker_id, "%s", d->ctx->id);
    db_pool_submit(d->ctx->db, delivery_record_work, done_record, job);
}

/* The lane of an event's outcomes (FNV-1a of its id). */
static struct batcher *lane_of(struct delivery *d, const char *event_id)
{
    uint32_t h = 2166136261u;
    for (const unsigned char *c = (const unsigned char *)event_id; *c; c++)
        h = (h ^ *c) * 16777619u;
    return d->lanes[h % RECORD_LANES].batcher;
}

/* Queues an item's outcome for the next record job of its event's lane. */
static void finish(struct delivery *d, struct delivery_item *it)
{
    batcher_add(lane_of(d, it->event_id), &it, 0);
}

/* An outcome is known (a response, or an error before sending). */
static void answered(struct delivery *d, struct delivery_item *it)
{
    it->answered = true;
    switch (it->stage) {
    case ST_CLAIMED: finish(d, it); break;
    case ST_FIRST: it->on_answered(it, it->answered_arg); break;
    case ST_CLOSED: break; /* delivery_first_settle decides */
    case ST_FORGET:
        d->pending--;
        item_free(it);
        break;
    }
}

/* Taken back unsent from the HTTP client's queue when the endpoint's
 * circuit opened: no request, no attempt. A claimed delivery is parked
 * with the others of its endpoint (submit_unsent); a fan-out's first
 * attempt is left to the regular path unrecorded (inserted PENDING, then
 * due again in a second, when it is loaded and parked). */
static void taken_back(struct delivery *d, struct delivery_item *it)
{
    if (it->stage == ST_CLAIMED) {
        it->kind = R_FAILED;
        batcher_add(d->unsent, &it, 0);
        return;
    }
    it->kind = R_SKIP_LATER;
    answered(d, it);
}

/* ---- sending ----------------------------------------------------------------- */

static int64_t parse_retry_after(const char *v)
{
    if (!v)
        return -1;
    /* Anything beyond the cap is the cap: a receiver's number is clamped
     * before it is scaled, so no value can overflow. */
    char *end;
    long long s = strtoll(v, &end, 10);
    if (end != v && *end == '\0' && s >= 0)
        return s >= RETRY_AFTER_MAX_MS / 1000 ? RETRY_AFTER_MAX_MS : s * 1000;
    struct tm tm = {0};
    const char *rest = strptime(v, "%a, %d %b %Y %H:%M:%S GMT", &tm);
    if (!rest || *rest)
        return -1;
    int64_t now_ms = clock_wall_ms(), at_s = (int64_t)timegm(&tm);
    if (at_s - now_ms / 1000 >= RETRY_AFTER_MAX_MS / 1000)
        return RETRY_AFTER_MAX_MS;
    int64_t wait = at_s * 1000 - now_ms;
    return wait > 0 ? wait : 0;
}

/* The first bytes of a response, as text Postgres and JSON accept: a
 * receiver may answer with anything, but a NUL or a byte that is not valid
 * UTF-8 would make the attempt row (and so the outcome) unrecordable. Bytes
 * outside printable ASCII (bar newline and tab) become '?'. */
static char *excerpt(const char *body, size_t len)
{
    if (len > EXCERPT_MAX)
        len = EXCERPT_MAX;
    char *out = xmalloc(len + 1);
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)body[i];
        out[i] = (c >= 0x20 && c < 0x7f) || c == '\n' || c == '\t' ? (char)c : '?';
    }
    out[len] = '\0';
    return out;
}

/* The outcome for the endpoint's circuit: 2xx closes, and a failure that
 * says the endpoint is unwell (no answer, 5xx, 408, 429) counts; other 4xx
 * (and 410) are about the message, not the endpoint. */
static void note_circuit(struct delivery *d, const struct delivery_item *it, const struct http_client_result *res)
{
    if (!config_retry_for_endpoint(d->ctx->cfg, it->endpoint_name)->circuit)
        return;
    bool ok = !res->error && res->status >= 200 && res->status < 300;
    bool bad = res->error || res->status >= 500 || res->status == 408 || res->status == 429;
    if (ok || bad)
        circuit_note(d->circuit, it->endpoint_name, ok);
}

static void on_response(const struct http_client_result *res, void *arg)
{
    struct delivery_item *it = arg;
    if (res->unsent && !it->d->stopping) {
        taken_back(it->d, it);
        return;
    }
    it->responded = true;
    it->status = res->status;
    it->duration_us = res->duration_us;
    it->answered_ms = clock_wall_ms();
    histogram_observe(&it->d->ctx->stats.delivery_seconds, (double)res->duration_us / 1e6);
    it->excerpt = res->body_len ? excerpt(res->body, res->body_len) : NULL;
    it->retry_after_ms = parse_retry_after(res->retry_after);
    note_circuit(it->d, it, res);
    if (res->error) {
        it->kind = R_FAILED;
        it->error = xstrdup(res->error);
    } else if (res->status >= 200 && res->status < 300) {
        it->kind = R_SUCCEEDED;
    } else if (res->status == 410) {
        it->kind = R_GONE;
        it->error = xstrdup("HTTP 410 Gone");
    } else {
        it->kind = R_FAILED;
        bool client = res->status >= 400 && res->status < 500 && res->status != 408 && res->status != 429;
        it->error = xasprintf("HTTP %d%s", res->status, client ? " (client error)" : "");
    }
    answered(it->d, it);
}

/* A signature older than this when its request finally leaves the
 * endpoint's queue is made again: receivers refuse old timestamps (Standard
 * Webhooks suggests a 5-minute tolerance), and a slow endpoint's queue can be
 * longer than that. */
#define SIGNATURE_FRESH_S 30

/* http_client_config.headers_at_send: the timestamp and signature headers
 * (delivery_sign_late_headers), as the request is written. */
static const struct http_header *headers_at_send(void *arg, size_t *n)
{
    struct delivery_item *it = arg;
    int64_t now = clock_wall_ms() / 1000;
    *n = 0;
    if (!it->signature[0] || now - it->signed_at > SIGNATURE_FRESH_S) {
        if (delivery_sign(it->secret, it->prev_secret, it->webhook_id, now, it->payload, it->signature) != 0)
            return NULL; /* checked before the request was queued: cannot happen */
        it->signed_at = now;
    }
    snprintf(it->timestamp, sizeof it->timestamp, "%lld", (long long)it->signed_at);
    *n = delivery_sign_late_headers(it->signature_headers, it->timestamp, it->signature, it->late_headers);
    return it->late_headers;
}

static void send_item(struct delivery *d, struct delivery_item *it)
{
    char err[256];
    if (!it->signature[0]) { /* not signed ahead (delivery_target.signature): the secret is checked now */
        it->signed_at = clock_wall_ms() / 1000;
        if (delivery_sign(it->secret, it->prev_secret, it->webhook_id, it->signed_at, it->payload, it->signature) !=
            0) {
            it->kind = R_FAILED;
            it->error = xstrdup("the endpoint's signing secret is not a valid whsec_ secret");
            answered(d, it);
            return;
        }
    }
    struct netguard_url u;
    char why[200];
    if (netguard_parse_url(it->url, &u, why, sizeof why) != 0) {
        /* Checked here, not inferred from http_client_post's error text: a
         * URL that cannot be parsed is permanent, the other refusals there
         * (shutting down) are not. */
        it->kind = R_BAD_URL;
        it->error = xasprintf("invalid endpoint URL: %s", why);
        answered(d, it);
        return;
    }
    it->signature_headers = settings_resolve(d->ctx->cfg, SETTINGS_SIGNATURE_HEADERS, it->settings,
                                             it->tenant_settings, NULL);
    struct http_header base[2 + DELIVERY_SIGN_ID_HEADERS_MAX] = {
        {"Content-Type", "application/json"},
        {"User-Agent", "hookd/" HOOKD_VERSION},
    };
    size_t nbase = 2 + delivery_sign_id_headers(it->signature_headers, it->webhook_id, base + 2);
    struct http_header *hdrs;
    void *hold;
    size_t nhdrs = delivery_policy_headers(it->headers, it->endpoint_name, base, nbase, &hdrs, &hold);
    int rc = http_client_post(d->http, it->endpoint_name, it->url, hdrs, nhdrs, it->payload, strlen(it->payload),
                              it->timeout_ms, it->max_inflight, on_response, it, err, sizeof err);
    delivery_policy_headers_release(hdrs, hold);
    if (rc != 0) {
        it->kind = R_FAILED;
        it->error = xstrdup(err);
        answered(d, it);
    }
}

/* ---- loading claimed deliveries ---------------------------------------------- */

static void work_load(PGconn *conn, void *arg)
{
    struct load_job *job = arg;
    char err[256];
    const char **each = xcalloc(job->n, sizeof *each);
    for (size_t i = 0; i < job->n; i++)
        each[i] = job->items[i]->id;
    struct db_array ids;
    db_array_uuids(&ids, each, job->n);
    free(each);
    PGresult *r = delivery_record_query_ids(conn, Q_DELIVERY_LOAD, &ids, err, sizeof err);
    free(ids.buf);
    if (!r)
        return;
    job->ok = true;
    for (size_t i = 0; i < job->n; i++)
        job->items[i]->kind = R_SKIP_ACK; /* not found: gone */
    size_t from = 0;                      /* rows come in the order of the ids asked for */
    for (int row = 0; row < PQntuples(r); row++) {
        struct delivery_item *it = NULL;
        for (size_t k = 0; k < job->n && !it; k++) {
            size_t i = (from + k) % job->n;
            if (strcmp(job->items[i]->id, PQgetvalue(r, row, DELIVERY_LOAD_ID)) == 0) {
                it = job->items[i];
                from = i + 1;
            }
        }
        if (!it)
            continue;
        const char *status = PQgetvalue(r, row, DELIVERY_LOAD_STATUS);
        if (strcmp(status, "PENDING") != 0 && strcmp(status, "RETRYING") != 0)
            continue; /* already finished: ack */
        snprintf(it->event_id, sizeof it->event_id, "%s", PQgetvalue(r, row, DELIVERY_LOAD_EVENT_ID));
        snprintf(it->webhook_id, sizeof it->webhook_id, "%s", PQgetvalue(r, row, DELIVERY_LOAD_WEBHOOK_ID));
        it->prev_attempts = atoi(PQgetvalue(r, row, DELIVERY_LOAD_ATTEMPTS));
        if (PQgetisnull(r, row, DELIVERY_LOAD_NAME)) { /* the endpoint row was deleted */
            it->kind = R_ENDPOINT_DELETED;
            continue;
        }
        it->kind = PQgetvalue(r, row, DELIVERY_LOAD_ENABLED)[0] == 't' ? R_FAILED : R_ENDPOINT_DISABLED;
        snprintf(it->endpoint_name, sizeof it->endpoint_name, "%s", PQgetvalue(r, row, DELIVERY_LOAD_NAME));
        snprintf(it->endpoint_id, sizeof it->endpoint_id, "%s", PQgetvalue(r, row, DELIVERY_LOAD_ENDPOINT_ID));
        it->payload = query_value_dup(r, row, DELIVERY_LOAD_PAYLOAD);
        if (!it->payload && it->kind == R_FAILED)
            it->kind = R_PAYLOAD_EXPIRED;
        it->url = query_value_dup(r, row, DELIVERY_LOAD_URL);
        it->secret = query_value_dup(r, row, DELIVERY_LOAD_SECRET);
        it->prev_secret = query_value_dup(r, row, DELIVERY_LOAD_PREVIOUS_SECRET);
        it->headers = query_value_dup(r, row, DELIVERY_LOAD_HEADERS);
        it->settings = query_value_dup(r, row, DELIVERY_LOAD_SETTINGS);
        it->tenant_settings = query_value_dup(r, row, DELIVERY_LOAD_TENANT_SETTINGS);
        it->timeout_ms = atoi(PQgetvalue(r, row, DELIVERY_LOAD_TIMEOUT_MS));
        it->max_inflight = atoi(PQgetvalue(r, row, DELIVERY_LOAD_MAX_INFLIGHT));
        it->rate_limit = atoi(PQgetvalue(r, row, DELIVERY_LOAD_RATE_LIMIT));
        it->blocked_ms = atoll(PQgetvalue(r, row, DELIVERY_LOAD_BLOCKED_MS));
        it->ordered = PQgetvalue(r, row, DELIVERY_LOAD_ORDERED)[0] == 't';
    }
    PQclear(r);
}

/* Claimed deliveries of one endpoint whose circuit is open, asked about. */
struct park_group {
    struct delivery *d;
    struct delivery_item **items;
    size_t n;
    bool loaded; /* false: known parked from Redis alone (circuit_filter), not read yet */
};

static void work_load(PGconn *conn, void *arg);
static void done_load(void *arg);
static void send_with_policies(struct delivery *d, struct delivery_item *it);

static void on_parked(void *arg, bool ok, char **send, size_t nsend)
{
    struct park_group *g = arg;
    struct delivery *d = g->d;
    struct load_job *later = NULL; /* to send but not read yet: read first */
    for (size_t i = 0; i < g->n; i++) {
        struct delivery_item *it = g->items[i];
        bool go = false;
        for (size_t k = 0; ok && k < nsend && !go; k++)
            go = strcmp(send[k], it->id) == 0;
        if (!ok) { /* Redis not asked: not sent, due again soon */
            it->kind = R_SKIP_LATER;
            finish(d, it);
        } else if (go && !g->loaded) {
            if (!later) {
                later = xcalloc(1, sizeof *later);
                later->d = d;
                later->items = xcalloc(g->n, sizeof *later->items);
            }
            later->items[later->n++] = it;
        } else if (go) { /* the probe, or the circuit closed meanwhile */
            send_with_policies(d, it);
        } else { /* parked: out of inflight already, no attempt spent */
            log_debug("delivery.parked", "id=%s endpoint=%s", it->id, it->endpoint_name);
            sched_done(d->sched, it->id, -1);
            d->pending--;
            item_free(it);
        }
    }
    if (later)
        db_pool_submit(d->ctx->db, work_load, done_load, later);
    free(g->items);
    free(g);
}

/* items[i] and the later items of its endpoint, whose circuit this worker
 * believes open, are not sent: circuit_park decides (they wait parked, or
 * one is the probe). */
static void park(struct delivery *d, struct delivery_item **items, size_t n, size_t i, bool loaded)
{
    struct delivery_item *it = items[i];
    struct park_group *g = xcalloc(1, sizeof *g);
    g->d = d;
    g->loaded = loaded;
    g->items = xcalloc(n - i, sizeof *g->items);
    char **ids = xcalloc(n - i, sizeof *ids);
    int64_t *due = xcalloc(n - i, sizeof *due);
    for (size_t k = i; k < n; k++) {
        struct delivery_item *o = items[k];
        if (o->kind != R_FAILED || strcmp(o->endpoint_name, it->endpoint_name) != 0)
            continue;
        ids[g->n] = o->id;
        due[g->n] = o->due_ms;
        g->items[g->n++] = o;
    }
    circuit_park(d->circuit, it->endpoint_name, ids, due, g->n, on_parked, g);
    free(ids);
    free(due);
}

/* Every item of items[0..n) (kind R_FAILED) is parked, one circuit_park
 * call per endpoint. */
static void park_all(struct delivery *d, struct delivery_item **items, size_t n, bool loaded)
{
    bool *taken = xcalloc(n + 1, sizeof *taken);
    for (size_t i = 0; i < n; i++) {
        if (taken[i])
            continue;
        for (size_t k = i; k < n; k++)
            if (strcmp(items[k]->endpoint_name, items[i]->endpoint_name) == 0)
                taken[k] = true;
        park(d, items, n, i, loaded);
    }
    free(taken);
}

/* batcher_submit_fn of the claimed requests taken back unsent (taken_back). */
static void submit_unsent(void *arg, void *items, size_t n, size_t bytes)
{
    (void)bytes;
    park_all(arg, items, n, true);
    free(items);
}

/* delivery_policy_pace's verdicts: send, or due again later (no attempt). */
static void paced_go(void *arg)
{
    struct delivery_item *it = arg;
    send_item(it->d, it);
}

static void paced_later(void *arg, int64_t due_ms)
{
    struct delivery_item *it = arg;
    log_debug("delivery.held", "id=%s endpoint=%s due_in_ms=%lld", it->id, it->endpoint_name,
              (long long)(due_ms - clock_wall_ms()));
    sched_done(it->d->sched, it->id, due_ms);
    it->d->pending--;
    item_free(it);
}

/* A loaded delivery to send: held (ordered), paced (rateLimit), or sent. */
static void send_with_policies(struct delivery *d, struct delivery_item *it)
{
    if (it->blocked_ms > 0)
        paced_later(it, clock_wall_ms() + it->blocked_ms);
    else
        delivery_policy_pace(d->policy, it->endpoint_id, it->rate_limit, paced_go, paced_later, it);
}

static void dropped(void *arg)
{
    item_free(arg);
}

static void done_load(void *arg)
{
    struct load_job *job = arg;
    struct delivery *d = job->d;
    /* Items handed to a park group leave the loop's hands: marked taken. */
    bool *taken = xcalloc(job->n + 1, sizeof *taken);
    for (size_t i = 0; job->ok && i < job->n; i++) {
        struct delivery_item *it = job->items[i];
        if (it->kind != R_FAILED || taken[i])
            continue;
        if (!delivery_endpoint_circuit_open(d, it->endpoint_name))
            continue;
        for (size_t k = i + 1; k < job->n; k++)
            if (job->items[k]->kind == R_FAILED && strcmp(job->items[k]->endpoint_name, it->endpoint_name) == 0)
                taken[k] = true;
        taken[i] = true;
        park(d, job->items, job->n, i, true);
    }
    for (size_t i = 0; i < job->n; i++) {
        struct delivery_item *it = job->items[i];
        if (taken[i])
            continue;
        if (!job->ok) {
            it->kind = R_SKIP_LATER;
            finish(d, it);
        } else if (it->kind == R_SKIP_ACK) {
            finish(d, it);
        } else if (it->kind == R_ENDPOINT_DISABLED || it->kind == R_ENDPOINT_DELETED ||
                   it->kind == R_PAYLOAD_EXPIRED) {
            it->error = xstrdup(it->kind == R_ENDPOINT_DELETED  ? "the endpoint was deleted"
                                : it->kind == R_PAYLOAD_EXPIRED ? "the message's payload expired"
                                                                : "the endpoint is disabled");
            finish(d, it);
        } else {
            send_with_policies(d, it);
        }
    }
    free(taken);
    free(job->items);
    free(job);
}

/* circuit_filter_fn: endpoints[i] is the endpoint of a parked delivery, ""
 * for the others, which are read and sent as usual. */
static void on_filtered(void *arg, const char **endpoints)
{
    struct load_job *job = arg;
    struct delivery *d = job->d;
    size_t nparked = 0, nrest = 0;
    struct delivery_item **parked = xcalloc(job->n + 1, sizeof *parked);
    for (size_t i = 0; i < job->n; i++) {
        struct delivery_item *it = job->items[i];
        if (endpoints && endpoints[i][0] && delivery_endpoint_circuit_open(d, endpoints[i])) {
            snprintf(it->endpoint_name, sizeof it->endpoint_name, "%s", endpoints[i]);
            it->kind = R_FAILED;
            parked[nparked++] = it;
        } else {
            job->items[nrest++] = it;
        }
    }
    park_all(d, parked, nparked, false);
    free(parked);
    job->n = nrest;
    if (nrest > 0) {
        db_pool_submit(d->ctx->db, work_load, done_load, job);
    } else {
        free(job->items);
        free(job);
    }
}

/* sched_process_fn of the delivery queue. */
static void on_claimed(void *arg, struct sched *s, char **ids, const int64_t *due_ms, size_t n)
{
    (void)s;
    struct delivery *d = arg;
    struct load_job *job = xcalloc(1, sizeof *job);
    job->d = d;
    job->n = n;
    job->items = xcalloc(n, sizeof *job->items);
    for (size_t i = 0; i < n; i++) {
        struct delivery_item *it = xcalloc(1, sizeof *it);
        it->d = d;
        it->retry_after_ms = -1;
        it->prev_attempts = -1;
        it->due_ms = due_ms[i];
        snprintf(it->id, sizeof it->id, "%s", ids[i]);
        job->items[i] = it;
    }
    d->pending += n;
    if (circuit_any_open(d->circuit)) /* parked ones the reconciler brought back: parked again unread */
        circuit_filter(d->circuit, ids, n, on_filtered, job);
    else
        db_pool_submit(d->ctx->db, work_load, done_load, job);
}

/* ---- first attempts (the relay's fan-out) ------------------------------------ */

struct delivery_item *delivery_send_first(struct delivery *d, const struct delivery_target *t, delivery_answered_fn fn,
                                          void *arg)
{
    struct delivery_item *it = xcalloc(1, sizeof *it);
    it->d = d;
    it->stage = ST_FIRST;
    it->on_answered = fn;
    it->answered_arg = arg;
    it->retry_after_ms = -1;
    it->prev_attempts = 0; /* a new row */
    it->kind = R_FAILED;
    snprintf(it->id, sizeof it->id, "%s", t->id);
    snprintf(it->event_id, sizeof it->event_id, "%s", t->event_id);
    snprintf(it->webhook_id, sizeof it->webhook_id, "%s", t->webhook_id ? t->webhook_id : t->event_id);
    snprintf(it->endpoint_name, sizeof it->endpoint_name, "%s", t->endpoint_name);
    it->payload = xstrdup(t->payload);
    it->url = xstrdup(t->url);
    it->secret = xstrdup(t->secret);
    it->prev_secret = t->prev_secret ? xstrdup(t->prev_secret) : NULL;
    it->headers = t->headers ? xstrdup(t->headers) : NULL;
    it->settings = t->settings ? xstrdup(t->settings) : NULL;
    it->tenant_settings = t->tenant_settings ? xstrdup(t->tenant_settings) : NULL;
    it->timeout_ms = t->timeout_ms;
    it->max_inflight = t->max_inflight;
    if (t->signature && strlen(t->signature) < sizeof it->signature) {
        memcpy(it->signature, t->signature, strlen(t->signature) + 1);
        it->signed_at = t->signed_at;
    }
    d->pending++;
    send_item(d, it);
    return it;
}

void delivery_item_outcome(const struct delivery_item *it, struct delivery_outcome *out)
{
    out->succeeded = it->answered && it->kind == R_SUCCEEDED;
    out->status = it->status;
    out->answered_ms = it->answered_ms;
    out->duration_ms = (double)it->duration_us / 1000.0;
    out->excerpt = it->excerpt;
    out->error = it->error;
    out->retry_wait_ms = it->answered && it->kind == R_FAILED && it->responded
                             ? delivery_record_retry_wait(it->d->ctx->cfg, it, 1)
                             : -1;
}

void delivery_first_close(struct delivery_item *it)
{
    if (it->stage == ST_FIRST)
        it->stage = ST_CLOSED;
}

void delivery_first_settle(struct delivery *d, struct delivery_item **items, const enum delivery_fate *fates, size_t n)
{
    char **adopt = xcalloc(n + 1, sizeof *adopt);
    size_t nadopt = 0;
    char **due_ids = xcalloc(n + 1, sizeof *due_ids);
    int64_t *due = xcalloc(n + 1, sizeof *due);
    size_t ndue = 0;
    int64_t now = clock_wall_ms();
    for (size_t i = 0; i < n; i++) {
        struct delivery_item *it = items[i];
        it->stage = ST_CLOSED;
        if (fates[i] == DELIVERY_ADOPT) {
            adopt[nadopt++] = it->id;
        } else if (fates[i] == DELIVERY_RECORDED) {
            it->attempts = 1;
            report(d, it);
            d->pending--;
            item_free(it);
        } else if (fates[i] == DELIVERY_RETRY) {
            struct delivery_outcome o;
            delivery_item_outcome(it, &o);
            it->attempts = 1;
            it->next_due_ms = now + (o.retry_wait_ms > 0 ? o.retry_wait_ms : 0);
            due_ids[ndue] = xstrdup(it->id);
            due[ndue++] = it->next_due_ms;
            report(d, it);
            d->pending--;
            item_free(it);
        } else if (it->answered) {
            d->pending--;
            item_free(it);
        } else {
            it->stage = ST_FORGET; /* freed when its answer comes */
        }
    }
    if (nadopt > 0)
        sched_adopt(d->sched, adopt, nadopt);
    free(adopt);
    if (ndue > 0) /* one seed call for the pass: Redis says when, the rows are written */
        sched_seed(d->ctx, "delivery", due_ids, due, ndue, false);
    for (size_t i = 0; i < ndue; i++)
        free(due_ids[i]);
    free(due_ids);
    free(due);
    for (size_t i = 0; i < n; i++) {
        if (fates[i] != DELIVERY_ADOPT)
            continue;
        items[i]->stage = ST_CLAIMED;
        if (items[i]->answered)
            finish(d, items[i]);
    }
}

size_t delivery_pending(const struct delivery *d)
{
    return d->pending;
}

size_t delivery_inflight(const struct delivery *d)
{
    return sched_inflight(d->sched);
}

void delivery_park_fanned_out(struct delivery *d, char **ids, char **endpoint_names, size_t n)
{
    bool *done = xcalloc(n + 1, sizeof *done);
    char **group = xcalloc(n + 1, sizeof *group);
    for (size_t i = 0; i < n; i++) {
        if (done[i] || !delivery_endpoint_circuit_open(d, endpoint_names[i]))
            continue;
        size_t k = 0;
        for (size_t j = i; j < n; j++) {
            if (!done[j] && strcmp(endpoint_names[j], endpoint_names[i]) == 0) {
                done[j] = true;
                group[k++] = ids[j];
            }
        }
        circuit_park_due(d->circuit, endpoint_names[i], group, k);
    }
    free(done);
    free(group);
}

bool delivery_endpoint_circuit_open(const struct delivery *d, const char *endpoint_name)
{
    return circuit_is_open(d->circuit, endpoint_name) &&
           config_retry_for_endpoint(d->ctx->cfg, endpoint_name)->circuit;
}

size_t delivery_endpoint_backlog(const struct delivery *d, const char *endpoint_name)
{
    return http_client_key_backlog(d->http, endpoint_name);
}

void delivery_http_stats(const struct delivery *d, struct http_client_stats *out)
{
    http_client_stats(d->http, out);
}

static void client_config(const struct hookd_config *cfg, struct http_client_config *hc)
{
    *hc = (struct http_client_config){
        .ca_file = cfg->ca_file,
        .allow_private_networks = cfg->allow_private_networks,
        .max_response_bytes = EXCERPT_MAX,
        .max_inflight_total = (int)cfg->max_inflight,
        .max_inflight_per_origin = (int)(cfg->max_inflight_per_origin < INT_MAX ? cfg->max_inflight_per_origin
                                                                                : INT_MAX),
        .max_idle_total = (int)(cfg->max_idle_connections < INT_MAX ? cfg->max_idle_connections : INT_MAX),
        .max_idle_per_origin = (int)(cfg->max_idle_per_origin < INT_MAX ? cfg->max_idle_per_origin : INT_MAX),
        .user_agent = "hookd/" HOOKD_VERSION,
        .headers_at_send = headers_at_send,
    };
}

/* ---- a circuit closed: the endpoint's backlog due now ----------------------- */

struct release_job {
    struct delivery *d;
    bool opened; /* the circuit opened: park what waits; else closed: release */
    char endpoint[112];
    char **ids;
    int64_t *due;
    size_t n;
};

static void work_release(PGconn *conn, void *arg)
{
    struct release_job *job = arg;
    char err[256];
    const char *p[] = {job->endpoint};
    enum query_id q = job->opened ? Q_DELIVERY_ENDPOINT_OPEN_IDS : Q_DELIVERY_RELEASE_ENDPOINT;
    PGresult *r = conn ? query_prepared(conn, q, p, err, sizeof err) : NULL;
    if (!r) {
        log_warn("delivery.release_failed", "endpoint=%s opened=%s error=\"%s\"", job->endpoint,
                 job->opened ? "true" : "false", conn ? err : "no connection");
        return;
    }
    job->n = (size_t)PQntuples(r);
    job->ids = xcalloc(job->n + 1, sizeof *job->ids);
    job->due = xcalloc(job->n + 1, sizeof *job->due);
    for (size_t i = 0; i < job->n; i++) {
        job->ids[i] = xstrdup(PQgetvalue(r, (int)i, DELIVERY_RELEASE_ENDPOINT_ID));
        job->due[i] = job->opened ? 0 : strtoll(PQgetvalue(r, (int)i, DELIVERY_RELEASE_ENDPOINT_DUE_MS), NULL, 10);
    }
    PQclear(r);
}

static void done_release(void *arg)
{
    struct release_job *job = arg;
    log_info(job->opened ? "delivery.backlog_parked" : "delivery.backlog_released", "endpoint=%s deliveries=%zu",
             job->endpoint, job->n);
    if (job->opened && !job->d->stopping)
        circuit_park_due(job->d->circuit, job->endpoint, job->ids, job->n);
    for (size_t off = 0; !job->opened && off < job->n; off += 1000) /* seed calls of bounded size */
        sched_seed(job->d->ctx, "delivery", job->ids + off, job->due + off, job->n - off < 1000 ? job->n - off : 1000,
                   false);
    for (size_t i = 0; i < job->n; i++)
        free(job->ids[i]);
    free(job->ids);
    free(job->due);
    free(job);
}

/* circuit_closed_fn: this worker's report closed (or opened) the endpoint's
 * circuit. */
static void on_circuit_closed(void *arg, const char *endpoint_name, bool opened)
{
    struct delivery *d = arg;
    if (d->stopping)
        return;
    struct release_job *job = xcalloc(1, sizeof *job);
    job->d = d;
    job->opened = opened;
    snprintf(job->endpoint, sizeof job->endpoint, "%s", endpoint_name);
    db_pool_submit(d->ctx->db, work_release, done_release, job);
}

/* ---- an endpoint failing for circuit_disable_after: disabled ------------------ */

struct disable_job {
    struct delivery *d;
    char endpoint[112];
    char window[BACKOFF_DURATION_BUFLEN]; /* circuit_disable_after, as written in the reason */
    int64_t opened_ms;
    bool done, changed;
};

static void work_disable(PGconn *conn, void *arg)
{
    struct disable_job *job = arg;
    char err[256], opened[24];
    snprintf(opened, sizeof opened, "%lld", (long long)job->opened_ms);
    const char *p[] = {job->endpoint, opened, job->window};
    PGresult *r = conn ? query_prepared(conn, Q_DELIVERY_DISABLE_FAILING_ENDPOINT, p, err, sizeof err) : NULL;
    if (!r) {
        log_warn("delivery.disable_failed", "endpoint=%s error=\"%s\"", job->endpoint, conn ? err : "no connection");
        return;
    }
    job->done = true;
    job->changed = PQntuples(r) > 0;
    PQclear(r);
}

static void done_disable(void *arg)
{
    struct disable_job *job = arg;
    if (job->done && job->changed)
        log_warn("delivery.endpoint_disabled", "endpoint=%s reason=circuit_disable_after failing_since_ms=%lld",
                 job->endpoint, (long long)job->opened_ms);
    /* Disabled (now or before): its circuit closes, and what it parked comes
     * due, to be dead-lettered unsent as a disabled endpoint's deliveries.
     * Not disabled (Postgres refused): the circuit stays open and the next
     * interval's tick asks again. */
    if (job->done && !job->d->stopping)
        circuit_close(job->d->circuit, job->endpoint);
    free(job);
}

/* circuit_disable_fn */
static void on_circuit_disable(void *arg, const char *endpoint_name, int64_t opened_ms)
{
    struct delivery *d = arg;
    if (d->stopping)
        return;
    struct disable_job *job = xcalloc(1, sizeof *job);
    job->d = d;
    job->opened_ms = opened_ms;
    snprintf(job->endpoint, sizeof job->endpoint, "%s", endpoint_name);
    backoff_format_duration(config_retry_for_endpoint(d->ctx->cfg, endpoint_name)->circuit_disable_after_ms,
                            job->window, sizeof job->window);
    db_pool_submit(d->ctx->db, work_disable, done_disable, job);
}

/* circuit_seen_open_fn: this worker now sees the endpoint's circuit open;
 * its requests still waiting in the HTTP client's queue are not sent. */
static void on_seen_open(void *arg, const char *endpoint_name)
{
    struct delivery *d = arg;
    if (d->stopping || !delivery_endpoint_circuit_open(d, endpoint_name))
        return;
    size_t n = http_client_cancel_queued(d->http, endpoint_name);
    if (n > 0)
        log_info("delivery.unsent_parked", "endpoint=%s requests=%zu", endpoint_name, n);
}

struct delivery *delivery_new(struct hookd_ctx *ctx, struct alerter *alerter, char *err, size_t errlen)
{
    struct delivery *d = xcalloc(1, sizeof *d);
    d->ctx = ctx;
    d->alerter = alerter;
    d->dns = evdns_base_new(ctx->base, EVDNS_BASE_INITIALIZE_NAMESERVERS);
    if (!d->dns)
        d->dns = evdns_base_new(ctx->base, 0); /* no resolv.conf: IP literals and /etc/hosts only */
    struct http_client_config hc;
    client_config(ctx->cfg, &hc);
    d->http = d->dns ? http_client_new(ctx->base, d->dns, &hc, err, errlen) : NULL;
    if (!d->http) {
        if (!d->dns)
            err_set(err, errlen, "cannot start the DNS resolver");
        if (d->dns)
            evdns_base_free(d->dns, 0);
        free(d);
        return NULL;
    }
    static const struct batcher_config recorder = {sizeof(struct delivery_item *), 0, 0, 1, BATCHER_LINGER_TURN};
    for (int i = 0; i < RECORD_LANES; i++) {
        d->lanes[i] = (struct recorder_lane){.d = d,
                                             .batcher = batcher_new(ctx->base, &recorder, submit_record,
                                                                    &d->lanes[i])};
        HOOKD_ASSERT(d->lanes[i].batcher);
    }
    static const struct batcher_config unsent = {sizeof(struct delivery_item *), 0, 0, 0, BATCHER_LINGER_TURN};
    d->unsent = batcher_new(ctx->base, &unsent, submit_unsent, d);
    HOOKD_ASSERT(d->unsent);
    d->sched = sched_new(ctx, "delivery", on_claimed, d);
    d->circuit = circuit_new(ctx, sched_due_key(d->sched), sched_inflight_key(d->sched), on_circuit_closed, d);
    circuit_on_seen_open(d->circuit, on_seen_open, d);
    circuit_on_disable(d->circuit, on_circuit_disable, d);
    d->policy = delivery_policy_new(ctx);
    return d;
}

void delivery_reload(struct delivery *d)
{
    struct http_client_config hc;
    client_config(d->ctx->cfg, &hc);
    char err[256];
    if (http_client_reconfigure(d->http, &hc, err, sizeof err) != 0)
        log_error("delivery.reload_failed", "error=\"%s\" note=\"deliveries keep the previous ca_file\"", err);
}

void delivery_drain(struct delivery *d)
{
    sched_stop(d->sched);
}

void delivery_free(struct delivery *d)
{
    if (!d)
        return;
    d->stopping = true;
    for (int i = 0; i < RECORD_LANES; i++)
        batcher_stop(d->lanes[i].batcher); /* cancelled requests still gather, for the loop below */
    batcher_stop(d->unsent);
    delivery_policy_free(d->policy, dropped);
    http_client_free(d->http); /* cancelled requests land in the recorder's open batch */
    struct batcher *gathering[RECORD_LANES + 1] = {d->unsent};
    for (int i = 0; i < RECORD_LANES; i++)
        gathering[i + 1] = d->lanes[i].batcher;
    for (size_t b = 0; b < sizeof gathering / sizeof gathering[0]; b++) {
        size_t n;
        struct delivery_item **left = batcher_take(gathering[b], &n);
        for (size_t i = 0; i < n; i++)
            item_free(left[i]);
        free(left);
    }
    event_base_loop(d->ctx->base, EVLOOP_NONBLOCK); /* lets evdns release cancelled lookups */
    evdns_base_free(d->dns, 0);
    for (int i = 0; i < RECORD_LANES; i++)
        batcher_free(d->lanes[i].batcher);
    batcher_free(d->unsent);
    circuit_free(d->circuit);
    sched_free(d->sched);
    free(d);
}
