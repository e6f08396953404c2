/* What the two evaluation paths of the inbox role share (internal to
 * inbox.c and inbox_batch.c; see inbound.h for the role itself): the job,
 * the check of a statement's result, and the follow-up events.
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

/* OUT_BUSY, due again in base_ms plus up to 50 ms of jitter. */
void inbox_eval_busy(struct inbox_item *it, int64_t base_ms);

/* Checks a statement's result: r when it succeeded; otherwise NULL, err
 * set, r freed, and the failure noted when it is a lock conflict (lock
 * timeout, deadlock, serialization) or Postgres being unavailable (see
 * inbox_eval_take_conflict); *transient (when given) tells whether this
 * failure was one. */
PGresult *inbox_eval_checked(PGconn *conn, PGresult *r, bool *transient, char *err, size_t errlen);
/* Whether a statement failed on a lock conflict or an unavailable Postgres
 * since the last call (per DB thread); clears it. */
bool inbox_eval_take_conflict(void);

/* Inserts the machine's follow-up outbox events for an applied item. */
int inbox_eval_emit_followups(PGconn *conn, const struct machine_config *m, const struct inbox_item *it,
                              const char *from, const char *to, char *err, size_t errlen);

#endif
