/* The inbox's decision table (DESIGN.md section 5), pure: given an event,
 * its locked inbox row and its entity's state (or none), it says apply /
 * no-op / ignore / defer / dead-letter (conflict, precondition never met,
 * retries exhausted) / retry, with the wait and the messages. No I/O, no
 * clock, no hidden randomness: inbox.c and inbox_batch.c read the rows and
 * write what is decided here; tests/unit/test_inbox_decide.c walks the
 * whole table. */
#ifndef HOOKD_INBOX_DECIDE_H
#define HOOKD_INBOX_DECIDE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"

enum inbox_outcome {
    OUT_NONE, /* not evaluated yet */
    OUT_APPLIED,
    OUT_NOOP,
    OUT_IGNORED,
    OUT_ROUTED, /* no machine names its type, routes take it: handed to them, done */
    OUT_DEFERRED,
    OUT_RETRY,
    OUT_DEAD,
    OUT_BUSY,     /* row or entity locked by another worker: soon again, free */
    OUT_TERMINAL, /* already processed or dead-lettered: ack */
    OUT_GONE,     /* the row no longer exists: ack */
};

extern const char *const inbox_outcome_names[];

struct inbox_item {
    char id[40];
    enum inbox_outcome outcome;
    int64_t next_due_ms; /* OUT_DEFERRED / OUT_RETRY / OUT_BUSY */
    int attempts;
    char partner[64], event_type[112], entity_type[112];
    char *entity_id;
    char *error;             /* why it failed, waits, or was dead-lettered */
    const char *dead_reason; /* OUT_DEAD: static text for dead_letters.reason */
    char **wake_ids;         /* deferred siblings made due now by an apply */
    int64_t *wake_due;
    size_t nwake;
    int nrouted; /* outbox events its routes emitted in this evaluation */
};

/* The locked inbox row, as both paths read it. */
struct inbox_row {
    char status[24];
    int attempts, deferrals;
    int64_t age_ms;
};

/* What decide() concluded. */
struct inbox_decision {
    enum inbox_outcome outcome; /* APPLIED, NOOP, IGNORED, DEFERRED, DEAD, or RETRY = failed (see err) */
    const char *to;             /* APPLIED: the new state (the machine's storage) */
    int64_t wait_ms;            /* DEFERRED */
};


/* Replaces it->error with the formatted text. */
void inbox_set_error(struct inbox_item *it, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* s has the 8-4-4-4-12 hex shape of a UUID. */
bool inbox_valid_uuid(const char *s);

/* The machine that evaluates the item, or NULL with err (a failure: retry).
 * Sets it->entity_type to the machine's name. */
const struct machine_config *inbox_machine_for(const struct hookd_config *cfg, struct inbox_item *it, char *err,
                                               size_t errlen);

/* Classifies the item against an entity in `state` (NULL: it does not
 * exist) and fills d; sets it->error (the transition, the wait, or why it is
 * dead) and, for dead letters, it->attempts and it->dead_reason. RETRY means
 * the evaluation failed with err. No I/O. */
void inbox_decide(const struct hookd_config *cfg, const struct machine_config *m, struct inbox_item *it,
                  const struct inbox_row *row, const char *state, struct inbox_decision *d, char *err, size_t errlen);

/* A failed attempt number `attempts` (already counted) for reason `why`:
 * sets it->error and either it->outcome = OUT_RETRY with *wait_ms, or
 * OUT_DEAD with it->dead_reason. rnd spreads the wait by the policy's
 * jitter (see backoff_retry_delay). No I/O. */
void inbox_fail_verdict(const struct hookd_config *cfg, struct inbox_item *it, int attempts, const char *why,
                        uint64_t rnd, int64_t *wait_ms);

#endif
