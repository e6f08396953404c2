/*
 * test_backoff.c — unit tests for engine/backoff.c: the seed's default retry
 * schedule (1m, 5m, 15m, then DLQ on the 4th failure), last-step repeat,
 * jitter bounds and spread, the defer schedule and its max age, policy
 * validation, every parse error, and the duration formatter's round trip.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "backoff.h"

static char err[256];

/* Deterministic pseudo-random values for the jitter tests (xorshift64*). */
static uint64_t next_rnd(uint64_t *s)
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * UINT64_C(2685821657736338717);
}

static void test_retry_default_policy(void **state)
{
    struct backoff_policy p;
    (void)state;

    backoff_policy_default(&p);
    assert_int_equal(p.nsteps, 3);
    assert_int_equal(p.schedule_ms[0], 60000);
    assert_int_equal(p.schedule_ms[1], 300000);
    assert_int_equal(p.schedule_ms[2], 900000);
    assert_int_equal(p.max_attempts, 4);
    assert_int_equal(p.jitter_pct, 10);
    assert_int_equal(backoff_policy_validate(&p, err, sizeof(err)), 0);

    /* Without jitter: exactly the seed's schedule, then the DLQ. */
    p.jitter_pct = 0;
    assert_int_equal(backoff_retry_delay(&p, 1, 12345), 60000);
    assert_int_equal(backoff_retry_delay(&p, 2, 12345), 300000);
    assert_int_equal(backoff_retry_delay(&p, 3, 12345), 900000);
    assert_int_equal(backoff_retry_delay(&p, 4, 12345), -1);
    assert_int_equal(backoff_retry_delay(&p, 5, 12345), -1);
    assert_int_equal(backoff_retry_delay(&p, 1000, 12345), -1);
    /* A count below 1 is read as the first failure. */
    assert_int_equal(backoff_retry_delay(&p, 0, 0), 60000);
    assert_int_equal(backoff_retry_delay(&p, -3, 0), 60000);

    /* With the default 10% jitter: rnd = span lands on the base exactly,
     * rnd = 0 on the lower bound, rnd = 2 * span on the upper bound. */
    p.jitter_pct = 10;
    assert_int_equal(backoff_retry_delay(&p, 1, 6000), 60000);
    assert_int_equal(backoff_retry_delay(&p, 1, 0), 54000);
    assert_int_equal(backoff_retry_delay(&p, 1, 12000), 66000);
    assert_int_equal(backoff_retry_delay(&p, 1, 12001), 54000);
    assert_int_equal(backoff_retry_delay(&p, 2, 30000), 300000);
    assert_int_equal(backoff_retry_delay(&p, 3, 90000), 900000);
    assert_int_equal(backoff_retry_delay(&p, 3, 180000), 990000);
    assert_int_equal(backoff_retry_delay(&p, 4, 0), -1);
}

static void test_retry_last_step_repeats(void **state)
{
    struct backoff_policy p;
    (void)state;

    backoff_policy_default(&p);
    p.schedule_ms[0] = 1000;
    p.schedule_ms[1] = 2000;
    p.nsteps = 2;
    p.max_attempts = 6;
    p.jitter_pct = 0;
    assert_int_equal(backoff_retry_delay(&p, 1, 0), 1000);
    assert_int_equal(backoff_retry_delay(&p, 2, 0), 2000);
    assert_int_equal(backoff_retry_delay(&p, 3, 0), 2000);
    assert_int_equal(backoff_retry_delay(&p, 4, 0), 2000);
    assert_int_equal(backoff_retry_delay(&p, 5, 0), 2000);
    assert_int_equal(backoff_retry_delay(&p, 6, 0), -1);
}

