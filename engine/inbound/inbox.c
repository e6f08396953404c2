/* Evaluation of inbox events; see inbox.h and inbox_eval.h.
 *
 * Everything that decides an event's fate happens on a DB thread inside the
 * batch transaction and is written to Postgres there; the loop only turns
 * the committed results into Redis verdicts, counters, log lines and
 * alerts. If the COMMIT itself fails, nothing of the batch happened: every
 * item is simply due again a second later.
 *
 * A batch is first evaluated set-based (inbox_batch.c: a few statements for
 * the whole batch), and what that leaves — events of machines with their own
 * entity tables — event by event without savepoints. Any statement failure
 * and the batch is rolled back and its failing events isolated by bisection,
 * each part a set in its own SAVEPOINT (see "isolating the events that
 * fail" below), so one bad event fails alone and the rest still goes as
 * sets; the failed attempts are recorded for the batch at once. */
#include "inbound.h"

#include <jansson.h>
#include <openssl/rand.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "alert.h"
#include "backoff.h"
#include "batcher.h"
#include "clock.h"
#include "db.h"
#include "errbuf.h"
#include "inbox_decide.h"
#include "inbox_batch.h"
#include "inbox_eval.h"
#include "keyindex.h"
#include "log.h"
#include "machine.h"
#include "query.h"
#include "rand.h"
#include "sched.h"
#include "ctx.h"
#include "xmalloc.h"

struct inbox {
    struct hookd_ctx *ctx;
    struct alerter *alerter; /* borrowed */
    struct sched *sched;     /* owned: the inbox queue */
    struct batcher *batcher; /* claimed struct inbox_item (ids only) for the next batch job */
    /* When a batch last had events whose evaluation failed (wall ms; DB
     * threads): for a while after, batches start with the robust pass. */
    _Atomic int64_t failed_at_ms;
};

/* ---- statements of the per-event path ------------------------------------ */

/* A statement of sql/queries/, prepared (see query.h). */
static PGresult *stmt(PGconn *conn, enum query_id id, const char *const *params, bool *transient, char *err,
                      size_t errlen)
{
    return inbox_eval_checked(conn, query_prepared_raw(conn, id, params, NULL, NULL), transient, err, errlen);
}

static void record_attempt(PGconn *conn, const struct inbox_job *job, const struct inbox_item *it, int64_t started_us)
{
    char dur[32];
    snprintf(dur, sizeof dur, "%.3f", (double)(clock_mono_us() - started_us) / 1000.0);
    bool failed = it->outcome == OUT_RETRY || it->outcome == OUT_DEAD || it->outcome == OUT_DEFERRED;
    const char *params[] = {it->id, inbox_outcome_names[it->outcome], dur, failed ? it->error : NULL, job->worker_id};
    char err[256];
    PQclear(stmt(conn, Q_INBOX_RECORD_ATTEMPT, params, NULL, err, sizeof err));
}

/* QUARANTINED + a dead_letters row (reason: it->dead_reason). */
static int dead_letter(PGconn *conn, struct inbox_item *it, char *err, size_t errlen)
{
    char attempts[16];
    snprintf(attempts, sizeof attempts, "%d", it->attempts);
    const char *p1[] = {it->id, attempts, it->error};
    PGresult *r = stmt(conn, Q_INBOX_QUARANTINE, p1, NULL, err, errlen);
    if (!r)
        return -1;
    PQclear(r);
    const char *p2[] = {it->id, it->dead_reason, attempts, it->error};
    r = stmt(conn, Q_INBOX_DEAD_LETTER, p2, NULL, err, errlen);
    if (!r)
        return -1;
    PQclear(r);
    it->outcome = OUT_DEAD;
    return 0;
}

/* PROCESSED with an outcome; for applies also wakes deferred siblings. */
static int mark_processed(PGconn *conn, struct inbox_item *it, const char *outcome, char *err, size_t errlen)
{
    const char *p[] = {it->id, outcome};
    PGresult *r = stmt(conn, Q_INBOX_MARK_PROCESSED, p, NULL, err, errlen);
    if (!r)
        return -1;
    PQclear(r);
    return 0;
}

static int wake_siblings(PGconn *conn, struct inbox_item *it, char *err, size_t errlen)
{
    const char *p[] = {it->entity_type, it->entity_id, it->id};
    PGresult *r = stmt(conn, Q_INBOX_WAKE_SIBLINGS, p, NULL, err, errlen);
    if (!r)
        return -1;
    it->nwake = (size_t)PQntuples(r);
    if (it->nwake) {
        it->wake_ids = xcalloc(it->nwake, sizeof *it->wake_ids);
        it->wake_due = xcalloc(it->nwake, sizeof *it->wake_due);
    }
    for (size_t i = 0; i < it->nwake; i++) {
        it->wake_ids[i] = xstrdup(PQgetvalue(r, (int)i, INBOX_WAKE_SIBLINGS_ID));
        it->wake_due[i] = strtoll(PQgetvalue(r, (int)i, INBOX_WAKE_SIBLINGS_DUE_MS), NULL, 10);
    }
    PQclear(r);
    return 0;
}

/* ---- the entity ---------------------------------------------------------- */

