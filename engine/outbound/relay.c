/* Outbox fan-out with first attempts; see relay.h.
 *
 * A pass runs on one of the relay's lanes: a DB thread with a connection of
 * its own, so that the transaction its first job opens is still open when
 * its second job runs. The LISTEN connection lives on a thread too (libpq
 * blocks while it waits) and wakes the loop with a loop_notify, as the DB
 * pool does. */
#include "outbound.h"

#include <event2/event.h>
#include <openssl/crypto.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api_id.h"
#include "clock.h"
#include "config.h"
#include "db.h"
#include "delivery.h"
#include "delivery_policy.h"
#include "endpoint_match.h"
#include "errbuf.h"
#include "keyindex.h"
#include "log.h"
#include "loop_notify.h"
#include "loop_timer.h"
#include "query.h"
#include "sched.h"
#include "ctx.h"
#include "xmalloc.h"

/* Deliveries per pass: a pass claims the relay's batch (FANOUT_BATCH_N at
 * most, see below) divided by the deliveries per event of the last claim,
 * in events. Until a claim has told that ratio, a pass claims only
 * FANOUT_PROBE_N events: FANOUT_BATCH_N events to tenants with several
 * endpoints each make several times as many deliveries, more than a window
 * (first_attempt_window) or INLINE_MAX can hold, and what a pass cannot
 * send inline goes to the regular path, whose extra work slows the passes
 * after it. */
#define FANOUT_BATCH_N 1000
#define FANOUT_PROBE_N 32
/* The deliveries per pass shrink when the receivers or Postgres slow down:
 * a pass whose window ran out halves them for the next passes (down to
 * FANOUT_BATCH_MIN), and each pass whose answers all came within half the
 * window adds FANOUT_BATCH_STEP back (up to FANOUT_BATCH_N). What a window
 * leaves on the wire is finished by the regular path, which costs Postgres
 * more per delivery; with passes of a fixed size, a slow spell would make
 * that extra work slow the next passes until their windows ran out too, and
 * the relay would stay slow after the spell ended. */
#define FANOUT_BATCH_MIN 100
#define FANOUT_BATCH_STEP 100
/* Passes at once: while one waits for its receivers, another claims or
 * commits. They take disjoint events (SKIP LOCKED). */
#define LANES 2
/* First attempts are made inline only while this worker has fewer than
 * INLINE_MAX deliveries in hand, and fewer than INLINE_PER_ENDPOINT waiting
 * for the same endpoint; past that (a slow endpoint, a flood), new
 * deliveries are written PENDING and scheduled in Redis, as retries are. */
#define INLINE_MAX 4000
/* At most this many claims in a row start after the other lane's pass;
 * then one starts from the oldest unfanned event again (after the mark once
 * there is one, see RESCAN_MS), as does the one after a claim that came
 * back short. */
#define BOUNDED_MAX 3
/* Claims start after a mark: the first event of the last claim that found
 * any (everything older was fanned out or is held by the other lane's
 * pass). The unfanned index keeps an entry for every event fanned out since
 * the last VACUUM, and while any transaction can still see those rows
 * unfanned (a long transaction, an ANALYZE), a walk from the oldest event
 * visits each of them in the heap: after a storm, every claim would be slow.
 *
 * What is left behind the mark (a transaction that committed later than its
 * created_at, a pass that rolled back) is claimed by relay_claim_before: at
 * most every RESCAN_MS (again at once while it comes back full), and at most
 * every RESCAN_DUTY times as long as its last walk took, so that a slow walk
 * takes at most a tenth of a lane's time. */
#define RESCAN_MS 1000
#define RESCAN_DUTY 10
#define INLINE_PER_ENDPOINT 2000

/* While events keep coming the relay polls every ACTIVE_POLL_MS and tells
 * the outbox trigger not to NOTIFY (sql/0008: a NOTIFY serialises the
 * application's commits); after IDLE_AFTER_MS without work it listens again.
 * An active relay re-asserts its state every REASSERT_MS, in case another
 * relay that went idle set it back. */
#define ACTIVE_POLL_MS 5
#define IDLE_AFTER_MS 250
#define REASSERT_MS 1000
/* After a pass that failed (Postgres down, the settle refused): the next one
 * waits this long. */
#define FAILED_PASS_PAUSE_MS 1000

/* The statements of a pass (sql/queries/relay_*.sql): relay_endpoints and
 * relay_claim or relay_claim_after, then relay_settle (and relay_inserted
 * after a conflict), all in the claim's transaction. */
_Static_assert((int)RELAY_CLAIM_ID == (int)RELAY_CLAIM_AFTER_ID &&
                   (int)RELAY_CLAIM_EVENT_TYPE == (int)RELAY_CLAIM_AFTER_EVENT_TYPE &&
                   (int)RELAY_CLAIM_PAYLOAD == (int)RELAY_CLAIM_AFTER_PAYLOAD &&
                   (int)RELAY_CLAIM_TID == (int)RELAY_CLAIM_AFTER_TID &&
                   (int)RELAY_CLAIM_CHANNELS == (int)RELAY_CLAIM_AFTER_CHANNELS &&
                   (int)RELAY_CLAIM_DELIVER_MS == (int)RELAY_CLAIM_AFTER_DELIVER_MS &&
                   (int)RELAY_CLAIM_LEGACY_WEBHOOK_ID == (int)RELAY_CLAIM_AFTER_LEGACY_WEBHOOK_ID,
               "read_claim reads both claims alike");
_Static_assert((int)RELAY_CLAIM_ID == (int)RELAY_CLAIM_BEFORE_ID &&
                   (int)RELAY_CLAIM_EVENT_TYPE == (int)RELAY_CLAIM_BEFORE_EVENT_TYPE &&
                   (int)RELAY_CLAIM_PAYLOAD == (int)RELAY_CLAIM_BEFORE_PAYLOAD &&
                   (int)RELAY_CLAIM_TID == (int)RELAY_CLAIM_BEFORE_TID &&
                   (int)RELAY_CLAIM_CHANNELS == (int)RELAY_CLAIM_BEFORE_CHANNELS &&
                   (int)RELAY_CLAIM_DELIVER_MS == (int)RELAY_CLAIM_BEFORE_DELIVER_MS &&
                   (int)RELAY_CLAIM_LEGACY_WEBHOOK_ID == (int)RELAY_CLAIM_BEFORE_LEGACY_WEBHOOK_ID,
               "read_claim reads the three claims alike");

