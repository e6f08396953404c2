/* What the two evaluation paths of the inbox role share (internal to
 * inbox.c and inbox_batch.c; see inbox.h for the role itself).
 *
 * The decision about one event is pure C (inbox_decide.h). The paths
 * differ only in how they write that decision: inbox_batch.c writes a whole
 * batch with a few set-based statements; inbox.c writes event by event,
 * with a SAVEPOINT around each when the batch must isolate a bad event. */
#ifndef HOOKD_INBOX_EVAL_H
#define HOOKD_INBOX_EVAL_H

#include <libpq-fe.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "inbox_decide.h"

struct inbox;

struct inbox_job {
    struct inbox *ib;
    struct hookd_config *cfg; /* ref held for the job */
    struct inbox_item *items;
    size_t n;
    bool committed;
    char worker_id[96];
};

/* A random value for jitter (OpenSSL's generator). */
uint64_t inbox_rnd64(void);
/* OUT_BUSY, due again in base_ms plus up to 50 ms of jitter. */
void inbox_busy(struct inbox_item *it, int64_t base_ms);

/* Inserts the machine's follow-up outbox events for an applied item. */
int inbox_emit_followups(PGconn *conn, const struct machine_config *m, const struct inbox_item *it, const char *from,
                         const char *to, char *err, size_t errlen);

/* inbox_batch.c: evaluates every item whose machine keeps its entities in
 * hookd_entities with a few set-based statements, inside the caller's open
 * transaction, and sets their outcomes (and it->next_due_ms). Items it
 * leaves at OUT_NONE (machines with their own tables, entities it could not
 * create) are for the per-event path. Returns 0, or -1 when a statement
 * failed: then the caller rolls the transaction back. */
int inbox_batch_evaluate(PGconn *conn, struct inbox_job *job);

#endif
