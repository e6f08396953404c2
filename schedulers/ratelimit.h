/* Per-endpoint delivery rate limits (`rateLimit`, deliveries per second)
 * enforced across the whole worker cluster: every worker asks the same
 * Redis key (lua/ratelimit.lua, GCRA) before it sends to a limited
 * endpoint, and is told how long to wait. Redis holds only the pace, never
 * a fact: losing the key only lets one more burst through (invariant 1).
 *
 * The delivery path calls ratelimit_acquire before posting to an endpoint
 * whose rate_limit is set (webhook_endpoints.rate_limit): wait 0 sends now;
 * a positive wait up to max_wait_ms has reserved a slot that far ahead
 * (send then); a wait beyond it reserved nothing (reschedule the delivery
 * that far, without counting an attempt); -1 means Redis did not answer
 * (send: a limit is a courtesy to the receiver, not a reason to stall).
 * Loop thread only. */
#ifndef HOOKD_RATELIMIT_H
#define HOOKD_RATELIMIT_H

#include <stdbool.h>
#include <stdint.h>

struct hookd_ctx;
struct ratelimit;

/* wait_ms as above; reserved: a slot was taken. Called exactly once, on
 * the loop (at once when Redis is not connected). */
typedef void (*ratelimit_fn)(void *arg, int64_t wait_ms, bool reserved);

/* Registers the script with ctx->redis (loaded after each connect). */
struct ratelimit *ratelimit_new(struct hookd_ctx *ctx);
void ratelimit_free(struct ratelimit *rl); /* accepts NULL */

void ratelimit_acquire(struct ratelimit *rl, const char *endpoint_id, int rate, int64_t max_wait_ms, ratelimit_fn fn,
                       void *arg);

#endif