/* An entity's three statements. For the built-in table (hookd_entities)
 * they are the prepared sql/queries/inbox_entity_{create,lock,update}.sql.
 *
 * STATEMENTS BUILT AT RUN TIME (they stay in C, listed in docs/queries.md):
 * for a machine whose entities live in the application's own table, the
 * table and column names come from the config and are quoted here with
 * PQescapeIdentifier, so the text exists only at run time; it is run
 * unprepared. Each has the parameters of its built-in twin ($1 machine,
 * $2 entity id, $3 state), and the lock statement has its one column,
 * the state as text, where INBOX_ENTITY_LOCK_STATE reads it. */
struct entity_sql {
    char *create, *lock, *update; /* owned; NULL for the built-in table */
    bool owned;
};

static int entity_sql_build(PGconn *conn, const struct machine_config *m, struct entity_sql *s)
{
    memset(s, 0, sizeof s[0]);
    if (m->builtin)
        return 0;
    s->owned = true;
    char *table = NULL, *id = NULL, *state = NULL, *version = NULL;
    const char *dot = strchr(m->table, '.');
    if (dot) { /* schema.table: quote each part */
        char *schema = xstrndup(m->table, (size_t)(dot - m->table));
        char *qs = PQescapeIdentifier(conn, schema, strlen(schema));
        char *qt = PQescapeIdentifier(conn, dot + 1, strlen(dot + 1));
        if (qs && qt)
            table = xasprintf("%s.%s", qs, qt);
        PQfreemem(qs);
        PQfreemem(qt);
        free(schema);
    } else {
        char *qt = PQescapeIdentifier(conn, m->table, strlen(m->table));
        if (qt)
            table = xstrdup(qt);
        PQfreemem(qt);
    }
    id = PQescapeIdentifier(conn, m->id_column, strlen(m->id_column));
    state = PQescapeIdentifier(conn, m->state_column, strlen(m->state_column));
    if (m->version_column)
        version = PQescapeIdentifier(conn, m->version_column, strlen(m->version_column));
    int rc = -1;
    if (table && id && state && (!m->version_column || version)) {
        /* $1 (the machine name) is unused for user tables but keeps the
         * parameter list the same for both kinds. */
        s->create =
            xasprintf("INSERT INTO %s (%s, %s) SELECT $2, $3 WHERE $1::text IS NOT NULL ON CONFLICT DO NOTHING", table,
                      id, state);
        s->lock = xasprintf("SELECT %s::text FROM %s WHERE %s = $2 AND $1::text IS NOT NULL FOR UPDATE NOWAIT", state,
                            table, id);
        if (version)
            s->update = xasprintf("UPDATE %s SET %s = $3, %s = %s + 1 WHERE %s = $2 AND $1::text IS NOT NULL", table,
                                  state, version, version, id);
        else
            s->update = xasprintf("UPDATE %s SET %s = $3 WHERE %s = $2 AND $1::text IS NOT NULL", table, state, id);
        rc = 0;
    }
    free(table);
    PQfreemem(id);
    PQfreemem(state);
    PQfreemem(version);
    return rc;
}

/* One of an entity's statements: the prepared built-in one (builtin), or
 * the one built at run time (sql) for an application table. */
static PGresult *entity_stmt(PGconn *conn, const struct entity_sql *es, enum query_id builtin, const char *sql,
                             const char *const *params, bool *transient, char *err, size_t errlen)
{
    if (!es->owned)
        return stmt(conn, builtin, params, transient, err, errlen);
    return inbox_eval_checked(conn, PQexecParams(conn, sql, query_defs[builtin].nparams, NULL, params, NULL, NULL, 0),
                              transient, err, errlen);
}

static void entity_sql_free(struct entity_sql *s)
{
    if (!s->owned)
        return;
    free(s->create);
    free(s->lock);
    free(s->update);
}

/* ---- one event ------------------------------------------------------------ */

/* Locks and reads the row. 1 = locked, 0 = not evaluable (it->outcome set),
 * -1 = error. */
static int lock_row(PGconn *conn, struct inbox_item *it, struct inbox_row *row, char *err, size_t errlen)
{
    const char *p[] = {it->id};
    bool transient = false;
    PGresult *r = stmt(conn, Q_INBOX_LOCK_ROW, p, &transient, err, errlen);
    if (!r)
        return -1;
    if (PQntuples(r) == 0) {
        PQclear(r);
        r = stmt(conn, Q_INBOX_ROW_STATUS, p, NULL, err, errlen);
        if (!r)
            return -1;
        const char *status = PQntuples(r) ? PQgetvalue(r, 0, INBOX_ROW_STATUS_STATUS) : NULL;
        if (!status)
            it->outcome = OUT_GONE;
        else if (strcmp(status, "PROCESSED") == 0 || strcmp(status, "QUARANTINED") == 0)
            it->outcome = OUT_TERMINAL;
        else
            it->outcome = OUT_BUSY;
        PQclear(r);
        return 0;
    }
    snprintf(it->partner, sizeof it->partner, "%s", PQgetvalue(r, 0, INBOX_LOCK_ROW_PARTNER_NAME));
    snprintf(it->event_type, sizeof it->event_type, "%s", PQgetvalue(r, 0, INBOX_LOCK_ROW_EVENT_TYPE));
    snprintf(it->entity_type, sizeof it->entity_type, "%s", PQgetvalue(r, 0, INBOX_LOCK_ROW_ENTITY_TYPE));
    free(it->entity_id); /* read before by the set-based pass */
    it->entity_id = PQgetisnull(r, 0, INBOX_LOCK_ROW_ENTITY_ID) ? NULL
                                                                : xstrdup(PQgetvalue(r, 0, INBOX_LOCK_ROW_ENTITY_ID));
    snprintf(row->status, sizeof row->status, "%s", PQgetvalue(r, 0, INBOX_LOCK_ROW_STATUS));
    row->attempts = atoi(PQgetvalue(r, 0, INBOX_LOCK_ROW_ATTEMPTS));
    row->deferrals = atoi(PQgetvalue(r, 0, INBOX_LOCK_ROW_DEFERRALS));
    row->age_ms = strtoll(PQgetvalue(r, 0, INBOX_LOCK_ROW_AGE_MS), NULL, 10);
    PQclear(r);
    it->attempts = row->attempts;
    if (strcmp(row->status, "PROCESSED") == 0 || strcmp(row->status, "QUARANTINED") == 0) {
        it->outcome = OUT_TERMINAL;
        return 0;
    }
    return 1;
}

