/*
 * fuzz_duration.c — libFuzzer target for the small text parsers that read
 * durations, schedules, percentages and sizes out of the config file
 * (engine/base/backoff.h: backoff_parse_duration, backoff_parse_schedule,
 * backoff_parse_percent; engine/core/config.h: config_parse_size). The input is
 * one NUL-terminated string given to every parser. Each parser is compared
 * with a reference parser written here from the grammar its header
 * documents, so a value accepted with trailing junk, refused although well
 * formed, or read as a different number is a finding, as are crashes,
 * leaks and undefined behaviour. Also checked: a duration survives a round
 * trip through backoff_format_duration(); a refused schedule leaves the
 * output untouched. Error messages go into exactly-sized heap buffers (256
 * and 7 bytes), so a write past errlen is an ASan report.
 */
/* The config loader checks the Redis URL with the Redis layer's own
 * parser, which reaches far: so every engine source is linked. */
/* fuzz.sh links: ALL */
#include <ctype.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backoff.h"
#include "config.h"
#include "fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define ERR_BIG 256
#define ERR_SMALL 7

/* ---- reference parsers (the documented grammars, written naively) ---- */

/* backoff.h's blanks: space, tab, CR, LF. */
static bool blank(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

/* [s, e) without surrounding characters for which is_sp() holds. */
static void strip(const char **s, const char **e, bool (*is_sp)(char))
{
    while (*s < *e && is_sp(**s))
        (*s)++;
    while (*e > *s && is_sp((*e)[-1]))
        (*e)--;
}

/* Reads decimal digits from *s (at least one) without overflowing. */
static bool digits(const char **s, const char *e, int64_t *out)
{
    int64_t v = 0;
    const char *start = *s;

    for (; *s < e && **s >= '0' && **s <= '9'; (*s)++)
        if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, **s - '0', &v))
            return false;
    *out = v;
    return *s > start;
}

static bool span_is(const char *s, const char *e, const char *lit)
{
    return (size_t)(e - s) == strlen(lit) && memcmp(s, lit, (size_t)(e - s)) == 0;
}

/* "<digits><blanks?><ms|s|m|h|d>", blanks around. */
static bool ref_duration_span(const char *s, const char *e, int64_t *out)
{
    static const struct {
        const char *name;
        int64_t ms;
    } units[] = {{"ms", 1}, {"s", 1000}, {"m", 60000}, {"h", 3600000}, {"d", 86400000}};
    int64_t n;

    strip(&s, &e, blank);
    if (!digits(&s, e, &n))
        return false;
    while (s < e && blank(*s))
        s++;
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
        if (span_is(s, e, units[i].name))
            return !__builtin_mul_overflow(n, units[i].ms, out);
    return false;
}

/* Comma-separated durations, 1..BACKOFF_MAX_STEPS of them. */
static bool ref_schedule(const char *text, int64_t *steps, int *n)
{
    const char *s = text, *end = text + strlen(text);

    *n = 0;
    strip(&s, &end, blank);
    if (s == end)
        return false;
    for (;;) {
        const char *comma = memchr(s, ',', (size_t)(end - s));
        const char *item_end = comma != NULL ? comma : end;

        if (*n == BACKOFF_MAX_STEPS || !ref_duration_span(s, item_end, &steps[*n]))
            return false;
        (*n)++;
        if (comma == NULL)
            return true;
        s = comma + 1;
    }
}

/* "<digits><blanks?>%?" (0..100), blanks around. */
static bool ref_percent(const char *text, int *out)
{
    const char *s = text, *e = text + strlen(text);
    int64_t v;

    strip(&s, &e, blank);
    if (e > s && e[-1] == '%') {
        e--;
        strip(&s, &e, blank);
    }
    if (!digits(&s, e, &v) || s != e || v > 100) {
        /* a number too long for int64 is "over 100", still a refusal */
        return false;
    }
    *out = (int)v;
    return true;
}

static bool c_space(char c)
{
    return isspace((unsigned char)c) != 0;
}

/* "<digits><spaces?><unit?>" with unit B, KiB, MiB, GiB, KB, MB; spaces
 * (isspace) around. */
