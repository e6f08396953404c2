/* The Postgres thread pool; see db.h. Jobs flow loop -> queue -> thread ->
 * done list -> loop; a thread that adds to the done list signals the loop
 * (loop_notify), which drains the whole list, so completions run on the
 * loop without any libevent locking. */
#include "db.h"

#include <errno.h>
#include <event2/event.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "encoding.h"
#include "errbuf.h"
#include "log.h"
#include "loop_notify.h"
#include "xmalloc.h"

struct db_job {
    db_work_fn work;
    db_done_fn done;
    void *arg;
    struct db_job *next;
};

struct db_thread {
    struct db_pool *pool;
    pthread_t tid;
    PGconn *conn;
    int64_t next_connect_ms; /* backoff: no attempt before this */
    int64_t backoff_ms;
    bool dropped; /* thread_check closed the connection: say why the next connect fails */
};

struct db_pool {
    bool custom_plans;
    struct event_base *base;
    char *conninfo;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct db_job *head, *tail; /* queued */
    struct db_job *done_head;   /* completed, awaiting done callback (LIFO, reversed on drain) */
    bool stopping;
    struct loop_notify *notify; /* threads -> loop: the done list has jobs */
    struct db_thread *threads;
    int nthreads;
    atomic_size_t pending;
    atomic_bool healthy;
    atomic_bool came_up; /* a thread connected after the pool was unhealthy */
    db_done_fn on_up;    /* runs on the loop when came_up is seen */
    void *on_up_arg;
};

/* Server notices ("relation already exists, skipping") are not errors and
 * must not interleave with our structured log lines. */
static void ignore_notice(void *arg, const char *message)
{
    (void)arg;
    (void)message;
}

/* libpq's connect error, on one line: with several hosts it has a line per
 * host tried ("…:5432 failed: Connection refused", "…:5433 failed: server
 * is in hot standby mode"), and the operator needs each of them. */
static void one_line(char *out, size_t outlen, const char *msg)
{
    size_t n = 0;
    out[0] = '\0';
    while (*msg && n + 1 < outlen) {
        size_t len = strcspn(msg, "\n");
        while (len > 0 && (msg[len - 1] == ' ' || msg[len - 1] == '\r'))
            len--;
        if (len > 0)
            n += (size_t)snprintf(out + n, outlen - n, "%s%.*s", n ? "; " : "", (int)len, msg);
        msg += strcspn(msg, "\n");
        msg += *msg == '\n';
    }
}

/* TCP keepalives on every connection, unless the conninfo says otherwise: a
 * primary that vanished without a word (a host that died, a network cut) is
 * noticed in about 30 s — an idle connection (the relay's LISTEN) after 10 s
 * of silence and 4 unanswered probes 5 s apart, a connection waiting for the
 * acknowledgement of what it sent after tcp_user_timeout — instead of
 * libpq's and the kernel's defaults (keepalives after 2 h; a send
 * retransmitted for about 15 min). Each key the user's conninfo sets wins;
 * tcp_user_timeout is added only when it sets none of the timing keys,
 * because on Linux it also decides when a keepalive gives up (it would
 * stretch a user's shorter keepalives_count). */
static const struct {
    const char *key, *value;
    bool timing;
} keepalive_defaults[] = {
    {"keepalives", "1", false},      {"keepalives_idle", "10", true},     {"keepalives_interval", "5", true},
    {"keepalives_count", "4", true}, {"tcp_user_timeout", "30000", true},
};
enum { NKEEPALIVE = sizeof keepalive_defaults / sizeof keepalive_defaults[0] };

