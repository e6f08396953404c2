/* What stands between the admin view and someone guessing its token: a
 * per-address throttle of failed attempts and the store of signed-in
 * sessions. Both are fixed-size tables (no allocation after _new), so a
 * client that tries from many addresses or signs in many times costs a
 * bounded amount of memory. Pure logic: time comes in as an argument, so
 * tests/unit/test_admin_guard.c can walk through an hour in a microsecond.
 *
 * Throttle: ADMIN_GUARD_MAX_FAILURES failures from one address within
 * ADMIN_GUARD_WINDOW_MS block that address for ADMIN_GUARD_BLOCK_MS (answered
 * 429 with Retry-After by admin.c). IPv6 addresses count per /64, the block
 * a single host usually holds. When the table is full the address seen least
 * recently is forgotten.
 *
 * Sessions: a random id (the cookie) and a random CSRF token per session,
 * both 32 bytes from RAND_bytes in hex; a session ends at its expiry, at
 * logout, when the admin token changes, or when the table is full and it is
 * the one used least recently. */
#ifndef HOOKD_ADMIN_GUARD_H
#define HOOKD_ADMIN_GUARD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ADMIN_GUARD_MAX_FAILURES 5
#define ADMIN_GUARD_WINDOW_MS (60 * 1000)
#define ADMIN_GUARD_BLOCK_MS (60 * 1000)
#define ADMIN_GUARD_CLIENTS 1024
#define ADMIN_GUARD_SESSIONS 64
#define ADMIN_GUARD_ADDR_LEN 52  /* an IPv6 address as text, "/64" and NUL */
#define ADMIN_GUARD_TOKEN_HEX 65 /* 32 random bytes in hex, with its NUL */

struct admin_guard;

struct admin_session {
    char id[ADMIN_GUARD_TOKEN_HEX];   /* the cookie's value; "" = free slot */
    char csrf[ADMIN_GUARD_TOKEN_HEX]; /* this session's CSRF token */
    int64_t created_ms;
    int64_t used_ms;
};

struct admin_guard *admin_guard_new(void);
void admin_guard_free(struct admin_guard *g); /* accepts NULL */

/* The key an address is counted under: itself, or its /64 for IPv6 (an
 * IPv4-mapped IPv6 address counts as the IPv4 address). out has
 * ADMIN_GUARD_ADDR_LEN bytes. */
void admin_guard_client_key(const char *addr, char *out);
/* Seconds until key may try again (0: it may now). */
int64_t admin_guard_retry_after(struct admin_guard *g, const char *key, int64_t now_ms);
/* Counts a failure of key; returns its failures in the current window. The
 * call that reaches ADMIN_GUARD_MAX_FAILURES starts the block (*blocked set). */
int admin_guard_failed(struct admin_guard *g, const char *key, int64_t now_ms, bool *blocked);

/* A new session, or NULL when no random bytes could be had. The pointer is
 * borrowed: valid until the next call that changes sessions. */
struct admin_session *admin_guard_session_new(struct admin_guard *g, int64_t now_ms);
/* The live session whose id is id (compared in constant time), or NULL.
 * Sessions older than ttl_ms are ended on the way. */
struct admin_session *admin_guard_session_find(struct admin_guard *g, const char *id, int64_t ttl_ms, int64_t now_ms);
void admin_guard_session_end(struct admin_guard *g, struct admin_session *s);
/* Ends every session (the admin token changed). */
void admin_guard_sessions_clear(struct admin_guard *g);

/* Constant-time equality of two NUL-terminated strings; empty never matches. */
bool admin_guard_same(const char *a, const char *b);

#endif