static void test_retry_attempt_budget(void **state)
{
    struct backoff_policy p;
    (void)state;

    backoff_policy_default(&p);
    p.jitter_pct = 0;

    /* Steps beyond max_attempts - 1 are never used. */
    p.max_attempts = 2;
    assert_int_equal(backoff_retry_delay(&p, 1, 0), 60000);
    assert_int_equal(backoff_retry_delay(&p, 2, 0), -1);

    /* One attempt only: the first failure dead-letters. */
    p.max_attempts = 1;
    assert_int_equal(backoff_retry_delay(&p, 1, 0), -1);

    /* An unvalidated policy without steps never schedules anything. */
    p.max_attempts = 4;
    p.nsteps = 0;
    assert_int_equal(backoff_retry_delay(&p, 1, 0), -1);
}

static void test_retry_jitter_bounds(void **state)
{
    struct backoff_policy p;
    uint64_t s = UINT64_C(0x9e3779b97f4a7c15);
    int64_t min = INT64_MAX, max = INT64_MIN;
    int buckets[10] = {0};
    const int samples = 100000;
    (void)state;

    backoff_policy_default(&p); /* 60000 ms ± 10% = [54000, 66000] */
    for (int i = 0; i < samples; i++) {
        int64_t w = backoff_retry_delay(&p, 1, next_rnd(&s));
        assert_in_range(w, 54000, 66000);
        if (w < min)
            min = w;
        if (w > max)
            max = w;
        buckets[w == 66000 ? 9 : (w - 54000) / 1200]++;
    }
    /* 12001 possible values and 100000 draws: both ends show up, and each
     * tenth of the range gets its share (10% ± 1.5%). */
    assert_int_equal(min, 54000);
    assert_int_equal(max, 66000);
    for (int b = 0; b < 10; b++)
        assert_in_range(buckets[b], samples / 10 - 1500, samples / 10 + 1500);

    /* Every rnd in one full period hits every value exactly once. */
    for (uint64_t r = 0; r <= 12000; r++)
        assert_int_equal(backoff_retry_delay(&p, 1, r), 54000 + (int64_t)r);
}

static void test_retry_jitter_edges(void **state)
{
    struct backoff_policy p;
    uint64_t s = 42;
    (void)state;

    backoff_policy_default(&p);

    /* 100%: the wait spans [0, 2 * base] and never goes below 0. */
    p.jitter_pct = 100;
    assert_int_equal(backoff_retry_delay(&p, 1, 0), 0);
    assert_int_equal(backoff_retry_delay(&p, 1, 120000), 120000);
    for (int i = 0; i < 10000; i++)
        assert_in_range(backoff_retry_delay(&p, 1, next_rnd(&s)), 0, 120000);

    /* A base that is not a multiple of 100: the span rounds down. */
    p.jitter_pct = 10;
    p.schedule_ms[0] = 999; /* span 99 */
    assert_int_equal(backoff_retry_delay(&p, 1, 0), 900);
    assert_int_equal(backoff_retry_delay(&p, 1, 198), 1098);
    assert_int_equal(backoff_retry_delay(&p, 1, 199), 900);

    /* A zero wait stays zero whatever the jitter. */
    p.schedule_ms[0] = 0;
    assert_int_equal(backoff_retry_delay(&p, 1, UINT64_MAX), 0);

    /* Huge waits neither overflow nor go out of range (UBSan watches). */
    p.schedule_ms[0] = INT64_MAX;
    assert_int_equal(backoff_retry_delay(&p, 1, 0), INT64_MAX - INT64_MAX / 10);
    for (int i = 0; i < 1000; i++) {
        int64_t w = backoff_retry_delay(&p, 1, next_rnd(&s));
        assert_true(w >= INT64_MAX - INT64_MAX / 10);
    }
    assert_int_equal(backoff_retry_delay(&p, 1, 2 * (uint64_t)(INT64_MAX / 10)), INT64_MAX);
}