/* relay_settle's parameters, in order. */
enum {
    P_ID,
    P_EVENT,
    P_ENDPOINT,
    P_CODE,
    P_AT,
    P_DUR,
    P_EXCERPT,
    P_WAIT,
    P_EVENTS,
    P_WORKER,
    P_ERROR,
    P_TIDS,
    NPARAMS
};

struct pass;

struct lane {
    struct db_pool *db; /* one thread, one connection */
    struct pass *pass;  /* running on it, or NULL */
};

struct relay {
    struct hookd_ctx *ctx;
    struct delivery *delivery; /* borrowed: sends and records the first attempts */
    struct lane lanes[LANES];
    pthread_t listener;
    atomic_bool stopping;
    bool listener_started, closed;
    struct loop_notify *notify; /* the LISTEN thread -> loop: new outbox events */
    struct event *poll_ev, *active_ev;
    bool active;                       /* polling fast, trigger told not to NOTIFY */
    int set_listening;                 /* for the next pass: -1 leave, 0 / 1 set hookd_relay_state.listening */
    int64_t last_work_ms, asserted_ms; /* monotonic */
    int running;                       /* passes */
    bool again;
    size_t per_event;       /* deliveries per event of the last claim, at least 1; 0: none yet */
    long batch;             /* deliveries per pass, FANOUT_BATCH_MIN..FANOUT_BATCH_N */
    int bounded_run;        /* claims in a row that started after another pass */
    char mark_id[40];       /* the first event of the last claim that found any, "" if none */
    int64_t rescan_ms;      /* monotonic: when the last claim before the mark began */
    bool rescan_again;      /* the last one came back full */
    int64_t rescan_cost_ms; /* how long the last one took */
};

/* One (event, endpoint) of a pass. */
struct row {
    char id[40], event_id[40], endpoint_id[40];
    char *payload, *name, *url, *secret, *prev_secret;
    char *headers;                    /* custom headers (JSON), NULL: none */
    char *settings, *tenant_settings; /* the endpoint's and its tenant's settings (JSON), NULL: none */
    char webhook_id[48];              /* the event id, or a tenant message's msg_ id */
    int timeout_ms, max_inflight;
    bool inline_ok;                         /* no rateLimit, not ordered (delivery_policy.h) */
    int64_t due_ms;                         /* a message's deliverAt (wall ms) still ahead; 0: now */
    char signature[DELIVERY_SIGNATURE_MAX]; /* signed on the lane's thread, off the loop */
    int64_t signed_at;
    struct delivery_item *item; /* NULL: not sent inline */
    /* the outcome when the window closed (copied: the settle job reads it
     * on the lane's thread while a late answer may still change the item) */
    bool succeeded;
    int status;
    int64_t answered_ms;
    double duration_ms;
    char *excerpt;
    char *error;           /* a failure written RETRYING with its attempt (retry_wait_ms >= 0) */
    int64_t retry_wait_ms; /* -1: not a plain failure to retry */
    bool inserted;
};

struct pass {
    struct relay *r;
    struct lane *lane;
    int set_listening;
    long limit;
    bool bounded;        /* claims after the event after_id */
    bool marked;         /* ... which is the mark (RESCAN_MS), not another pass's last event */
    bool rescan;         /* claims before the mark, after_id (relay_claim_before) */
    int64_t started_ms;  /* monotonic */
    int64_t claimed_ms;  /* monotonic: the claim came back */
    int64_t closed_ms;   /* monotonic: the window closed */
    bool window_ran_out; /* first_attempt_window closed it, not the last answer */
    char after_id[40];   /* the other lane's last event, or the mark */
    char last_id[40];    /* this claim's last event, "" if none */
    char first_id[40];   /* this claim's first event, "" if none */
    bool holds_full;     /* claimed a full batch, holds it (loop) */
    struct claimed_event {
        char id[40], tid[32];
    } * events; /* claimed, distinct */
    size_t nevents;
    struct row *rows;
    size_t nrows;
    bool in_tx;   /* the claim's transaction is open on the lane */
    bool abort;   /* roll it back instead of settling */
    bool sending; /* posting: answers are only counted */
    bool closed;
    size_t next; /* rows posted so far (in chunks, see send_first) */
    size_t nsent, nanswered;
    struct event *window_ev, *send_ev;
    int64_t lease_ms;
    char worker_id[96];
    char *params[NPARAMS];
    int lengths[NPARAMS], formats[NPARAMS];
    bool ok;
    char err[256];
};

static void start_pass(struct relay *r);

static int cmp_event(const void *a, const void *b)
{
    const struct claimed_event *x = a, *y = b;
    return strcmp(x->id, y->id);
}

static void rows_free(struct pass *p)
{
    for (size_t i = 0; i < p->nrows; i++) {
        struct row *row = &p->rows[i];
        free(row->payload);
        free(row->name);
        free(row->url);
        free(row->headers);
        free(row->settings);
        free(row->tenant_settings);
        if (row->secret)
            OPENSSL_cleanse(row->secret, strlen(row->secret));
        if (row->prev_secret)
            OPENSSL_cleanse(row->prev_secret, strlen(row->prev_secret));
        OPENSSL_cleanse(row->signature, sizeof row->signature);
        free(row->secret);
        free(row->prev_secret);
        free(row->excerpt);
        free(row->error);
    }
    free(p->rows);
    p->rows = NULL;
}

/* Whether a lane's pass is a claim before the mark (one at a time). */
static bool rescanning(const struct relay *r)
{
    for (int i = 0; i < LANES; i++)
        if (r->lanes[i].pass && r->lanes[i].pass->rescan)
            return true;
    return false;
}

