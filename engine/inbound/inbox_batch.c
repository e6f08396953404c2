/* Set-based evaluation of a claimed batch; see inbox_eval.h.
 *
 * Per batch, whatever its size: lock the rows (one statement), hand the
 * events that routes take to the outbox (two, only when routes take some:
 * route_all), lock their entities in hookd_entities (one), decide every
 * event in receipt order in C with the entity states carried forward in
 * memory, then write entities,
 * inbox rows, dead letters, attempts and woken siblings with one statement
 * each (JSON in, jsonb_to_recordset on the server). Round trips per event go
 * from about six to a fraction of one, and one commit covers the batch.
 *
 * Locks never wait: rows and entities another worker holds are skipped and
 * those events are "busy" (due again in ~100 ms, no attempt charged).
 *
 * inbox_batch_fail records the failed attempts of the events that inbox.c
 * isolated (a statement failed for them alone) with two statements for the
 * whole batch: the rows locked and read, then verdicts, attempts rows and
 * dead letters written by inbox_batch_update_rows like any other verdict. */
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "db.h"
#include "inbox_decide.h"
#include "inbox_batch.h"
#include "inbox_eval.h"
#include "machine.h"
#include "payload_filter.h"
#include "query.h"
#include "rand.h"
#include "xmalloc.h"

enum lock_state {
    ENT_WANTED,    /* not locked yet */
    ENT_LOCKED,    /* locked by this transaction (state: its state) */
    ENT_BUSY,      /* exists, locked by someone else */
    ENT_MISSING,   /* does not exist; its machine does not create entities */
    ENT_PER_EVENT, /* does not exist and must be created: the per-event path does it */
};

struct entity {
    const struct machine_config *m;
    const char *id; /* borrowed from the first item that names it */
    char *state;    /* in this batch, as events apply; NULL: does not exist */
    int applied;    /* transitions applied in this batch */
    enum lock_state lock;
};

struct batch {
    PGconn *conn;
    struct inbox_job *job;
    struct inbox_row *rows; /* per item */
    size_t *ent;            /* per item: index into ents, or NO_ENTITY */
    int64_t *wait;          /* per item: DEFERRED / RETRY wait (ms) */
    char **from;            /* per item: APPLIED: the state before (NULL: new) */
    const char **to;        /* per item: APPLIED: the new state */
    struct entity *ents;
    size_t nents;
    json_t *by_key; /* "machine\nentity id" -> index into ents */
    char err[512];
};

#define NO_ENTITY SIZE_MAX

/* A prepared statement of sql/queries/; binary: which parameters are
 * db_array buffers (then lengths gives their sizes), NULL: all text. */
static PGresult *stmt(struct batch *b, enum query_id q, const char *const *params, const int *lengths,
                      const int *binary)
{
    return inbox_eval_checked(b->conn, query_prepared_raw(b->conn, q, params, lengths, binary), NULL, b->err,
                              sizeof b->err);
}

static struct inbox_item *item_by_id(struct batch *b, json_t *index, const char *id)
{
    json_t *v = json_object_get(index, id);
    return v ? &b->job->items[json_integer_value(v)] : NULL;
}

/* ---- locking ---------------------------------------------------------------- */

/* Locks the batch's rows and reads them into the items; rows it cannot lock
 * are gone, terminal or busy. */