static void test_defer_default_schedule(void **state)
{
    struct defer_policy p;
    (void)state;

    defer_policy_default(&p);
    assert_int_equal(p.nsteps, 4);
    assert_int_equal(p.max_age_ms, 86400000);
    assert_int_equal(defer_policy_validate(&p, err, sizeof(err)), 0);

    assert_int_equal(backoff_defer_delay(&p, 1, 0), 5000);
    assert_int_equal(backoff_defer_delay(&p, 2, 0), 30000);
    assert_int_equal(backoff_defer_delay(&p, 3, 0), 120000);
    assert_int_equal(backoff_defer_delay(&p, 4, 0), 300000);
    /* The last step repeats. */
    assert_int_equal(backoff_defer_delay(&p, 5, 0), 300000);
    assert_int_equal(backoff_defer_delay(&p, 250, 3600000), 300000);
    /* A count below 1 is read as the first deferral. */
    assert_int_equal(backoff_defer_delay(&p, 0, 0), 5000);
}

static void test_defer_max_age(void **state)
{
    struct defer_policy p;
    const int64_t day = 86400000;
    (void)state;

    defer_policy_default(&p);
    /* The wait may end exactly at max_age, not one millisecond past it. */
    assert_int_equal(backoff_defer_delay(&p, 9, day - 300000), 300000);
    assert_int_equal(backoff_defer_delay(&p, 9, day - 299999), -1);
    assert_int_equal(backoff_defer_delay(&p, 1, day - 5000), 5000);
    assert_int_equal(backoff_defer_delay(&p, 1, day - 4999), -1);
    assert_int_equal(backoff_defer_delay(&p, 1, day), -1);
    assert_int_equal(backoff_defer_delay(&p, 1, INT64_MAX), -1);
    /* Clock skew between workers can make the age negative: count it as 0. */
    assert_int_equal(backoff_defer_delay(&p, 1, -60000), 5000);

    /* A step longer than max_age dead-letters at once. */
    p.max_age_ms = 1000;
    assert_int_equal(backoff_defer_delay(&p, 1, 0), -1);

    /* No overflow at the extremes. */
    p.max_age_ms = INT64_MAX;
    p.schedule_ms[0] = INT64_MAX;
    assert_int_equal(backoff_defer_delay(&p, 1, 0), INT64_MAX);
    assert_int_equal(backoff_defer_delay(&p, 1, 1), -1);

    p.nsteps = 0;
    assert_int_equal(backoff_defer_delay(&p, 1, 0), -1);
}

static void test_policy_validate(void **state)
{
    struct backoff_policy r;
    struct defer_policy d;
    (void)state;

    backoff_policy_default(&r);
    r.nsteps = 0;
    assert_int_equal(backoff_policy_validate(&r, err, sizeof(err)), -1);
    assert_string_equal(err, "schedule must have 1 to 16 steps (has 0)");
    r.nsteps = BACKOFF_MAX_STEPS + 1;
    assert_int_equal(backoff_policy_validate(&r, err, sizeof(err)), -1);
    assert_string_equal(err, "schedule must have 1 to 16 steps (has 17)");

    backoff_policy_default(&r);
    r.schedule_ms[1] = -1;
    assert_int_equal(backoff_policy_validate(&r, err, sizeof(err)), -1);
    assert_string_equal(err, "schedule step 2 is negative");

    backoff_policy_default(&r);
    r.max_attempts = 0;
    assert_int_equal(backoff_policy_validate(&r, err, sizeof(err)), -1);
    assert_string_equal(err, "max_attempts must be at least 1 (is 0)");

    backoff_policy_default(&r);
    r.jitter_pct = 101;
    assert_int_equal(backoff_policy_validate(&r, err, sizeof(err)), -1);
    assert_string_equal(err, "jitter must be between 0 and 100% (is 101%)");
    r.jitter_pct = -1;
    assert_int_equal(backoff_policy_validate(&r, err, sizeof(err)), -1);
    r.jitter_pct = 0;
    assert_int_equal(backoff_policy_validate(&r, err, sizeof(err)), 0);
    r.jitter_pct = 100;
    assert_int_equal(backoff_policy_validate(&r, err, sizeof(err)), 0);

    defer_policy_default(&d);
    d.max_age_ms = 0;
    assert_int_equal(defer_policy_validate(&d, err, sizeof(err)), -1);
    assert_string_equal(err, "max_age must be greater than 0");
    defer_policy_default(&d);
    d.nsteps = 0;
    assert_int_equal(defer_policy_validate(&d, err, sizeof(err)), -1);
    assert_string_equal(err, "schedule must have 1 to 16 steps (has 0)");
    defer_policy_default(&d);
    d.schedule_ms[3] = -5;
    assert_int_equal(defer_policy_validate(&d, err, sizeof(err)), -1);
    assert_string_equal(err, "schedule step 4 is negative");
}