static PGconn *connect_with_keepalives(const char *conninfo, int connect_timeout_s)
{
    bool set[NKEEPALIVE] = {false};
    bool any_timing = false, timeout_set = false;
    PQconninfoOption *opts = PQconninfoParse(conninfo, NULL);
    for (PQconninfoOption *o = opts; o && o->keyword; o++) {
        timeout_set |= o->val && *o->val && strcmp(o->keyword, "connect_timeout") == 0;
        for (size_t i = 0; i < NKEEPALIVE; i++) {
            if (o->val && *o->val && strcmp(o->keyword, keepalive_defaults[i].key) == 0) {
                set[i] = true;
                any_timing |= keepalive_defaults[i].timing;
            }
        }
    }
    PQconninfoFree(opts); /* NULL (unparsable): libpq reports it below */
    const char *keys[NKEEPALIVE + 3], *values[NKEEPALIVE + 3];
    char timeout[16];
    size_t n = 0;
    if (connect_timeout_s > 0 && !timeout_set) {
        snprintf(timeout, sizeof timeout, "%d", connect_timeout_s);
        keys[n] = "connect_timeout";
        values[n++] = timeout;
    }
    for (size_t i = 0; i < NKEEPALIVE; i++) {
        bool user_timeout = strcmp(keepalive_defaults[i].key, "tcp_user_timeout") == 0;
        if (set[i] || (user_timeout && any_timing))
            continue;
        keys[n] = keepalive_defaults[i].key;
        values[n++] = keepalive_defaults[i].value;
    }
    keys[n] = "dbname"; /* expanded: the conninfo's own keys come last and win */
    values[n++] = conninfo;
    keys[n] = values[n] = NULL;
    return PQconnectdbParams(keys, values, 1);
}

PGconn *db_connect(const char *conninfo, char *err, size_t errlen)
{
    return db_connect_timeout(conninfo, 0, err, errlen);
}

PGconn *db_connect_timeout(const char *conninfo, int connect_timeout_s, char *err, size_t errlen)
{
    PGconn *c = connect_with_keepalives(conninfo, connect_timeout_s);
    if (c)
        PQsetNoticeProcessor(c, ignore_notice, NULL);
    if (!c || PQstatus(c) != CONNECTION_OK) {
        char msg[512];
        one_line(msg, sizeof msg, c ? PQerrorMessage(c) : "out of memory");
        err_set(err, errlen, "cannot connect to Postgres: %s", msg);
        PQfinish(c);
        return NULL;
    }
    /* JIT off for hookd's sessions: its statements are short and run
     * thousands of times a second, and the index-order transactions
     * (enable_sort = off adds 1e10 to a plan that must still sort) cross
     * jit_above_cost, so that every relay pass would compile its endpoint
     * query with LLVM, which takes far longer than running it. */
    PQclear(PQexec(c, "SET jit = off"));
    return c;
}

/* ---- "not the primary any more" ------------------------------------------- */

/* The connection a statement found unusable on this thread (the server is
 * gone, going, or no longer takes writes), with the backend it had: every
 * later db_conn_lost() on it is true, and the pool drops it when the job
 * ends. A PQreset() gives the same PGconn another backend, which is usable
 * again. One per DB thread, like the connection. */
static _Thread_local struct {
    PGconn *conn;
    int backend_pid;
} doomed;

static bool is_doomed(PGconn *conn)
{
    return conn && doomed.conn == conn && doomed.backend_pid == PQbackendPID(conn);
}

/* SQLSTATEs that say "this server is not (or no longer) a primary that
 * takes writes", never "this statement or event is bad": after a failover
 * the old primary shuts down (57P01 admin_shutdown, 57P02 crash_shutdown,
 * class 08 connection exceptions), refuses new sessions while it recovers
 * (57P03), or, if still reachable, runs read-only (25006
 * read_only_sql_transaction: "cannot execute … in a read-only transaction",
 * also what a standby answers); 55000 with "recovery" in the message is a
 * standby refusing a primary-only function. */
static bool not_primary(const PGresult *r)
{
    const char *state = r ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : NULL;
    if (!state)
        return false;
    if (strncmp(state, "08", 2) == 0 || strcmp(state, "25006") == 0 || strcmp(state, "57P01") == 0 ||
        strcmp(state, "57P02") == 0 || strcmp(state, "57P03") == 0)
        return true;
    const char *msg = PQresultErrorField(r, PG_DIAG_MESSAGE_PRIMARY);
    return strcmp(state, "55000") == 0 && msg && strstr(msg, "recovery");
}

/* The server says it is in recovery (a standby) or read-only
 * (default_transaction_read_only = on, as managed services set it on a
 * full disk or during a switchover). Both are reported by the server
 * (ParameterStatus, Postgres 14+) at connect and whenever they change, so
 * this costs no round trip; older servers report neither and rely on the
 * 25006 errors above. */
static bool server_read_only(PGconn *conn)
{
    const char *standby = PQparameterStatus(conn, "in_hot_standby");
    const char *ro = PQparameterStatus(conn, "default_transaction_read_only");
    return (standby && strcmp(standby, "on") == 0) || (ro && strcmp(ro, "on") == 0);
}