static int lock_rows(struct batch *b, json_t *index)
{
    struct inbox_job *job = b->job;
    const char **ids = xcalloc(job->n, sizeof *ids);
    size_t nids = 0;
    for (size_t i = 0; i < job->n; i++) {
        if (inbox_valid_uuid(job->items[i].id))
            ids[nids++] = job->items[i].id;
        else
            job->items[i].outcome = OUT_GONE; /* not ours: drop it from the schedule */
    }
    struct db_array arr;
    db_array_uuids(&arr, ids, nids);
    free(ids);
    const char *p[] = {arr.buf};
    const int len[] = {(int)arr.len}, bin[] = {1};
    PGresult *r = stmt(b, Q_INBOX_BATCH_LOCK_ROWS, p, len, bin);
    if (!r) {
        free(arr.buf);
        return -1;
    }
    bool *locked = xcalloc(job->n, sizeof *locked);
    for (int k = 0; k < PQntuples(r); k++) {
        json_t *v = json_object_get(index, PQgetvalue(r, k, INBOX_BATCH_LOCK_ROWS_ID));
        if (!v)
            continue;
        size_t i = (size_t)json_integer_value(v);
        struct inbox_item *it = &job->items[i];
        struct inbox_row *row = &b->rows[i];
        locked[i] = true;
        snprintf(it->partner, sizeof it->partner, "%s", PQgetvalue(r, k, INBOX_BATCH_LOCK_ROWS_PARTNER_NAME));
        snprintf(it->event_type, sizeof it->event_type, "%s", PQgetvalue(r, k, INBOX_BATCH_LOCK_ROWS_EVENT_TYPE));
        snprintf(it->entity_type, sizeof it->entity_type, "%s", PQgetvalue(r, k, INBOX_BATCH_LOCK_ROWS_ENTITY_TYPE));
        it->entity_id = PQgetisnull(r, k, INBOX_BATCH_LOCK_ROWS_ENTITY_ID)
                            ? NULL
                            : xstrdup(PQgetvalue(r, k, INBOX_BATCH_LOCK_ROWS_ENTITY_ID));
        snprintf(row->status, sizeof row->status, "%s", PQgetvalue(r, k, INBOX_BATCH_LOCK_ROWS_STATUS));
        row->attempts = atoi(PQgetvalue(r, k, INBOX_BATCH_LOCK_ROWS_ATTEMPTS));
        row->deferrals = atoi(PQgetvalue(r, k, INBOX_BATCH_LOCK_ROWS_DEFERRALS));
        row->age_ms = strtoll(PQgetvalue(r, k, INBOX_BATCH_LOCK_ROWS_AGE_MS), NULL, 10);
        it->attempts = row->attempts;
        if (strcmp(row->status, "PROCESSED") == 0 || strcmp(row->status, "QUARANTINED") == 0)
            it->outcome = OUT_TERMINAL;
    }
    bool missing = (size_t)PQntuples(r) < nids;
    PQclear(r);
    if (missing) { /* gone, terminal, or held by another worker */
        r = stmt(b, Q_INBOX_BATCH_ROW_STATUS, p, len, bin);
        if (!r) {
            free(locked);
            free(arr.buf);
            return -1;
        }
        for (size_t i = 0; i < job->n; i++) {
            if (!locked[i] && job->items[i].outcome == OUT_NONE)
                job->items[i].outcome = OUT_GONE;
        }
        for (int k = 0; k < PQntuples(r); k++) {
            struct inbox_item *it = item_by_id(b, index, PQgetvalue(r, k, INBOX_BATCH_ROW_STATUS_ID));
            if (!it || it->outcome != OUT_GONE)
                continue;
            const char *st = PQgetvalue(r, k, INBOX_BATCH_ROW_STATUS_STATUS);
            if (strcmp(st, "PROCESSED") == 0 || strcmp(st, "QUARANTINED") == 0)
                it->outcome = OUT_TERMINAL;
            else
                inbox_eval_busy(it, 500);
        }
        PQclear(r);
    }
    free(locked);
    free(arr.buf);
    return 0;
}

/* The key of an entity in batch->by_key. */
static char *entity_key(const struct machine_config *m, const char *id)
{
    return xasprintf("%s\n%s", m->name, id);
}

static size_t entity_for(struct batch *b, const struct machine_config *m, const char *id)
{
    char *key = entity_key(m, id);
    json_t *v = json_object_get(b->by_key, key);
    size_t e;
    if (v) {
        e = (size_t)json_integer_value(v);
    } else {
        e = b->nents++;
        b->ents[e] = (struct entity){.m = m, .id = id, .lock = ENT_WANTED};
        json_object_set_new(b->by_key, key, json_integer((json_int_t)e));
    }
    free(key);
    return e;
}

/* The entities of machine m in lock state `which` (with applied
 * transitions only, if asked), sorted by id, as binary arrays (db.h): p[0]
 * ids (text[]), p[1] states (text[]), p[2] transitions applied (int[]).
 * Returns how many; the caller frees them with params_free().
 *
 * The statements join these arrays (unnest, LATERAL) to the tables by the
 * whole key, so every entity is one index probe whatever the planner's
 * statistics say: a bulk load leaves them stale, and with `= ANY(…)` the
 * planner then scanned every entity of the machine per batch. */
