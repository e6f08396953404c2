/*
 * backoff.c — retry and deferral policies and their config syntax (see
 * backoff.h). The policies answer one question for the inbox and relay
 * roles — "how long until the next try, or is it time for the DLQ?" — from
 * the attempt or deferral count that Postgres already stores, so a worker
 * keeps no per-item memory and any worker can pick up any item. Jitter uses a
 * random value supplied by the caller: it spreads retries of a burst of
 * failures (a partner outage) over time instead of hammering the partner in
 * lockstep, while tests stay deterministic. All arithmetic is checked or
 * saturating, because the inputs come from config files and database rows.
 */
#include "backoff.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "errbuf.h"

#define MS_PER_S INT64_C(1000)
#define MS_PER_M (60 * MS_PER_S)
#define MS_PER_H (60 * MS_PER_M)
#define MS_PER_D (24 * MS_PER_H)

#define UNITS_HINT "(use ms, s, m, h, d)"

/* Units from largest to smallest: the formatter relies on this order. */
static const struct {
    const char *name;
    int64_t ms;
} units[] = {
    {"d", MS_PER_D}, {"h", MS_PER_H}, {"m", MS_PER_M}, {"s", MS_PER_S}, {"ms", 1},
};

void backoff_policy_default(struct backoff_policy *p)
{
    memset(p, 0, sizeof(*p));
    p->schedule_ms[0] = 1 * MS_PER_M;
    p->schedule_ms[1] = 5 * MS_PER_M;
    p->schedule_ms[2] = 15 * MS_PER_M;
    p->nsteps = 3;
    p->max_attempts = 4;
    p->jitter_pct = 10;
    p->circuit = true;
    p->circuit_failures = 20;
    p->circuit_probe_ms = 5 * MS_PER_S;
    p->circuit_disable_after_ms = 5 * 24 * 3600 * MS_PER_S;
}

void defer_policy_default(struct defer_policy *p)
{
    memset(p, 0, sizeof(*p));
    p->schedule_ms[0] = 5 * MS_PER_S;
    p->schedule_ms[1] = 30 * MS_PER_S;
    p->schedule_ms[2] = 2 * MS_PER_M;
    p->schedule_ms[3] = 5 * MS_PER_M;
    p->nsteps = 4;
    p->max_age_ms = 24 * MS_PER_H;
}

static int validate_steps(const int64_t *schedule_ms, int nsteps, char *err, size_t errlen)
{
    if (nsteps < 1 || nsteps > BACKOFF_MAX_STEPS) {
        err_set(err, errlen, "schedule must have 1 to %d steps (has %d)", BACKOFF_MAX_STEPS, nsteps);
        return -1;
    }
    for (int i = 0; i < nsteps; i++) {
        if (schedule_ms[i] < 0) {
            err_set(err, errlen, "schedule step %d is negative", i + 1);
            return -1;
        }
    }
    return 0;
}

int backoff_policy_validate(const struct backoff_policy *p, char *err, size_t errlen)
{
    if (validate_steps(p->schedule_ms, p->nsteps, err, errlen) < 0)
        return -1;
    if (p->max_attempts < 1) {
        err_set(err, errlen, "max_attempts must be at least 1 (is %d)", p->max_attempts);
        return -1;
    }
    if (p->jitter_pct < 0 || p->jitter_pct > 100) {
        err_set(err, errlen, "jitter must be between 0 and 100%% (is %d%%)", p->jitter_pct);
        return -1;
    }
    if (p->circuit && (p->circuit_failures < 1 || p->circuit_probe_ms <= 0)) {
        err_set(err, errlen, "circuit_failures must be at least 1 and circuit_probe more than 0");
        return -1;
    }
    return 0;
}

int defer_policy_validate(const struct defer_policy *p, char *err, size_t errlen)
{
    if (validate_steps(p->schedule_ms, p->nsteps, err, errlen) < 0)
        return -1;
    if (p->max_age_ms <= 0) {
        err_set(err, errlen, "max_age must be greater than 0");
        return -1;
    }
    return 0;
}

/* The wait for the count-th retry or deferral (1-based): the last step
 * repeats. Negative steps of an unvalidated policy count as 0. */