bool db_unavailable(PGconn *conn, const PGresult *r)
{
    if (!conn || PQstatus(conn) != CONNECTION_OK)
        return true;
    if (is_doomed(conn))
        return true;
    if (!not_primary(r) && !server_read_only(conn))
        return false;
    doomed.conn = conn;
    doomed.backend_pid = PQbackendPID(conn);
    if (r) { /* a statement failed: say which; the read-only flag alone is logged by the caller */
        const char *msg = PQresultErrorMessage(r);
        log_warn("db.not_primary", "sqlstate=%s error=\"%.*s\" note=\"reconnecting; the job is retried, not failed\"",
                 PQresultErrorField(r, PG_DIAG_SQLSTATE) ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : "-",
                 (int)strcspn(msg, "\n"), msg);
    }
    return true;
}

static void backoff(struct db_thread *t, int64_t now)
{
    t->backoff_ms = t->backoff_ms ? (t->backoff_ms * 2 > 2000 ? 2000 : t->backoff_ms * 2) : 100;
    t->next_connect_ms = now + t->backoff_ms;
}

/* The pool works again: one of its threads connected, or ran a job on a
 * connection that is still good (another thread may have connected to the
 * new primary before the pool noticed that its old connections broke). */
static void mark_up(struct db_thread *t)
{
    if (atomic_exchange(&t->pool->healthy, true))
        return;
    log_info("db.up", "host=%s port=%s", PQhost(t->conn), PQport(t->conn));
    atomic_store(&t->pool->came_up, true);
}

/* Whether a connection that sat idle is still there. A server that closed it
 * meanwhile (a restart, a failover, pg_terminate_backend) has left its FATAL
 * message and the end of the stream on the socket: read them now, so the job
 * runs on a fresh connection instead of failing on this one "mid-statement".
 * That matters beyond one wasted round trip: a statement lost mid-way has an
 * unknown outcome, and ingest's insert retried after one cannot tell its own
 * row from one a partner's earlier request stored. A peer that vanished
 * without a word is left to the TCP keepalives (db_connect). */
static bool idle_conn_alive(PGconn *conn)
{
    for (int i = 0; i < 2; i++) { /* the message, then possibly the EOF */
        struct pollfd pfd = {PQsocket(conn), POLLIN, 0};
        if (pfd.fd < 0)
            return false;
        if (poll(&pfd, 1, 0) <= 0)
            return true; /* nothing arrived while idle (EINTR: look next time) */
        if (!PQconsumeInput(conn) || PQstatus(conn) != CONNECTION_OK)
            return false;
    }
    return true;
}

/* Connects (or reconnects) the thread's connection when its backoff allows.
 * With a multi-host conninfo libpq picks the host (target_session_attrs);
 * a read-only server is refused here whatever the conninfo says, so no
 * thread ever works on a standby. */
static PGconn *thread_conn(struct db_thread *t)
{
    if (t->conn && PQstatus(t->conn) == CONNECTION_OK && idle_conn_alive(t->conn))
        return t->conn;
    if (t->conn) { /* lost like a job's (thread_check): the pool comes up again, and says so */
        atomic_store(&t->pool->healthy, false);
        log_warn("db.connection_lost", "reason=closed_while_idle");
        PQfinish(t->conn);
        t->conn = NULL;
        t->dropped = true;
        doomed.conn = NULL;
    }
    int64_t now = clock_mono_ms();
    if (now < t->next_connect_ms)
        return NULL;
    char err[512];
    t->conn = db_connect(t->pool->conninfo, err, sizeof err);
    if (t->conn && server_read_only(t->conn)) {
        err_set(err, sizeof err,
                "the server is read-only (a standby, or default_transaction_read_only = on): "
                "list every host with target_session_attrs=read-write");
        PQfinish(t->conn);
        t->conn = NULL;
    }
    if (t->conn && t->pool->custom_plans)
        PQclear(PQexec(t->conn, "SET plan_cache_mode = force_custom_plan"));
    if (!t->conn) {
        backoff(t, now);
        if (atomic_exchange(&t->pool->healthy, false) || t->dropped)
            log_warn("db.down", "error=\"%s\"", err);
        t->dropped = false;
        return NULL;
    }
    t->backoff_ms = 0;
    t->dropped = false;
    mark_up(t);
    return t->conn;
}

