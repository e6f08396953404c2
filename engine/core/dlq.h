/* The dead-letter queue's data access, shared by `hookd dlq` and the admin
 * page: list open entries with filters, show one with its payload, kept
 * headers and full attempt history, replay (the source row goes back to
 * PENDING with a fresh attempt budget, the DLQ entry records the replay),
 * and purge old entries. Blocking libpq calls: run them from the CLI or a DB
 * thread, never the loop. Results are jansson objects the caller owns. */
#ifndef HOOKD_DLQ_H
#define HOOKD_DLQ_H

#include <jansson.h>
#include <libpq-fe.h>
#include <stdbool.h>
#include <stdint.h>

struct dlq_filter {
    const char *source;     /* "inbox" | "delivery" | NULL */
    const char *partner;    /* partner name (inbox) or endpoint name (delivery) */
    const char *event_type; /* glob, '*' wildcards */
    int64_t since_ms;       /* dead within this many ms; 0 = any */
    int limit;              /* 0 = 100 */
    const char *tenant;     /* deliveries of this tenant's events (uid or id) only; NULL = any */
};

/* Open entries (not replayed), newest first: array of objects with id,
 * source, source_id, partner, event_type, entity, attempts, reason,
 * last_error, dead_at, replay_count. NULL with err. */
json_t *dlq_list(PGconn *conn, const struct dlq_filter *f, char *err, size_t errlen);
/* One entry by its id (or its source row's id): the fields of dlq_list plus
 * payload and headers (inbox) as their JSON text, unparsed (a payload may be
 * large and deep: the reader bounds what it shows), endpoint url
 * (delivery), replayed_at and attempts_history. NULL with err ("no dead
 * letter …"). */
json_t *dlq_show(PGconn *conn, const char *id, char *err, size_t errlen);
/* The payload of that entry as Postgres stores it (the text of its jsonb;
 * "null" when there is none), caller frees; NULL with err as dlq_show. */
char *dlq_payload(PGconn *conn, const char *id, char *err, size_t errlen);

struct dlq_replayed {
    char source[16];
    char source_id[40];
};
/* Replays one entry in its own transaction. Refuses (returns -1, err says
 * why) an unknown id, an entry already replayed, and a source row that is no
 * longer dead (processed meanwhile), and a delivery whose endpoint is
 * disabled. With dry_run nothing changes but the same checks run. The caller
 * schedules out->source_id in Redis (the reconciler would otherwise). */
__attribute__((warn_unused_result)) int dlq_replay(PGconn *conn, const char *id, bool dry_run,
                                                   struct dlq_replayed *out, char *err, size_t errlen);
/* Deletes entries dead for longer than older_than_ms (their source rows
 * stay until [retention] expires them: a QUARANTINED inbox row or DEAD
 * delivery without an open dead letter is terminal). Returns the number
 * deleted (or that would be), -1. */
long dlq_purge(PGconn *conn, int64_t older_than_ms, bool dry_run, char *err, size_t errlen);
/* Open entries in total. -1 on error. */
long dlq_count(PGconn *conn);

#endif
