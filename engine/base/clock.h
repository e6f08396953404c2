/* The one clock of hookd. Two time bases: wall-clock milliseconds, which is
 * what Redis scores and Postgres timestamps compare against (due times are
 * shared between workers, so they must be on a base every worker reads
 * alike), and a monotonic clock for durations and deadlines inside one
 * process, which never jumps when the wall clock is stepped.
 *
 * The shared base is Postgres's clock, not the machine's: clock_wall_ms()
 * is the local wall clock plus an offset measured against the server
 * (`clock_timestamp()`, see engine/core/clock_sync.c) and set with
 * clock_set_offset_ms(). Until the first measurement the offset is 0. The
 * offset is an atomic: DB threads read the clock too. */
#ifndef HOOKD_CLOCK_H
#define HOOKD_CLOCK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/time.h>

/* Wall-clock milliseconds since the Unix epoch, on Postgres's time base
 * (local wall clock + the measured offset). */
int64_t clock_wall_ms(void);
/* The machine's own wall clock, microseconds since the epoch, without the
 * offset: only for measuring the offset. */
int64_t clock_local_wall_us(void);
/* Monotonic microseconds (an arbitrary origin; only differences mean anything). */
int64_t clock_mono_us(void);
/* Monotonic milliseconds. */
int64_t clock_mono_ms(void);

/* A duration as the struct timeval libevent's timers take: ms milliseconds
 * (clock_tv_from_ms) or us microseconds (clock_tv_from_us). */
struct timeval clock_tv_from_ms(int64_t ms);
struct timeval clock_tv_from_us(int64_t us);

/* The offset clock_wall_ms() adds (server - local, ms). Thread-safe. */
void clock_set_offset_ms(int64_t offset_ms);
int64_t clock_offset_ms(void);
/* True once an offset was set: before, clock_wall_ms() is only the local
 * clock, and the schedulers wait rather than claim on it. */
bool clock_synced(void);

/* ---- offset samples (pure) ----------------------------------------------
 * One sample: the server's time read in the middle of a round trip. */
struct clock_sample {
    int64_t offset_us; /* server - local, at the middle of the round trip */
    int64_t rtt_us;    /* the round trip, on the monotonic clock */
};

/* A sample from one round trip: the local wall time the request left
 * (clock_local_wall_us()), its round trip (monotonic), and the server's
 * time in microseconds. The server is assumed to have read its clock
 * halfway: the error is at most rtt/2. */
struct clock_sample clock_sample_make(int64_t local_send_us, int64_t rtt_us, int64_t server_us);
/* The offset to apply, in whole milliseconds: the low end of the sample's
 * bound (offset - rtt/2), rounded down, so clock_wall_ms() never reads
 * later than the server's clock and nothing is claimed before it is due by
 * Postgres's time; the price is at most rtt + 1 ms of lateness. */
int64_t clock_sample_offset_ms(struct clock_sample s);

/* The recent samples, newest replacing oldest. */
#define CLOCK_SAMPLES 8
struct clock_samples {
    struct clock_sample s[CLOCK_SAMPLES];
    size_t n; /* samples ever added */
};

void clock_samples_add(struct clock_samples *w, struct clock_sample s);
/* The recent sample with the smallest round trip (the tightest bound; the
 * newest of equals), or -1 when there is none. */
int clock_samples_best(const struct clock_samples *w, struct clock_sample *out);

#endif
