/* One queue's scheduler; see sched.h.
 *
 * Timer discipline: exactly one claim is in flight at a time. After a claim,
 * the timer is armed for 0 (the batch was full: more is due), for the
 * earliest due score (asked with ZRANGE … LIMIT 1), or for max_sleep. A wake
 * message or a verdict that frees capacity re-arms it for 0. Verdicts are
 * gathered (batcher.h) and sent as one `ack` and one `reschedule` call per
 * loop turn.
 *
 * Scores are on Postgres's clock (clock_wall_ms(), see clock.h); until this
 * worker has measured its offset to it, nothing is claimed or reaped: a
 * clock running ahead would take due items, or others' leases, early. */
#include "sched.h"

#include <event2/event.h>
#include <hiredis.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "batcher.h"
#include "log.h"
#include "loop_timer.h"
#include "clock.h"
#include "ctx.h"
#include "xmalloc.h"

#define uthash_malloc(sz) xmalloc(sz) /* allocation failure aborts in one place */
#include <uthash.h>

#define LATENESS_WINDOW 1024
#define CLOCK_WAIT_MS 100 /* before the first offset: how often to look again */

/* One verdict waiting for the end of the loop turn. */
struct verdict {
    char *id;       /* owned */
    int64_t due_ms; /* < 0: ack */
};

/* One id this worker holds (claimed or adopted, no verdict yet), keyed by
 * the id. Owned by sched->held; `count` > 1 if the same id was handed out
 * twice before its first verdict (one entry, one lease to renew). */
struct held_item {
    UT_hash_handle hh;
    unsigned count;
    char id[];
};

struct sched {
    struct hookd_ctx *ctx;
    char queue[16];
    char due_key[160], inflight_key[160], woken_key[160];
    sched_process_fn fn;
    void *arg;
    struct event *timer, *reap_timer, *renew_timer;
    struct held_item *held; /* ids claimed and not yet done: their leases are renewed */
    bool claiming, woken, stopped, starved;
    int64_t armed_at_ms; /* monotonic time the timer fires; INT64_MAX if idle */
    size_t inflight;
    struct batcher *verdicts; /* struct verdict, sent once a loop turn */
    int64_t lateness[LATENESS_WINDOW];
    size_t nlateness;
};

static void claim_in(struct sched *s, int64_t delay_ms)
{
    if (s->stopped)
        return;
    if (delay_ms < 0)
        delay_ms = 0;
    int64_t at = clock_mono_ms() + delay_ms;
    if (evtimer_pending(s->timer, NULL) && s->armed_at_ms <= at)
        return; /* already firing sooner */
    s->armed_at_ms = at;
    loop_timer_arm(s->timer, delay_ms);
}

const char *sched_due_key(const struct sched *s)
{
    return s->due_key;
}

const char *sched_inflight_key(const struct sched *s)
{
    return s->inflight_key;
}

size_t sched_inflight(const struct sched *s)
{
    return s->inflight;
}

static void on_next_due(struct redisReply *reply, void *arg)
{
    struct sched *s = arg;
    int64_t max_sleep = s->ctx->cfg->max_sleep;
    if (reply && reply->type == REDIS_REPLY_ARRAY && reply->elements == 2) {
        int64_t due = strtoll(reply->element[1]->str, NULL, 10);
        int64_t delay = due - clock_wall_ms();
        claim_in(s, delay < max_sleep ? delay : max_sleep);
        return;
    }
    claim_in(s, max_sleep);
}

static void record_lateness(struct sched *s, int64_t late)
{
    s->lateness[s->nlateness++ % LATENESS_WINDOW] = late < 0 ? 0 : late;
}

/* Items now in this worker's hands: counted, and their leases renewed. */
static void hold(struct sched *s, char **ids, size_t n)
{
    s->inflight += n;
    for (size_t i = 0; i < n; i++) {
        struct held_item *h;
        size_t len = strlen(ids[i]);
        HASH_FIND(hh, s->held, ids[i], len, h);
        if (h) {
            h->count++;
            continue;
        }
        h = xmalloc(sizeof *h + len + 1);
        h->count = 1;
        memcpy(h->id, ids[i], len + 1);
        HASH_ADD_KEYPTR(hh, s->held, h->id, len, h);
    }
}

