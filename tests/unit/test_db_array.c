/*
 * test_db_array.c — unit tests for the binary array parameters of
 * engine/db.c: the exact bytes of the header (dimensions, NULL flag,
 * element type, size, lower bound) and of each element kind, against what
 * PostgreSQL's array_recv reads, and the refusal of ids and tuple ids that
 * are not one. (Postgres itself reads them in every relay pass of the
 * integration tests.)
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "db.h"

static uint32_t u32_at(const struct db_array *a, size_t off)
{
    const unsigned char *b = (const unsigned char *)a->buf + off;
    return (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3];
}

static void header_is(const struct db_array *a, uint32_t has_null, uint32_t oid, uint32_t n)
{
    assert_true(a->len >= 20);
    assert_int_equal(u32_at(a, 0), 1); /* one dimension */
    assert_int_equal(u32_at(a, 4), has_null);
    assert_int_equal(u32_at(a, 8), oid);
    assert_int_equal(u32_at(a, 12), n);
    assert_int_equal(u32_at(a, 16), 1); /* lower bound */
}

static void test_empty_array_is_just_the_header(void **state)
{
    (void)state;
    struct db_array a;
    db_array_init(&a, DB_OID_UUID, 0);
    assert_int_equal(a.len, 20);
    header_is(&a, 0, 2950, 0);
    free(a.buf);
}

static void test_numbers_are_big_endian_with_their_lengths(void **state)
{
    (void)state;
    struct db_array a;
    db_array_init(&a, DB_OID_INT8, 2);
    db_array_int8(&a, 0x0102030405060708LL);
    db_array_int8(&a, -1);
    header_is(&a, 0, 20, 2);
    assert_int_equal(a.len, 20 + 2 * (4 + 8));
    assert_int_equal(u32_at(&a, 20), 8);
    static const unsigned char first[] = {1, 2, 3, 4, 5, 6, 7, 8};
    assert_memory_equal(a.buf + 24, first, 8);
    assert_int_equal(u32_at(&a, 32), 8);
    assert_int_equal(u32_at(&a, 36), 0xffffffffu);
    assert_int_equal(u32_at(&a, 40), 0xffffffffu);
    free(a.buf);

    db_array_init(&a, DB_OID_INT4, 1);
    db_array_int4(&a, 503);
    assert_int_equal(u32_at(&a, 20), 4);
    assert_int_equal(u32_at(&a, 24), 503);
    free(a.buf);

    db_array_init(&a, DB_OID_FLOAT8, 1);
    db_array_float8(&a, 1.5); /* 0x3ff8000000000000 */
    assert_int_equal(u32_at(&a, 20), 8);
    assert_int_equal(u32_at(&a, 24), 0x3ff80000u);
    assert_int_equal(u32_at(&a, 28), 0);
    free(a.buf);
}

static void test_a_null_sets_the_flag_and_has_length_minus_one(void **state)
{
    (void)state;
    struct db_array a;
    db_array_init(&a, DB_OID_TEXT, 3);
    db_array_text(&a, "ok");
    db_array_null(&a);
    db_array_text(&a, "");
    header_is(&a, 1, 25, 3);
    assert_int_equal(u32_at(&a, 20), 2);
    assert_memory_equal(a.buf + 24, "ok", 2);
    assert_int_equal(u32_at(&a, 26), 0xffffffffu);
    assert_int_equal(u32_at(&a, 30), 0);
    assert_int_equal(a.len, 34);
    free(a.buf);
}

static void test_uuids_are_their_sixteen_bytes(void **state)
{
    (void)state;
    struct db_array a;
    db_array_init(&a, DB_OID_UUID, 2);
    assert_int_equal(db_array_uuid(&a, "01a239c2-57bc-77f0-b89d-C05568F61E51"), 0);
    assert_int_equal(db_array_uuid(&a, "00000000-0000-0000-0000-000000000000"), 0);
    assert_int_equal(a.len, 20 + 2 * 20);
    assert_int_equal(u32_at(&a, 20), 16);
    static const unsigned char want[16] = {0x01, 0xa2, 0x39, 0xc2, 0x57, 0xbc, 0x77, 0xf0,
                                           0xb8, 0x9d, 0xc0, 0x55, 0x68, 0xf6, 0x1e, 0x51};
    assert_memory_equal(a.buf + 24, want, 16);
    free(a.buf);
}

static void test_what_is_not_a_uuid_is_refused_and_adds_nothing(void **state)
{
    (void)state;
    static const char *bad[] = {
        "",
        "01a239c2-57bc-77f0-b89d-c05568f61e5",   /* short */
        "01a239c2-57bc-77f0-b89d-c05568f61e511", /* long */
        "01a239c2-57bc-77f0-b89d-c05568f61e5g",  /* not hex */
        "01a239c257bc77f0b89dc05568f61e51",      /* no dashes */
        "01a239c2+57bc-77f0-b89d-c05568f61e51",  /* wrong separator */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct db_array a;
        db_array_init(&a, DB_OID_UUID, 1);
        assert_int_equal(db_array_uuid(&a, bad[i]), -1);
        assert_int_equal(a.len, 20);
        free(a.buf);
    }
}

static void test_tuple_ids_are_block_and_offset(void **state)
{
    (void)state;
    struct db_array a;
    db_array_init(&a, DB_OID_TID, 1);
    assert_int_equal(db_array_tid(&a, "(4294967295,65535)"), 0);
    assert_int_equal(u32_at(&a, 20), 6);
    static const unsigned char want[6] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
    assert_memory_equal(a.buf + 24, want, 6);
    static const char *bad[] = {"", "(1,2", "1,2)", "(1;2)", "(1,65536)", "(4294967296,1)", "(a,1)"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_int_equal(db_array_tid(&a, bad[i]), -1);
    assert_int_equal(a.len, 30);
    free(a.buf);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_empty_array_is_just_the_header),
        cmocka_unit_test(test_numbers_are_big_endian_with_their_lengths),
        cmocka_unit_test(test_a_null_sets_the_flag_and_has_length_minus_one),
        cmocka_unit_test(test_uuids_are_their_sixteen_bytes),
        cmocka_unit_test(test_what_is_not_a_uuid_is_refused_and_adds_nothing),
        cmocka_unit_test(test_tuple_ids_are_block_and_offset),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
