/*
 * backoff.h — retry and deferral policies: how long to wait before the next
 * attempt of a failed or deferred item, and when to give up and dead-letter
 * it; plus the parsers and formatter for the durations, schedules and
 * percentages that the `[retry]` and `[defer]` config sections are written
 * in. The inbox and relay roles turn the returned wait into next_attempt_at
 * (Postgres) and a due score (Redis). Pure logic: no I/O, no clock, no hidden
 * randomness — the caller passes the age and the random value, so every
 * decision is reproducible in a test.
 */
#ifndef HOOKD_BACKOFF_H
#define HOOKD_BACKOFF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define BACKOFF_MAX_STEPS 16

/* Enough for any int64_t milliseconds formatted by backoff_format_duration(). */
#define BACKOFF_DURATION_BUFLEN 32

/* Failures: schedule_ms[k] is the wait after the (k+1)-th failed attempt; if
 * nsteps < max_attempts - 1 the last step repeats. The max_attempts-th failure
 * dead-letters. jitter_pct spreads each wait uniformly within ±jitter_pct%. */
struct backoff_policy {
    int64_t schedule_ms[BACKOFF_MAX_STEPS];
    int nsteps;
    int max_attempts;
    int jitter_pct;
    /* Deliveries only (`[retry endpoint:NAME]`, defaults from [retry]): the
     * endpoint's circuit. On, circuit_failures consecutive failures open it;
     * while open nothing is sent to the endpoint and no attempt is spent;
     * every circuit_probe one request probes it (half-open), and a success
     * closes it. An endpoint whose circuit stays open for
     * circuit_disable_after (Svix: 5 days of failing) is disabled, its owed
     * deliveries dead-lettered; 0: never. */
    bool circuit;
    int circuit_failures;
    int64_t circuit_probe_ms;
    int64_t circuit_disable_after_ms;
};

/* Out-of-order events: schedule_ms[k] is the wait after the (k+1)-th deferral;
 * the last step repeats. An event older than max_age_ms dead-letters. */
struct defer_policy {
    int64_t schedule_ms[BACKOFF_MAX_STEPS];
    int nsteps;
    int64_t max_age_ms;
};

/* 1m, 5m, 15m; max_attempts 4; jitter 10%; circuit on, 20 failures, probe 5s,
 * disable after 5 days open. */
void backoff_policy_default(struct backoff_policy *p);
/* 5s, 30s, 2m, 5m; max_age 24h. */
void defer_policy_default(struct defer_policy *p);

/* Whole-policy checks for the config loader: 1..BACKOFF_MAX_STEPS steps, no
 * negative step, max_attempts >= 1, jitter 0..100 (retry); max_age > 0
 * (defer). */
__attribute__((warn_unused_result)) int backoff_policy_validate(const struct backoff_policy *p, char *err,
                                                                size_t errlen);
__attribute__((warn_unused_result)) int defer_policy_validate(const struct defer_policy *p, char *err, size_t errlen);

/* attempts = failed attempts so far, including the one that just failed
 * (1-based; values below 1 count as 1). Returns the wait in ms before the
 * next attempt, or -1 when this failure must dead-letter (attempts >=
 * max_attempts, or a policy without steps). rnd is a caller-supplied random
 * value: the wait is base - span + rnd % (2 * span + 1) with span =
 * base * jitter_pct / 100, never below 0. */
int64_t backoff_retry_delay(const struct backoff_policy *p, int attempts, uint64_t rnd);

/* deferrals = deferrals so far, including this one (1-based; values below 1
 * count as 1); age_ms = time since the event was received (negative, from
 * clock skew, counts as 0). Returns the wait in ms, or -1 when age_ms plus
 * the wait exceeds max_age_ms (or the policy has no steps): dead-letter,
 * "precondition never met". */
int64_t backoff_defer_delay(const struct defer_policy *p, int deferrals, int64_t age_ms);

/* Parses one duration: a whole number and a unit (ms, s, m, h, d),
 * surrounding blanks ignored, e.g. "90s", " 15m ". Rejects empty text,
 * negative or fractional amounts, a missing or unknown unit, and values that
 * do not fit in int64_t milliseconds, with a precise message such as
 * "bad duration '5x': unknown unit 'x' (use ms, s, m, h, d)". */
__attribute__((warn_unused_result)) int backoff_parse_duration(const char *text, int64_t *out_ms, char *err,
                                                               size_t errlen);

/* Parses a comma-separated list of durations ("1m, 5m, 15m") into out_ms,
 * which must have room for BACKOFF_MAX_STEPS values, and sets *n. Rejects an
 * empty list, an empty item, any bad duration (the message names the step)
 * and more than BACKOFF_MAX_STEPS items. On failure out_ms and *n are left
 * unchanged. */
__attribute__((warn_unused_result)) int backoff_parse_schedule(const char *text, int64_t *out_ms, int *n, char *err,
                                                               size_t errlen);

/* Parses "10%" or "10" (blanks around ignored), 0..100. */
__attribute__((warn_unused_result)) int backoff_parse_percent(const char *text, int *out, char *err, size_t errlen);

/* Formats ms in the largest unit that represents it exactly (60000 -> "1m",
 * 90000 -> "90s", 250 -> "250ms", 0 -> "0s"), so the result parses back to
 * the same value. Negative values get a leading '-'. Truncates to buflen;
 * BACKOFF_DURATION_BUFLEN always suffices. */
void backoff_format_duration(int64_t ms, char *buf, size_t buflen);

#endif