/* After a job: a connection that broke, or that a statement found on a
 * server that is no longer a writable primary, is closed now, so the next
 * job connects afresh (to the new primary) and prepares its statements
 * again; a pool whose connection broke is unhealthy until one connects. */
static void thread_check(struct db_thread *t, PGconn *conn)
{
    if (!conn || conn != t->conn)
        return;
    bool lost = PQstatus(conn) != CONNECTION_OK;
    if (!lost && !is_doomed(conn) && !server_read_only(conn)) {
        mark_up(t);
        return;
    }
    atomic_store(&t->pool->healthy, false);
    log_warn("db.connection_lost", "reason=%s", lost ? "broken" : "not_primary");
    PQfinish(t->conn);
    t->conn = NULL;
    t->dropped = true;
    doomed.conn = NULL;
    backoff(t, clock_mono_ms());
}

static void *thread_main(void *arg)
{
    struct db_thread *t = arg;
    struct db_pool *p = t->pool;
    for (;;) {
        pthread_mutex_lock(&p->mu);
        while (!p->head && !p->stopping)
            pthread_cond_wait(&p->cv, &p->mu);
        struct db_job *job = p->head;
        if (!job) { /* stopping and drained */
            pthread_mutex_unlock(&p->mu);
            break;
        }
        p->head = job->next;
        if (!p->head)
            p->tail = NULL;
        pthread_mutex_unlock(&p->mu);

        PGconn *conn = thread_conn(t);
        job->work(conn, job->arg);
        thread_check(t, conn);

        pthread_mutex_lock(&p->mu);
        job->next = p->done_head;
        p->done_head = job;
        pthread_mutex_unlock(&p->mu);
        loop_notify_signal(p->notify);
    }
    if (t->conn)
        PQfinish(t->conn);
    t->conn = NULL;
    return NULL;
}

static void run_done(struct db_pool *p)
{
    if (atomic_exchange(&p->came_up, false) && p->on_up && !p->stopping)
        p->on_up(p->on_up_arg);
    pthread_mutex_lock(&p->mu);
    struct db_job *list = p->done_head;
    p->done_head = NULL;
    pthread_mutex_unlock(&p->mu);
    struct db_job *rev = NULL; /* completion order */
    while (list) {
        struct db_job *n = list->next;
        list->next = rev;
        rev = list;
        list = n;
    }
    while (rev) {
        struct db_job *n = rev->next;
        atomic_fetch_sub(&p->pending, 1);
        if (rev->done)
            rev->done(rev->arg);
        free(rev);
        rev = n;
    }
}

static void on_jobs_done(void *arg)
{
    run_done(arg);
}

struct db_pool *db_pool_new(struct event_base *base, const char *conninfo, int nthreads, bool custom_plans)
{
    struct db_pool *p = xcalloc(1, sizeof *p);
    p->notify = loop_notify_new(base, on_jobs_done, p);
    if (!p->notify) {
        free(p);
        return NULL;
    }
    p->base = base;
    p->conninfo = xstrdup(conninfo);
    p->custom_plans = custom_plans;
    atomic_init(&p->pending, 0);
    atomic_init(&p->healthy, true);
    atomic_init(&p->came_up, false);
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv, NULL);
    p->nthreads = nthreads;
    p->threads = xcalloc((size_t)nthreads, sizeof *p->threads);
    for (int i = 0; i < nthreads; i++) {
        p->threads[i].pool = p;
        if (pthread_create(&p->threads[i].tid, NULL, thread_main, &p->threads[i]) != 0)
            HOOKD_ASSERT(!"pthread_create failed");
    }
    return p;
}

void db_pool_free(struct db_pool *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->mu);
    p->stopping = true;
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
    for (int i = 0; i < p->nthreads; i++)
        pthread_join(p->threads[i].tid, NULL);
    /* Completions may submit follow-up jobs (a finished batch hands on the
     * items that waited for it). No thread is left to run them: they run
     * here, without a connection, as while Postgres is down, so every job
     * still gets its completion and nothing it owns leaks. */
    for (;;) {
        run_done(p);
        pthread_mutex_lock(&p->mu);
        struct db_job *job = p->head;
        p->head = p->tail = NULL;
        pthread_mutex_unlock(&p->mu);
        if (!job)
            break;
        while (job) {
            struct db_job *next = job->next;
            job->work(NULL, job->arg);
            job->next = p->done_head;
            p->done_head = job;
            job = next;
        }
    }
    loop_notify_free(p->notify);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->cv);
    free(p->threads);
    free(p->conninfo);
    free(p);
}