/* ---- 1. claim (lane thread) ------------------------------------------------- */

/* The endpoints' rows (one per endpoint) and the claimed events: one row
 * per event and matching endpoint, in the events' order. Event-type filters
 * are globs ('*' matches any run), as in `[retry event:GLOB]`. */
/* The webhook-id of claimed event i (id): a tenant's message's API id (what
 * hookd_webhook_id gives, without hookd_api_id's 70 µs a row), in the
 * legacy form for a message older than the current form, so that
 * receivers deduping on it see what they saw before; the event id itself
 * for an event without a tenant. */
static void webhook_id(PGresult *evs, int i, const char *id, char *out, size_t outlen)
{
    if (PQgetisnull(evs, i, RELAY_CLAIM_TENANT_ID))
        snprintf(out, outlen, "%s", id);
    else if (strcmp(PQgetvalue(evs, i, RELAY_CLAIM_LEGACY_WEBHOOK_ID), "t") == 0
                 ? api_id_legacy_of_uuid("msg", id, out, outlen) != 0
                 : api_id_of_uuid("msg", id, out, outlen) != 0)
        snprintf(out, outlen, "%s", id);
}

static void read_claim(struct pass *p, PGresult *eps, PGresult *evs)
{
    int nev = PQntuples(evs), nendpoints = PQntuples(eps);
    if (nev > 0) { /* in claim order: the oldest, the newest */
        snprintf(p->first_id, sizeof p->first_id, "%s", PQgetvalue(evs, 0, RELAY_CLAIM_ID));
        snprintf(p->last_id, sizeof p->last_id, "%s", PQgetvalue(evs, nev - 1, RELAY_CLAIM_ID));
    }
    struct endpoint_match *m = endpoint_match_new(eps);
    p->events = xcalloc((size_t)nev + 1, sizeof *p->events);
    p->rows = xcalloc((size_t)nev * (size_t)nendpoints + 1, sizeof *p->rows);
    for (int i = 0; i < nev; i++) {
        struct claimed_event *e = &p->events[p->nevents++];
        snprintf(e->id, sizeof e->id, "%s", PQgetvalue(evs, i, RELAY_CLAIM_ID));
        snprintf(e->tid, sizeof e->tid, "%s", PQgetvalue(evs, i, RELAY_CLAIM_TID));
        if (PQgetisnull(evs, i, RELAY_CLAIM_PAYLOAD)) {
            /* its payload expired before its fan-out (relay_claim.sql): fanned
             * out with no delivery, as Svix's worker sends nothing then */
            log_debug("relay.payload_expired", "event=%s", e->id);
            continue;
        }
        const char *type = PQgetvalue(evs, i, RELAY_CLAIM_EVENT_TYPE);
        int lo, hi; /* the event's tenant's endpoints (endpoint_match.h) */
        endpoint_match_range(m, PQgetvalue(evs, i, RELAY_CLAIM_TENANT_ID), &lo, &hi);
        for (int f = lo; f < hi; f++) {
            if (!endpoint_match_row(m, f, i, type, PQgetvalue(evs, i, RELAY_CLAIM_PAYLOAD),
                                    PQgetisnull(evs, i, RELAY_CLAIM_CHANNELS)
                                        ? NULL
                                        : PQgetvalue(evs, i, RELAY_CLAIM_CHANNELS)))
                continue;
            struct row *row = &p->rows[p->nrows++];
            snprintf(row->event_id, sizeof row->event_id, "%s", e->id);
            webhook_id(evs, i, e->id, row->webhook_id, sizeof row->webhook_id);
            row->payload = xstrdup(PQgetvalue(evs, i, RELAY_CLAIM_PAYLOAD));
            snprintf(row->endpoint_id, sizeof row->endpoint_id, "%s", PQgetvalue(eps, f, RELAY_ENDPOINTS_ID));
            row->name = xstrdup(PQgetvalue(eps, f, RELAY_ENDPOINTS_NAME));
            row->url = xstrdup(PQgetvalue(eps, f, RELAY_ENDPOINTS_URL));
            row->secret = xstrdup(PQgetvalue(eps, f, RELAY_ENDPOINTS_SECRET));
            row->prev_secret = PQgetisnull(eps, f, RELAY_ENDPOINTS_PREVIOUS_SECRET)
                                   ? NULL
                                   : xstrdup(PQgetvalue(eps, f, RELAY_ENDPOINTS_PREVIOUS_SECRET));
            row->timeout_ms = atoi(PQgetvalue(eps, f, RELAY_ENDPOINTS_TIMEOUT_MS));
            row->max_inflight = atoi(PQgetvalue(eps, f, RELAY_ENDPOINTS_MAX_INFLIGHT));
            row->headers = PQgetisnull(eps, f, RELAY_ENDPOINTS_HEADERS)
                               ? NULL
                               : xstrdup(PQgetvalue(eps, f, RELAY_ENDPOINTS_HEADERS));
            row->settings = query_value_dup(eps, f, RELAY_ENDPOINTS_SETTINGS);
            row->tenant_settings = query_value_dup(eps, f, RELAY_ENDPOINTS_TENANT_SETTINGS);
            row->inline_ok = delivery_policy_inline_ok(atoi(PQgetvalue(eps, f, RELAY_ENDPOINTS_RATE_LIMIT)),
                                                       PQgetvalue(eps, f, RELAY_ENDPOINTS_ORDERED)[0] == 't');
            row->due_ms = PQgetisnull(evs, i, RELAY_CLAIM_DELIVER_MS)
                              ? 0
                              : strtoll(PQgetvalue(evs, i, RELAY_CLAIM_DELIVER_MS), NULL, 10);
        }
    }
    endpoint_match_free(m);
    /* SKIP LOCKED never returns a row twice, but an id list for `= ANY`
     * must not depend on that */
    qsort(p->events, p->nevents, sizeof p->events[0], cmp_event);
    size_t k = 0;
    for (size_t i = 0; i < p->nevents; i++)
        if (k == 0 || strcmp(p->events[k - 1].id, p->events[i].id) != 0)
            p->events[k++] = p->events[i];
    p->nevents = k;
}

