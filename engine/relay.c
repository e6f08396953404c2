/* Outbox fan-out; see relay.h. The LISTEN connection lives on its own
 * thread (libpq blocks while it waits), and talks to the loop through a
 * pipe, as the DB pool does. */
#include "relay.h"

#include <event2/event.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "db.h"
#include "log.h"
#include "sched.h"
#include "worker.h"
#include "xmalloc.h"

#define FANOUT_BATCH "1000"
#define FANOUT_BATCH_N 1000
/* Passes at once while there is a backlog: they take disjoint events (SKIP
 * LOCKED), so a second one uses the time the first spends committing. */
#define FANOUT_PASSES 2

/* One statement, so claim + fan-out + mark commit together. The event-type
 * filter is a glob: '*' matches any run; LIKE's own metacharacters are
 * escaped first. */
static const char fanout_sql[] =
    "WITH ev AS ("
    "  SELECT id, event_type FROM outbox_events WHERE fanned_out_at IS NULL"
    "  ORDER BY created_at, id LIMIT " FANOUT_BATCH " FOR UPDATE SKIP LOCKED),"
    " ins AS ("
    "  INSERT INTO outbox_deliveries (event_id, endpoint_id)"
    "  SELECT ev.id, ep.id FROM ev JOIN webhook_endpoints ep ON ep.enabled"
    "   AND EXISTS (SELECT 1 FROM unnest(ep.event_types) f WHERE ev.event_type LIKE"
    "    replace(replace(replace(replace(f, '\\', '\\\\'), '%', '\\%'), '_', '\\_'), '*', '%'))"
    "  ON CONFLICT (event_id, endpoint_id) DO NOTHING"
    "  RETURNING id, event_id, next_attempt_at),"
    " upd AS ("
    "  UPDATE outbox_events o SET fanned_out_at = now(),"
    "   processed_at = CASE WHEN o.id IN (SELECT event_id FROM ins) THEN NULL ELSE now() END"
    "  WHERE o.id = ANY (ARRAY (SELECT id FROM ev)) RETURNING o.id)"
    " SELECT ins.id::text, (extract(epoch FROM ins.next_attempt_at) * 1000)::bigint,"
    "  (SELECT count(*) FROM upd) FROM ins"
    " UNION ALL SELECT NULL, NULL, (SELECT count(*) FROM upd) WHERE NOT EXISTS (SELECT 1 FROM ins)";

/* While events keep coming the relay polls every ACTIVE_POLL_MS and tells
 * the outbox trigger not to NOTIFY (sql/0008: a NOTIFY serialises the
 * application's commits); after IDLE_AFTER_MS without work it listens again.
 * An active relay re-asserts its state every REASSERT_MS, in case another
 * relay that went idle set it back. */
#define ACTIVE_POLL_MS 5
#define IDLE_AFTER_MS 250
#define REASSERT_MS 1000

struct relay {
    struct worker *w;
    pthread_t listener;
    atomic_bool stopping;
    bool listener_started;
    int pipe_rd, pipe_wr;
    struct event *pipe_ev, *poll_ev, *active_ev;
    bool active;           /* polling fast, trigger told not to NOTIFY */
    int set_listening;     /* for the next pass: -1 leave, 0 / 1 set hookd_relay_state.listening */
    int64_t last_work_ms, asserted_ms;
    int running; /* fan-out passes on DB threads */
    bool again;
};

struct pass {
    struct relay *r;
    int set_listening;
    char **ids;
    int64_t *due;
    size_t n;
    long events;
    bool ok;
    char err[256];
};

static void start_pass(struct relay *r);

static void work_fanout(PGconn *conn, void *arg)
{
    struct pass *p = arg;
    if (p->set_listening >= 0) {
        const char *v[] = {p->set_listening ? "true" : "false"};
        PGresult *res = db_exec(conn,
                                "UPDATE hookd_relay_state SET listening = $1, changed_at = now()"
                                " WHERE id = 1 AND listening IS DISTINCT FROM $1::boolean",
                                1, v, p->err, sizeof p->err);
        if (!res)
            return;
        PQclear(res);
    }
    /* The oldest unfanned events by the partial index, in order (see db.h):
     * measured at 50,000 queued events, a bitmap scan and an external sort of
     * the whole backlog per pass made a pass of 500 cost 116 ms. */
    PGresult *res = db_exec_index_order(conn, fanout_sql, 0, NULL, p->err, sizeof p->err);
    if (!res)
        return;
    int rows = PQntuples(res);
    p->ids = xcalloc((size_t)rows + 1, sizeof *p->ids);
    p->due = xcalloc((size_t)rows + 1, sizeof *p->due);
    for (int i = 0; i < rows; i++) {
        p->events = atol(PQgetvalue(res, i, 2));
        if (PQgetisnull(res, i, 0))
            continue;
        p->ids[p->n] = xstrdup(PQgetvalue(res, i, 0));
        p->due[p->n++] = strtoll(PQgetvalue(res, i, 1), NULL, 10);
    }
    PQclear(res);
    p->ok = true;
}

