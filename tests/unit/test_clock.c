/*
 * test_clock.c — unit tests for engine/base/clock.c: a sample's offset from
 * one round trip, the offset applied (the low end of the bound, rounded
 * down), the choice of the recent sample with the smallest round trip, the
 * window's replacement of old samples, and the offset clock_wall_ms() adds.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "clock.h"

static void test_sample_make(void **state)
{
    (void)state;
    /* sent at 1000 ms local, 4 ms round trip, the server read 31002 ms: the
     * server's clock is 30 s ahead (the read is assumed halfway) */
    struct clock_sample s = clock_sample_make(1000000, 4000, 31002000);
    assert_int_equal(s.offset_us, 30000000);
    assert_int_equal(s.rtt_us, 4000);
    s = clock_sample_make(31000000, 2000, 1001000); /* 30 s behind */
    assert_int_equal(s.offset_us, -30000000);
    s = clock_sample_make(1000, -5, 1000); /* a negative round trip counts as 0 */
    assert_int_equal(s.rtt_us, 0);
    assert_int_equal(s.offset_us, 0);
}

static void test_offset_ms_rounds_down_the_low_bound(void **state)
{
    (void)state;
    assert_int_equal(clock_sample_offset_ms((struct clock_sample){30000000, 0}), 30000);
    assert_int_equal(clock_sample_offset_ms((struct clock_sample){30000000, 2}), 29999);
    assert_int_equal(clock_sample_offset_ms((struct clock_sample){30000900, 1000}), 30000);
    assert_int_equal(clock_sample_offset_ms((struct clock_sample){30000400, 1000}), 29999);
    assert_int_equal(clock_sample_offset_ms((struct clock_sample){-30000000, 0}), -30000);
    assert_int_equal(clock_sample_offset_ms((struct clock_sample){-30000000, 2}), -30001);
    assert_int_equal(clock_sample_offset_ms((struct clock_sample){-1, 0}), -1);
    assert_int_equal(clock_sample_offset_ms((struct clock_sample){0, 0}), 0);
    assert_int_equal(clock_sample_offset_ms((struct clock_sample){0, 1}), -1); /* odd rtt: rounds away */
}

static void test_best_is_smallest_rtt(void **state)
{
    (void)state;
    struct clock_samples w = {0};
    struct clock_sample out;
    assert_int_equal(clock_samples_best(&w, &out), -1);
    clock_samples_add(&w, (struct clock_sample){100, 900});
    assert_int_equal(clock_samples_best(&w, &out), 0);
    assert_int_equal(out.offset_us, 100);
    clock_samples_add(&w, (struct clock_sample){200, 300});
    clock_samples_add(&w, (struct clock_sample){300, 5000});
    assert_int_equal(clock_samples_best(&w, &out), 0);
    assert_int_equal(out.offset_us, 200);
    assert_int_equal(out.rtt_us, 300);
    clock_samples_add(&w, (struct clock_sample){400, 300}); /* equal round trips: the newest */
    assert_int_equal(clock_samples_best(&w, &out), 0);
    assert_int_equal(out.offset_us, 400);
}

static void test_old_samples_leave_the_window(void **state)
{
    (void)state;
    struct clock_samples w = {0};
    struct clock_sample out;
    clock_samples_add(&w, (struct clock_sample){-7, 1}); /* the best, then forgotten */
    for (int i = 0; i < CLOCK_SAMPLES - 1; i++)
        clock_samples_add(&w, (struct clock_sample){1000 + i, 500 + i});
    assert_int_equal(clock_samples_best(&w, &out), 0);
    assert_int_equal(out.offset_us, -7);
    clock_samples_add(&w, (struct clock_sample){2000, 800});
    assert_int_equal(clock_samples_best(&w, &out), 0);
    assert_int_equal(out.offset_us, 1000);
    assert_int_equal(out.rtt_us, 500);
    for (int i = 0; i < 3 * CLOCK_SAMPLES; i++)
        clock_samples_add(&w, (struct clock_sample){5000 + i, 10000 - i});
    assert_int_equal(clock_samples_best(&w, &out), 0);
    assert_int_equal(out.offset_us, 5000 + 3 * CLOCK_SAMPLES - 1);
}

static void test_wall_clock_takes_the_offset(void **state)
{
    (void)state;
    assert_false(clock_synced());
    assert_int_equal(clock_offset_ms(), 0);
    int64_t local = clock_local_wall_us() / 1000;
    int64_t wall = clock_wall_ms();
    assert_true(llabs(wall - local) < 1000);
    clock_set_offset_ms(30000);
    assert_true(clock_synced());
    assert_int_equal(clock_offset_ms(), 30000);
    wall = clock_wall_ms();
    local = clock_local_wall_us() / 1000;
    assert_true(llabs(wall - 30000 - local) < 1000);
    clock_set_offset_ms(-30000);
    wall = clock_wall_ms();
    local = clock_local_wall_us() / 1000;
    assert_true(llabs(wall + 30000 - local) < 1000);
    clock_set_offset_ms(0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sample_make),
        cmocka_unit_test(test_offset_ms_rounds_down_the_low_bound),
        cmocka_unit_test(test_best_is_smallest_rtt),
        cmocka_unit_test(test_old_samples_leave_the_window),
        cmocka_unit_test(test_wall_clock_takes_the_offset),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
