/* Postgres's clock as hookd's one time base: measures the offset between
 * this machine's wall clock and the server's over a connection (the round
 * trip timed on the monotonic clock), keeps the recent samples, and applies
 * the one with the smallest round trip to the clock (clock_set_offset_ms).
 * The worker samples once a second on its readiness timer; a CLI command
 * that writes due times measures once on its own connection. */
#ifndef HOOKD_CLOCK_SYNC_H
#define HOOKD_CLOCK_SYNC_H

#include <libpq-fe.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "clock.h"

struct clock_sync {
    struct clock_samples samples;
    bool applied;       /* an offset was set */
    int64_t applied_ms; /* the offset set last */
    int64_t logged_ms;  /* the offset logged last */
};

/* One sample over conn (blocking: a DB thread or the CLI). 0, or -1 with err. */
__attribute__((warn_unused_result)) int clock_sync_sample(PGconn *conn, struct clock_sample *out, char *err,
                                                          size_t errlen);
/* Adds a sample and applies the best recent one. Logs `clock.offset` when
 * the offset is more than a second from the last one logged (0 at first:
 * a first offset larger than a second is logged). One thread (the loop). */
void clock_sync_add(struct clock_sync *cs, struct clock_sample s);
/* A few samples over conn, the best applied: for the CLI. 0, or -1 with err
 * (the offset stays as it was). */
__attribute__((warn_unused_result)) int clock_sync_once(PGconn *conn, char *err, size_t errlen);

#endif
