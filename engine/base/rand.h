/* Random bytes for jitter, ids and secrets, from OpenSSL's generator: the
 * one place hookd draws randomness. */
#ifndef HOOKD_RAND_H
#define HOOKD_RAND_H

#include <stddef.h>
#include <stdint.h>

/* A random 64-bit value for jitter; falls back to the monotonic clock's
 * microseconds when the generator fails (jitter needs spread, not secrecy). */
uint64_t rand_u64(void);

/* n random bytes into out; -1 when the generator fails. */
__attribute__((warn_unused_result)) int rand_bytes(void *out, size_t n);

/* nbytes random bytes (at most RAND_HEX_MAX) as lowercase hex, with a NUL,
 * into out (2 * nbytes + 1 bytes): the text of a secret (a session id, a CSRF
 * token, an API token's random part). -1 when the generator fails or
 * nbytes is too large. */
#define RAND_HEX_MAX 64
__attribute__((warn_unused_result)) int rand_hex(char *out, size_t nbytes);

#endif