/* Classifies and writes the verdict. Returns 0, or -1 with err: then the
 * caller rolls back the savepoint and records a failed attempt. */
static int evaluate(PGconn *conn, const struct hookd_config *cfg, struct inbox_item *it, struct inbox_row *row,
                    bool *transient, char *err, size_t errlen)
{
    const struct machine_config *m = inbox_machine_for(cfg, it, err, errlen);
    if (!m)
        return -1;
    struct entity_sql es;
    if (entity_sql_build(conn, m, &es) != 0)
        return err_set(err, errlen, "cannot quote the entity table's identifiers");
    int rc = -1;
    /* Entities were created (committed) before the batch began: see
     * prepare_batch(). */
    const char *key[] = {m->name, it->entity_id};
    PGresult *r = entity_stmt(conn, &es, Q_INBOX_ENTITY_LOCK, es.lock, key, transient, err, errlen);
    if (!r)
        goto done;
    char *state = PQntuples(r) ? xstrdup(PQgetvalue(r, 0, INBOX_ENTITY_LOCK_STATE)) : NULL;
    PQclear(r);

    struct inbox_decision d;
    inbox_decide(cfg, m, it, row, state, &d, err, errlen);
    switch (d.outcome) {
    case OUT_APPLIED: {
        /* a missing entity gets here only with create = true */
        const char *upd[] = {m->name, it->entity_id, d.to};
        r = state ? entity_stmt(conn, &es, Q_INBOX_ENTITY_UPDATE, es.update, upd, transient, err, errlen)
                  : entity_stmt(conn, &es, Q_INBOX_ENTITY_CREATE, es.create, upd, transient, err, errlen);
        if (!r)
            break;
        PQclear(r);
        if (inbox_eval_emit_followups(conn, m, it, state, d.to, err, errlen) != 0 ||
            mark_processed(conn, it, "applied", err, errlen) != 0 || wake_siblings(conn, it, err, errlen) != 0)
            break;
        it->outcome = OUT_APPLIED;
        rc = 0;
        break;
    }
    case OUT_NOOP:
    case OUT_IGNORED:
        it->outcome = d.outcome;
        rc = mark_processed(conn, it, inbox_outcome_names[d.outcome], err, errlen);
        break;
    case OUT_DEFERRED: {
        char ms[24];
        snprintf(ms, sizeof ms, "%lld", (long long)d.wait_ms);
        const char *p[] = {it->id, ms, it->error};
        r = stmt(conn, Q_INBOX_DEFER, p, transient, err, errlen);
        if (!r)
            break;
        it->next_due_ms = strtoll(PQgetvalue(r, 0, INBOX_DEFER_DUE_MS), NULL, 10);
        PQclear(r);
        it->outcome = OUT_DEFERRED;
        rc = 0;
        break;
    }
    case OUT_DEAD: rc = dead_letter(conn, it, err, errlen); break;
    default: /* OUT_RETRY: err says why */ break;
    }
    free(state);
done:
    entity_sql_free(&es);
    return rc;
}

/* The per-event path, for what the set-based pass left (machines with
 * their own entity tables). Any failure — a bad event, a lock conflict, an
 * SQL error — and the caller rolls the group back; job->err_item then names
 * the item, so the caller knows which event failed without searching.
 * Returns 0 when the event was evaluated cleanly. */
static int evaluate_fast(PGconn *conn, struct inbox_job *job, size_t i)
{
    struct inbox_item *it = &job->items[i];
    char err[512] = "";
    int64_t started = clock_mono_us();
    struct inbox_row row = {0};
    bool transient = false;
    if (!inbox_valid_uuid(it->id)) {
        it->outcome = OUT_GONE;
        return 0;
    }
    int locked = lock_row(conn, it, &row, err, sizeof err);
    int rc = 0;
    if (locked < 0)
        rc = -1;
    else if (locked == 0 && it->outcome == OUT_BUSY)
        inbox_eval_busy(it, 500);
    else if (locked > 0 && evaluate(conn, job->cfg, it, &row, &transient, err, sizeof err) != 0)
        rc = -1;
    if (rc == 0 && locked > 0)
        record_attempt(conn, job, it, started);
    if (rc == 0 && PQtransactionStatus(conn) == PQTRANS_INTRANS)
        return 0;
    snprintf(job->err, sizeof job->err, "%s", err[0] ? err : "the attempt could not be recorded");
    job->err_locking = locked < 0;
    job->err_item = i;
    return -1;
}

