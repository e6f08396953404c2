/*
 * test_admin_guard.c — the admin view's throttle and session store
 * (engine/shared/admin_guard.h): five failures within a minute block an
 * address for a minute, other addresses are not affected, IPv6 counts per
 * /64, the table forgets the address seen least recently when full; sessions
 * are random, expire, end at logout and when the table overflows.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "admin_guard.h"

#define MIN (60 * 1000LL)

static void test_block_after_max_failures(void **state)
{
    (void)state;
    struct admin_guard *g = admin_guard_new();
    bool blocked;
    int64_t t = 1000000;
    for (int i = 1; i < ADMIN_GUARD_MAX_FAILURES; i++) {
        assert_int_equal(admin_guard_failed(g, "10.0.0.1", t + i, &blocked), i);
        assert_false(blocked);
        assert_int_equal(admin_guard_retry_after(g, "10.0.0.1", t + i), 0);
    }
    assert_int_equal(admin_guard_failed(g, "10.0.0.1", t + 10, &blocked), ADMIN_GUARD_MAX_FAILURES);
    assert_true(blocked);
    assert_int_equal(admin_guard_retry_after(g, "10.0.0.1", t + 10), 60);
    assert_int_equal(admin_guard_retry_after(g, "10.0.0.1", t + 10 + 59001), 1);
    assert_int_equal(admin_guard_retry_after(g, "10.0.0.2", t + 10), 0); /* another address */
    assert_int_equal(admin_guard_retry_after(g, "10.0.0.1", t + 10 + MIN), 0);
    /* after the block, one more failure does not block again */
    assert_int_equal(admin_guard_failed(g, "10.0.0.1", t + 20 + MIN, &blocked), 1);
    assert_false(blocked);
    admin_guard_free(g);
}

static void test_failures_age_out_of_the_window(void **state)
{
    (void)state;
    struct admin_guard *g = admin_guard_new();
    bool blocked;
    for (int i = 0; i < 20; i++) { /* four a minute: never blocked */
        admin_guard_failed(g, "10.0.0.1", i * (MIN / 4 + 1), &blocked);
        assert_false(blocked);
    }
    admin_guard_free(g);
}

static void test_client_keys(void **state)
{
    (void)state;
    char k[ADMIN_GUARD_ADDR_LEN];
    admin_guard_client_key("127.0.0.2", k);
    assert_string_equal(k, "127.0.0.2");
    admin_guard_client_key("2001:db8:1:2:aaaa:bbbb:cccc:dddd", k);
    assert_string_equal(k, "2001:db8:1:2::/64");
    admin_guard_client_key("::ffff:192.0.2.7", k);
    assert_string_equal(k, "192.0.2.7");
    admin_guard_client_key("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", k);
    assert_string_equal(k, "ffff:ffff:ffff:ffff::/64");
}

static void test_table_is_bounded(void **state)
{
    (void)state;
    struct admin_guard *g = admin_guard_new();
    bool blocked;
    for (int i = 0; i < ADMIN_GUARD_MAX_FAILURES; i++)
        admin_guard_failed(g, "victim", 1000 + i, &blocked);
    assert_true(blocked);
    /* a table's worth of other addresses, each seen later: the oldest
     * (the blocked one) is forgotten, nothing grows */
    char key[32];
    for (int i = 0; i < ADMIN_GUARD_CLIENTS; i++) {
        snprintf(key, sizeof key, "10.1.%d.%d", i / 256, i % 256);
        admin_guard_failed(g, key, 2000 + i, &blocked);
    }
    assert_int_equal(admin_guard_retry_after(g, "victim", 5000), 0);
    assert_int_equal(admin_guard_failed(g, "10.1.0.0", 6000, &blocked), 2);
    admin_guard_free(g);
}

static void test_sessions(void **state)
{
    (void)state;
    struct admin_guard *g = admin_guard_new();
    struct admin_session *s = admin_guard_session_new(g, 1000);
    assert_non_null(s);
    char id1[ADMIN_GUARD_TOKEN_HEX], csrf1[ADMIN_GUARD_TOKEN_HEX];
    strcpy(id1, s->id);
    strcpy(csrf1, s->csrf);
    assert_int_equal(strlen(id1), 64);
    assert_string_not_equal(id1, csrf1);
    struct admin_session *s2 = admin_guard_session_new(g, 1001);
    assert_string_not_equal(s2->id, id1);
    assert_string_not_equal(s2->csrf, csrf1);
    assert_ptr_equal(admin_guard_session_find(g, id1, 10 * MIN, 2000), s);
    assert_null(admin_guard_session_find(g, "", 10 * MIN, 2000));
    char wrong[ADMIN_GUARD_TOKEN_HEX];
    strcpy(wrong, id1);
    wrong[63] = wrong[63] == '0' ? '1' : '0';
    assert_null(admin_guard_session_find(g, wrong, 10 * MIN, 2000));
    /* expiry: counted from sign-in, not from the last use */
    assert_null(admin_guard_session_find(g, id1, 10 * MIN, 1000 + 10 * MIN));
    assert_null(admin_guard_session_find(g, id1, 10 * MIN, 2000));
    /* logout */
    s2 = admin_guard_session_find(g, s2->id, 10 * MIN, 3000);
    assert_non_null(s2);
    strcpy(id1, s2->id);
    admin_guard_session_end(g, s2);
    assert_null(admin_guard_session_find(g, id1, 10 * MIN, 3001));
    admin_guard_free(g);
}

static void test_session_table_overflow_ends_least_recently_used(void **state)
{
    (void)state;
    struct admin_guard *g = admin_guard_new();
    char first[ADMIN_GUARD_TOKEN_HEX], second[ADMIN_GUARD_TOKEN_HEX];
    strcpy(first, admin_guard_session_new(g, 1)->id);
    strcpy(second, admin_guard_session_new(g, 2)->id);
    for (int i = 2; i < ADMIN_GUARD_SESSIONS; i++)
        assert_non_null(admin_guard_session_new(g, 10 + i));
    assert_non_null(admin_guard_session_find(g, first, MIN, 100)); /* first used again */
    assert_non_null(admin_guard_session_new(g, 200));              /* evicts second */
    assert_non_null(admin_guard_session_find(g, first, MIN, 300));
    assert_null(admin_guard_session_find(g, second, MIN, 300));
    admin_guard_sessions_clear(g);
    assert_null(admin_guard_session_find(g, first, MIN, 300));
    admin_guard_free(g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_block_after_max_failures),
        cmocka_unit_test(test_failures_age_out_of_the_window),
        cmocka_unit_test(test_client_keys),
        cmocka_unit_test(test_table_is_bounded),
        cmocka_unit_test(test_sessions),
        cmocka_unit_test(test_session_table_overflow_ends_least_recently_used),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