/* Runs fixed commands (no parameters) in one round trip. */
static int simple(PGconn *conn, const char *sql, char *err, size_t errlen)
{
    PGresult *res = PQexec(conn, sql);
    bool ok = PQresultStatus(res) == PGRES_COMMAND_OK;
    if (!ok) {
        const char *msg = PQerrorMessage(conn);
        err_set(err, errlen, "%.*s", (int)strcspn(msg, "\n"), msg);
        (void)db_unavailable(conn, res); /* a failover: the lane reconnects */
    }
    PQclear(res);
    return ok ? 0 : -1;
}

static void work_claim(PGconn *conn, void *arg)
{
    struct pass *p = arg;
    if (!conn) {
        snprintf(p->err, sizeof p->err, "database unavailable");
        return;
    }
    if (p->set_listening >= 0) {
        const char *v[] = {p->set_listening ? "true" : "false"};
        PGresult *res = query_exec(conn, Q_RELAY_SET_LISTENING, v, p->err, sizeof p->err);
        if (!res)
            return;
        PQclear(res);
    }
    /* The queue's partial index, walked in order (see db.h): with statistics
     * from a smaller outbox, a bitmap scan and a sort of the whole backlog
     * per pass made a pass over n events cost O(backlog). */
    p->in_tx = true;
    /* Generic plans for the whole transaction: the claim's is the index walk;
     * the settle's finds events by tuple id and deliveries by primary key,
     * which custom plans for a pass's arrays turn into sequential scans
     * (after planning anew on every pass). */
    if (simple(conn,
               "BEGIN; SET LOCAL enable_bitmapscan = off; SET LOCAL enable_sort = off;"
               " SET LOCAL plan_cache_mode = force_generic_plan",
               p->err, sizeof p->err) != 0)
        goto fail;
    char limit[24];
    snprintf(limit, sizeof limit, "%ld", p->limit);
    const char *pl[] = {limit, p->after_id};
    /* The events first, then the endpoints: each statement has its own
     * snapshot, and endpoints read before the claim could miss one that
     * committed before a claimed event did (an endpoint created through
     * the API just before a message). */
    enum query_id claim = p->rescan ? Q_RELAY_CLAIM_BEFORE : p->bounded ? Q_RELAY_CLAIM_AFTER : Q_RELAY_CLAIM;
    PGresult *evs = query_prepared(conn, claim, pl, p->err, sizeof p->err);
    if (!evs)
        goto fail;
    struct db_array tenants; /* the endpoints of the claimed events' tenants only */
    endpoint_match_tenants(evs, RELAY_CLAIM_TENANT_ID, &tenants);
    const char *pt[] = {tenants.buf};
    const int lt[] = {(int)tenants.len}, ft[] = {1};
    PGresult *eps = query_prepared_fmt(conn, Q_RELAY_ENDPOINTS, pt, lt, ft, p->err, sizeof p->err);
    free(tenants.buf);
    if (!eps) {
        PQclear(evs);
        goto fail;
    }
    read_claim(p, eps, evs);
    PQclear(eps);
    PQclear(evs);
    /* The settle's generic plan is made once per connection, when a fresh
     * partition may still be nearly empty: with sequential scans allowed it
     * kept scanning the partition it thought small (whole seconds per pass
     * once it had filled); off, the events are always found by tuple id. */
    if (simple(conn, "RESET enable_bitmapscan; RESET enable_sort; SET LOCAL enable_seqscan = off", p->err,
               sizeof p->err) != 0)
        goto fail;
    if (p->nrows > 0) {
        /* A delivery lives in its event's partition (relay_settle.sql), so its id
         * carries its event's clock (sql/0018_ids_carry_partition.sql): a version 7
         * event id's first 48 bits; the ids of one pass sort together, at the right
         * edge of the index. An event id of another version tells no part_at, and
         * the delivery's id is then a version 4 one (never pruned). */
        struct api_id_batch ids;
        if (api_id_batch_init(&ids, p->nrows, clock_wall_ms()) != 0) {
            snprintf(p->err, sizeof p->err, "no random bytes for delivery ids");
            goto fail;
        }
        for (size_t i = 0; i < p->nrows; i++)
            api_id_batch_uuid(&ids, i, p->rows[i].event_id, p->rows[i].id);
        api_id_batch_release(&ids);
        int64_t now = clock_wall_ms() / 1000;
        for (size_t i = 0; i < p->nrows; i++) { /* a bad secret: left unsigned, the send reports it */
            struct row *row = &p->rows[i];
            if (delivery_sign(row->secret, row->prev_secret, row->webhook_id, now, row->payload, row->signature) == 0)
                row->signed_at = now;
        }
    }
    if (p->nevents == 0) {
        p->in_tx = false;
        if (db_command(conn, "COMMIT", p->err, sizeof p->err) != 0)
            return;
    }
    p->ok = true;
    return;
fail:
    db_rollback(conn);
    p->in_tx = false;
}

/* ---- 2. first attempts (loop) -------------------------------------------------- */

static void close_window(struct pass *p);

static void on_answered(struct delivery_item *it, void *arg)
{
    (void)it;
    struct pass *p = arg;
    p->nanswered++;
    if (!p->sending && p->next == p->nrows && p->nanswered == p->nsent)
        close_window(p);
}

static void on_window(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct pass *p = arg;
    p->window_ran_out = !p->closed;
    close_window(p);
}

/* `first_attempt_window` is how long a pass waits for its first attempts
 * before it commits anyway (what is still on the wire then is written
 * PENDING and finished by the regular path): it bounds how long a pass holds
 * its events. 0: no first attempts in the pass. */
static bool inline_ok(struct relay *r, const struct row *row)
{
    struct delivery *d = r->delivery;
    return row->inline_ok && row->due_ms == 0 && r->ctx->cfg->first_attempt_window > 0 &&
           delivery_pending(d) < INLINE_MAX && delivery_endpoint_backlog(d, row->name) < INLINE_PER_ENDPOINT &&
           !delivery_endpoint_circuit_open(d, row->name);
}

