/* The inbox role: evaluates claimed inbox events as proposed state
 * transitions of their entities (DESIGN.md §5). A claimed batch becomes one
 * Postgres transaction with a SAVEPOINT around each event, so one failing
 * event rolls back alone and one commit covers many. Per event: lock the
 * row (SKIP LOCKED; terminal rows are acked, so a duplicate from Redis is
 * harmless), lock the entity (NOWAIT; a busy entity is retried in
 * milliseconds without costing an attempt), classify, and then apply /
 * no-op / defer / dead-letter on conflict / retry on failure, recording the
 * attempt. After the commit: Redis verdicts, woken siblings, alerts. */
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