void sched_adopt(struct sched *s, char **ids, size_t n)
{
    if (n == 0)
        return;
    hold(s, ids, n);
    char deadline[24];
    snprintf(deadline, sizeof deadline, "%lld", (long long)(clock_wall_ms() + s->ctx->cfg->lease));
    size_t argc = 3 + n;
    const char **argv = xcalloc(argc, sizeof *argv);
    argv[0] = s->due_key;
    argv[1] = s->inflight_key;
    argv[2] = deadline;
    for (size_t i = 0; i < n; i++)
        argv[3 + i] = ids[i];
    /* Redis unreachable: the rows are PENDING and due at the lease's end
     * (see relay.c), so the reconciler schedules them if this worker dies. */
    if (redis_conn_eval(s->ctx->redis, &s->ctx->scripts.adopt, NULL, NULL, 2, (int)argc, argv, NULL) != 0)
        stats_add(&s->ctx->stats, STAT_REDIS_ERRORS, 1);
    free(argv);
}

static void on_claimed(struct redisReply *reply, void *arg)
{
    struct sched *s = arg;
    s->claiming = false;
    if (!reply || reply->type != REDIS_REPLY_ARRAY) {
        if (reply && reply->type == REDIS_REPLY_ERROR)
            log_error("sched.claim_failed", "queue=%s error=\"%s\"", s->queue, reply->str);
        stats_add(&s->ctx->stats, STAT_REDIS_ERRORS, 1);
        claim_in(s, s->ctx->cfg->max_sleep);
        return;
    }
    size_t n = reply->elements / 2;
    if (n > 0) {
        char **ids = xcalloc(n, sizeof *ids);
        int64_t *due = xcalloc(n, sizeof *due);
        int64_t now = clock_wall_ms();
        for (size_t i = 0; i < n; i++) {
            ids[i] = reply->element[2 * i]->str;
            due[i] = strtoll(reply->element[2 * i + 1]->str, NULL, 10);
            record_lateness(s, now - due[i]);
        }
        hold(s, ids, n);
        s->fn(s->arg, s, ids, due, n);
        free(ids);
        free(due);
    }
    int64_t room = s->ctx->cfg->max_inflight - (int64_t)s->inflight;
    if (s->woken ||
        (n > 0 && room > 0 && n == (size_t)(s->ctx->cfg->batch_size < room ? s->ctx->cfg->batch_size : room))) {
        s->woken = false;
        claim_in(s, 0);
        return;
    }
    if (room <= 0) {
        s->starved = true; /* a verdict re-arms */
        return;
    }
    if (redis_conn_cmdf(s->ctx->redis, on_next_due, s, "ZRANGE %s 0 0 WITHSCORES", s->due_key) != 0)
        claim_in(s, s->ctx->cfg->max_sleep);
}

static void claim(struct sched *s)
{
    const struct hookd_config *cfg = s->ctx->cfg;
    if (s->stopped || s->claiming)
        return;
    if (!redis_conn_ready(s->ctx->redis)) {
        claim_in(s, cfg->max_sleep);
        return;
    }
    if (!clock_synced()) {
        claim_in(s, cfg->max_sleep < CLOCK_WAIT_MS ? cfg->max_sleep : CLOCK_WAIT_MS);
        return;
    }
    int64_t room = cfg->max_inflight - (int64_t)s->inflight;
    if (room <= 0) {
        s->starved = true;
        return;
    }
    int64_t n = cfg->batch_size < room ? cfg->batch_size : room;
    int64_t now = clock_wall_ms();
    char now_s[24], n_s[24], lease_s[24];
    snprintf(now_s, sizeof now_s, "%lld", (long long)now);
    snprintf(n_s, sizeof n_s, "%lld", (long long)n);
    snprintf(lease_s, sizeof lease_s, "%lld", (long long)(now + cfg->lease));
    const char *argv[] = {s->due_key, s->inflight_key, now_s, n_s, lease_s};
    if (redis_conn_eval(s->ctx->redis, &s->ctx->scripts.claim, on_claimed, s, 2, 5, argv, NULL) != 0) {
        claim_in(s, cfg->max_sleep);
        return;
    }
    s->claiming = true;
}