void db_pool_submit(struct db_pool *p, db_work_fn work, db_done_fn done, void *arg)
{
    if (!p) { /* shutting down: the pool is gone, as if Postgres were */
        work(NULL, arg);
        if (done)
            done(arg);
        return;
    }
    struct db_job *job = xmalloc(sizeof *job);
    *job = (struct db_job){.work = work, .done = done, .arg = arg};
    atomic_fetch_add(&p->pending, 1);
    pthread_mutex_lock(&p->mu);
    if (p->tail)
        p->tail->next = job;
    else
        p->head = job;
    p->tail = job;
    pthread_cond_signal(&p->cv);
    pthread_mutex_unlock(&p->mu);
}

size_t db_pool_pending(const struct db_pool *p)
{
    return p ? atomic_load(&((struct db_pool *)p)->pending) : 0;
}

bool db_pool_healthy(const struct db_pool *p)
{
    return p && atomic_load(&((struct db_pool *)p)->healthy);
}

void db_pool_on_up(struct db_pool *p, db_done_fn fn, void *arg)
{
    p->on_up = fn;
    p->on_up_arg = arg;
}

bool db_conn_lost(PGconn *conn)
{
    return !conn || PQstatus(conn) != CONNECTION_OK || is_doomed(conn);
}

bool db_lock_conflict(const char *sqlstate)
{
    return sqlstate &&
           (strcmp(sqlstate, "55P03") == 0 || strcmp(sqlstate, "40P01") == 0 || strcmp(sqlstate, "40001") == 0);
}

PGresult *db_checked(PGconn *conn, PGresult *r, bool *transient, char *err, size_t errlen)
{
    ExecStatusType st = r ? PQresultStatus(r) : PGRES_FATAL_ERROR;
    if (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK)
        return r;
    const char *msg = r ? PQresultErrorMessage(r) : PQerrorMessage(conn);
    if (!msg || !*msg)
        msg = PQerrorMessage(conn);
    err_set(err, errlen, "%.*s", (int)strcspn(msg, "\n"), msg);
    bool unavailable = db_unavailable(conn, r);
    if (transient)
        *transient = !r || unavailable || db_lock_conflict(PQresultErrorField(r, PG_DIAG_SQLSTATE));
    PQclear(r);
    return NULL;
}

/* ---- binary array parameters ---------------------------------------------- */

static void array_put(struct db_array *a, const void *p, size_t n)
{
    if (a->len + n > a->cap) {
        a->cap = (a->len + n) * 2;
        a->buf = xrealloc(a->buf, a->cap);
    }
    memcpy(a->buf + a->len, p, n);
    a->len += n;
}

static void array_u32(struct db_array *a, uint32_t v)
{
    unsigned char b[4] = {(unsigned char)(v >> 24), (unsigned char)(v >> 16), (unsigned char)(v >> 8),
                          (unsigned char)v};
    array_put(a, b, 4);
}

static void array_u64(struct db_array *a, uint64_t v)
{
    array_u32(a, (uint32_t)(v >> 32));
    array_u32(a, (uint32_t)v);
}

void db_array_init(struct db_array *a, unsigned elem_oid, size_t n)
{
    a->buf = NULL;
    a->len = a->cap = 0;
    array_u32(a, 1);        /* dimensions */
    array_u32(a, 0);        /* has NULLs: set by db_array_null */
    array_u32(a, elem_oid); /* element type */
    array_u32(a, (uint32_t)n);
    array_u32(a, 1); /* lower bound */
}

void db_array_null(struct db_array *a)
{
    a->buf[7] = 1;
    array_u32(a, UINT32_MAX); /* length -1 */
}

void db_array_bool(struct db_array *a, bool v)
{
    array_u32(a, 1);
    array_put(a, v ? "\1" : "\0", 1);
}

void db_array_int4(struct db_array *a, int32_t v)
{
    array_u32(a, 4);
    array_u32(a, (uint32_t)v);
}

void db_array_int8(struct db_array *a, int64_t v)
{
    array_u32(a, 8);
    array_u64(a, (uint64_t)v);
}

