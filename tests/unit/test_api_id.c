/*
 * test_api_id.c — unit tests for engine/base/api_id.c: the ids it computes
 * equal those the SQL function hookd_api_id returns for the same UUIDs
 * (values taken from Postgres), and malformed UUIDs or short buffers are
 * refused without writing.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "api_id.h"

static void same_as_sql(void **state)
{
    (void)state;
    static const char *const cases[][2] = {
        {"00000000-0000-0000-0000-000000000000", "msg_0000000000000000000000"},
        {"ffffffff-ffff-ffff-ffff-ffffffffffff", "msg_7n42DGM5Tflk9n8mt7Fhc7"},
        {"0192f2a4-7b3c-7d1e-9f00-123456789abc", "msg_02y99dlezymET3jenKOAe4"},
        {"01234567-89AB-CDEF-0123-456789abcdef", "msg_0296tiiBb3U904RIpygpjj"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char out[32];
        assert_int_equal(api_id_of_uuid("msg", cases[i][0], out, sizeof out), 0);
        assert_string_equal(out, cases[i][1]);
    }
    char out[32];
    assert_int_equal(api_id_of_uuid("ep", "0192f2a47b3c7d1e9f00123456789abc", out, sizeof out), 0);
    assert_string_equal(out, "ep_02y99dlezymET3jenKOAe4");
}

static void refuses_bad_input(void **state)
{
    (void)state;
    char out[32] = "untouched";
    assert_int_equal(api_id_of_uuid("msg", "0192f2a4-7b3c-7d1e-9f00-123456789ab", out, sizeof out), -1);   /* short */
    assert_int_equal(api_id_of_uuid("msg", "0192f2a4-7b3c-7d1e-9f00-123456789abcd", out, sizeof out), -1); /* long */
    assert_int_equal(api_id_of_uuid("msg", "0192f2a4-7b3c-7d1e-9f00-123456789abg", out, sizeof out), -1); /* not hex */
    assert_int_equal(api_id_of_uuid("msg", "", out, sizeof out), -1);
    assert_string_equal(out, "untouched");
    char small[26]; /* "msg_" + 22 digits needs 27 with the NUL */
    assert_int_equal(api_id_of_uuid("msg", "0192f2a4-7b3c-7d1e-9f00-123456789abc", small, sizeof small), -1);
}

static void uuid_text_form(void **state)
{
    (void)state;
    static const unsigned char rnd[10] = {0x0d, 0x1e, 0xdf, 0x00, 0x12, 0x34, 0x56, 0x78, 0x9a, 0xbc};
    char out[37];
    api_id_uuid7(0x0192f2a47b3cLL, rnd, out); /* version and variant bits set over rnd's */
    assert_string_equal(out, "0192f2a4-7b3c-7d1e-9f00-123456789abc");
    api_id_uuid(0x0192f2a47b3cLL, 4, rnd, out);
    assert_string_equal(out, "0192f2a4-7b3c-4d1e-9f00-123456789abc");
}

static void batch_ids_carry_their_clock(void **state)
{
    (void)state;
    struct api_id_batch ids;
    int64_t ms;
    char a[37], b[37], c[37];
    assert_int_equal(api_id_batch_init(&ids, 3, 0x0190000000ffLL), 0);
    api_id_batch_uuid(&ids, 0, NULL, a); /* the batch's clock */
    assert_int_equal(api_id_uuid7_ms(a, &ms), 0);
    assert_int_equal(ms, 0x0190000000ffLL);
    api_id_batch_uuid(&ids, 1, "0192f2a4-7b3c-7d1e-9f00-123456789abc", b); /* like's clock */
    assert_int_equal(api_id_uuid7_ms(b, &ms), 0);
    assert_int_equal(ms, 0x0192f2a47b3cLL);
    api_id_batch_uuid(&ids, 2, "0192f2a4-7b3c-4d1e-9f00-123456789abc", c); /* like tells no clock */
    assert_int_equal(c[14], '4');
    assert_int_equal(api_id_uuid7_ms(c, &ms), -1);
    assert_memory_not_equal(a + 14, b + 14, 22); /* each id its own random bits */
    api_id_batch_release(&ids);
    api_id_batch_release(&ids); /* twice is harmless */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(same_as_sql),
        cmocka_unit_test(refuses_bad_input),
        cmocka_unit_test(uuid_text_form),
        cmocka_unit_test(batch_ids_carry_their_clock),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