static size_t entity_params(const struct batch *b, const struct machine_config *m, enum lock_state which,
                            bool applied_only, struct db_array p[3])
{
    size_t *order = xcalloc(b->nents + 1, sizeof *order), n = 0;
    for (size_t e = 0; e < b->nents; e++) {
        const struct entity *x = &b->ents[e];
        if (x->m == m && x->lock == which && (!applied_only || x->applied))
            order[n++] = e;
    }
    for (size_t i = 1; i < n; i++) { /* insertion sort by id: one lock order for everyone */
        size_t v = order[i], j = i;
        for (; j > 0 && strcmp(b->ents[order[j - 1]].id, b->ents[v].id) > 0; j--)
            order[j] = order[j - 1];
        order[j] = v;
    }
    db_array_init(&p[0], DB_OID_TEXT, n);
    db_array_init(&p[1], DB_OID_TEXT, n);
    db_array_init(&p[2], DB_OID_INT4, n);
    for (size_t i = 0; i < n; i++) {
        const struct entity *x = &b->ents[order[i]];
        db_array_text(&p[0], x->id);
        db_array_text(&p[1], x->state ? x->state : "");
        db_array_int4(&p[2], x->applied);
    }
    free(order);
    return n;
}

static void params_free(struct db_array *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(p[i].buf);
}

/* The distinct machines of the batch's entities; NULL-terminated, caller frees. */
static const struct machine_config **batch_machines(const struct batch *b)
{
    const struct machine_config **ms = xcalloc(b->nents + 1, sizeof *ms);
    size_t n = 0;
    for (size_t e = 0; e < b->nents; e++) {
        size_t k = 0;
        while (k < n && ms[k] != b->ents[e].m)
            k++;
        if (k == n)
            ms[n++] = b->ents[e].m;
    }
    return ms;
}

/* mark_entities reads both statements' results alike. */
_Static_assert((int)INBOX_BATCH_LOCK_ENTITIES_ID == (int)INBOX_BATCH_ENTITIES_EXIST_ID, "the id is the same column");

static struct entity *entity_named(struct batch *b, const struct machine_config *m, const char *id)
{
    char *key = entity_key(m, id);
    json_t *v = json_object_get(b->by_key, key);
    free(key);
    return v ? &b->ents[json_integer_value(v)] : NULL;
}

/* Runs inbox_batch_lock_entities (with_state) or inbox_batch_entities_exist
 * ($1 machine, $2 the ids of its entities still ENT_WANTED) and gives each
 * entity it returns the lock state `to`, and its state if `with_state`.
 * Returns how many it returned, or -1 on an SQL error. */
static int mark_entities(struct batch *b, const struct machine_config *m, enum query_id sql, enum lock_state to,
                         bool with_state)
{
    struct db_array p[3];
    entity_params(b, m, ENT_WANTED, false, p);
    const char *q[] = {m->name, p[0].buf};
    const int len[] = {0, (int)p[0].len}, bin[] = {0, 1};
    PGresult *r = stmt(b, sql, q, len, bin);
    params_free(p, 3);
    if (!r)
        return -1;
    int n = PQntuples(r);
    for (int k = 0; k < n; k++) {
        struct entity *e = entity_named(b, m, PQgetvalue(r, k, INBOX_BATCH_LOCK_ENTITIES_ID));
        if (!e)
            continue;
        e->lock = to;
        if (with_state)
            e->state = xstrdup(PQgetvalue(r, k, INBOX_BATCH_LOCK_ENTITIES_STATE));
    }
    PQclear(r);
    return n;
}

static int lock_machine_entities(struct batch *b, const struct machine_config *m)
{
    size_t wanted = 0;
    for (size_t e = 0; e < b->nents; e++)
        wanted += b->ents[e].m == m && b->ents[e].lock == ENT_WANTED;
    if (wanted == 0)
        return 0;
    int locked = mark_entities(b, m, Q_INBOX_BATCH_LOCK_ENTITIES, ENT_LOCKED, true);
    if (locked < 0)
        return -1;
    if ((size_t)locked == wanted)
        return 0;
    /* The rest are missing, or held by another worker. */
    if (mark_entities(b, m, Q_INBOX_BATCH_ENTITIES_EXIST, ENT_BUSY, false) < 0)
        return -1;
    for (size_t e = 0; e < b->nents; e++) {
        if (b->ents[e].m == m && b->ents[e].lock == ENT_WANTED)
            b->ents[e].lock = m->create ? ENT_PER_EVENT : ENT_MISSING;
    }
    return 0;
}