void db_array_float8(struct db_array *a, double v)
{
    uint64_t bits;
    memcpy(&bits, &v, sizeof bits);
    array_u32(a, 8);
    array_u64(a, bits);
}

void db_array_text(struct db_array *a, const char *v)
{
    size_t n = strlen(v);
    array_u32(a, (uint32_t)n);
    array_put(a, v, n);
}

void db_array_jsonb(struct db_array *a, const char *v)
{
    size_t n = strlen(v);
    static const char version = 1; /* jsonb's binary form: a version byte, then the text */
    array_u32(a, (uint32_t)(n + 1));
    array_put(a, &version, 1);
    array_put(a, v, n);
}


int db_array_uuid(struct db_array *a, const char *v)
{
    unsigned char b[16];
    size_t k = 0;
    for (size_t i = 0; v[i] && k < 32; i++) {
        if ((i == 8 || i == 13 || i == 18 || i == 23) && v[i] == '-')
            continue;
        int h = enc_hex_value(v[i]);
        if (h < 0)
            return -1;
        b[k / 2] = (unsigned char)(k % 2 ? (b[k / 2] | h) : h << 4);
        k++;
    }
    if (k != 32 || strlen(v) != 36)
        return -1;
    array_u32(a, 16);
    array_put(a, b, 16);
    return 0;
}

int db_array_tid(struct db_array *a, const char *v)
{
    unsigned long block, offset;
    char end;
    if (sscanf(v, "(%lu,%lu%c", &block, &offset, &end) != 3 || end != ')' || block > UINT32_MAX || offset > UINT16_MAX)
        return -1;
    unsigned char b[6] = {(unsigned char)(block >> 24), (unsigned char)(block >> 16), (unsigned char)(block >> 8),
                          (unsigned char)block,         (unsigned char)(offset >> 8), (unsigned char)offset};
    array_u32(a, 6);
    array_put(a, b, 6);
    return 0;
}

size_t db_array_uuids(struct db_array *a, const char *const *v, size_t n)
{
    db_array_init(a, DB_OID_UUID, n);
    size_t added = 0;
    for (size_t i = 0; i < n; i++)
        added += db_array_uuid(a, v[i]) == 0;
    unsigned char count[4] = {(unsigned char)(added >> 24), (unsigned char)(added >> 16), (unsigned char)(added >> 8),
                              (unsigned char)added};
    memcpy(a->buf + 12, count, 4); /* the element count db_array_init wrote */
    return added;
}

PGresult *db_exec_fmt(PGconn *conn, const char *sql, int nparams, const char *const *params, const int *lengths,
                      const int *formats, char *err, size_t errlen)
{
    if (!conn) {
        err_set(err, errlen, "database unavailable");
        return NULL;
    }
    return db_checked(conn, PQexecParams(conn, sql, nparams, NULL, params, lengths, formats, 0), NULL, err, errlen);
}

PGresult *db_exec(PGconn *conn, const char *sql, int nparams, const char *const *params, char *err, size_t errlen)
{
    return db_exec_fmt(conn, sql, nparams, params, NULL, NULL, err, errlen);
}

int db_run(PGconn *conn, const char *sql, int nparams, const char *const *params, char *err, size_t errlen)
{
    PGresult *r = db_exec(conn, sql, nparams, params, err, errlen);
    if (!r)
        return -1;
    PQclear(r);
    return 0;
}

PGresult *db_exec_index_order(PGconn *conn, const char *sql, int nparams, const char *const *params, char *err,
                              size_t errlen)
{
    if (!conn) {
        err_set(err, errlen, "database unavailable");
        return NULL;
    }
    PGresult *r = PQexec(conn, "BEGIN; SET LOCAL enable_bitmapscan = off; SET LOCAL enable_sort = off");
    bool begun = PQresultStatus(r) == PGRES_COMMAND_OK;
    if (!begun)
        (void)db_unavailable(conn, r);
    PQclear(r);
    if (!begun) {
        err_set(err, errlen, "%.*s", (int)strcspn(PQerrorMessage(conn), "\n"), PQerrorMessage(conn));
        db_rollback(conn);
        return NULL;
    }
    r = db_exec(conn, sql, nparams, params, err, errlen);
    if (!r) {
        db_rollback(conn);
        return NULL;
    }
    if (db_run(conn, "COMMIT", 0, NULL, err, errlen) != 0) {
        PQclear(r);
        return NULL;
    }
    return r;
}

