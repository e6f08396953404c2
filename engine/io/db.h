/* A small pool of Postgres threads fed by the libevent loop. libpq calls
 * block, so they never run on the loop: the loop submits a job (a function
 * that runs on a DB thread with that thread's connection) and gets a
 * completion callback back on the loop. Each thread owns one connection and
 * reconnects with backoff; while Postgres is down, jobs still run and see a
 * NULL connection, so their owners can answer 503 or retry later instead of
 * waiting. This keeps every libpq detail out of the event loop. */
#ifndef HOOKD_DB_H
#define HOOKD_DB_H

#include <libpq-fe.h>
#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>

struct event_base;
struct db_pool;

/* Runs on a DB thread. conn is NULL when Postgres is unreachable. It must
 * not touch loop state; it fills its own job struct. */
typedef void (*db_work_fn)(PGconn *conn, void *arg);
/* Runs on the loop thread after the work function returned. */
typedef void (*db_done_fn)(void *arg);

/* conninfo is copied. Threads connect lazily, on their first job.
 * custom_plans: prepared statements are planned for their actual parameters
 * on every execution. For pools running batch statements that take arrays
 * of ids: a generic plan cannot see how many, and with statistics from when
 * a table was small (a fresh install, a burst after an outage) it scans a
 * whole table per batch, seconds instead of milliseconds once a burst has
 * arrived. Planning costs well under a millisecond a batch. */
__attribute__((warn_unused_result)) struct db_pool *db_pool_new(struct event_base *base, const char *conninfo,
                                                                int nthreads, bool custom_plans);
/* Waits for queued jobs to run, calls their done callbacks, joins the
 * threads and closes the connections. Accepts NULL. */
void db_pool_free(struct db_pool *pool);
/* pool may be NULL (after db_pool_free, while the worker shuts down and a
 * late timer or request still submits): then work runs at once with a NULL
 * connection and done right after it, before db_pool_submit returns. */
void db_pool_submit(struct db_pool *pool, db_work_fn work, db_done_fn done, void *arg);
/* Jobs submitted and not yet completed (queued + running + awaiting done);
 * 0 for a NULL pool. */
size_t db_pool_pending(const struct db_pool *pool);
/* False after a thread failed to connect or lost its connection, until a
 * thread connects again; false for a NULL pool (freed at shutdown). */
bool db_pool_healthy(const struct db_pool *pool);
/* fn(arg) runs on the loop when a thread of the pool connects after the
 * pool was unhealthy: Postgres is back, or a failover's new primary
 * answers. One per pool; it does not run for the first connect, nor while
 * the pool is being freed. */
void db_pool_on_up(struct db_pool *pool, db_done_fn fn, void *arg);

/* Helpers for work functions. All return -1 with err filled on failure. */
/* Runs sql with text parameters; on success returns the result (caller
 * PQclear()s) — for commands too. */
PGresult *db_exec(PGconn *conn, const char *sql, int nparams, const char *const *params, char *err, size_t errlen);
/* Prepared statements. Each is named by a small number unique to its text
 * (hookd passes its enum query_id: engine/core/query.h), below
 * DB_PREPARED_MAX: the number indexes a per-connection array, so the lookup
 * costs nothing however many statements there are. A statement is prepared
 * on its first use on each connection (per DB thread, again after a
 * reconnect, and again when the server reports its copy stale), so hot
 * statements are parsed (and, without custom_plans, planned) once.
 * lengths and formats: per parameter (0 text, 1 binary), or NULL: all text.
 * Returns the result (caller PQclear()s), or NULL with err filled. */
#define DB_PREPARED_MAX 256
PGresult *db_exec_prepared(PGconn *conn, unsigned id, const char *sql, int nparams, const char *const *params,
                           const int *lengths, const int *formats, char *err, size_t errlen);
/* The same, returning the raw result whatever its status (the caller checks
 * PQresultStatus and reads SQLSTATE; may be NULL); conn must not be NULL. */
PGresult *db_prepared_raw(PGconn *conn, unsigned id, const char *sql, int nparams, const char *const *params,
                          const int *lengths, const int *formats);
/* An array parameter in PostgreSQL's binary format (what array_send
 * writes: one dimension, then each element as a length and its bytes), sent
 * with format 1. The server takes it as it is; a text array literal of a
 * pass's UUIDs or numbers is parsed element by element, which costs
 * milliseconds of binding per pass. */