static bool ref_size(const char *text, int64_t *out)
{
    static const struct {
        const char *unit;
        int64_t mult;
    } units[] = {{"", 1},      {"B", 1},       {"KiB", 1024}, {"MiB", 1048576}, {"GiB", 1073741824},
                 {"KB", 1000}, {"MB", 1000000}};
    const char *s = text, *e = text + strlen(text);
    int64_t n;

    strip(&s, &e, c_space);
    if (!digits(&s, e, &n))
        return false;
    while (s < e && c_space(*s))
        s++;
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
        if (span_is(s, e, units[i].unit))
            return !__builtin_mul_overflow(n, units[i].mult, out);
    return false;
}

/* ---- hookd's parsers against the references ---- */

static void check_err(const char *err, size_t errlen)
{
    CHECK(memchr(err, '\0', errlen) != NULL);
    CHECK(err[0] != '\0' || errlen == 1);
}

static void fuzz_duration(const char *text, char *err, size_t errlen)
{
    int64_t ms = -12345, again = -1, want = -1;
    bool ok = ref_duration_span(text, text + strlen(text), &want);
    char buf[BACKOFF_DURATION_BUFLEN];

    err[0] = '\0';
    if (backoff_parse_duration(text, &ms, err, errlen) != 0) {
        check_err(err, errlen);
        CHECK(!ok);
        return;
    }
    CHECK(ok && ms == want);
    backoff_format_duration(ms, buf, sizeof buf);
    CHECK(memchr(buf, '\0', sizeof buf) != NULL);
    CHECK(backoff_parse_duration(buf, &again, err, errlen) == 0);
    CHECK(again == ms);
}

static void fuzz_schedule(const char *text, char *err, size_t errlen)
{
    int64_t steps[BACKOFF_MAX_STEPS], want[BACKOFF_MAX_STEPS];
    int n = -7, want_n = 0;
    bool ok = ref_schedule(text, want, &want_n);

    for (int i = 0; i < BACKOFF_MAX_STEPS; i++)
        steps[i] = -99;
    err[0] = '\0';
    if (backoff_parse_schedule(text, steps, &n, err, errlen) != 0) {
        check_err(err, errlen);
        CHECK(!ok);
        CHECK(n == -7); /* documented: unchanged on failure */
        for (int i = 0; i < BACKOFF_MAX_STEPS; i++)
            CHECK(steps[i] == -99);
        return;
    }
    CHECK(ok && n == want_n);
    for (int i = 0; i < n; i++)
        CHECK(steps[i] == want[i]);
    for (int i = n; i < BACKOFF_MAX_STEPS; i++)
        CHECK(steps[i] == -99);
}

static void fuzz_percent(const char *text, char *err, size_t errlen)
{
    int pct = -1, want = -1;
    bool ok = ref_percent(text, &want);

    err[0] = '\0';
    if (backoff_parse_percent(text, &pct, err, errlen) != 0) {
        check_err(err, errlen);
        CHECK(!ok);
        return;
    }
    CHECK(ok && pct == want);
}

static void fuzz_size(const char *text, char *err, size_t errlen)
{
    int64_t bytes = -1, want = -1;
    bool ok = ref_size(text, &want);

    err[0] = '\0';
    if (config_parse_size(text, &bytes, err, errlen) != 0) {
        check_err(err, errlen);
        CHECK(!ok);
        return;
    }
    CHECK(ok && bytes == want);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    char *big = malloc(ERR_BIG), *small = malloc(ERR_SMALL);

    if (text == NULL || big == NULL || small == NULL)
        abort();
    memcpy(text, data, size);
    text[size] = '\0';
    fuzz_duration(text, big, ERR_BIG);
    fuzz_duration(text, small, ERR_SMALL);
    fuzz_schedule(text, big, ERR_BIG);
    fuzz_schedule(text, small, ERR_SMALL);
    fuzz_percent(text, big, ERR_BIG);
    fuzz_percent(text, small, ERR_SMALL);
    fuzz_size(text, big, ERR_BIG);
    fuzz_size(text, small, ERR_SMALL);
    free(text);
    free(big);
    free(small);
    return 0;
}