static int lock_entities(struct batch *b)
{
    const struct machine_config **ms = batch_machines(b);
    int rc = 0;
    for (size_t i = 0; ms[i] && rc == 0; i++)
        rc = lock_machine_entities(b, ms[i]);
    free(ms);
    return rc;
}

/* ---- routes ----------------------------------------------------------------- */

/* Whether routes take item it and no machine names its type (not even the
 * machine the partner's entity_type names): it is then handed to the routes
 * alone and done (OUT_ROUTED), never retried for want of a machine. */
static bool route_only(const struct hookd_config *cfg, const struct inbox_item *it)
{
    const struct machine_config *m = config_machine_for(cfg, it->entity_type[0] ? it->entity_type : NULL,
                                                        it->event_type);
    return (!m || !machine_has_event(m->machine, it->event_type)) &&
           config_routes_take(cfg, it->partner, it->event_type);
}

/* The (event, route) pairs of the payloads read by inbox_route_read: each
 * route of the event's partner whose globs take its type and whose filter
 * its payload matches, as {id, route, type, tenant}. */
static void route_pairs(const struct hookd_config *cfg, const struct inbox_item *it, const char *payload_text,
                        json_t *pairs)
{
    json_t *payload = NULL;
    bool parsed = false;
    for (size_t k = 0; k < cfg->nroutes; k++) {
        const struct route_config *r = &cfg->routes[k];
        if (!config_route_takes(r, it->partner, it->event_type))
            continue;
        if (r->filter && !parsed) {
            payload = json_loads(payload_text, JSON_DECODE_ANY, NULL);
            parsed = true;
        }
        if (r->filter && !payload_filter_match(r->filter, payload))
            continue;
        json_t *o = json_pack("{s:s, s:s, s:s}", "id", it->id, "route", r->name, "type",
                              r->emit_type ? r->emit_type : it->event_type);
        json_object_set_new(o, "tenant", r->tenant ? json_string(r->tenant) : json_null());
        json_array_append_new(pairs, o);
    }
    json_decref(payload);
}

/* Hands the batch's locked events that routes take to the outbox, before
 * anything else is decided: whatever the machine then says (apply, defer,
 * retry), the event is routed once, in this transaction, and routed_at keeps
 * a later evaluation from routing it again. Two statements for the batch,
 * none when no route takes any of its events. */
static int route_all(struct batch *b, json_t *index)
{
    struct inbox_job *job = b->job;
    const char **ids = xcalloc(job->n + 1, sizeof *ids);
    size_t nids = 0;
    for (size_t i = 0; i < job->n; i++) {
        const struct inbox_item *it = &job->items[i];
        if (it->outcome == OUT_NONE && config_routes_take(job->cfg, it->partner, it->event_type))
            ids[nids++] = it->id;
    }
    if (nids == 0) {
        free(ids);
        return 0;
    }
    struct db_array arr;
    db_array_uuids(&arr, ids, nids);
    free(ids);
    const char *p[] = {arr.buf, NULL};
    const int len[] = {(int)arr.len, 0}, bin[] = {1, 0};
    PGresult *r = stmt(b, Q_INBOX_ROUTE_READ, p, len, bin);
    json_t *pairs = json_array();
    int rc = r ? 0 : -1;
    for (int k = 0; r && k < PQntuples(r); k++) {
        const struct inbox_item *it = item_by_id(b, index, PQgetvalue(r, k, INBOX_ROUTE_READ_ID));
        if (it)
            route_pairs(job->cfg, it, PQgetvalue(r, k, INBOX_ROUTE_READ_PAYLOAD), pairs);
    }
    bool unrouted = r && PQntuples(r) > 0;
    PQclear(r);
    if (rc == 0 && unrouted) {
        char *text = json_dumps(pairs, JSON_COMPACT);
        p[1] = text;
        r = stmt(b, Q_INBOX_ROUTE_EMIT, p, len, bin);
        free(text);
        rc = r ? 0 : -1;
        for (int k = 0; r && k < PQntuples(r); k++) {
            struct inbox_item *it = item_by_id(b, index, PQgetvalue(r, k, INBOX_ROUTE_EMIT_ID));
            if (it)
                it->nrouted++;
        }
        PQclear(r);
    }
    json_decref(pairs);
    free(arr.buf);
    return rc;
}

/* ---- deciding ------------------------------------------------------------- */

