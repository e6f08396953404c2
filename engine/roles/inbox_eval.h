/* What the two evaluation paths of the inbox role share (internal to
 * inbox.c and inbox_batch.c; see inbox.h for the role itself).
 *
 * The decision about one event is pure C (inbox_decide.h). The paths
 * differ only in how they write that decision: inbox_batch.c writes a whole
 * group of events with a few set-based statements; inbox.c writes event by
 * event the events of machines with their own entity tables. When a group
 * fails, inbox.c isolates the failing events by bisection (each part a set,
 * in a SAVEPOINT) and inbox_batch_fail() records their failed attempts for
 * the whole batch at once. */
#ifndef HOOKD_INBOX_EVAL_H
#define HOOKD_INBOX_EVAL_H

#include <libpq-fe.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "inbox_decide.h"

struct inbox;

/* An event that the entity update of the robust pass (job->robust) found
 * failing: its entity's new state was refused. */
struct inbox_blame {
    size_t item; /* index into job->items */
    bool busy;   /* a lock conflict: not charged */
    bool alone;  /* the only transition applied to its entity: the failure is its own */
    char *error; /* owned */
};

struct inbox_job {
    struct inbox *ib;
    struct hookd_config *cfg; /* ref held for the job */
    struct inbox_item *items;
    size_t n;
    bool committed;
    char worker_id[96];
    /* Why the last evaluation of these items failed (set with -1 returns). */
    char err[512];
    bool err_locking; /* the rows could not be locked: not the events' fault, not charged */
    size_t err_item;  /* the item whose own statement failed, or SIZE_MAX: unknown */
    /* Robust pass: entities are updated each in its own block (see
     * sql/0024_inbox_isolate.sql), and the events whose entity update failed
     * are returned in blame (owned) with -1. */
    bool robust;
    struct inbox_blame *blame;
    size_t nblame;
    size_t refused; /* robust pass: events whose refused apply became their failure in place */
};

/* A random value for jitter (OpenSSL's generator). */
uint64_t inbox_rnd64(void);
/* OUT_BUSY, due again in base_ms plus up to 50 ms of jitter. */
void inbox_busy(struct inbox_item *it, int64_t base_ms);

/* Checks a statement's result: r when it succeeded; otherwise NULL, err
 * set, r freed, and the failure noted when it is a lock conflict (lock
 * timeout, deadlock, serialization) or Postgres being unavailable (see
 * inbox_take_conflict). */
PGresult *inbox_checked(PGconn *conn, PGresult *r, char *err, size_t errlen);
/* Whether a statement failed on a lock conflict or an unavailable Postgres
 * since the last call (per DB thread); clears it. */
bool inbox_take_conflict(void);

/* Inserts the machine's follow-up outbox events for an applied item. */
int inbox_emit_followups(PGconn *conn, const struct machine_config *m, const struct inbox_item *it, const char *from,
                         const char *to, char *err, size_t errlen);

/* inbox_batch.c: evaluates every item whose machine keeps its entities in
 * hookd_entities with a few set-based statements, inside the caller's open
 * transaction, and sets their outcomes (and it->next_due_ms). Items it
 * leaves at OUT_NONE (machines with their own tables, entities it could not
 * create) are for the per-event path. Returns 0, or -1 when a statement
 * failed (job->err, job->err_locking): then the caller rolls the
 * transaction (or the group's savepoint) back. */
int inbox_batch_evaluate(PGconn *conn, struct inbox_job *job);

/* inbox_batch.c: records a failed evaluation of each of job's items (its
 * it->error says why), in the caller's open transaction, with two
 * statements for all of them: lock the rows (SKIP LOCKED) and read their
 * attempts, then write each one RETRYING with the retry schedule's wait, or
 * QUARANTINED with its dead letter when that was the last attempt, and its
 * attempts row. Rows that are gone, terminal or held by another worker get
 * those outcomes and are not charged. Returns 0, or -1 (job->err). */
int inbox_batch_fail(PGconn *conn, struct inbox_job *job);

#endif