struct db_array {
    char *buf; /* owned; free() it */
    size_t len, cap;
};
enum {
    DB_OID_BOOL = 16,
    DB_OID_INT8 = 20,
    DB_OID_INT4 = 23,
    DB_OID_TEXT = 25,
    DB_OID_TID = 27,
    DB_OID_FLOAT8 = 701,
    DB_OID_UUID = 2950,
    DB_OID_JSONB = 3802
};
/* Starts an array of n elements of type elem_oid; add exactly n. */
void db_array_init(struct db_array *a, unsigned elem_oid, size_t n);
void db_array_null(struct db_array *a);
void db_array_bool(struct db_array *a, bool v);
void db_array_int4(struct db_array *a, int32_t v);
void db_array_int8(struct db_array *a, int64_t v);
void db_array_float8(struct db_array *a, double v);
void db_array_text(struct db_array *a, const char *v);
/* JSON text as a jsonb element (Postgres parses it as it would the text). */
void db_array_jsonb(struct db_array *a, const char *v);
/* From their text forms ("8-4-4-4-12" hex; "(block,offset)"): -1, nothing
 * added, when v is not one. */
int db_array_uuid(struct db_array *a, const char *v);
int db_array_tid(struct db_array *a, const char *v);
/* Starts a uuid[] of those of v[0..n) that are UUIDs, leaving the others
 * out (ids read from Redis are not trusted to be). Returns how many. */
size_t db_array_uuids(struct db_array *a, const char *const *v, size_t n);
/* db_exec with per-parameter lengths and formats (0 text, 1 binary; NULL:
 * all text), for binary db_array parameters. */
PGresult *db_exec_fmt(PGconn *conn, const char *sql, int nparams, const char *const *params, const int *lengths,
                      const int *formats, char *err, size_t errlen);
/* Runs a statement whose result is not needed. */
__attribute__((warn_unused_result)) int db_run(PGconn *conn, const char *sql, int nparams, const char *const *params,
                                               char *err, size_t errlen);
/* Like db_exec, in a transaction of its own (committed) in which Postgres
 * may neither bitmap-scan nor sort: for queue and keyset queries
 * (`WHERE … ORDER BY <index columns> LIMIT n`) that must walk their index in
 * order. With stale statistics — a bulk insert, a fast-moving backlog — the
 * planner otherwise reads every matching row and sorts it for each page,
 * which turns a pass over n rows into n²/page row visits. */
PGresult *db_exec_index_order(PGconn *conn, const char *sql, int nparams, const char *const *params, char *err,
                              size_t errlen);
/* Runs a command without parameters as it is: transaction control (BEGIN,
 * COMMIT, SAVEPOINT, RELEASE SAVEPOINT, ROLLBACK TO SAVEPOINT), SET, LISTEN,
 * DDL. 0, or -1 with err when it failed: the
 * transaction is then aborted (or the connection gone), so nothing done in
 * it may be reported as done — the caller rolls it back. */
__attribute__((warn_unused_result)) int db_command(PGconn *conn, const char *command, char *err, size_t errlen);
/* Rolls back the open transaction; a failure means the connection is gone,
 * and the transaction died with it, so there is nothing to report. */
void db_rollback(PGconn *conn);
/* True when the connection failed (as opposed to a statement error), or a
 * statement on it found that the server is no longer a primary that takes
 * writes (see db_unavailable). */
bool db_conn_lost(PGconn *conn);
/* For a failed statement's result r (may be NULL): true when the failure
 * says "Postgres is unavailable", not "this statement or event is bad" —
 * the connection is lost, or the server is not (or no longer) a writable
 * primary: read-only (SQLSTATE 25006, a standby or a demoted primary),
 * shutting down (57P01, 57P02), starting up (57P03), a connection exception
 * (class 08), or in recovery. The connection is then marked: db_conn_lost()
 * is true for it, and the pool closes it when the job ends and connects
 * afresh (with a multi-host conninfo and target_session_attrs=read-write,
 * to the new primary). Callers treat the job as not done (retry later, no
 * attempt counted, never a dead letter). db.c's own helpers call it on
 * every failure; a role that runs libpq directly calls it itself. */
bool db_unavailable(PGconn *conn, const PGresult *r);
/* Whether a SQLSTATE means "someone else holds it" (lock timeout, deadlock,
 * serialization failure), not "this statement is bad". */
bool db_lock_conflict(const char *sqlstate);
/* A statement's result: r when it succeeded; otherwise NULL with the first
 * line of the error in err (r is freed), and, when transient is given,
 * whether the failure was a lock conflict or Postgres being unavailable. */
PGresult *db_checked(PGconn *conn, PGresult *r, bool *transient, char *err, size_t errlen);
/* Connects synchronously (every libpq connection hookd makes goes through
 * here), with TCP keepalives that notice a silently dead server in about
 * 30 s unless the conninfo sets its own (see db.c). NULL with err on
 * failure. */
PGconn *db_connect(const char *conninfo, char *err, size_t errlen);
/* The same, giving up on each host after connect_timeout_s unless the
 * conninfo sets its own connect_timeout (for a command that can do without
 * Postgres, such as `hookd status`). */
PGconn *db_connect_timeout(const char *conninfo, int connect_timeout_s, char *err, size_t errlen);

#endif