static void item_free(struct inbox_item *it);

/* Back to the state a claimed item starts in (the id alone). */
static void item_reset(struct inbox_item *it)
{
    char id[sizeof it->id];
    memcpy(id, it->id, sizeof id);
    item_free(it);
    memset(it, 0, sizeof *it);
    memcpy(it->id, id, sizeof id);
}

/* Stable reorder: the items whose rows were found first, in receipt order
 * (the order of r's rows), then the rest as they were claimed. */
static void reorder(struct inbox_job *job, PGresult *r)
{
    struct keyindex *ix = keyindex_new(job->n);
    for (size_t i = 0; i < job->n; i++)
        keyindex_add(ix, job->items[i].id, strlen(job->items[i].id), i);
    struct inbox_item *sorted = xmalloc(job->n * sizeof *sorted);
    bool *placed = xcalloc(job->n, sizeof *placed);
    size_t k = 0;
    for (int i = 0; i < PQntuples(r); i++) {
        const char *id = PQgetvalue(r, i, INBOX_BATCH_ORDER_ID);
        size_t at = keyindex_take(ix, id, strlen(id));
        if (at != KEYINDEX_NONE) {
            sorted[k++] = job->items[at];
            placed[at] = true;
        }
    }
    for (size_t i = 0; i < job->n; i++)
        if (!placed[i])
            sorted[k++] = job->items[i];
    keyindex_free(ix); /* before the ids it borrows */
    free(job->items);
    job->items = sorted;
    free(placed);
}

/* Puts the batch in receipt order (events of one entity that are due
 * together are evaluated in the order they arrived, not in the random order
 * of equal Redis scores) and creates the batch's missing entities (machines
 * with create = true) in their initial state, committed before the batch
 * transaction starts: an insert of the same key by an open batch transaction
 * would make other batches wait on it while holding their own row locks —
 * the deadlock of two batches. Keys are inserted sorted, so concurrent
 * creators lock in one order. */
static void prepare_batch(PGconn *conn, struct inbox_job *job)
{
    char err[256];
    const char **each = xcalloc(job->n, sizeof *each);
    for (size_t i = 0; i < job->n; i++)
        each[i] = job->items[i].id;
    struct db_array ids;
    db_array_uuids(&ids, each, job->n);
    free(each);
    const char *p[] = {ids.buf};
    const int len[] = {(int)ids.len}, fmt[] = {1};
    /* unprepared: planned for this batch's ids */
    PGresult *r = query_exec_fmt(conn, Q_INBOX_BATCH_ORDER, p, len, fmt, err, sizeof err);
    free(ids.buf);
    if (!r)
        return; /* the evaluation reports what is wrong */
    reorder(job, r);
    json_t *builtin = json_object(); /* machine name -> {entity id: true} */
    for (int i = 0; i < PQntuples(r); i++) {
        if (PQgetisnull(r, i, INBOX_BATCH_ORDER_ENTITY_ID) || PQgetvalue(r, i, INBOX_BATCH_ORDER_OPEN)[0] != 't')
            continue;
        const struct machine_config *m = config_machine_for(job->cfg, PQgetvalue(r, i, INBOX_BATCH_ORDER_ENTITY_TYPE),
                                                            PQgetvalue(r, i, INBOX_BATCH_ORDER_EVENT_TYPE));
        if (!m || !m->create)
            continue;
        const char *eid = PQgetvalue(r, i, INBOX_BATCH_ORDER_ENTITY_ID);
        if (m->builtin) {
            json_t *set = json_object_get(builtin, m->name);
            if (!set)
                json_object_set_new(builtin, m->name, set = json_object());
            json_object_set_new(set, eid, json_true());
            continue;
        }
        struct entity_sql es;
        if (entity_sql_build(conn, m, &es) == 0) {
            const char *k[] = {m->name, eid, machine_initial(m->machine)};
            PQclear(db_exec(conn, es.create, query_defs[Q_INBOX_ENTITY_CREATE].nparams, k, err, sizeof err));
        }
        entity_sql_free(&es);
    }
    PQclear(r);
    const char *name;
    json_t *set;
    json_object_foreach(builtin, name, set)
    {
        json_t *list = json_array();
        const char *eid;
        json_t *v;
        json_object_foreach(set, eid, v) json_array_append_new(list, json_string(eid));
        char *arr = json_dumps(list, JSON_COMPACT);
        json_decref(list);
        const struct machine_config *m = config_machine(job->cfg, name);
        const char *k[] = {name, arr, machine_initial(m->machine)};
        r = query_exec(conn, Q_INBOX_CREATE_ENTITIES, k, err, sizeof err);
        if (!r)
            log_warn("inbox.create_entities_failed", "machine=%s error=\"%s\"", name, err);
        PQclear(r);
        free(arr);
    }
    json_decref(builtin);
}


/* BEGIN in the same round trip as a lock timeout: nothing in an evaluation
 * should wait on a lock (rows: SKIP LOCKED, entities: NOWAIT or SKIP
 * LOCKED); this bounds anything that still would. */
