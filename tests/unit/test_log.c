/*
 * test_log.c — log lines (engine/base/log.h): numbers formatted as printf
 * does, and every logged string escaped so that it stays one value of one
 * line (no forged lines, no forged fields), whatever the caller passes.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "log.h"

/* Runs the logging in fn with stderr sent to a pipe; returns what was
 * written after "event=test.event " (static buffer). */
static const char *capture(void (*fn)(void))
{
    static char out[4096];
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    int saved = dup(STDERR_FILENO);
    assert_true(saved >= 0);
    assert_true(dup2(fds[1], STDERR_FILENO) >= 0);
    fn();
    assert_true(dup2(saved, STDERR_FILENO) >= 0);
    close(saved);
    close(fds[1]);
    ssize_t n = read(fds[0], out, sizeof out - 1);
    close(fds[0]);
    assert_true(n > 0);
    out[n] = '\0';
    const char *p = strstr(out, "event=test.event ");
    assert_non_null(p);
    return p + strlen("event=test.event ");
}

static void log_numbers(void)
{
    log_info("test.event", "a=%d b=%zu c=%lld d=%llu e=%ld f=%.3f g=%g h=%02x i=%u%%", -7, (size_t)42,
             (long long)-9000000000LL, 18446744073709551615ULL, 123456789L, 1.5, 0.25, 10, 3u);
}

static void test_numbers_as_printf(void **state)
{
    (void)state;
    assert_string_equal(capture(log_numbers),
                        "a=-7 b=42 c=-9000000000 d=18446744073709551615 e=123456789 f=1.500 g=0.25 h=0a i=3%\n");
}

static void log_forged_line(void)
{
    log_warn("test.event", "partner=%s reason=\"%s\"", "shop\nts=x level=error event=forged",
             "bad \"quote\" \\ and\r\ttabs \x01");
}

static void test_newlines_and_quotes_are_escaped(void **state)
{
    (void)state;
    const char *line = capture(log_forged_line);
    assert_string_equal(line, "partner=\"shop\\nts=x level=error event=forged\" "
                              "reason=\"bad \\\"quote\\\" \\\\ and\\r\\ttabs \\x01\"\n");
    assert_ptr_equal(strchr(line, '\n'), line + strlen(line) - 1); /* the only newline ends the line */
}

static void log_bare_values(void)
{
    log_info("test.event", "a=%s b=%s c=%s d=%s e=%.4s", "plain.value-1", "two words", "k=v", "", "abcdefgh");
}

static void test_bare_values_are_quoted_only_when_needed(void **state)
{
    (void)state;
    assert_string_equal(capture(log_bare_values), "a=plain.value-1 b=\"two words\" c=\"k=v\" d= e=abcd\n");
}

static const char *volatile null_string; /* NULL, hidden from the compiler's format check */

static void log_null_and_star(void)
{
    log_info("test.event", "a=%s b=%.*s c=%5d", null_string, 3, "xyz123", 42);
}

static void test_null_precision_star_and_width(void **state)
{
    (void)state;
    assert_string_equal(capture(log_null_and_star), "a=(null) b=xyz c=   42\n");
}

static void log_long(void)
{
    static char big[5000];
    memset(big, 'x', sizeof big - 1);
    log_info("test.event", "v=%s tail=%d", big, 1);
}

static void test_a_long_value_is_cut_to_one_line(void **state)
{
    (void)state;
    const char *line = capture(log_long);
    size_t n = strlen(line);
    assert_true(n > 100 && n < 2048);
    assert_int_equal(line[n - 1], '\n');
    assert_null(memchr(line, '\n', n - 1));
}

int main(void)
{
    log_min_level = LOG_DEBUG;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_numbers_as_printf),
        cmocka_unit_test(test_newlines_and_quotes_are_escaped),
        cmocka_unit_test(test_bare_values_are_quoted_only_when_needed),
        cmocka_unit_test(test_null_precision_star_and_width),
        cmocka_unit_test(test_a_long_value_is_cut_to_one_line),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