/* Requests posted per loop turn: posting a whole pass at once kept the
 * loop from the answers of the requests already on the wire for
 * milliseconds, while their connections sat idle. Far more than the
 * connections of one endpoint, so its queue never runs dry in between. */
#define SEND_CHUNK 64

static void send_first(struct pass *p)
{
    struct relay *r = p->r;
    if (p->closed)
        return; /* the window ran out first: the rest was never sent */
    p->sending = true;
    size_t end = p->next + SEND_CHUNK < p->nrows ? p->next + SEND_CHUNK : p->nrows;
    for (; p->next < end; p->next++) {
        struct row *row = &p->rows[p->next];
        if (!inline_ok(r, row))
            continue;
        const struct delivery_target t = {
            .id = row->id,
            .event_id = row->event_id,
            .payload = row->payload,
            .endpoint_name = row->name,
            .url = row->url,
            .secret = row->secret,
            .prev_secret = row->prev_secret,
            .headers = row->headers,
            .settings = row->settings,
            .tenant_settings = row->tenant_settings,
            .webhook_id = row->webhook_id,
            .timeout_ms = row->timeout_ms,
            .max_inflight = row->max_inflight,
            .signature = row->signature[0] ? row->signature : NULL,
            .signed_at = row->signed_at,
        };
        p->nsent++;
        row->item = delivery_send_first(r->delivery, &t, on_answered, p);
    }
    p->sending = false;
    if (p->next < p->nrows) {
        /* a zero timer, not event_active: active events run in the same
         * loop turn; a timer waits until the sockets that became ready have
         * had theirs */
        loop_timer_arm(p->send_ev, 0);
        return;
    }
    if (p->nanswered == p->nsent)
        close_window(p);
}

static void on_send(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    send_first(arg);
}

static void start_sending(struct pass *p)
{
    struct relay *r = p->r;
    p->send_ev = evtimer_new(r->ctx->base, on_send, p);
    p->window_ev = evtimer_new(r->ctx->base, on_window, p);
    loop_timer_arm(p->window_ev, r->ctx->cfg->first_attempt_window);
    send_first(p);
}

/* ---- 3. settle (lane thread) ------------------------------------------------- */

/* The settle statement's parameters, from the outcomes copied when the
 * window closed (lane thread): arrays in binary form, the worker id as
 * text. -1: an id or tuple id that is not one (cannot come from Postgres). */
static int build_params(struct pass *p)
{
    size_t n = p->nrows;
    int64_t now = clock_wall_ms();
    struct db_array a[NPARAMS] = {0};
    db_array_init(&a[P_ID], DB_OID_UUID, n);
    db_array_init(&a[P_EVENT], DB_OID_UUID, n);
    db_array_init(&a[P_ENDPOINT], DB_OID_UUID, n);
    db_array_init(&a[P_CODE], DB_OID_INT4, n);
    db_array_init(&a[P_AT], DB_OID_INT8, n);
    db_array_init(&a[P_DUR], DB_OID_FLOAT8, n);
    db_array_init(&a[P_EXCERPT], DB_OID_TEXT, n);
    db_array_init(&a[P_WAIT], DB_OID_INT8, n);
    db_array_init(&a[P_EVENTS], DB_OID_UUID, p->nevents);
    db_array_init(&a[P_ERROR], DB_OID_TEXT, n);
    db_array_init(&a[P_TIDS], DB_OID_TID, p->nevents);
    int rc = 0;
    for (size_t i = 0; i < n; i++) {
        struct row *row = &p->rows[i];
        if (db_array_uuid(&a[P_ID], row->id) != 0 || db_array_uuid(&a[P_EVENT], row->event_id) != 0 ||
            db_array_uuid(&a[P_ENDPOINT], row->endpoint_id) != 0)
            rc = -1;
        if (row->succeeded) {
            db_array_int4(&a[P_CODE], row->status);
            db_array_int8(&a[P_AT], row->answered_ms);
            db_array_float8(&a[P_DUR], row->duration_ms);
            if (row->excerpt)
                db_array_text(&a[P_EXCERPT], row->excerpt);
            else
                db_array_null(&a[P_EXCERPT]);
            db_array_int8(&a[P_WAIT], 0);
            db_array_null(&a[P_ERROR]);
        } else if (row->error) {
            /* a failure answered in the window: RETRYING with its attempt row,
             * due after the endpoint's retry wait */
            if (row->status)
                db_array_int4(&a[P_CODE], row->status);
            else
                db_array_null(&a[P_CODE]);
            db_array_null(&a[P_AT]);
            db_array_float8(&a[P_DUR], row->duration_ms);
            if (row->excerpt)
                db_array_text(&a[P_EXCERPT], row->excerpt);
            else
                db_array_null(&a[P_EXCERPT]);
            db_array_int8(&a[P_WAIT], row->retry_wait_ms);
            db_array_text(&a[P_ERROR], row->error);
        } else {
            db_array_null(&a[P_ERROR]);
            db_array_null(&a[P_CODE]);
            db_array_null(&a[P_AT]);
            db_array_null(&a[P_DUR]);
            db_array_null(&a[P_EXCERPT]);
            /* on the wire or failed: the regular path finishes it under this
             * worker's lease; due when the lease would end, should it die.
             * Not sent: due now, scheduled after the commit. */
            db_array_int8(&a[P_WAIT], row->item ? p->lease_ms : row->due_ms > now ? row->due_ms - now : 0);
        }
    }
    for (size_t i = 0; i < p->nevents; i++)
        if (db_array_uuid(&a[P_EVENTS], p->events[i].id) != 0 || db_array_tid(&a[P_TIDS], p->events[i].tid) != 0)
            rc = -1;
    for (int i = 0; i < NPARAMS; i++) {
        if (i == P_WORKER)
            continue;
        p->params[i] = a[i].buf;
        p->lengths[i] = (int)a[i].len;
        p->formats[i] = 1;
    }
    p->params[P_WORKER] = xstrdup(p->worker_id);
    if (rc != 0)
        snprintf(p->err, sizeof p->err, "a delivery id or tuple id that is not one");
    return rc;
}