static void decide_all(struct batch *b)
{
    struct inbox_job *job = b->job;
    /* Which machine, which entity. */
    for (size_t i = 0; i < job->n; i++) {
        struct inbox_item *it = &job->items[i];
        b->ent[i] = NO_ENTITY;
        if (it->outcome != OUT_NONE)
            continue;
        const struct machine_config *m = inbox_machine_for(job->cfg, it, b->err, sizeof b->err);
        if (!m && route_only(job->cfg, it))
            it->outcome = OUT_ROUTED; /* handed to its routes by route_all */
        else if (!m)
            inbox_fail_verdict(job->cfg, it, b->rows[i].attempts + 1, b->err, rand_u64(), &b->wait[i]);
        else if (m->builtin)
            b->ent[i] = entity_for(b, m, it->entity_id);
        /* else: a table of the application's own; the per-event path */
    }
}

static void classify_all(struct batch *b)
{
    struct inbox_job *job = b->job;
    for (size_t i = 0; i < job->n; i++) {
        struct inbox_item *it = &job->items[i];
        if (it->outcome != OUT_NONE || b->ent[i] == NO_ENTITY)
            continue;
        struct entity *e = &b->ents[b->ent[i]];
        if (e->lock == ENT_BUSY) {
            inbox_eval_busy(it, 100);
            continue;
        }
        if (e->lock == ENT_PER_EVENT)
            continue;
        struct inbox_decision d;
        b->err[0] = '\0';
        inbox_decide(job->cfg, e->m, it, &b->rows[i], e->state, &d, b->err, sizeof b->err);
        switch (d.outcome) {
        case OUT_APPLIED:
            b->from[i] = e->state;
            b->to[i] = d.to;
            e->state = xstrdup(d.to);
            e->applied++;
            it->outcome = OUT_APPLIED;
            /* Earlier events of this entity deferred in this batch: due now
             * (the per-event path wakes them with SQL). */
            for (size_t k = 0; k < i; k++) {
                if (b->ent[k] == b->ent[i] && job->items[k].outcome == OUT_DEFERRED)
                    b->wait[k] = 0;
            }
            break;
        case OUT_DEFERRED:
            b->wait[i] = d.wait_ms;
            it->outcome = OUT_DEFERRED;
            break;
        case OUT_RETRY:
            inbox_fail_verdict(job->cfg, it, b->rows[i].attempts + 1, b->err, rand_u64(), &b->wait[i]);
            break;
        default: /* NOOP, IGNORED, DEAD */ it->outcome = d.outcome; break;
        }
    }
}

/* ---- writing ---------------------------------------------------------------- */

static bool evaluated(const struct inbox_item *it)
{
    return it->outcome >= OUT_APPLIED && it->outcome <= OUT_DEAD;
}

/* Robust pass: the entities of machine m whose update failed (r: rows of
 * inbox_batch_update_entities_each). An entity with one event in the batch:
 * that event's verdict becomes the failure at once; otherwise the events
 * applied to it are blamed (job->blame) and the try fails. */
static void blame_entities(struct batch *b, const struct machine_config *m, PGresult *r)
{
    struct inbox_job *job = b->job;
    for (int k = 0; k < PQntuples(r); k++) {
        struct entity *e = entity_named(b, m, PQgetvalue(r, k, INBOX_BATCH_UPDATE_ENTITIES_EACH_ID));
        if (!e)
            continue;
        const char *st = PQgetvalue(r, k, INBOX_BATCH_UPDATE_ENTITIES_EACH_SQLSTATE);
        const char *error = PQgetvalue(r, k, INBOX_BATCH_UPDATE_ENTITIES_EACH_ERROR);
        bool busy = db_lock_conflict(st);
        size_t mine = 0, at = 0; /* the batch's events of this entity */
        for (size_t i = 0; i < job->n; i++) {
            if (b->ent[i] != NO_ENTITY && &b->ents[b->ent[i]] == e)
                mine++, at = i;
        }
        if (mine == 1 && job->items[at].outcome == OUT_APPLIED) {
            /* Its only event: nothing else of the batch was decided on the
             * refused state, so the verdict changes here, in this try: a
             * failed attempt (or busy), written with the other verdicts. */
            struct inbox_item *it = &job->items[at];
            e->applied = 0; /* not updated: no wake, no follow-up */
            job->refused++;
            if (busy)
                inbox_eval_busy(it, 100);
            else
                inbox_fail_verdict(job->cfg, it, b->rows[at].attempts + 1, error, rand_u64(), &b->wait[at]);
            continue;
        }
        for (size_t i = 0; i < job->n; i++) {
            if (job->items[i].outcome != OUT_APPLIED || b->ent[i] == NO_ENTITY || &b->ents[b->ent[i]] != e)
                continue;
            job->blame = xrealloc(job->blame, (job->nblame + 1) * sizeof *job->blame);
            job->blame[job->nblame++] = (struct inbox_blame){
                .item = i,
                .busy = busy,
                .alone = e->applied == 1,
                .error = xstrdup(error),
            };
        }
        snprintf(b->err, sizeof b->err, "%s", error);
    }
}

