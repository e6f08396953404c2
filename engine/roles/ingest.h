/* The ingest role: `POST /v1/inbox/{partner}`. A request is checked
 * (method, partner, size, content type, signature, JSON, event id/type),
 * then joins the current batch; a batch is one multi-row
 * `INSERT … ON CONFLICT (partner_name, partner_event_id) DO NOTHING`, so
 * concurrent requests share one commit (group commit). Each request is
 * answered only after the commit that holds its row — accepted means durable
 * — and new rows are scheduled in Redis after that commit. Bad input gets a
 * precise status and JSON error, a counter and a log line, and stores
 * nothing; Postgres down gets 503 with Retry-After. */
#ifndef HOOKD_INGEST_H
#define HOOKD_INGEST_H

#include <stddef.h>

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

#endif