static void work_settle(PGconn *conn, void *arg)
{
    struct pass *p = arg;
    p->ok = false; /* from here on: whether the pass is settled */
    /* The claim's transaction must still be the one open: after a lost
     * connection, the lane's thread reconnects, and writing on the new
     * connection would fan out events no longer locked. */
    if (!conn || PQtransactionStatus(conn) != PQTRANS_INTRANS) {
        snprintf(p->err, sizeof p->err, "the connection holding the claim was lost");
        return;
    }
    if (p->abort) {
        db_rollback(conn);
        snprintf(p->err, sizeof p->err, "shutting down");
        return;
    }
    if (build_params(p) != 0)
        goto fail;
    PGresult *res = query_prepared_fmt(conn, Q_RELAY_SETTLE, (const char *const *)p->params, p->lengths, p->formats,
                                       p->err, sizeof p->err);
    if (!res)
        goto fail;
    size_t inserted = strtoull(PQgetvalue(res, 0, RELAY_SETTLE_INSERTED), NULL, 10);
    PQclear(res);
    if (inserted == p->nrows) {
        for (size_t i = 0; i < p->nrows; i++)
            p->rows[i].inserted = true;
    } else {
        const char *pi[] = {p->params[P_ID]};
        res = query_prepared_fmt(conn, Q_RELAY_INSERTED, pi, &p->lengths[P_ID], &p->formats[P_ID], p->err,
                                 sizeof p->err);
        if (!res)
            goto fail;
        struct keyindex *ix = keyindex_new(p->nrows);
        for (size_t i = 0; i < p->nrows; i++)
            keyindex_add(ix, p->rows[i].id, strlen(p->rows[i].id), i);
        for (int k = 0; k < PQntuples(res); k++) {
            const char *id = PQgetvalue(res, k, RELAY_INSERTED_ID);
            size_t i = keyindex_take(ix, id, strlen(id));
            if (i != KEYINDEX_NONE)
                p->rows[i].inserted = true;
        }
        keyindex_free(ix);
        PQclear(res);
    }
    if (db_command(conn, "COMMIT", p->err, sizeof p->err) != 0)
        goto fail;
    p->ok = true;
    return;
fail:
    db_rollback(conn);
    for (size_t i = 0; i < p->nrows; i++)
        p->rows[i].inserted = false;
}

static void done_settle(void *arg);

static void close_window(struct pass *p)
{
    if (p->closed)
        return;
    p->closed = true;
    p->closed_ms = clock_mono_ms();
    if (p->window_ev)
        evtimer_del(p->window_ev);
    for (size_t i = 0; i < p->nrows; i++) {
        struct row *row = &p->rows[i];
        if (!row->item)
            continue;
        delivery_first_close(row->item);
        struct delivery_outcome o;
        delivery_item_outcome(row->item, &o);
        row->succeeded = o.succeeded;
        row->retry_wait_ms = o.retry_wait_ms;
        if (o.succeeded || o.retry_wait_ms >= 0) {
            row->status = o.status;
            row->answered_ms = o.answered_ms;
            row->duration_ms = o.duration_ms;
            row->excerpt = o.excerpt ? xstrdup(o.excerpt) : NULL;
        }
        if (!o.succeeded && o.retry_wait_ms >= 0)
            row->error = xstrdup(o.error ? o.error : "failed");
    }
    p->lease_ms = p->r->ctx->cfg->lease;
    snprintf(p->worker_id, sizeof p->worker_id, "%s", p->r->ctx->id);
    db_pool_submit(p->lane->db, work_settle, done_settle, p);
}

/* ---- 4. after the commit (loop) ---------------------------------------------- */

static void pass_free(struct pass *p)
{
    rows_free(p);
    free(p->events);
    for (int i = 0; i < NPARAMS; i++)
        free(p->params[i]);
    if (p->window_ev)
        event_free(p->window_ev);
    if (p->send_ev)
        event_free(p->send_ev);
    free(p);
}

/* Bookkeeping when a pass ends: the next pass, the active/idle state. */
static void pass_end(struct pass *p)
{
    struct relay *r = p->r;
    r->running--;
    p->lane->pass = NULL;
    if (!p->ok && !p->abort && db_pool_healthy(p->lane->db))
        log_warn("relay.fanout_failed", "error=\"%s\"", p->err);
    bool full = p->ok && (long)p->nevents >= p->limit;
    if (p->ok && p->bounded && !p->marked && !full) { /* what it passed over: looked for next */
        r->bounded_run = BOUNDED_MAX;
        r->again = true;
    }
    if (p->ok && !p->rescan && p->first_id[0])
        snprintf(r->mark_id, sizeof r->mark_id, "%s", p->first_id);
    if (p->rescan)
        r->rescan_cost_ms = clock_mono_ms() - p->started_ms;
    if (p->ok && p->rescan && full) { /* a backlog behind the mark: on with it */
        r->rescan_again = true;
        r->again = true;
    }
    if (!p->ok && p->set_listening >= 0 && r->set_listening < 0)
        r->set_listening = p->set_listening; /* not written: the next pass tries again */
    /* durations: on the monotonic clock, not moved by the clock's offset */
    int64_t now = clock_mono_ms();
    if (p->ok && p->nevents > 0) {
        r->last_work_ms = now;
        if (!r->active || now - r->asserted_ms >= REASSERT_MS) {
            r->active = true;
            r->set_listening = 0;
            r->asserted_ms = now;
        }
    } else if (r->active && now - r->last_work_ms >= IDLE_AFTER_MS) {
        r->active = false; /* the pass that says so also looks once more */
        r->set_listening = 1;
        r->again = true;
    }
    bool failed = !p->ok;
    pass_free(p);
    if (atomic_load(&r->stopping))
        return;
    if (failed) { /* the events are unfanned again: no tight loop of sends that never settle */
        if (r->running == 0)
            loop_timer_arm(r->active_ev, FAILED_PASS_PAUSE_MS);
        return;
    }
    if (full || r->again) {
        r->again = false;
        start_pass(r);
        if (full)
            start_pass(r); /* a backlog: keep every lane going */
    } else if (r->active && (r->running == 0 || (r->running == 1 && rescanning(r)))) {
        /* (a claim before the mark is slow by nature: the other lane polls on) */
        loop_timer_arm(r->active_ev, ACTIVE_POLL_MS);
    }
}