/* The follow-up outbox events of the batch's applies, in receipt order,
 * with one statement (inbox_batch_emit_followups). */
static int emit_followups(struct batch *b)
{
    struct inbox_job *job = b->job;
    json_t *rows = json_array();
    for (size_t i = 0; i < job->n; i++) {
        const struct inbox_item *it = &job->items[i];
        if (it->outcome != OUT_APPLIED)
            continue;
        const struct machine_config *m = b->ents[b->ent[i]].m;
        for (size_t k = 0; k < m->nemits; k++) {
            if (strcmp(m->emits[k].event, it->event_type) != 0)
                continue;
            json_t *o = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s}", "machine", m->name, "entity_id", it->entity_id,
                                  "type", m->emits[k].emit_type, "to", b->to[i], "cause", it->event_type, "id",
                                  it->id);
            json_object_set_new(o, "from", b->from[i] ? json_string(b->from[i]) : json_null());
            json_array_append_new(rows, o);
        }
    }
    int rc = 0;
    if (json_array_size(rows)) {
        char *text = json_dumps(rows, JSON_COMPACT);
        const char *p[] = {text};
        PGresult *r = stmt(b, Q_INBOX_BATCH_EMIT_FOLLOWUPS, p, NULL, NULL);
        rc = r ? 0 : -1;
        PQclear(r);
        free(text);
    }
    json_decref(rows);
    return rc;
}

static int write_entities(struct batch *b)
{
    struct inbox_job *job = b->job;
    enum query_id update = job->robust ? Q_INBOX_BATCH_UPDATE_ENTITIES_EACH : Q_INBOX_BATCH_UPDATE_ENTITIES;
    const struct machine_config **ms = batch_machines(b);
    int rc = 0;
    for (size_t i = 0; ms[i] && rc == 0; i++) {
        struct db_array p[3];
        if (entity_params(b, ms[i], ENT_LOCKED, true, p)) {
            const char *q[] = {ms[i]->name, p[0].buf, p[1].buf, p[2].buf};
            const int len[] = {0, (int)p[0].len, (int)p[1].len, (int)p[2].len}, bin[] = {0, 1, 1, 1};
            PGresult *r = stmt(b, update, q, len, bin);
            rc = r ? 0 : -1;
            if (r && job->robust)
                blame_entities(b, ms[i], r);
            PQclear(r);
        }
        params_free(p, 3);
    }
    free(ms);
    if (rc != 0 || job->nblame)
        return -1;
    if (!job->robust)
        return emit_followups(b);
    for (size_t i = 0; i < job->n; i++) { /* robust: per event, so that a failure names its event */
        struct inbox_item *it = &job->items[i];
        if (it->outcome == OUT_APPLIED && inbox_eval_emit_followups(b->conn, b->ents[b->ent[i]].m, it, b->from[i],
                                                                    b->to[i], b->err, sizeof b->err) != 0) {
            job->err_item = i; /* its own statement: the failure is this event's */
            return -1;
        }
    }
    return 0;
}

