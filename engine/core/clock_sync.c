/* The offset between this machine's clock and Postgres's; see clock_sync.h. */
#include "clock_sync.h"

#include <stdio.h>
#include <stdlib.h>

#include "errbuf.h"
#include "log.h"
#include "query.h"

#define CLOCK_LOG_STEP_MS 1000
#define CLOCK_ONCE_SAMPLES 3

int clock_sync_sample(PGconn *conn, struct clock_sample *out, char *err, size_t errlen)
{
    int64_t sent_us = clock_local_wall_us();
    int64_t t0 = clock_mono_us();
    PGresult *r = query_exec(conn, Q_CLOCK_SYNC_NOW, NULL, err, errlen);
    int64_t rtt = clock_mono_us() - t0;
    if (!r)
        return -1;
    if (PQntuples(r) != 1) {
        err_set(err, errlen, "the server's clock: no row");
        PQclear(r);
        return -1;
    }
    int64_t server_us = strtoll(PQgetvalue(r, 0, CLOCK_SYNC_NOW_NOW_US), NULL, 10);
    PQclear(r);
    *out = clock_sample_make(sent_us, rtt, server_us);
    return 0;
}

void clock_sync_add(struct clock_sync *cs, struct clock_sample s)
{
    clock_samples_add(&cs->samples, s);
    struct clock_sample best;
    if (clock_samples_best(&cs->samples, &best) != 0)
        return;
    int64_t offset = clock_sample_offset_ms(best);
    if (!cs->applied || offset != cs->applied_ms)
        clock_set_offset_ms(offset);
    cs->applied = true;
    cs->applied_ms = offset;
    /* logged_ms starts at 0: the first offset is logged when it is large */
    if (llabs(offset - cs->logged_ms) > CLOCK_LOG_STEP_MS) {
        log_warn("clock.offset", "offset_ms=%lld rtt_us=%lld note=\"due times are on Postgres's clock\"",
                 (long long)offset, (long long)best.rtt_us);
        cs->logged_ms = offset;
    }
}

int clock_sync_once(PGconn *conn, char *err, size_t errlen)
{
    struct clock_sync cs = {0};
    for (int i = 0; i < CLOCK_ONCE_SAMPLES; i++) {
        struct clock_sample s;
        if (clock_sync_sample(conn, &s, err, errlen) != 0)
            return -1;
        clock_samples_add(&cs.samples, s);
    }
    struct clock_sample best;
    if (clock_samples_best(&cs.samples, &best) == 0)
        clock_set_offset_ms(clock_sample_offset_ms(best));
    return 0;
}