static void done_settle(void *arg)
{
    struct pass *p = arg;
    struct relay *r = p->r;
    struct delivery_item **items = xcalloc(p->nrows + 1, sizeof *items);
    enum delivery_fate *fates = xcalloc(p->nrows + 1, sizeof *fates);
    char **due_ids = xcalloc(p->nrows + 1, sizeof *due_ids);
    char **due_names = xcalloc(p->nrows + 1, sizeof *due_names);
    int64_t *due = xcalloc(p->nrows + 1, sizeof *due);
    size_t nitems = 0, ndue = 0;
    int64_t now = clock_wall_ms();
    for (size_t i = 0; i < p->nrows; i++) {
        struct row *row = &p->rows[i];
        bool in = p->ok && row->inserted;
        if (row->item) {
            items[nitems] = row->item;
            fates[nitems++] = !in              ? DELIVERY_FORGET
                              : row->succeeded ? DELIVERY_RECORDED
                              : row->error     ? DELIVERY_RETRY
                                               : DELIVERY_ADOPT;
            if (in)
                r->ctx->stats.fanout[row->succeeded ? FANOUT_PASS_SUCCEEDED
                                     : row->error   ? FANOUT_PASS_FAILED
                                                    : FANOUT_HANDED_OVER]++;
        } else if (in) {
            r->ctx->stats.fanout[FANOUT_SCHEDULED]++;
            due_ids[ndue] = row->id;
            due_names[ndue] = row->name;
            due[ndue++] = row->due_ms > now ? row->due_ms : now; /* deliverAt: due then */
        }
    }
    delivery_first_settle(r->delivery, items, fates, nitems);
    if (ndue > 0) {
        sched_seed(r->ctx, "delivery", due_ids, due, ndue, false);
        /* open circuits: parked at once (not those due later: a circuit
         * closing must not send them before their deliverAt) */
        size_t npark = 0;
        for (size_t i = 0; i < ndue; i++)
            if (due[i] <= now) {
                due_ids[npark] = due_ids[i];
                due_names[npark++] = due_names[i];
            }
        delivery_park_fanned_out(r->delivery, due_ids, due_names, npark);
    }
    if (p->ok && p->nevents > 0) {
        int64_t end = clock_mono_ms();
        histogram_observe(&r->ctx->stats.fanout_seconds, (double)(end - p->started_ms) / 1000.0);
        if (p->window_ran_out) {
            r->ctx->stats.fanout_window_closed++;
            r->batch = r->batch / 2 > FANOUT_BATCH_MIN ? r->batch / 2 : FANOUT_BATCH_MIN;
        } else if (p->nsent > 0 && 2 * (p->closed_ms - p->claimed_ms) <= r->ctx->cfg->first_attempt_window) {
            r->batch = r->batch + FANOUT_BATCH_STEP < FANOUT_BATCH_N ? r->batch + FANOUT_BATCH_STEP : FANOUT_BATCH_N;
        }
        log_debug("relay.fanned_out",
                  "events=%zu deliveries=%zu scheduled=%zu claimed_after_other_pass=%s claim_ms=%lld send_ms=%lld"
                  " settle_ms=%lld window_ran_out=%s next_batch=%ld",
                  p->nevents, p->nrows, ndue, p->bounded ? "true" : "false",
                  (long long)(p->claimed_ms - p->started_ms), (long long)(p->closed_ms - p->claimed_ms),
                  (long long)(end - p->closed_ms), p->window_ran_out ? "true" : "false", r->batch);
    }
    free(items);
    free(fates);
    free(due_ids);
    free(due_names);
    free(due);
    pass_end(p);
}

static void done_claim(void *arg)
{
    struct pass *p = arg;
    p->claimed_ms = clock_mono_ms();
    /* known now, for the other lane's claim that may start below */
    if (p->ok && p->nevents > 0) {
        size_t per = (p->nrows + p->nevents - 1) / p->nevents;
        p->r->per_event = per > 0 ? per : 1;
    }
    p->holds_full = p->ok && p->in_tx && p->last_id[0] && (long)p->nevents >= p->limit;
    if (!p->ok || !p->in_tx) {
        pass_end(p);
        return;
    }
    if (atomic_load(&p->r->stopping)) { /* not sending any more: leave the events to the next relay */
        p->abort = true;
        p->closed = true;
        db_pool_submit(p->lane->db, work_settle, done_settle, p);
        return;
    }
    start_sending(p);
    /* A full claim: there is a backlog, so the other lane claims now rather
     * than when this pass ends. Its requests queue behind this pass's, and
     * from then on the lanes take turns sending. */
    if (p->holds_full)
        start_pass(p->r);
}

