/* The inbox role's set-based evaluation path (internal to the inbound
 * domain; see inbox_eval.h for what it shares with the per-event path). */
#ifndef HOOKD_INBOX_BATCH_H
#define HOOKD_INBOX_BATCH_H

#include <libpq-fe.h>

struct inbox_job;

/* Evaluates every item whose machine keeps its entities in
 * hookd_entities with a few set-based statements, inside the caller's open
 * transaction, and sets their outcomes (and it->next_due_ms). Items it
 * leaves at OUT_NONE (machines with their own tables, entities it could not
 * create) are for the per-event path. Returns 0, or -1 when a statement
 * failed (job->err, job->err_locking): then the caller rolls the
 * transaction (or the group's savepoint) back. */
int inbox_batch_evaluate(PGconn *conn, struct inbox_job *job);

/* Records a failed evaluation of each of job's items (its
 * it->error says why), in the caller's open transaction, with two
 * statements for all of them: lock the rows (SKIP LOCKED) and read their
 * attempts, then write each one RETRYING with the retry schedule's wait, or
 * QUARANTINED with its dead letter when that was the last attempt, and its
 * attempts row. Rows that are gone, terminal or held by another worker get
 * those outcomes and are not charged. Returns 0, or -1 (job->err). */
int inbox_batch_fail(PGconn *conn, struct inbox_job *job);

#endif
