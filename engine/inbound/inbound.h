/* The inbound domain's public interface: the ingest role that receives
 * partners' webhooks, and the inbox role that applies them. The domain's
 * other headers are internal to engine/inbound/. */
#ifndef HOOKD_INBOUND_H
#define HOOKD_INBOUND_H

#include <stddef.h>
#include <stdint.h>

/* The ingest role: `POST /v1/inbox/{partner}`. A request is checked
 * (method, partner, size, content type, signature, JSON, event id/type),
 * then joins the current batch; a batch is one multi-row
 * `INSERT … ON CONFLICT (partner_name, partner_event_id) DO NOTHING`, so
 * concurrent requests share one commit (group commit). Each request is
 * answered only after the commit that holds its row — accepted means durable
 * — and new rows are scheduled in Redis after that commit. Bad input gets a
 * precise status and JSON error, a counter and a log line, and stores
 * nothing; Postgres down gets 503 with Retry-After. */

struct hookd_ctx;
struct http_server;
struct ingest;

/* Routes /v1/inbox/ on http and starts the ingest role's own database pool
 * (ingest_concurrency connections). ctx and http are borrowed and must
 * outlive it. NULL with err when the pool cannot start. */
struct ingest *ingest_new(struct hookd_ctx *ctx, struct http_server *http, char *err, size_t errlen);
/* Closes the role's database pool: queued inserts run, and their requests
 * are answered, while the role lives. */
void ingest_close(struct ingest *in);
/* Closes if needed; requests still gathering are answered 503 (they were
 * not committed). Accepts NULL. */
void ingest_free(struct ingest *in);
/* The config was reloaded: re-read limits. */
void ingest_config_changed(struct ingest *in);
/* Submits the batch being gathered now (drain). */
void ingest_flush(struct ingest *in);
/* Requests accepted for processing but not yet answered, and insert jobs. */
size_t ingest_pending(const struct ingest *in);

/* The inbox role: evaluates claimed inbox events as proposed state
 * transitions of their entities (DESIGN.md §5). Claimed items become one
 * Postgres transaction per batch (batches grow while the DB threads are
 * busy). A batch is decided set-based: lock its rows (SKIP LOCKED; terminal
 * rows are acked, so a duplicate from Redis is harmless) and its entities
 * (SKIP LOCKED; a busy entity is retried in milliseconds without costing an
 * attempt), classify each event in receipt order in C, then write apply /
 * no-op / defer / dead-letter on conflict / retry on failure, and the
 * attempts, with a few statements for the whole batch (inbox_batch.c).
 * Should any statement fail, the failing events are isolated by bisection
 * (halves tried again as sets, each in a SAVEPOINT) and their failed
 * attempts recorded for the whole batch at once, so one bad event fails
 * alone and the good ones still go as sets. After the commit: Redis
 * verdicts, woken siblings (one script call per batch), alerts. */

struct hookd_ctx;
struct alerter;
struct inbox;

/* Starts the role and its scheduler of the inbox queue. ctx and alerter
 * are borrowed and must outlive it. */
struct inbox *inbox_new(struct hookd_ctx *ctx, struct alerter *alerter);
/* Stops claiming (drain); claimed items still complete. */
void inbox_drain(struct inbox *ib);
/* Items claimed and not yet finished. */
size_t inbox_pending(const struct inbox *ib);
/* Lateness of recent claims (see sched_lateness). */
void inbox_lateness(const struct inbox *ib, int64_t *p50, int64_t *p99);
/* Accepts NULL. Free the Redis connections and the database pool first:
 * their pending callbacks reach the role while it lives. */
void inbox_free(struct inbox *ib);

#endif