static void start_pass(struct relay *r)
{
    struct lane *lane = NULL;
    for (int i = 0; i < LANES && !lane; i++)
        if (!r->lanes[i].pass)
            lane = &r->lanes[i];
    if (!lane) {
        r->again = true;
        return;
    }
    r->running++;
    struct pass *p = xcalloc(1, sizeof *p);
    p->r = r;
    p->lane = lane;
    lane->pass = p;
    p->started_ms = clock_mono_ms();
    p->limit = r->per_event ? r->batch / (long)r->per_event : FANOUT_PROBE_N;
    if (p->limit < 1)
        p->limit = 1;
    /* Another lane's pass claimed a full batch and holds it: start after it */
    const struct pass *o = NULL;
    for (int i = 0; i < LANES && !o; i++) {
        const struct pass *x = r->lanes[i].pass;
        if (x && x != p && x->holds_full)
            o = x;
    }
    int64_t now = clock_mono_ms();
    if (o && r->bounded_run < BOUNDED_MAX) {
        p->bounded = true;
        snprintf(p->after_id, sizeof p->after_id, "%s", o->last_id);
        r->bounded_run++;
    } else if (r->mark_id[0] && !rescanning(r) &&
               (r->rescan_again || now - r->rescan_ms >= RESCAN_MS + RESCAN_DUTY * r->rescan_cost_ms)) {
        p->rescan = true;
        snprintf(p->after_id, sizeof p->after_id, "%s", r->mark_id);
        r->rescan_ms = now;
        r->rescan_again = false;
    } else if (r->mark_id[0]) {
        r->bounded_run = 0;
        p->bounded = p->marked = true;
        snprintf(p->after_id, sizeof p->after_id, "%s", r->mark_id);
    } else {
        r->bounded_run = 0;
    }
    p->set_listening = r->set_listening;
    r->set_listening = -1;
    db_pool_submit(lane->db, work_claim, done_claim, p);
    if (p->rescan && r->active && r->running == 1) { /* the other lane polls on meanwhile */
        loop_timer_arm(r->active_ev, ACTIVE_POLL_MS);
    }
}

void relay_kick(struct relay *r)
{
    if (!atomic_load(&r->stopping))
        start_pass(r);
}

size_t relay_pending(const struct relay *r)
{
    return r ? (size_t)r->running : 0;
}

/* ---- the LISTEN thread ------------------------------------------------------ */

static void *listener_main(void *arg)
{
    struct relay *r = arg;
    char *conninfo = xstrdup(r->ctx->cfg->database.text);
    PGconn *conn = NULL;
    int backoff_ms = 100;
    bool lost = false; /* a connection broke: log the next LISTEN */
    while (!atomic_load(&r->stopping)) {
        if (!conn) {
            char err[512];
            conn = db_connect(conninfo, err, sizeof err);
            /* LISTEN fails on a standby (25006); a read-only primary is
             * refused too (db_unavailable), as the DB pools refuse it */
            if (!conn || db_unavailable(conn, NULL) || db_command(conn, "LISTEN hookd_outbox", err, sizeof err) != 0) {
                PQfinish(conn);
                conn = NULL;
                poll(NULL, 0, backoff_ms);
                backoff_ms = backoff_ms * 2 > 2000 ? 2000 : backoff_ms * 2;
                continue;
            }
            backoff_ms = 100;
            if (lost)
                log_info("relay.listening", "host=%s port=%s note=\"LISTEN renewed after a lost connection\"",
                         PQhost(conn), PQport(conn));
            lost = false;
            loop_notify_signal(r->notify); /* notifications may have been missed while down */
        }
        struct pollfd pfd = {PQsocket(conn), POLLIN, 0};
        if (poll(&pfd, 1, 250) > 0) {
            /* a broken connection, or a server that turned read-only
             * (ParameterStatus, read by PQconsumeInput) */
            if (!PQconsumeInput(conn) || db_unavailable(conn, NULL)) {
                PQfinish(conn);
                conn = NULL;
                lost = true;
                continue;
            }
            bool any = false;
            PGnotify *n;
            while ((n = PQnotifies(conn))) {
                any = true;
                PQfreemem(n);
            }
            if (any)
                loop_notify_signal(r->notify);
        }
    }
    PQfinish(conn);
    free(conninfo);
    return NULL;
}

static void on_notified(void *arg)
{
    relay_kick(arg);
}

static void on_poll(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    relay_kick(arg);
}

struct relay *relay_new(struct hookd_ctx *ctx, struct delivery *delivery)
{
    struct relay *r = xcalloc(1, sizeof *r);
    r->notify = loop_notify_new(ctx->base, on_notified, r);
    if (!r->notify) {
        free(r);
        return NULL;
    }
    r->ctx = ctx;
    r->delivery = delivery;
    r->batch = FANOUT_BATCH_N;
    for (int i = 0; i < LANES; i++) {
        r->lanes[i].db = db_pool_new(ctx->base, ctx->cfg->database.text, 1, false);
        if (!r->lanes[i].db) {
            for (int k = 0; k < i; k++)
                db_pool_free(r->lanes[k].db);
            loop_notify_free(r->notify);
            free(r);
            return NULL;
        }
    }
    atomic_init(&r->stopping, false);
    r->poll_ev = event_new(ctx->base, -1, EV_PERSIST, on_poll, r);
    loop_timer_arm(r->poll_ev, 1000);
    r->active_ev = event_new(ctx->base, -1, 0, on_poll, r);
    r->set_listening = 1; /* a relay that died while busy may have left it off */
    r->listener_started = pthread_create(&r->listener, NULL, listener_main, r) == 0;
    if (!r->listener_started)
        log_warn("relay.no_listener", "note=\"falling back to polling every second\"");
    relay_kick(r);
    return r;
}

void relay_stop(struct relay *r)
{
    if (!r || atomic_exchange(&r->stopping, true))
        return;
    event_del(r->poll_ev);
    event_del(r->active_ev);
    if (r->listener_started)
        pthread_join(r->listener, NULL);
}

void relay_close(struct relay *r)
{
    if (r->closed)
        return;
    r->closed = true;
    relay_stop(r);
    /* The loop has stopped: passes still waiting for answers settle with
     * what they have (the rest is PENDING, for the regular path or, after
     * this worker's lease, anyone). Freeing a lane runs its last jobs and
     * their completions, while the delivery role they settle into lives. */
    for (int i = 0; i < LANES; i++)
        if (r->lanes[i].pass && r->lanes[i].pass->window_ev)
            close_window(r->lanes[i].pass);
    for (int i = 0; i < LANES; i++) {
        db_pool_free(r->lanes[i].db);
        r->lanes[i].db = NULL;
    }
}

void relay_free(struct relay *r)
{
    if (!r)
        return;
    relay_close(r);
    loop_notify_free(r->notify);
    event_free(r->poll_ev);
    event_free(r->active_ev);
    free(r);
}
