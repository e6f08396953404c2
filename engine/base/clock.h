/* The one clock of hookd. Two time bases: wall-clock milliseconds, which is
 * what Redis scores and Postgres timestamps compare against (due times are
 * shared between workers, so they must be on a base every worker reads
 * alike), and a monotonic clock for durations and deadlines inside one
 * process, which never jumps when the wall clock is stepped. */
#ifndef HOOKD_CLOCK_H
#define HOOKD_CLOCK_H

#include <stdint.h>

/* Wall-clock milliseconds since the Unix epoch. */
int64_t clock_wall_ms(void);
/* Monotonic microseconds (an arbitrary origin; only differences mean anything). */
int64_t clock_mono_us(void);
/* Monotonic milliseconds. */
int64_t clock_mono_ms(void);

#endif