static void parse_ok(const char *text, int64_t want)
{
    int64_t got = -42;
    err[0] = '\0';
    if (backoff_parse_duration(text, &got, err, sizeof(err)) != 0)
        fail_msg("parse '%s': %s", text, err);
    assert_int_equal(got, want);
}

static void parse_bad(const char *text, const char *want_err)
{
    int64_t got = -42;
    assert_int_equal(backoff_parse_duration(text, &got, err, sizeof(err)), -1);
    assert_string_equal(err, want_err);
    assert_int_equal(got, -42); /* untouched on failure */
}

static void test_parse_duration_ok(void **state)
{
    (void)state;
    parse_ok("0s", 0);
    parse_ok("0ms", 0);
    parse_ok("250ms", 250);
    parse_ok("1s", 1000);
    parse_ok("90s", 90000);
    parse_ok("1m", 60000);
    parse_ok("15m", 900000);
    parse_ok("2h", 7200000);
    parse_ok("1d", 86400000);
    parse_ok("007s", 7000);
    parse_ok("  5s\t", 5000);
    parse_ok("5 s", 5000);
    parse_ok("9223372036854775807ms", INT64_MAX);
    parse_ok("106751991167d", INT64_C(106751991167) * 86400000);
}

static void test_parse_duration_errors(void **state)
{
    (void)state;
    parse_bad("5x", "bad duration '5x': unknown unit 'x' (use ms, s, m, h, d)");
    parse_bad("", "empty duration (use ms, s, m, h, d)");
    parse_bad("   ", "empty duration (use ms, s, m, h, d)");
    parse_bad(NULL, "empty duration (use ms, s, m, h, d)");
    parse_bad("-5s", "bad duration '-5s': must not be negative");
    parse_bad("5", "bad duration '5': missing unit (use ms, s, m, h, d)");
    parse_bad(" 30 ", "bad duration '30': missing unit (use ms, s, m, h, d)");
    parse_bad("5M", "bad duration '5M': unknown unit 'M' (use ms, s, m, h, d)");
    parse_bad("5sec", "bad duration '5sec': unknown unit 'sec' (use ms, s, m, h, d)");
    parse_bad("5s5", "bad duration '5s5': unknown unit 's5' (use ms, s, m, h, d)");
    parse_bad("1.5m", "bad duration '1.5m': only whole numbers are allowed (use a smaller unit, e.g. 90s "
                      "instead of 1.5m)");
    parse_bad("m", "bad duration 'm': expected a whole number and a unit (use ms, s, m, h, d)");
    parse_bad("+5s", "bad duration '+5s': expected a whole number and a unit (use ms, s, m, h, d)");
    /* Too many digits for int64_t, then a value that overflows only once
     * multiplied by its unit. */
    parse_bad("99999999999999999999s", "bad duration '99999999999999999999s': too large");
    parse_bad("9223372036854775808ms", "bad duration '9223372036854775808ms': too large");
    parse_bad("106751991168d", "bad duration '106751991168d': too large");
    parse_bad("9223372036854776s", "bad duration '9223372036854776s': too large");
}