static int begin(PGconn *conn)
{
    PGresult *r = PQexec(conn, "BEGIN; SET LOCAL lock_timeout = '2s'");
    int rc = PQresultStatus(r) == PGRES_COMMAND_OK ? 0 : -1;
    if (rc != 0 && !db_unavailable(conn, r))
        log_warn("inbox.begin_failed", "error=\"%.*s\"", (int)strcspn(PQerrorMessage(conn), "\n"),
                 PQerrorMessage(conn));
    PQclear(r);
    return rc;
}

/* ---- isolating the events that fail ------------------------------------------
 *
 * A batch is one set first. When a statement fails, the batch is rolled back
 * and the failing events are isolated, each try of a group of events a set
 * in its own SAVEPOINT:
 *  - a failure of one event's own statement (a follow-up insert, the
 *    statements of a machine with its own table) names that event: it is
 *    charged, and the rest of the group is tried again as one set;
 *  - an unexplained failure is tried once more in the robust pass
 *    (job->robust: each entity updated in its own block,
 *    sql/0024_inbox_isolate.sql), which names the entities whose new state
 *    was refused: an event that was the only transition of its entity is
 *    charged; several transitions of one entity are bisected afterwards;
 *    the rest again as one set;
 *  - what the robust pass cannot explain either (a failure outside the entity
 *    update) is split in halves, down to the single events that fail alone.
 * A single event is always charged for a failure it had on its own try.
 * An event that is its entity's only one in the group has its refused apply
 * turned into its failure by the robust pass itself (inbox_batch.c), written
 * with the group's other verdicts: no further try. So a batch with refused
 * applies costs two group tries (the set, the robust pass) instead of one
 * evaluation with a savepoint per event, and, while batches keep failing
 * (one failed less than 2 s ago), one: they start with the robust pass. The
 * failed attempts found otherwise are recorded for the whole batch with two
 * statements (inbox_batch_fail). A lock conflict or an unavailable Postgres
 * makes the event busy, never charged. */

/* Runs SAVEPOINT, RELEASE or ROLLBACK TO. -1 when it failed: the batch
 * transaction is then aborted (or the connection gone), so nothing of the
 * batch may be committed or reported as done. */
static int savepoint(PGconn *conn, const char *command)
{
    char err[256];
    if (db_command(conn, command, err, sizeof err) == 0)
        return 0;
    log_warn("inbox.savepoint_failed", "command=\"%s\" error=\"%s\"", command, err);
    return -1;
}

/* Why a group failed. */
struct group_failure {
    char err[512];
    bool busy, locking;
    size_t item;               /* position in the group of the event whose own statement failed, or SIZE_MAX */
    struct inbox_blame *blame; /* robust pass: the events whose entity update failed (positions in the group) */
    size_t nblame;
};

static void group_failure_free(struct group_failure *f)
{
    for (size_t k = 0; k < f->nblame; k++)
        free(f->blame[k].error);
    free(f->blame);
    f->blame = NULL;
    f->nblame = 0;
}

/* Evaluates the items idx[0..n) of the batch as one set in the open
 * transaction (set-based, then per event what that leaves; robust: entities
 * updated each in its own block; isolating: each per-event item in its own
 * savepoint). true when it went through, with f->blame listing the
 * per-event items that failed in their savepoint (to charge); otherwise *f
 * says why, and the caller must roll back. The caller frees *f. */
static bool try_group(PGconn *conn, struct inbox_job *job, const size_t *idx, size_t n, bool robust, bool isolating,
                      struct group_failure *f)
{
    struct inbox_job sub = *job;
    sub.items = xmalloc(n * sizeof *sub.items);
    for (size_t k = 0; k < n; k++)
        sub.items[k] = job->items[idx[k]]; /* moved out, moved back below */
    sub.n = n;
    sub.err[0] = '\0';
    sub.err_item = SIZE_MAX;
    sub.robust = robust;
    sub.blame = NULL;
    sub.nblame = 0;
    sub.refused = 0;
    (void)inbox_eval_take_conflict();
    bool ok = inbox_batch_evaluate(conn, &sub) == 0;
    for (size_t k = 0; k < n && ok; k++) {
        if (sub.items[k].outcome != OUT_NONE)
            continue;
        if (!isolating) {
            ok = evaluate_fast(conn, &sub, k) == 0;
            continue;
        }
        /* isolating: each such event in its own savepoint, so that one
         * failing does not cost the group another try */
        if (savepoint(conn, "SAVEPOINT ev") != 0) {
            ok = false;
            break;
        }
        (void)inbox_eval_take_conflict();
        if (evaluate_fast(conn, &sub, k) == 0) {
            ok = savepoint(conn, "RELEASE SAVEPOINT ev") == 0;
            continue;
        }
        bool busy = inbox_eval_take_conflict() || sub.err_locking;
        if (db_conn_lost(conn) || savepoint(conn, "ROLLBACK TO SAVEPOINT ev; RELEASE SAVEPOINT ev") != 0) {
            ok = false;
            break;
        }
        int nrouted = sub.items[k].nrouted; /* its routes ran before the savepoint and stay */
        item_reset(&sub.items[k]);
        sub.items[k].nrouted = nrouted;
        sub.blame = xrealloc(sub.blame, (sub.nblame + 1) * sizeof *sub.blame);
        sub.blame[sub.nblame++] =
            (struct inbox_blame){.item = k, .busy = busy, .alone = true, .error = xstrdup(sub.err)};
        sub.err_item = SIZE_MAX;
    }
    memset(f, 0, sizeof *f);
    f->item = SIZE_MAX;
    if (ok) { /* what failed alone in its own savepoint: for the caller to charge */
        f->blame = sub.blame;
        f->nblame = sub.nblame;
    } else {
        snprintf(f->err, sizeof f->err, "%s", sub.err[0] ? sub.err : "evaluation failed");
        f->busy = inbox_eval_take_conflict() || db_conn_lost(conn);
        f->locking = sub.err_locking;
        f->item = sub.err_item;
        f->blame = sub.blame;
        f->nblame = sub.nblame;
    }
    for (size_t k = 0; k < n; k++)
        job->items[idx[k]] = sub.items[k];
    job->refused += sub.refused;
    free(sub.items);
    return ok;
}