static json_t *row_update(const struct batch *b, size_t i)
{
    const struct inbox_item *it = &b->job->items[i];
    json_t *o = json_pack("{s:s}", "id", it->id);
    const char *status = "PROCESSED";
    json_t *wait = json_null(), *attempts = json_null(), *error = json_null();
    int deferred = 0;
    switch (it->outcome) {
    case OUT_DEFERRED:
        status = "DEFERRED";
        deferred = 1;
        wait = json_integer(b->wait[i]);
        error = json_string(it->error ? it->error : "");
        break;
    case OUT_RETRY:
        status = "RETRYING";
        wait = json_integer(b->wait[i]);
        attempts = json_integer(it->attempts);
        error = json_string(it->error ? it->error : "");
        break;
    case OUT_DEAD:
        status = "QUARANTINED";
        attempts = json_integer(it->attempts);
        error = json_string(it->error ? it->error : "");
        break;
    default: break;
    }
    const char *outcome = it->outcome == OUT_DEFERRED || it->outcome == OUT_RETRY ? NULL
                          : it->outcome == OUT_DEAD                               ? "dead"
                                                                                  : inbox_outcome_names[it->outcome];
    json_object_set_new(o, "status", json_string(status));
    json_object_set_new(o, "outcome", outcome ? json_string(outcome) : json_null());
    json_object_set_new(o, "attempts", attempts);
    json_object_set_new(o, "deferred", json_integer(deferred));
    json_object_set_new(o, "wait", wait);
    json_object_set_new(o, "error", error);
    return o;
}

/* The verdicts, their attempt rows and the dead letters of the batch in one
 * statement (inbox_batch_update_rows): a failed evaluation that is retried
 * costs its share of one round trip, like any other verdict. */
static int write_rows(struct batch *b, json_t *index, int64_t started_us)
{
    struct inbox_job *job = b->job;
    json_t *rows = json_array();
    for (size_t i = 0; i < job->n; i++) {
        struct inbox_item *it = &job->items[i];
        if (!evaluated(it))
            continue;
        json_t *o = row_update(b, i);
        bool failed = it->outcome == OUT_RETRY || it->outcome == OUT_DEAD || it->outcome == OUT_DEFERRED;
        json_object_set_new(o, "a_outcome", json_string(inbox_outcome_names[it->outcome]));
        json_object_set_new(o, "a_error", failed && it->error ? json_string(it->error) : json_null());
        if (it->outcome == OUT_DEAD)
            json_object_set_new(o, "dl_reason", json_string(it->dead_reason ? it->dead_reason : "dead"));
        json_array_append_new(rows, o);
    }
    size_t n = json_array_size(rows);
    int rc = 0;
    if (n) {
        /* One evaluation of many: each attempt is charged its share. */
        char dur[32];
        snprintf(dur, sizeof dur, "%.3f", (double)(clock_mono_us() - started_us) / 1000.0 / (double)n);
        char *text = json_dumps(rows, JSON_COMPACT);
        const char *p[] = {text, dur, job->worker_id};
        PGresult *r = stmt(b, Q_INBOX_BATCH_UPDATE_ROWS, p, NULL, NULL);
        free(text);
        if (!r)
            rc = -1;
        for (int k = 0; r && k < PQntuples(r); k++) {
            struct inbox_item *it = item_by_id(b, index, PQgetvalue(r, k, INBOX_BATCH_UPDATE_ROWS_ID));
            if (it)
                it->next_due_ms = strtoll(PQgetvalue(r, k, INBOX_BATCH_UPDATE_ROWS_DUE_MS), NULL, 10);
        }
        PQclear(r);
    }
    json_decref(rows);
    return rc;
}

/* Deferred events of the entities that changed, outside this batch: due now.
 * They are handed to the first applied item for the scheduler. */
static int wake_siblings(struct batch *b)
{
    struct inbox_job *job = b->job;
    struct inbox_item *first = NULL;
    const char **ids = xcalloc(job->n, sizeof *ids);
    size_t nids = 0;
    for (size_t i = 0; i < job->n; i++) {
        if (inbox_valid_uuid(job->items[i].id))
            ids[nids++] = job->items[i].id;
        if (!first && job->items[i].outcome == OUT_APPLIED)
            first = &job->items[i];
    }
    if (!first) {
        free(ids);
        return 0;
    }
    struct db_array batch_ids;
    db_array_uuids(&batch_ids, ids, nids);
    free(ids);
    const struct machine_config **ms = batch_machines(b);
    int rc = 0;
    for (size_t i = 0; ms[i] && rc == 0; i++) {
        struct db_array p[3];
        if (entity_params(b, ms[i], ENT_LOCKED, true, p) == 0) {
            params_free(p, 3);
            continue;
        }
        const char *q[] = {ms[i]->name, p[0].buf, batch_ids.buf};
        const int len[] = {0, (int)p[0].len, (int)batch_ids.len}, bin[] = {0, 1, 1};
        PGresult *r = stmt(b, Q_INBOX_BATCH_WAKE, q, len, bin);
        params_free(p, 3);
        if (!r) {
            rc = -1;
            break;
        }
        size_t n = (size_t)PQntuples(r);
        if (n) {
            first->wake_ids = xrealloc(first->wake_ids, (first->nwake + n) * sizeof *first->wake_ids);
            first->wake_due = xrealloc(first->wake_due, (first->nwake + n) * sizeof *first->wake_due);
            for (size_t k = 0; k < n; k++) {
                first->wake_ids[first->nwake + k] = xstrdup(PQgetvalue(r, (int)k, INBOX_BATCH_WAKE_ID));
                first->wake_due[first->nwake + k] = strtoll(PQgetvalue(r, (int)k, INBOX_BATCH_WAKE_DUE_MS), NULL, 10);
            }
            first->nwake += n;
        }
        PQclear(r);
    }
    free(ms);
    free(batch_ids.buf);
    return rc;
}