int db_command(PGconn *conn, const char *command, char *err, size_t errlen)
{
    if (!conn) {
        return err_set(err, errlen, "database unavailable");
    }
    PGresult *r = db_checked(conn, PQexec(conn, command), NULL, err, errlen);
    if (!r)
        return -1;
    PQclear(r);
    return 0;
}

void db_rollback(PGconn *conn)
{
    if (conn)
        PQclear(PQexec(conn, "ROLLBACK"));
}

/* Per DB thread: which statements are prepared on its connection, indexed
 * by the caller's statement number (hookd's enum query_id), so a lookup is
 * one array read and every statement fits (query.c checks at build time
 * that DB_PREPARED_MAX covers them all). The server-side name is derived
 * from the number. A reconnect (another connection, or a new backend pid)
 * starts the cache afresh. */
static _Thread_local struct {
    PGconn *conn;
    int backend_pid;
    bool deallocate; /* the server's statements are stale: drop them first */
    bool ready[DB_PREPARED_MAX];
} prepared;

static PGresult *prepared_once(PGconn *conn, unsigned id, const char *sql, int nparams, const char *const *params,
                               const int *lengths, const int *formats)
{
    if (prepared.conn != conn || prepared.backend_pid != PQbackendPID(conn)) {
        prepared.conn = conn;
        prepared.backend_pid = PQbackendPID(conn);
        memset(prepared.ready, 0, sizeof prepared.ready);
        prepared.deallocate = false;
    }
    if (prepared.deallocate && PQtransactionStatus(conn) != PQTRANS_INERROR) {
        PGresult *r = PQexec(conn, "DEALLOCATE ALL");
        if (PQresultStatus(r) == PGRES_COMMAND_OK)
            prepared.deallocate = false;
        PQclear(r);
    }
    if (id >= DB_PREPARED_MAX || prepared.deallocate) /* until the stale ones are gone: unprepared */
        return PQexecParams(conn, sql, nparams, NULL, params, lengths, formats, 0);
    char name[24];
    snprintf(name, sizeof name, "hookd_q%u", id);
    if (!prepared.ready[id]) {
        PGresult *r = PQprepare(conn, name, sql, nparams, NULL);
        if (PQresultStatus(r) != PGRES_COMMAND_OK)
            return r; /* the caller reads the error from it */
        PQclear(r);
        prepared.ready[id] = true;
    }
    return PQexecPrepared(conn, name, nparams, params, lengths, formats, 0);
}

/* A statement this cache prepared that the server no longer runs as it
 * was: gone (26000: a new session that happens to have the old one's pid),
 * or planned for a table a migration has changed since (0A000: "cached plan
 * must not change result type"). */
static bool stale_statement(const PGresult *r)
{
    const char *state = r ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : NULL;
    return state && (strcmp(state, "26000") == 0 || strcmp(state, "0A000") == 0);
}

/* Prepared on first use, and prepared again once when the server's copy
 * went stale: outside a transaction the statement then runs again at once;
 * inside one the error stands (the transaction is aborted) and the next use
 * prepares afresh. */
PGresult *db_prepared_raw(PGconn *conn, unsigned id, const char *sql, int nparams, const char *const *params,
                          const int *lengths, const int *formats)
{
    PGresult *r = prepared_once(conn, id, sql, nparams, params, lengths, formats);
    ExecStatusType st = r ? PQresultStatus(r) : PGRES_FATAL_ERROR;
    if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK)
        (void)db_unavailable(conn, r);
    if (!stale_statement(r))
        return r;
    memset(prepared.ready, 0, sizeof prepared.ready);
    prepared.deallocate = true;
    if (PQtransactionStatus(conn) != PQTRANS_IDLE)
        return r;
    PQclear(r);
    return prepared_once(conn, id, sql, nparams, params, lengths, formats);
}

PGresult *db_exec_prepared(PGconn *conn, unsigned id, const char *sql, int nparams, const char *const *params,
                           const int *lengths, const int *formats, char *err, size_t errlen)
{
    if (!conn) {
        err_set(err, errlen, "database unavailable");
        return NULL;
    }
    return db_checked(conn, db_prepared_raw(conn, id, sql, nparams, params, lengths, formats), NULL, err, errlen);
}