/* The events whose failed attempts the batch records at its end. */
struct failed_list {
    size_t *idx;
    size_t n;
};

/* The event at idx failed alone: busy (a conflict, due again soon, free),
 * its row could not be locked (not its fault, due again in a second), or a
 * failed attempt to record. */
static void charge(struct inbox_job *job, size_t idx, bool busy, bool locking, const char *err, struct failed_list *fl)
{
    struct inbox_item *it = &job->items[idx];
    if (busy) {
        inbox_eval_busy(it, 100);
    } else if (locking) {
        inbox_eval_busy(it, 1000);
    } else {
        inbox_set_error(it, "%s", err);
        fl->idx[fl->n++] = idx;
    }
}

static int cmp_index(const void *a, const void *b)
{
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return x < y ? -1 : x > y;
}

/* Evaluates the group idx[0..n), isolating what fails (see above). known:
 * the group's failure when it was already tried (plainly), NULL to try it.
 * robust_helps: an unexplained failure is worth one robust try before the
 * group is split (false once a robust try could not explain it). -1: a
 * savepoint command failed or the connection is gone; the batch must not
 * commit. */
static int isolate(PGconn *conn, struct inbox_job *job, size_t *idx, size_t n, struct group_failure *known,
                   bool known_robust, bool robust_helps, struct failed_list *fl)
{
    struct group_failure f = {.item = SIZE_MAX};
    bool have = false, robust = false, tried_robust = false;
    size_t *susp = xmalloc((n + 1) * sizeof *susp), nsusp = 0; /* blamed with others: bisected at the end */
    int rc = 0;
    if (known) { /* its blame is ours now */
        f = *known;
        known->blame = NULL;
        known->nblame = 0;
        have = true;
        tried_robust = known_robust;
    }
    while (n > 0) {
        if (!have) {
            if (savepoint(conn, "SAVEPOINT grp") != 0) {
                rc = -1;
                break;
            }
            if (try_group(conn, job, idx, n, robust, true, &f)) {
                for (size_t k = 0; k < f.nblame; k++) /* events that failed in their own savepoint */
                    charge(job, idx[f.blame[k].item], f.blame[k].busy, false, f.blame[k].error, fl);
                group_failure_free(&f);
                n = 0;
                rc = savepoint(conn, "RELEASE SAVEPOINT grp");
                break;
            }
            if (db_conn_lost(conn) || savepoint(conn, "ROLLBACK TO SAVEPOINT grp; RELEASE SAVEPOINT grp") != 0) {
                group_failure_free(&f);
                rc = -1;
                break;
            }
            for (size_t k = 0; k < n; k++)
                item_reset(&job->items[idx[k]]);
            tried_robust = robust;
        }
        have = false;
        bool *drop = NULL;
        if (f.item < n || f.nblame) { /* explained: those events out, the rest again as one set */
            drop = xcalloc(n, sizeof *drop);
            if (f.item < n) {
                charge(job, idx[f.item], f.busy, f.locking, f.err, fl);
                drop[f.item] = true;
            }
            for (size_t k = 0; k < f.nblame; k++) {
                const struct inbox_blame *x = &f.blame[k];
                if (x->item >= n || drop[x->item])
                    continue;
                drop[x->item] = true;
                if (x->alone)
                    charge(job, idx[x->item], x->busy, false, x->error, fl);
                else
                    susp[nsusp++] = idx[x->item];
            }
            size_t kept = 0;
            for (size_t k = 0; k < n; k++)
                if (!drop[k])
                    idx[kept++] = idx[k];
            n = kept;
            free(drop);
            group_failure_free(&f);
            robust = false;
            continue;
        }
        group_failure_free(&f);
        if (n == 1) { /* tried alone: its failure is its own */
            charge(job, idx[0], f.busy, f.locking, f.err, fl);
            n = 0;
            break;
        }
        if (robust_helps && !tried_robust) { /* the same group once more, entities each in a block */
            robust = true;
            continue;
        }
        break; /* unexplained: split */
    }
    if (rc == 0 && n > 0) {
        size_t half = n / 2;
        bool helps = robust_helps && !tried_robust;
        rc = isolate(conn, job, idx, half, NULL, false, helps, fl);
        if (rc == 0)
            rc = isolate(conn, job, idx + half, n - half, NULL, false, helps, fl);
    }
    if (rc == 0 && nsusp) { /* events of entities with several transitions, one refused: in halves */
        qsort(susp, nsusp, sizeof *susp, cmp_index); /* receipt order */
        rc = isolate(conn, job, susp, nsusp, NULL, false, false, fl);
    }
    free(susp);
    return rc;
}