static void test_parse_schedule(void **state)
{
    int64_t out[BACKOFF_MAX_STEPS];
    int n = -1;
    (void)state;

    assert_int_equal(backoff_parse_schedule("1m, 5m, 15m", out, &n, err, sizeof(err)), 0);
    assert_int_equal(n, 3);
    assert_int_equal(out[0], 60000);
    assert_int_equal(out[1], 300000);
    assert_int_equal(out[2], 900000);

    assert_int_equal(backoff_parse_schedule(" 5s ,30s,2m ,  5m ", out, &n, err, sizeof(err)), 0);
    assert_int_equal(n, 4);
    assert_int_equal(out[0], 5000);
    assert_int_equal(out[3], 300000);

    assert_int_equal(backoff_parse_schedule("250ms", out, &n, err, sizeof(err)), 0);
    assert_int_equal(n, 1);
    assert_int_equal(out[0], 250);

    /* Exactly BACKOFF_MAX_STEPS items are fine. */
    const char *sixteen = "1s,2s,3s,4s,5s,6s,7s,8s,9s,10s,11s,12s,13s,14s,15s,16s";
    assert_int_equal(backoff_parse_schedule(sixteen, out, &n, err, sizeof(err)), 0);
    assert_int_equal(n, 16);
    for (int i = 0; i < 16; i++)
        assert_int_equal(out[i], (i + 1) * 1000);
}

static void schedule_bad(const char *text, const char *want_err)
{
    int64_t out[BACKOFF_MAX_STEPS];
    int n = -7;

    for (int i = 0; i < BACKOFF_MAX_STEPS; i++)
        out[i] = -42;
    assert_int_equal(backoff_parse_schedule(text, out, &n, err, sizeof(err)), -1);
    assert_string_equal(err, want_err);
    /* Nothing written on failure, not even the valid leading steps. */
    assert_int_equal(n, -7);
    for (int i = 0; i < BACKOFF_MAX_STEPS; i++)
        assert_int_equal(out[i], -42);
}

static void test_parse_schedule_errors(void **state)
{
    (void)state;
    schedule_bad("", "empty schedule: expected durations like '1m, 5m, 15m'");
    schedule_bad("  ", "empty schedule: expected durations like '1m, 5m, 15m'");
    schedule_bad(NULL, "empty schedule: expected durations like '1m, 5m, 15m'");
    schedule_bad("1m,,5m", "schedule step 2 is empty");
    schedule_bad("1m, 5m,", "schedule step 3 is empty");
    schedule_bad(",1m", "schedule step 1 is empty");
    schedule_bad("1m, 5x", "schedule step 2: bad duration '5x': unknown unit 'x' (use ms, s, m, h, d)");
    schedule_bad("1m, -5m", "schedule step 2: bad duration '-5m': must not be negative");
    schedule_bad("1m 5m", "schedule step 1: bad duration '1m 5m': unknown unit 'm 5m' (use ms, "
                          "s, m, h, d)");
    schedule_bad("1m, 5", "schedule step 2: bad duration '5': missing unit (use ms, s, m, h, d)");
    schedule_bad("1s,2s,3s,4s,5s,6s,7s,8s,9s,10s,11s,12s,13s,14s,15s,16s,17s", "schedule has more than 16 steps");
}

static void percent_ok(const char *text, int want)
{
    int got = -1;
    err[0] = '\0';
    if (backoff_parse_percent(text, &got, err, sizeof(err)) != 0)
        fail_msg("parse '%s': %s", text, err);
    assert_int_equal(got, want);
}

static void percent_bad(const char *text, const char *want_err)
{
    int got = -42;
    assert_int_equal(backoff_parse_percent(text, &got, err, sizeof(err)), -1);
    assert_string_equal(err, want_err);
    assert_int_equal(got, -42);
}

static void test_parse_percent(void **state)
{
    (void)state;
    percent_ok("10%", 10);
    percent_ok("10", 10);
    percent_ok("0", 0);
    percent_ok("0%", 0);
    percent_ok("100%", 100);
    percent_ok(" 25 % ", 25);
    percent_ok("007", 7);

    percent_bad("", "empty percentage: expected a whole number from 0 to 100");
    percent_bad(NULL, "empty percentage: expected a whole number from 0 to 100");
    percent_bad("101%", "bad percentage '101%': must be between 0 and 100");
    percent_bad("-5%", "bad percentage '-5%': must be between 0 and 100");
    percent_bad("99999999999999999999", "bad percentage '99999999999999999999': must be between "
                                        "0 and 100");
    percent_bad("10.5%", "bad percentage '10.5%': only whole numbers are allowed");
    percent_bad("ten", "bad percentage 'ten': expected a whole number from 0 to 100, optionally "
                       "followed by '%'");
    percent_bad("%", "bad percentage '%': expected a whole number from 0 to 100, optionally "
                     "followed by '%'");
    percent_bad("10%%", "bad percentage '10%%': expected a whole number from 0 to 100, "
                        "optionally followed by '%'");
    percent_bad("1 0", "bad percentage '1 0': expected a whole number from 0 to 100, optionally "
                       "followed by '%'");
}

