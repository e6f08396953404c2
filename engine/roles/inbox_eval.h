/* What the two evaluation paths of the inbox role share (internal to
 * inbox.c and inbox_batch.c; see inbox.h for the role itself).
 *
 * The decision about one event is pure C (decide(), fail_verdict()): given
 * the locked row and the entity's state it says apply / no-op / ignore /
 * defer / dead-letter / retry, with the wait and the messages. The paths
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

enum outcome {
    OUT_NONE,     /* not evaluated yet */
    OUT_APPLIED,
    OUT_NOOP,
    OUT_IGNORED,
    OUT_DEFERRED,
    OUT_RETRY,
    OUT_DEAD,
    OUT_BUSY,     /* row or entity locked by another worker: soon again, free */
    OUT_TERMINAL, /* already processed or dead-lettered: ack */
    OUT_GONE,     /* the row no longer exists: ack */
};

extern const char *const inbox_outcome_names[];

struct item {
    char id[40];
    enum outcome outcome;
    int64_t next_due_ms; /* OUT_DEFERRED / OUT_RETRY / OUT_BUSY */
    int attempts;
    char partner[64], event_type[112], entity_type[112];
    char *entity_id;
    char *error; /* why it failed, waits, or was dead-lettered */
    const char *dead_reason; /* OUT_DEAD: static text for dead_letters.reason */
    char **wake_ids; /* deferred siblings made due now by an apply */
    int64_t *wake_due;
    size_t nwake;
};

struct inbox;

struct job {
    struct inbox *ib;
    struct hookd_config *cfg; /* ref held for the job */
    struct item *items;
    size_t n;
    bool committed;
    char worker_id[96];
};

/* The locked inbox row, as both paths read it. */
struct row {
    char status[24];
    int attempts, deferrals;
    int64_t age_ms;
};

/* What decide() concluded. */
struct decision {
    enum outcome outcome; /* APPLIED, NOOP, IGNORED, DEFERRED, DEAD, or RETRY = failed (see err) */
    const char *to;       /* APPLIED: the new state (the machine's storage) */
    int64_t wait_ms;      /* DEFERRED */
};

int64_t inbox_mono_us(void);
void inbox_set_error(struct item *it, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
bool inbox_valid_uuid(const char *s);
/* OUT_BUSY, due again in base_ms plus up to 50 ms of jitter. */
void inbox_busy(struct item *it, int64_t base_ms);

/* The machine that evaluates the item, or NULL with err (a failure: retry).
 * Sets it->entity_type to the machine's name. */
const struct machine_config *inbox_machine_for(const struct hookd_config *cfg, struct item *it, char *err,
                                               size_t errlen);

/* Classifies the item against an entity in `state` (NULL: it does not
 * exist) and fills d; sets it->error (the transition, the wait, or why it is
 * dead) and, for dead letters, it->attempts and it->dead_reason. RETRY means
 * the evaluation failed with err. No I/O. */
void inbox_decide(const struct hookd_config *cfg, const struct machine_config *m, struct item *it,
                  const struct row *row, const char *state, struct decision *d, char *err, size_t errlen);

/* A failed attempt number `attempts` (already counted) for reason `why`:
 * sets it->error and either it->outcome = OUT_RETRY with *wait_ms, or
 * OUT_DEAD with it->dead_reason. No I/O. */
void inbox_fail_verdict(const struct hookd_config *cfg, struct item *it, int attempts, const char *why,
                        int64_t *wait_ms);

/* Inserts the machine's follow-up outbox events for an applied item. */
int inbox_emit_followups(PGconn *conn, const struct machine_config *m, const struct item *it, const char *from,
                         const char *to, char *err, size_t errlen);

/* inbox_batch.c: evaluates every item whose machine keeps its entities in
 * hookd_entities with a few set-based statements, inside the caller's open
 * transaction, and sets their outcomes (and it->next_due_ms). Items it
 * leaves at OUT_NONE (machines with their own tables, entities it could not
 * create) are for the per-event path. Returns 0, or -1 when a statement
 * failed: then the caller rolls the transaction back. */
int inbox_batch_evaluate(PGconn *conn, struct job *job);

#endif
