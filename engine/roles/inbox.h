/* The inbox role: evaluates claimed inbox events as proposed state
 * transitions of their entities (DESIGN.md §5). Claimed items become one
 * Postgres transaction per batch (batches grow while the DB threads are
 * busy). A batch is decided set-based: lock its rows (SKIP LOCKED; terminal
 * rows are acked, so a duplicate from Redis is harmless) and its entities
 * (SKIP LOCKED; a busy entity is retried in milliseconds without costing an
 * attempt), classify each event in receipt order in C, then write apply /
 * no-op / defer / dead-letter on conflict / retry on failure, and the
 * attempts, with a few statements for the whole batch (inbox_batch.c).
 * Should any statement fail, the batch is redone event by event with a
 * SAVEPOINT around each, so one bad event fails alone. After the commit:
 * Redis verdicts, woken siblings, alerts. */
#ifndef HOOKD_INBOX_H
#define HOOKD_INBOX_H

#include <stddef.h>
#include <stdint.h>

struct worker;
struct sched;
struct inbox;

struct inbox *inbox_new(struct worker *w);
void inbox_free(struct inbox *ib); /* accepts NULL */
/* sched_process_fn for the inbox queue; arg is the struct inbox. */
void inbox_process(void *arg, struct sched *s, char **ids, const int64_t *due_ms, size_t n);

#endif
