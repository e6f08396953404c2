/*
 * test_keyindex.c — unit tests for engine/base/keyindex.c: positions come
 * back by key, earliest first and each once; keys are byte strings (an
 * embedded NUL separates, a prefix is another key); a key added again
 * after all of its positions were taken; a large batch.
 * Keys are borrowed: each test keeps them alive until keyindex_free.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "keyindex.h"

static size_t take(struct keyindex *ix, const char *key)
{
    return keyindex_take(ix, key, strlen(key));
}

static void test_earliest_first_each_once(void **state)
{
    (void)state;
    struct keyindex *ix = keyindex_new(5);
    const char *keys[] = {"b", "a", "b", "c", "b"};
    for (size_t i = 0; i < 5; i++)
        keyindex_add(ix, keys[i], strlen(keys[i]), i);
    assert_int_equal(take(ix, "b"), 0);
    assert_int_equal(take(ix, "a"), 1);
    assert_int_equal(take(ix, "b"), 2);
    assert_int_equal(take(ix, "b"), 4);
    assert_int_equal(take(ix, "b"), KEYINDEX_NONE);
    assert_int_equal(take(ix, "a"), KEYINDEX_NONE);
    assert_int_equal(take(ix, "c"), 3);
    assert_int_equal(take(ix, "d"), KEYINDEX_NONE);
    keyindex_free(ix);
}

static void test_keys_are_bytes(void **state)
{
    (void)state;
    struct keyindex *ix = keyindex_new(3);
    keyindex_add(ix, "shop\0e1", 7, 0);
    keyindex_add(ix, "shop\0e", 6, 1);
    keyindex_add(ix, "sho\0pe1", 7, 2);
    assert_int_equal(keyindex_take(ix, "shop", 4), KEYINDEX_NONE); /* a prefix is another key */
    assert_int_equal(keyindex_take(ix, "sho\0pe1", 7), 2);
    assert_int_equal(keyindex_take(ix, "shop\0e1", 7), 0);
    assert_int_equal(keyindex_take(ix, "shop\0e", 6), 1);
    keyindex_free(ix);
}

static void test_added_again_after_taken(void **state)
{
    (void)state;
    struct keyindex *ix = keyindex_new(4);
    keyindex_add(ix, "k", 1, 0);
    assert_int_equal(take(ix, "k"), 0);
    keyindex_add(ix, "k", 1, 2);
    keyindex_add(ix, "k", 1, 3);
    assert_int_equal(take(ix, "k"), 2);
    assert_int_equal(take(ix, "k"), 3);
    assert_int_equal(take(ix, "k"), KEYINDEX_NONE);
    keyindex_free(ix);
    keyindex_free(NULL);
}

static void test_large_batch(void **state)
{
    (void)state;
    enum { N = 5000 };
    struct keyindex *ix = keyindex_new(N);
    static char keys[N][16]; /* borrowed until keyindex_free */
    char key[16];
    for (size_t i = 0; i < N; i++) { /* every key twice: i and i + N/2 */
        int n = snprintf(keys[i], sizeof keys[i], "id-%zu", i % (N / 2));
        keyindex_add(ix, keys[i], (size_t)n, i);
    }
    for (size_t i = N / 2; i-- > 0;) { /* asked in reverse order */
        int n = snprintf(key, sizeof key, "id-%zu", i);
        assert_int_equal(keyindex_take(ix, key, (size_t)n), i);
        assert_int_equal(keyindex_take(ix, key, (size_t)n), i + N / 2);
        assert_int_equal(keyindex_take(ix, key, (size_t)n), KEYINDEX_NONE);
    }
    keyindex_free(ix);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_earliest_first_each_once),
        cmocka_unit_test(test_keys_are_bytes),
        cmocka_unit_test(test_added_again_after_taken),
        cmocka_unit_test(test_large_batch),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
