/* Retention: the pass that expires terminal data ([retention] in the
 * config), and the storage figures shown by `hookd status`, /metrics and
 * /admin. webhook_inbox, outbox_events, outbox_deliveries and attempts are
 * partitioned by time (sql/0012_retention.sql); a pass creates their
 * partitions ahead, moves the few rows that must outlive an expiring
 * partition into its table's _kept partition, detaches the partition
 * CONCURRENTLY and drops it, and deletes in small batches what is not
 * partitioned (expired dedup keys, replayed dead letters, terminal _kept
 * rows). The SQL is sql/queries/retention_*.sql; only the DETACH, which
 * cannot run inside a function or a transaction, is built here. Blocking
 * libpq on the caller's connection: the CLI's, or a worker's own pool
 * thread (engine/ops/retainer.c). */
#ifndef HOOKD_RETENTION_H
#define HOOKD_RETENTION_H

#include <libpq-fe.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "config.h"

/* Partitions a pass keeps ready ahead of now, in widths. */
#define RETENTION_AHEAD 2

/* A partition spans a quarter of its table's window (at least 1 s): rows
 * are removed between window and 1.25 x window after their last change. */
int64_t retention_width_ms(int64_t window_ms);

struct retention_report {
    long expired;   /* partitions dropped */
    long postponed; /* expirable partitions kept for the next pass: a survivor was held by a transaction */
    long rescued;   /* survivors found in a detached partition and put back (expected: 0) */
    long extended;  /* tables whose partitions ahead were extended */
    long pruned;    /* rows deleted in batches: _kept, dedup keys, replayed dead letters */
    long payloads;  /* message payloads cleared whose retention ran out (sql/0020) */
    bool skipped;   /* another pass holds the lock: nothing done */
    bool forbidden; /* the session's role does not own the tables (insufficient privilege): nothing done */
};

/* One pass. out (may be NULL) gets one line per action, or per action it
 * would take with dry_run (which changes nothing). Returns 0 (also when
 * another pass holds the lock: rep->skipped), or -1 with err; a failure
 * leaves the schema consistent (the next pass finishes an interrupted
 * detach). The connection must not be in a transaction. */
__attribute__((warn_unused_result)) int retention_run(PGconn *conn, const struct retention_config *r, bool dry_run,
                                                      FILE *out, struct retention_report *rep, char *err,
                                                      size_t errlen);

/* Only the partitions ahead (the end of `hookd migrate`): 0, or -1 with err. */
__attribute__((warn_unused_result)) int retention_prepare(PGconn *conn, const struct retention_config *r, char *err,
                                                          size_t errlen);

/* Storage of one table. Times are epoch ms, 0 when there is none. */
struct retention_table {
    char name[24];
    int64_t bytes;
    int64_t rows;           /* the planner's estimate */
    int64_t oldest_ms;      /* the oldest row */
    int64_t next_expiry_ms; /* when the next rows expire */
};
#define RETENTION_TABLES 6
struct retention_storage {
    struct retention_table t[RETENTION_TABLES];
    size_t n;
    int64_t measured_ms; /* epoch ms; 0 = never measured */
};

__attribute__((warn_unused_result)) int retention_storage(PGconn *conn, const struct retention_config *r,
                                                          struct retention_storage *out, char *err, size_t errlen);

#endif