static void on_timer(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct sched *s = arg;
    s->armed_at_ms = INT64_MAX;
    claim(s);
}

static void on_reaped(struct redisReply *reply, void *arg)
{
    struct sched *s = arg;
    if (reply && reply->type == REDIS_REPLY_ARRAY && reply->elements > 0) {
        log_info("sched.reaped", "queue=%s count=%zu", s->queue, reply->elements);
        claim_in(s, 0);
    }
}

static void on_reap_timer(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct sched *s = arg;
    if (!redis_conn_ready(s->ctx->redis) || s->stopped || !clock_synced())
        return;
    char now_s[24];
    snprintf(now_s, sizeof now_s, "%lld", (long long)clock_wall_ms());
    const char *argv[] = {s->inflight_key, s->due_key, now_s, "1000"};
    if (redis_conn_eval(s->ctx->redis, &s->ctx->scripts.reap, on_reaped, s, 2, 4, argv, NULL) != 0)
        stats_add(&s->ctx->stats, STAT_REDIS_ERRORS, 1);
}

/* batcher_submit_fn: sends a loop turn's verdicts. If Redis is unreachable
 * they are dropped: the items stay in inflight, their lease expires, they
 * are reaped and re-evaluated, and Postgres (already terminal) turns that
 * into an ack. */
static void on_verdicts(void *arg, void *items, size_t n, size_t bytes)
{
    (void)bytes;
    struct sched *s = arg;
    struct hookd_ctx *ctx = s->ctx;
    struct verdict *v = items;
    size_t nacks = 0;
    for (size_t i = 0; i < n; i++)
        nacks += v[i].due_ms < 0;
    size_t nres = n - nacks;
    if (nacks > 0) {
        size_t argc = 2 + nacks, k = 2;
        const char **argv = xcalloc(argc, sizeof *argv);
        argv[0] = s->inflight_key;
        argv[1] = s->woken_key;
        for (size_t i = 0; i < n; i++)
            if (v[i].due_ms < 0)
                argv[k++] = v[i].id;
        if (redis_conn_eval(ctx->redis, &ctx->scripts.ack, NULL, NULL, 2, (int)argc, argv, NULL) != 0)
            stats_add(&ctx->stats, STAT_REDIS_ERRORS, 1);
        free(argv);
    }
    if (nres > 0) {
        size_t argc = 3 + 2 * nres, j = 0;
        const char **argv = xcalloc(argc, sizeof *argv);
        char(*scores)[24] = xcalloc(nres, sizeof *scores);
        argv[0] = s->inflight_key;
        argv[1] = s->due_key;
        argv[2] = s->woken_key;
        for (size_t i = 0; i < n; i++) {
            if (v[i].due_ms < 0)
                continue;
            snprintf(scores[j], sizeof scores[j], "%lld", (long long)v[i].due_ms);
            argv[3 + 2 * j] = v[i].id;
            argv[4 + 2 * j] = scores[j];
            j++;
        }
        if (redis_conn_eval(ctx->redis, &ctx->scripts.reschedule, NULL, NULL, 3, (int)argc, argv, NULL) != 0)
            stats_add(&ctx->stats, STAT_REDIS_ERRORS, 1);
        free(scores);
        free(argv);
    }
    for (size_t i = 0; i < n; i++)
        free(v[i].id);
    free(items);
}

static void forget_held(struct sched *s, const char *id)
{
    struct held_item *h;
    HASH_FIND_STR(s->held, id, h);
    if (h && --h->count == 0) {
        HASH_DEL(s->held, h);
        free(h);
    }
}

/* Work can outlast a lease (an endpoint with a long timeout, a queue in
 * front of it, a slow database): every lease/3 the deadlines of the items
 * this worker still holds are pushed out, so only a dead worker's items are
 * ever reaped. XX: an item acked meanwhile is not re-added. */