/* The isolated failures' attempts, for the whole batch at once, in a
 * savepoint: should that fail, they are busy (due again in a second, not
 * charged) and the rest of the batch still commits. -1: a savepoint command
 * failed. */
static int record_failures(PGconn *conn, struct inbox_job *job, const struct failed_list *fl)
{
    if (fl->n == 0)
        return 0;
    if (savepoint(conn, "SAVEPOINT rec") != 0)
        return -1;
    struct inbox_job sub = *job;
    sub.items = xmalloc(fl->n * sizeof *sub.items);
    for (size_t k = 0; k < fl->n; k++)
        sub.items[k] = job->items[fl->idx[k]];
    sub.n = fl->n;
    int rc = inbox_batch_fail(conn, &sub);
    for (size_t k = 0; k < fl->n; k++)
        job->items[fl->idx[k]] = sub.items[k];
    free(sub.items);
    if (rc == 0)
        return savepoint(conn, "RELEASE SAVEPOINT rec");
    log_warn("inbox.record_failed", "events=%zu error=\"%s\"", fl->n, sub.err);
    if (db_conn_lost(conn) || savepoint(conn, "ROLLBACK TO SAVEPOINT rec; RELEASE SAVEPOINT rec") != 0)
        return -1;
    for (size_t k = 0; k < fl->n; k++) {
        item_reset(&job->items[fl->idx[k]]);
        inbox_eval_busy(&job->items[fl->idx[k]], 1000);
    }
    return 0;
}

static void work_batch(PGconn *conn, void *arg)
{
    struct inbox_job *job = arg;
    char err[256];
    if (!conn)
        return;
    prepare_batch(conn, job);
    if (begin(conn) != 0)
        return;
    size_t *idx = xmalloc((job->n + 1) * sizeof *idx);
    for (size_t i = 0; i < job->n; i++)
        idx[i] = i;
    /* In a storm (a batch failed less than 2 s ago) the first try is the
     * robust pass: refused applies then cost no second try. */
    bool robust = clock_wall_ms() - atomic_load(&job->ib->failed_at_ms) < 2000;
    job->refused = 0;
    struct group_failure f;
    bool ok = try_group(conn, job, idx, job->n, robust, false, &f);
    if (!ok || job->refused)
        atomic_store(&job->ib->failed_at_ms, clock_wall_ms());
    if (!ok) { /* isolate what fails, each part a set */
        struct failed_list fl = {xmalloc((job->n + 1) * sizeof *fl.idx), 0};
        int rc = -1;
        if (!db_conn_lost(conn)) {
            db_rollback(conn);
            for (size_t i = 0; i < job->n; i++)
                item_reset(&job->items[i]);
            if (begin(conn) == 0)
                rc = isolate(conn, job, idx, job->n, &f, robust, true, &fl) == 0 ? record_failures(conn, job, &fl)
                                                                                 : -1;
        }
        free(fl.idx);
        group_failure_free(&f);
        if (rc != 0) { /* not committed: all due again */
            free(idx);
            if (!db_conn_lost(conn))
                db_rollback(conn);
            return;
        }
    }
    free(idx);
    if (PQtransactionStatus(conn) != PQTRANS_INTRANS) { /* COMMIT would roll back and answer OK */
        db_rollback(conn);
        return;
    }
    if (db_command(conn, "COMMIT", err, sizeof err) == 0)
        job->committed = true;
    else
        log_warn("inbox.commit_failed", "error=\"%s\"", err);
}

/* ---- results on the loop ----------------------------------------------------- */

static void item_free(struct inbox_item *it)
{
    free(it->entity_id);
    free(it->error);
    for (size_t i = 0; i < it->nwake; i++)
        free(it->wake_ids[i]);
    free(it->wake_ids);
    free(it->wake_due);
}

static void report(struct inbox *ib, struct inbox_item *it)
{
    struct hookd_ctx *ctx = ib->ctx;
    const char *entity = it->entity_id ? it->entity_id : "-";
    if (it->nrouted)
        stats_add(&ctx->stats, STAT_ROUTED, (uint64_t)it->nrouted);
    switch (it->outcome) {
    case OUT_APPLIED:
        stats_add(&ctx->stats, STAT_APPLIED, 1);
        log_debug("inbox.applied", "id=%s event=%s entity=%s:%s transition=\"%s\"", it->id, it->event_type,
                  it->entity_type, entity, it->error ? it->error : "");
        break;
    case OUT_NOOP: stats_add(&ctx->stats, STAT_NOOP, 1); break;
    case OUT_IGNORED: stats_add(&ctx->stats, STAT_IGNORED, 1); break;
    case OUT_ROUTED:
        log_debug("inbox.routed", "id=%s partner=%s event=%s routes=%d", it->id, it->partner, it->event_type,
                  it->nrouted);
        break;
    case OUT_DEFERRED:
        stats_add(&ctx->stats, STAT_DEFERRED, 1);
        log_info("inbox.deferred", "id=%s event=%s entity=%s:%s due_in_ms=%lld", it->id, it->event_type,
                 it->entity_type, entity, (long long)(it->next_due_ms - clock_wall_ms()));
        break;
    case OUT_RETRY:
        stats_add(&ctx->stats, STAT_RETRIED, 1);
        log_warn("inbox.retry", "id=%s event=%s entity=%s:%s attempt=%d due_in_ms=%lld error=\"%s\"", it->id,
                 it->event_type, it->entity_type, entity, it->attempts, (long long)(it->next_due_ms - clock_wall_ms()),
                 it->error ? it->error : "");
        break;
    case OUT_DEAD:
        stats_add(&ctx->stats, STAT_DEAD, 1);
        alert_dead_letter(ib->alerter, "inbox", it->id, it->partner, it->event_type, entity, it->attempts,
                          it->error ? it->error : "");
        break;
    case OUT_NONE:
    case OUT_BUSY:
    case OUT_TERMINAL:
    case OUT_GONE: break;
    }
}