static void batch_init(struct batch *b, PGconn *conn, struct inbox_job *job)
{
    *b = (struct batch){
        .conn = conn,
        .job = job,
        .rows = xcalloc(job->n, sizeof *b->rows),
        .ent = xcalloc(job->n, sizeof *b->ent),
        .wait = xcalloc(job->n, sizeof *b->wait),
        .from = xcalloc(job->n, sizeof *b->from),
        .to = xcalloc(job->n, sizeof *b->to),
        .ents = xcalloc(job->n, sizeof *b->ents),
        .by_key = json_object(),
    };
}

static void batch_free(struct batch *b)
{
    for (size_t i = 0; i < b->job->n; i++)
        free(b->from[i]);
    for (size_t e = 0; e < b->nents; e++)
        free(b->ents[e].state);
    free(b->rows);
    free(b->ent);
    free(b->wait);
    free(b->from);
    free(b->to);
    free(b->ents);
    json_decref(b->by_key);
}

/* item id -> index into job->items */
static json_t *items_index(const struct inbox_job *job)
{
    json_t *index = json_object();
    for (size_t i = 0; i < job->n; i++)
        json_object_set_new(index, job->items[i].id, json_integer((json_int_t)i));
    return index;
}

/* Evaluates the locked batch: routes, decisions, entities, rows, woken
 * siblings. */
static int evaluate_locked(struct batch *b, json_t *index, int64_t started)
{
    if (route_all(b, index) != 0)
        return -1;
    decide_all(b);
    if (lock_entities(b) != 0)
        return -1;
    classify_all(b);
    if (write_entities(b) != 0 || write_rows(b, index, started) != 0 || wake_siblings(b) != 0)
        return -1;
    return 0;
}

/* Charges the locked batch's failed events (those inbox.c left without an
 * outcome) and records them. */
static int fail_locked(struct batch *b, json_t *index, int64_t started)
{
    struct inbox_job *job = b->job;
    for (size_t i = 0; i < job->n; i++) {
        struct inbox_item *it = &job->items[i];
        if (it->outcome != OUT_NONE) /* gone, terminal or busy: not charged */
            continue;
        char *why = it->error; /* inbox_fail_verdict replaces it */
        it->error = NULL;
        inbox_fail_verdict(job->cfg, it, b->rows[i].attempts + 1, why ? why : "evaluation failed", rand_u64(),
                           &b->wait[i]);
        free(why);
    }
    return write_rows(b, index, started);
}

/* Locks the job's rows, then runs step on the batch. A failure leaves its
 * message in job->err; one to lock the rows sets job->err_locking. */
static int with_locked_rows(PGconn *conn, struct inbox_job *job, int (*step)(struct batch *, json_t *, int64_t))
{
    int64_t started = clock_mono_us();
    struct batch b;
    batch_init(&b, conn, job);
    json_t *index = items_index(job);
    job->err_locking = false;
    int rc = lock_rows(&b, index);
    if (rc != 0)
        job->err_locking = true;
    else
        rc = step(&b, index, started);
    if (rc != 0)
        snprintf(job->err, sizeof job->err, "%s", b.err);
    batch_free(&b);
    json_decref(index);
    return rc;
}

int inbox_batch_evaluate(PGconn *conn, struct inbox_job *job)
{
    return with_locked_rows(conn, job, evaluate_locked);
}

int inbox_batch_fail(PGconn *conn, struct inbox_job *job)
{
    return with_locked_rows(conn, job, fail_locked);
}