static void on_renew_timer(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct sched *s = arg;
    size_t nheld = HASH_COUNT(s->held);
    if (nheld == 0 || !redis_conn_ready(s->ctx->redis))
        return;
    char deadline[24];
    snprintf(deadline, sizeof deadline, "%lld", (long long)(clock_wall_ms() + s->ctx->cfg->lease));
    size_t argc = 3 + 2 * nheld;
    const char **argv = xcalloc(argc, sizeof *argv);
    argv[0] = "ZADD";
    argv[1] = s->inflight_key;
    argv[2] = "XX";
    size_t i = 0;
    for (struct held_item *h = s->held; h; h = h->hh.next, i++) {
        argv[3 + 2 * i] = deadline;
        argv[4 + 2 * i] = h->id;
    }
    if (redis_conn_cmd(s->ctx->redis, NULL, NULL, (int)argc, argv, NULL) != 0)
        stats_add(&s->ctx->stats, STAT_REDIS_ERRORS, 1);
    free(argv);
}

void sched_done(struct sched *s, const char *id, int64_t next_due_ms)
{
    HOOKD_ASSERT(s->inflight > 0);
    s->inflight--;
    forget_held(s, id);
    struct verdict v = {xstrdup(id), next_due_ms < 0 ? -1 : next_due_ms};
    batcher_add(s->verdicts, &v, 0); /* sent at the end of the loop turn */
    if (next_due_ms >= 0)
        claim_in(s, next_due_ms - clock_wall_ms());
    if (s->starved) {
        s->starved = false;
        claim_in(s, 0);
    }
}

void sched_wake(struct sched *s)
{
    if (s->claiming)
        s->woken = true;
    else
        claim_in(s, 0);
}

void sched_stop(struct sched *s)
{
    s->stopped = true;
    evtimer_del(s->timer);
    evtimer_del(s->reap_timer);
}

/* `<prefix>:wake:<queue>`: new work is due now. */
static void on_wake(const char *channel, const char *msg, size_t len, void *arg)
{
    (void)channel;
    (void)msg;
    (void)len;
    struct sched *s = arg;
    if (!s->stopped)
        sched_wake(s);
}

/* A reconnect may mean a restarted, empty Redis: claim at once (the
 * reconciler rebuilds the schedule). */
static void on_redis_ready(void *arg)
{
    sched_wake(arg);
}

struct sched *sched_new(struct hookd_ctx *ctx, const char *queue, sched_process_fn fn, void *arg)
{
    struct sched *s = xcalloc(1, sizeof *s);
    s->ctx = ctx;
    snprintf(s->queue, sizeof s->queue, "%s", queue);
    char suffix[64];
    snprintf(suffix, sizeof suffix, "{%s}:due", queue);
    ctx_key(ctx, suffix, s->due_key, sizeof s->due_key);
    snprintf(suffix, sizeof suffix, "{%s}:inflight", queue);
    ctx_key(ctx, suffix, s->inflight_key, sizeof s->inflight_key);
    snprintf(suffix, sizeof suffix, "{%s}:woken", queue);
    ctx_key(ctx, suffix, s->woken_key, sizeof s->woken_key);
    s->fn = fn;
    s->arg = arg;
    s->armed_at_ms = INT64_MAX;
    s->timer = evtimer_new(ctx->base, on_timer, s);
    struct batcher_config bc = {sizeof(struct verdict), 0, 0, 0, BATCHER_LINGER_TURN};
    s->verdicts = batcher_new(ctx->base, &bc, on_verdicts, s);
    HOOKD_ASSERT(s->verdicts);
    s->reap_timer = event_new(ctx->base, -1, EV_PERSIST, on_reap_timer, s);
    int64_t reap_ms = ctx->cfg->lease / 2 < 1000 ? ctx->cfg->lease / 2 : 1000;
    loop_timer_arm(s->reap_timer, reap_ms);
    s->renew_timer = event_new(ctx->base, -1, EV_PERSIST, on_renew_timer, s);
    int64_t renew_ms = ctx->cfg->lease / 3 > 0 ? ctx->cfg->lease / 3 : 1;
    loop_timer_arm(s->renew_timer, renew_ms);
    char channel[160];
    snprintf(suffix, sizeof suffix, "wake:%s", queue);
    redis_conn_subscribe(ctx->redis_sub, ctx_key(ctx, suffix, channel, sizeof channel), on_wake, s);
    redis_conn_on_ready(ctx->redis, on_redis_ready, s);
    claim_in(s, 0);
    return s;
}