static int64_t step_for(const int64_t *schedule_ms, int nsteps, int count)
{
    int64_t w;

    if (nsteps > BACKOFF_MAX_STEPS)
        nsteps = BACKOFF_MAX_STEPS;
    if (count < 1)
        count = 1;
    w = schedule_ms[(count < nsteps ? count : nsteps) - 1];
    return w < 0 ? 0 : w;
}

/* base ± base*pct/100, picked by rnd; computed without overflow for any
 * non-negative base, and saturating at INT64_MAX. */
static int64_t jitter(int64_t base, int pct, uint64_t rnd)
{
    int64_t span, lo;
    uint64_t off;

    if (pct <= 0 || base == 0)
        return base;
    if (pct > 100)
        pct = 100;
    span = (base / 100) * pct + (base % 100) * pct / 100;
    lo = base - span;
    off = rnd % ((uint64_t)span * 2 + 1);
    if (off > (uint64_t)(INT64_MAX - lo))
        return INT64_MAX;
    return lo + (int64_t)off;
}

int64_t backoff_retry_delay(const struct backoff_policy *p, int attempts, uint64_t rnd)
{
    if (attempts < 1)
        attempts = 1;
    if (attempts >= p->max_attempts || p->nsteps < 1)
        return -1;
    return jitter(step_for(p->schedule_ms, p->nsteps, attempts), p->jitter_pct, rnd);
}

int64_t backoff_defer_delay(const struct defer_policy *p, int deferrals, int64_t age_ms)
{
    int64_t wait;

    if (p->nsteps < 1)
        return -1;
    wait = step_for(p->schedule_ms, p->nsteps, deferrals);
    if (age_ms < 0)
        age_ms = 0;
    /* age + wait > max_age, written so that neither side can overflow. */
    if (wait > p->max_age_ms || age_ms > p->max_age_ms - wait)
        return -1;
    return wait;
}