static void format_is(int64_t ms, const char *want)
{
    char buf[BACKOFF_DURATION_BUFLEN];
    backoff_format_duration(ms, buf, sizeof(buf));
    assert_string_equal(buf, want);
}

static void test_format_duration(void **state)
{
    char small[3] = "xx";
    (void)state;

    format_is(0, "0s");
    format_is(250, "250ms");
    format_is(1000, "1s");
    format_is(90000, "90s");
    format_is(60000, "1m");
    format_is(900000, "15m");
    format_is(5400000, "90m");
    format_is(3600000, "1h");
    format_is(86400000, "1d");
    format_is(90061001, "90061001ms");
    format_is(-5000, "-5s");
    format_is(INT64_MAX, "9223372036854775807ms");
    format_is(INT64_MIN, "-9223372036854775808ms");

    /* Truncates to the buffer; a zero-length buffer is left alone. */
    backoff_format_duration(250, small, sizeof(small));
    assert_string_equal(small, "25");
    memcpy(small, "xx", 3);
    backoff_format_duration(250, small, 0);
    assert_string_equal(small, "xx");
}

static void test_format_round_trip(void **state)
{
    static const int64_t fixed[] = {0,        1,        999,       1000,      1001,
                                    59999,    60000,    61000,     3599000,   3600000,
                                    86399999, 86400000, 172800000, INT64_MAX, INT64_C(106751991167) * 86400000};
    char buf[BACKOFF_DURATION_BUFLEN];
    uint64_t s = 7;
    int64_t back;
    (void)state;

    for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++) {
        backoff_format_duration(fixed[i], buf, sizeof(buf));
        assert_int_equal(backoff_parse_duration(buf, &back, err, sizeof(err)), 0);
        assert_int_equal(back, fixed[i]);
    }
    for (int i = 0; i < 10000; i++) {
        /* Random multiples of each unit, so every unit is exercised. */
        static const int64_t mult[] = {1, 1000, 60000, 3600000, 86400000};
        int64_t ms = (int64_t)(next_rnd(&s) % 1000000) * mult[i % 5];
        backoff_format_duration(ms, buf, sizeof(buf));
        assert_int_equal(backoff_parse_duration(buf, &back, err, sizeof(err)), 0);
        assert_int_equal(back, ms);
    }

    /* Parsing then formatting yields the canonical spelling. */
    assert_int_equal(backoff_parse_duration("60s", &back, err, sizeof(err)), 0);
    backoff_format_duration(back, buf, sizeof(buf));
    assert_string_equal(buf, "1m");
    assert_int_equal(backoff_parse_duration("1440m", &back, err, sizeof(err)), 0);
    backoff_format_duration(back, buf, sizeof(buf));
    assert_string_equal(buf, "1d");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_retry_default_policy), cmocka_unit_test(test_retry_last_step_repeats),
        cmocka_unit_test(test_retry_attempt_budget), cmocka_unit_test(test_retry_jitter_bounds),
        cmocka_unit_test(test_retry_jitter_edges),   cmocka_unit_test(test_defer_default_schedule),
        cmocka_unit_test(test_defer_max_age),        cmocka_unit_test(test_policy_validate),
        cmocka_unit_test(test_parse_duration_ok),    cmocka_unit_test(test_parse_duration_errors),
        cmocka_unit_test(test_parse_schedule),       cmocka_unit_test(test_parse_schedule_errors),
        cmocka_unit_test(test_parse_percent),        cmocka_unit_test(test_format_duration),
        cmocka_unit_test(test_format_round_trip),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