static void done_batch(void *arg)
{
    struct inbox_job *job = arg;
    struct inbox *ib = job->ib;
    size_t nwake = 0;
    for (size_t i = 0; i < job->n; i++)
        nwake += job->committed && job->items[i].outcome != OUT_NONE ? job->items[i].nwake : 0;
    char **wake_ids = nwake ? xcalloc(nwake, sizeof *wake_ids) : NULL; /* borrowed from the items */
    int64_t *wake_due = nwake ? xcalloc(nwake, sizeof *wake_due) : NULL;
    nwake = 0;
    for (size_t i = 0; i < job->n; i++) {
        struct inbox_item *it = &job->items[i];
        if (!job->committed || it->outcome == OUT_NONE) { /* not evaluated: again in a second */
            sched_done(ib->sched, it->id, clock_wall_ms() + 1000);
            continue;
        }
        bool again = it->outcome == OUT_DEFERRED || it->outcome == OUT_RETRY || it->outcome == OUT_BUSY;
        sched_done(ib->sched, it->id, again ? it->next_due_ms : -1);
        report(ib, it);
        for (size_t k = 0; k < it->nwake; k++, nwake++) {
            wake_ids[nwake] = it->wake_ids[k];
            wake_due[nwake] = it->wake_due[k];
        }
    }
    /* The woken siblings of the whole batch: one script call. After the
     * verdicts above, so that a woken event verdicted in this batch (a
     * deferral ahead of its enabler) ends due now. */
    if (nwake)
        sched_seed(ib->ctx, "inbox", wake_ids, wake_due, nwake, false);
    free(wake_ids);
    free(wake_due);
    for (size_t i = 0; i < job->n; i++)
        item_free(&job->items[i]);
    if (!job->committed)
        stats_add(&ib->ctx->stats, STAT_DB_ERRORS, 1);
    config_unref(job->cfg);
    free(job->items);
    free(job);
    batcher_done(ib->batcher);
}

/* batcher_submit_fn: one batch job on the shared pool. */
static void on_batch(void *arg, void *items, size_t n, size_t bytes)
{
    (void)bytes;
    struct inbox *ib = arg;
    struct inbox_job *job = xcalloc(1, sizeof *job);
    job->ib = ib;
    job->cfg = config_ref(ib->ctx->cfg);
    job->items = items;
    job->n = n;
    snprintf(job->worker_id, sizeof job->worker_id, "%s", ib->ctx->id);
    db_pool_submit(ib->ctx->db, work_batch, done_batch, job);
}

/* sched_process_fn of the inbox queue. Claimed items wait in the batcher
 * while every DB thread the role may use is busy, and go as one job when
 * one finishes: under load batches grow by themselves (one commit for more
 * events), idle ones still go at once. */
static void on_claimed(void *arg, struct sched *s, char **ids, const int64_t *due_ms, size_t n)
{
    (void)due_ms;
    (void)s;
    struct inbox *ib = arg;
    struct inbox_item it;
    for (size_t i = 0; i < n; i++) {
        memset(&it, 0, sizeof it);
        snprintf(it.id, sizeof it.id, "%s", ids[i]);
        batcher_add(ib->batcher, &it, 0);
    }
    batcher_flush(ib->batcher);
}

struct inbox *inbox_new(struct hookd_ctx *ctx, struct alerter *alerter)
{
    struct inbox *ib = xcalloc(1, sizeof *ib);
    ib->ctx = ctx;
    ib->alerter = alerter;
    /* Batches at once: enough to overlap one batch's commit with the next
     * one's work, few enough that they grow under load (one commit for more
     * events) rather than split; one DB thread stays free for the others. */
    int64_t spare = ctx->cfg->db_pool_size - 1;
    struct batcher_config bc = {sizeof(struct inbox_item), 0, 0,
                                spare < 1   ? 1
                                : spare > 3 ? 3
                                            : (int)spare,
                                BATCHER_LINGER_NONE};
    ib->batcher = batcher_new(ctx->base, &bc, on_batch, ib);
    HOOKD_ASSERT(ib->batcher); /* no loop event without a linger */
    ib->sched = sched_new(ctx, "inbox", on_claimed, ib);
    return ib;
}

void inbox_drain(struct inbox *ib)
{
    sched_stop(ib->sched);
}

size_t inbox_pending(const struct inbox *ib)
{
    return sched_inflight(ib->sched);
}

void inbox_lateness(const struct inbox *ib, int64_t *p50, int64_t *p99)
{
    sched_lateness(ib->sched, p50, p99);
}

void inbox_free(struct inbox *ib)
{
    if (!ib)
        return;
    sched_free(ib->sched);
    size_t n;
    free(batcher_take(ib->batcher, &n)); /* still leased in Redis: the reaper hands them out again */
    batcher_free(ib->batcher);
    free(ib);
}