static void done_fanout(void *arg)
{
    struct pass *p = arg;
    struct relay *r = p->r;
    r->running--;
    if (!p->ok && db_pool_healthy(r->w->db))
        log_warn("relay.fanout_failed", "error=\"%s\"", p->err);
    if (p->n > 0) {
        sched_seed(r->w, "delivery", p->ids, p->due, p->n, false);
        log_debug("relay.fanned_out", "events=%ld deliveries=%zu", p->events, p->n);
    }
    bool full = p->ok && p->events >= FANOUT_BATCH_N;
    if (!p->ok && p->set_listening >= 0 && r->set_listening < 0)
        r->set_listening = p->set_listening; /* not written: the next pass tries again */
    int64_t now = worker_now_ms();
    if (p->ok && p->events > 0) {
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
    for (size_t i = 0; i < p->n; i++)
        free(p->ids[i]);
    free(p->ids);
    free(p->due);
    free(p);
    if (atomic_load(&r->stopping))
        return;
    if (full || r->again) {
        r->again = false;
        start_pass(r);
        if (full)
            start_pass(r); /* a backlog: keep FANOUT_PASSES going */
    } else if (r->active && r->running == 0) {
        struct timeval tv = {0, ACTIVE_POLL_MS * 1000};
        event_add(r->active_ev, &tv);
    }
}

static void start_pass(struct relay *r)
{
    if (r->running >= FANOUT_PASSES) {
        r->again = true;
        return;
    }
    r->running++;
    struct pass *p = xcalloc(1, sizeof *p);
    p->r = r;
    p->set_listening = r->set_listening;
    r->set_listening = -1;
    db_pool_submit(r->w->db, work_fanout, done_fanout, p);
}

void relay_kick(struct relay *r)
{
    if (!atomic_load(&r->stopping))
        start_pass(r);
}

/* ---- the LISTEN thread ------------------------------------------------------ */

static void wake_loop(struct relay *r)
{
    char b = 1;
    ssize_t n = write(r->pipe_wr, &b, 1); /* EAGAIN: already pending */
    (void)n;
}

static void *listener_main(void *arg)
{
    struct relay *r = arg;
    char *conninfo = xstrdup(r->w->cfg->database.text);
    PGconn *conn = NULL;
    int backoff_ms = 100;
    while (!atomic_load(&r->stopping)) {
        if (!conn) {
            char err[256];
            conn = db_connect(conninfo, err, sizeof err);
            if (!conn || db_run(conn, "LISTEN hookd_outbox", 0, NULL, err, sizeof err) != 0) {
                PQfinish(conn);
                conn = NULL;
                poll(NULL, 0, backoff_ms);
                backoff_ms = backoff_ms * 2 > 2000 ? 2000 : backoff_ms * 2;
                continue;
            }
            backoff_ms = 100;
            wake_loop(r); /* notifications may have been missed while down */
        }
        struct pollfd pfd = {PQsocket(conn), POLLIN, 0};
        if (poll(&pfd, 1, 250) > 0) {
            if (!PQconsumeInput(conn)) {
                PQfinish(conn);
                conn = NULL;
                continue;
            }
            bool any = false;
            PGnotify *n;
            while ((n = PQnotifies(conn))) {
                any = true;
                PQfreemem(n);
            }
            if (any)
                wake_loop(r);
        }
    }
    PQfinish(conn);
    free(conninfo);
    return NULL;
}

static void on_pipe(evutil_socket_t fd, short what, void *arg)
{
    (void)what;
    char buf[64];
    while (read(fd, buf, sizeof buf) > 0)
        ;
    relay_kick(arg);
}

static void on_poll(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    relay_kick(arg);
}

struct relay *relay_new(struct worker *w)
{
    int fds[2];
    if (pipe2(fds, O_NONBLOCK | O_CLOEXEC) != 0)
        return NULL;
    struct relay *r = xcalloc(1, sizeof *r);
    r->w = w;
    r->pipe_rd = fds[0];
    r->pipe_wr = fds[1];
    atomic_init(&r->stopping, false);
    r->pipe_ev = event_new(w->base, r->pipe_rd, EV_READ | EV_PERSIST, on_pipe, r);
    event_add(r->pipe_ev, NULL);
    r->poll_ev = event_new(w->base, -1, EV_PERSIST, on_poll, r);
    struct timeval second = {1, 0};
    event_add(r->poll_ev, &second);
    r->active_ev = event_new(w->base, -1, 0, on_poll, r);
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

void relay_free(struct relay *r)
{
    if (!r)
        return;
    relay_stop(r);
    event_free(r->pipe_ev);
    event_free(r->poll_ev);
    event_free(r->active_ev);
    close(r->pipe_rd);
    close(r->pipe_wr);
    free(r);
}