void sched_free(struct sched *s)
{
    if (!s)
        return;
    redis_conn_off_ready(s->ctx->redis, on_redis_ready, s);
    batcher_flush(s->verdicts);
    batcher_free(s->verdicts);
    event_free(s->timer);
    event_free(s->reap_timer);
    event_free(s->renew_timer);
    struct held_item *h, *tmp;
    HASH_ITER(hh, s->held, h, tmp)
    {
        HASH_DEL(s->held, h);
        free(h);
    }
    free(s);
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

void sched_lateness(const struct sched *s, int64_t *p50, int64_t *p99)
{
    size_t n = s->nlateness < LATENESS_WINDOW ? s->nlateness : LATENESS_WINDOW;
    *p50 = *p99 = 0;
    if (n == 0)
        return;
    int64_t *copy = xmalloc(n * sizeof *copy);
    memcpy(copy, s->lateness, n * sizeof *copy);
    qsort(copy, n, sizeof *copy, cmp_i64);
    *p50 = copy[n / 2];
    *p99 = copy[(n * 99) / 100 < n ? (n * 99) / 100 : n - 1];
    free(copy);
}

void sched_seed(struct hookd_ctx *ctx, const char *queue, char **ids, const int64_t *due_ms, size_t n,
                bool only_missing)
{
    if (n == 0 || !redis_conn_ready(ctx->redis))
        return;
    char due_key[160], inflight_key[160], woken_key[160], parked_key[160], open_key[160], channel[160], suffix[64];
    snprintf(suffix, sizeof suffix, "{%s}:due", queue);
    ctx_key(ctx, suffix, due_key, sizeof due_key);
    snprintf(suffix, sizeof suffix, "{%s}:inflight", queue);
    ctx_key(ctx, suffix, inflight_key, sizeof inflight_key);
    snprintf(suffix, sizeof suffix, "{%s}:woken", queue);
    ctx_key(ctx, suffix, woken_key, sizeof woken_key);
    snprintf(suffix, sizeof suffix, "{%s}:parked_ids", queue); /* the delivery queue's circuits (circuit.h) */
    ctx_key(ctx, suffix, parked_key, sizeof parked_key);
    snprintf(suffix, sizeof suffix, "{%s}:circuit:open", queue);
    ctx_key(ctx, suffix, open_key, sizeof open_key);
    snprintf(suffix, sizeof suffix, "wake:%s", queue);
    ctx_key(ctx, suffix, channel, sizeof channel);
    size_t argc = 6 + 2 * n;
    const char **argv = xcalloc(argc, sizeof *argv);
    char(*scores)[24] = xcalloc(n, sizeof *scores);
    argv[0] = due_key;
    argv[1] = inflight_key;
    argv[2] = woken_key;
    argv[3] = parked_key;
    argv[4] = open_key;
    argv[5] = only_missing ? "only_missing" : "set";
    for (size_t i = 0; i < n; i++) {
        snprintf(scores[i], sizeof scores[i], "%lld", (long long)due_ms[i]);
        argv[6 + 2 * i] = ids[i];
        argv[7 + 2 * i] = scores[i];
    }
    if (redis_conn_eval(ctx->redis, &ctx->scripts.seed, NULL, NULL, 5, (int)argc, argv, NULL) != 0 ||
        redis_conn_cmdf(ctx->redis, NULL, NULL, "PUBLISH %s 1", channel) != 0)
        stats_add(&ctx->stats, STAT_REDIS_ERRORS, 1);
    free(argv);
    free(scores);
}
