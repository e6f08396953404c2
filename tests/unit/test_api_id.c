/*
 * test_api_id.c — unit tests for engine/base/api_id.c: the ids it computes
 * equal those the SQL functions hookd_api_id and hookd_api_legacy_id return
 * for the same UUIDs (values taken from Postgres), have Svix's shape, map
 * back to their UUIDs (both forms), sort by time, and malformed UUIDs, ids
 * or short buffers are refused without writing.
 */
#include <setjmp.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "api_id.h"

static void same_as_sql(void **state)
{
    (void)state;
    static const char *const cases[][3] = {
        /* UUID, hookd_api_id, hookd_api_legacy_id */
        {"00000000-0000-0000-0000-000000000000", "msg_000000000000000000000000000", "msg_0000000000000000000000"},
        {"ffffffff-ffff-ffff-ffff-ffffffffffff", "msg_000007n42DGM5Tflk9n8mt7Fhc7", "msg_7n42DGM5Tflk9n8mt7Fhc7"},
        {"0192f2a4-7b3c-7d1e-9f00-123456789abc", "msg_2oLTBBeh9CUVDB1XYyGOLHneUDk", "msg_02y99dlezymET3jenKOAe4"},
        {"01234567-89AB-CDEF-0123-456789abcdef", "msg_000000296tiiBb3U904RIpygpjj", "msg_0296tiiBb3U904RIpygpjj"},
        {"0192f2a4-7b3c-4d1e-9f00-123456789abc", "msg_0000002y99dleyqWBgjJAtILMuy", "msg_02y99dleyqWBgjJAtILMuy"},
        {"ffffffff-ffff-7fff-bfff-ffffffffffff", "msg_aWgEPTl1tmebfpPd2UrEcMf8kgB", "msg_7n42DGM5QePXFZlRJ5QKHn"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char out[40];
        assert_int_equal(api_id_of_uuid("msg", cases[i][0], out, sizeof out), 0);
        assert_string_equal(out, cases[i][1]);
        assert_int_equal(api_id_legacy_of_uuid("msg", cases[i][0], out, sizeof out), 0);
        assert_string_equal(out, cases[i][2]);
    }
    char out[40];
    assert_int_equal(api_id_of_uuid("ep", "0192f2a47b3c7d1e9f00123456789abc", out, sizeof out), 0);
    assert_string_equal(out, "ep_2oLTBBeh9CUVDB1XYyGOLHneUDk");
}

/* Svix's pattern: the prefix, '_', 27 of [0-9A-Za-z]. */
static bool svix_shaped(const char *prefix, const char *id)
{
    size_t plen = strlen(prefix);
    if (strncmp(id, prefix, plen) != 0 || id[plen] != '_' || strlen(id + plen + 1) != 27)
        return false;
    return strspn(id + plen + 1, "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz") == 27;
}

static void round_trips(void **state)
{
    (void)state;
    static const unsigned char rnd[10] = {0xff, 0x00, 0x80, 0x7f, 0x01, 0xfe, 0x10, 0xef, 0x55, 0xaa};
    static const int64_t clocks[] = {0, 1, 1400000000000LL, 1730000000000LL, 0xffffffffffffLL};
    for (size_t i = 0; i < sizeof clocks / sizeof clocks[0]; i++) {
        for (int version = 4; version <= 7; version += 3) {
            char uuid[37], id[40], legacy[40], back[37];
            api_id_uuid(clocks[i], version, rnd, uuid);
            assert_int_equal(api_id_of_uuid("atmpt", uuid, id, sizeof id), 0);
            assert_true(svix_shaped("atmpt", id));
            assert_int_equal(api_id_to_uuid("atmpt", id, back), 0);
            assert_string_equal(back, uuid);
            assert_int_equal(api_id_legacy_of_uuid("atmpt", uuid, legacy, sizeof legacy), 0);
            assert_int_equal(strlen(legacy), strlen("atmpt_") + API_ID_LEGACY_DIGITS);
            memset(back, 0, sizeof back);
            assert_int_equal(api_id_to_uuid("atmpt", legacy, back), 0); /* the former form still names it */
            assert_string_equal(back, uuid);
        }
    }
}

static void sorts_by_time(void **state)
{
    (void)state;
    unsigned char rnd[10];
    char prev[40] = "", uuid[37], id[40];
    /* later seconds sort later whatever the random bits; within a second,
     * the UUID's milliseconds */
    static const int64_t clocks[] = {1600000000000LL, 1600000000001LL, 1600000000999LL,
                                     1600000001000LL, 1730000000000LL, 1900000000000LL};
    for (size_t i = 0; i < sizeof clocks / sizeof clocks[0]; i++) {
        memset(rnd, i % 2 ? 0x00 : 0xff, sizeof rnd);
        api_id_uuid7(clocks[i], rnd, uuid);
        assert_int_equal(api_id_of_uuid("msg", uuid, id, sizeof id), 0);
        assert_true(strcmp(prev, id) < 0);
        memcpy(prev, id, sizeof id);
    }
}

static void refuses_bad_ids(void **state)
{
    (void)state;
    char out[37] = "untouched";
    assert_int_equal(api_id_to_uuid("msg", "ep_2oLTBBeh9CUVDB1XYyGOLHneUDk", out), -1);   /* another prefix */
    assert_int_equal(api_id_to_uuid("msg", "msg2oLTBBeh9CUVDB1XYyGOLHneUDk", out), -1);   /* no '_' */
    assert_int_equal(api_id_to_uuid("msg", "msg_2oLTBBeh9CUVDB1XYyGOLHneUD", out), -1);   /* 26 digits */
    assert_int_equal(api_id_to_uuid("msg", "msg_2oLTBBeh9CUVDB1XYyGOLHneUDk0", out), -1); /* 28 */
    assert_int_equal(api_id_to_uuid("msg", "msg_2oLTBBeh9CUVDB1XYyGOLHne-Dk", out), -1);  /* not base62 */
    assert_int_equal(api_id_to_uuid("msg", "msg_zzzzzzzzzzzzzzzzzzzzzzzzzzz", out), -1);  /* over 160 bits */
    assert_int_equal(api_id_to_uuid("msg", "msg_zzzzzzzzzzzzzzzzzzzzzz", out), -1);       /* over 128 bits */
    assert_int_equal(api_id_to_uuid("msg", "msg_2oLTBBeh9CUVDB1XYyGOLHneUDl", out), 0);   /* another UUID */
    assert_int_equal(api_id_to_uuid("msg", "msg_3oLTBBeh9CUVDB1XYyGOLHneUDk", out), -1);  /* seconds not its clock */
    assert_int_equal(api_id_to_uuid("msg", "msg_0000002y99dleyqWBgjJAtILMuy", out), 0);   /* version 4: 0 seconds */
    assert_string_equal(out, "0192f2a4-7b3c-4d1e-9f00-123456789abc");
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
    char small[32]; /* "msg_" + 27 digits needs 32 with the NUL */
    assert_int_equal(api_id_of_uuid("msg", "0192f2a4-7b3c-7d1e-9f00-123456789abc", small, sizeof small - 1), -1);
    assert_int_equal(api_id_legacy_of_uuid("msg", "0192f2a4-7b3c-7d1e-9f00-123456789abc", small, 26), -1);
    assert_int_equal(api_id_of_uuid("msg", "0192f2a4-7b3c-7d1e-9f00-123456789abc", small, sizeof small), 0);
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
        cmocka_unit_test(round_trips),
        cmocka_unit_test(sorts_by_time),
        cmocka_unit_test(refuses_bad_ids),
        cmocka_unit_test(refuses_bad_input),
        cmocka_unit_test(uuid_text_form),
        cmocka_unit_test(batch_ids_carry_their_clock),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
