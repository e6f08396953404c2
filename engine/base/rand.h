/* Random bytes for jitter, ids and secrets, from OpenSSL's generator. */
#ifndef HOOKD_RAND_H
#define HOOKD_RAND_H

#include <stddef.h>
#include <stdint.h>

/* A random 64-bit value for jitter; falls back to the monotonic clock's
 * microseconds when the generator fails (jitter needs spread, not secrecy). */
uint64_t rand_u64(void);

#endif