static bool is_blank(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

/* Narrows [*s, *s + *len) to its non-blank middle. */
static void trim(const char **s, size_t *len)
{
    while (*len > 0 && is_blank(**s)) {
        (*s)++;
        (*len)--;
    }
    while (*len > 0 && is_blank((*s)[*len - 1]))
        (*len)--;
}

/* Parses the duration in the (already trimmed) span s[0..len). Works on a
 * span so that schedule items need not be copied out of the list. */
static int parse_duration_span(const char *s, size_t len, int64_t *out_ms, char *err, size_t errlen)
{
    const int n = len > 200 ? 200 : (int)len; /* keep messages short */
    size_t i = 0, ulen;
    int64_t amount = 0;

    if (len == 0) {
        err_set(err, errlen, "empty duration " UNITS_HINT);
        return -1;
    }
    if (s[0] == '-') {
        err_set(err, errlen, "bad duration '%.*s': must not be negative", n, s);
        return -1;
    }
    if (!is_digit(s[0])) {
        err_set(err, errlen, "bad duration '%.*s': expected a whole number and a unit " UNITS_HINT, n, s);
        return -1;
    }
    for (; i < len && is_digit(s[i]); i++) {
        int d = s[i] - '0';
        if (amount > (INT64_MAX - d) / 10) {
            err_set(err, errlen, "bad duration '%.*s': too large", n, s);
            return -1;
        }
        amount = amount * 10 + d;
    }
    if (i < len && (s[i] == '.' || s[i] == ',')) {
        err_set(err, errlen,
                "bad duration '%.*s': only whole numbers are allowed (use a smaller unit, e.g. "
                "90s instead of 1.5m)",
                n, s);
        return -1;
    }
    while (i < len && is_blank(s[i]))
        i++;
    ulen = len - i;
    if (ulen == 0) {
        err_set(err, errlen, "bad duration '%.*s': missing unit " UNITS_HINT, n, s);
        return -1;
    }
    for (size_t u = 0; u < sizeof(units) / sizeof(units[0]); u++) {
        if (strlen(units[u].name) == ulen && memcmp(units[u].name, s + i, ulen) == 0) {
            if (amount > INT64_MAX / units[u].ms) {
                err_set(err, errlen, "bad duration '%.*s': too large", n, s);
                return -1;
            }
            *out_ms = amount * units[u].ms;
            return 0;
        }
    }
    err_set(err, errlen, "bad duration '%.*s': unknown unit '%.*s' " UNITS_HINT, n, s, (int)(ulen > 50 ? 50 : ulen),
            s + i);
    return -1;
}

int backoff_parse_duration(const char *text, int64_t *out_ms, char *err, size_t errlen)
{
    size_t len = text ? strlen(text) : 0;

    trim(&text, &len);
    return parse_duration_span(text, len, out_ms, err, errlen);
}

int backoff_parse_schedule(const char *text, int64_t *out_ms, int *n, char *err, size_t errlen)
{
    int64_t steps[BACKOFF_MAX_STEPS];
    size_t len = text ? strlen(text) : 0;
    int count = 0;
    char sub[256];

    trim(&text, &len);
    if (len == 0) {
        err_set(err, errlen, "empty schedule: expected durations like '1m, 5m, 15m'");
        return -1;
    }
    for (size_t pos = 0; pos <= len;) {
        const char *item = text + pos;
        const char *comma = memchr(item, ',', len - pos);
        size_t ilen = comma ? (size_t)(comma - item) : len - pos;

        pos += ilen + 1;
        trim(&item, &ilen);
        if (ilen == 0) {
            err_set(err, errlen, "schedule step %d is empty", count + 1);
            return -1;
        }
        if (count == BACKOFF_MAX_STEPS) {
            err_set(err, errlen, "schedule has more than %d steps", BACKOFF_MAX_STEPS);
            return -1;
        }
        if (parse_duration_span(item, ilen, &steps[count], sub, sizeof(sub)) < 0) {
            err_set(err, errlen, "schedule step %d: %s", count + 1, sub);
            return -1;
        }
        count++;
    }
    memcpy(out_ms, steps, (size_t)count * sizeof(steps[0]));
    *n = count;
    return 0;
}

int backoff_parse_percent(const char *text, int *out, char *err, size_t errlen)
{
    size_t len = text ? strlen(text) : 0, i = 0;
    int value = 0;
    bool too_big = false;
    int n;

    trim(&text, &len);
    n = len > 200 ? 200 : (int)len;
    if (len == 0) {
        err_set(err, errlen, "empty percentage: expected a whole number from 0 to 100");
        return -1;
    }
    if (text[len - 1] == '%') {
        len--;
        trim(&text, &len);
    }
    if (len > 0 && text[0] == '-') {
        err_set(err, errlen, "bad percentage '%.*s': must be between 0 and 100", n, text);
        return -1;
    }
    for (; i < len && is_digit(text[i]); i++) {
        value = value * 10 + (text[i] - '0');
        if (value > 100) {
            too_big = true;
            value = 101; /* stop growing; only "over 100" matters */
        }
    }
    if (i < len && i > 0 && (text[i] == '.' || text[i] == ',')) {
        err_set(err, errlen, "bad percentage '%.*s': only whole numbers are allowed", n, text);
        return -1;
    }
    if (i == 0 || i < len) {
        err_set(err, errlen,
                "bad percentage '%.*s': expected a whole number from 0 to 100, optionally "
                "followed by '%%'",
                n, text);
        return -1;
    }
    if (too_big) {
        err_set(err, errlen, "bad percentage '%.*s': must be between 0 and 100", n, text);
        return -1;
    }
    *out = value;
    return 0;
}

void backoff_format_duration(int64_t ms, char *buf, size_t buflen)
{
    /* Negate in unsigned arithmetic so INT64_MIN does not overflow. */
    uint64_t mag = ms < 0 ? (uint64_t)0 - (uint64_t)ms : (uint64_t)ms;
    const char *sign = ms < 0 ? "-" : "";

    if (!buf || buflen == 0)
        return;
    if (mag == 0) {
        snprintf(buf, buflen, "0s");
        return;
    }
    for (size_t u = 0; u < sizeof(units) / sizeof(units[0]); u++) {
        uint64_t unit = (uint64_t)units[u].ms;
        if (mag % unit == 0) {
            snprintf(buf, buflen, "%s%" PRIu64 "%s", sign, mag / unit, units[u].name);
            return;
        }
    }
}
