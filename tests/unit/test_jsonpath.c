/*
 * test_jsonpath.c — unit tests for engine/jsonpath.c: path syntax, walking
 * nested objects and arrays, the ways a lookup can miss (absent key, index
 * out of range, non-canonical index, descending into a scalar), and the text
 * rendering of every JSON type, including values too long for the buffer.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "jsonpath.h"

/* A Stripe-like event plus one member of every JSON type. */
static const char doc_text[] =
    "{"
    "  \"id\": \"evt_1\","
    "  \"type\": \"order.paid\","
    "  \"data\": {\"object\": {\"metadata\": {\"order_id\": \"ord_123\"}, \"amount\": 4200}},"
    "  \"items\": [{\"id\": \"a\"}, {\"id\": \"b\", \"tags\": [\"x\", \"y\"]}],"
    "  \"int\": -9223372036854775807,"
    "  \"whole_real\": 12.0,"
    "  \"exp_real\": 1e3,"
    "  \"frac_real\": 12.5,"
    "  \"huge_real\": 1e300,"
    "  \"yes\": true,"
    "  \"no\": false,"
    "  \"nothing\": null,"
    "  \"empty\": \"\","
    "  \"0\": \"key named zero\","
    "  \"with space\": {\"k\u00e9y\": \"unicode key\"},"
    "  \"nul\": \"a\\u0000b\""
    "}";

static int setup(void **state)
{
    json_error_t jerr;
    json_t *doc = json_loads(doc_text, JSON_ALLOW_NUL, &jerr);

    if (doc == NULL) {
        print_error("test document does not parse: %s (line %d)\n", jerr.text, jerr.line);
        return -1;
    }
    *state = doc;
    return 0;
}

static int teardown(void **state)
{
    json_decref(*state);
    return 0;
}

static void test_valid_paths(void **state)
{
    static const char *const good[] = {"a", "a.b.c", "items.0.id", "with space.k\u00e9y", "0"};
    static const char *const bad[] = {"", ".", ".a", "a.", "a..b", "..", "a.b."};
    char longest[JSONPATH_MAX_LEN + 2];

    (void)state;
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++)
        if (!jsonpath_valid(good[i]))
            fail_msg("refused valid path \"%s\"", good[i]);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        if (jsonpath_valid(bad[i]))
            fail_msg("accepted invalid path \"%s\"", bad[i]);
    assert_false(jsonpath_valid(NULL));

    memset(longest, 'a', JSONPATH_MAX_LEN);
    longest[JSONPATH_MAX_LEN] = '\0';
    assert_true(jsonpath_valid(longest));
    longest[JSONPATH_MAX_LEN] = 'a';
    longest[JSONPATH_MAX_LEN + 1] = '\0';
    assert_false(jsonpath_valid(longest));
}

static void test_get_nested_objects(void **state)
{
    json_t *doc = *state;
    json_t *v = jsonpath_get(doc, "data.object.metadata.order_id");

    assert_non_null(v);
    assert_string_equal(json_string_value(v), "ord_123");
    v = jsonpath_get(doc, "data.object");
    assert_true(json_is_object(v));
    assert_ptr_equal(jsonpath_get(doc, "data.object.amount"), json_object_get(v, "amount"));
    assert_string_equal(json_string_value(jsonpath_get(doc, "with space.k\u00e9y")), "unicode key");
}

static void test_get_arrays(void **state)
{
    json_t *doc = *state;

    assert_string_equal(json_string_value(jsonpath_get(doc, "items.0.id")), "a");
    assert_string_equal(json_string_value(jsonpath_get(doc, "items.1.id")), "b");
    assert_string_equal(json_string_value(jsonpath_get(doc, "items.1.tags.1")), "y");
    assert_true(json_is_array(jsonpath_get(doc, "items")));
    assert_null(jsonpath_get(doc, "items.2"));    /* out of range */
    assert_null(jsonpath_get(doc, "items.2.id")); /* and below it */
    assert_null(jsonpath_get(doc, "items.01"));   /* not canonical */
    assert_null(jsonpath_get(doc, "items.-1"));   /* not an index */
    assert_null(jsonpath_get(doc, "items.+1"));   /* not an index */
    assert_null(jsonpath_get(doc, "items.id"));   /* key on an array */
    assert_null(jsonpath_get(doc, "items.99999999999999999999"));
    /* On an object a numeric segment is an ordinary key. */
    assert_string_equal(json_string_value(jsonpath_get(doc, "0")), "key named zero");
}

static void test_get_missing(void **state)
{
    json_t *doc = *state;

    assert_null(jsonpath_get(doc, "missing"));
    assert_null(jsonpath_get(doc, "data.object.metadata.customer"));
    assert_null(jsonpath_get(doc, "id.more"));              /* into a string */
    assert_null(jsonpath_get(doc, "data.object.amount.x")); /* into an integer */
    assert_null(jsonpath_get(doc, "nothing.x"));            /* into null */
    assert_null(jsonpath_get(NULL, "id"));
    assert_null(jsonpath_get(doc, NULL));
    assert_null(jsonpath_get(doc, ""));
    assert_null(jsonpath_get(doc, "data..object"));
    assert_null(jsonpath_get(doc, "id."));
    /* Prefixes of a key are different keys. */
    assert_null(jsonpath_get(doc, "dat"));
    assert_null(jsonpath_get(doc, "data.obj"));
}

/* Expects jsonpath_get_text() to fail and leave buf empty. */
static void expect_no_text(json_t *doc, const char *path)
{
    char buf[64];

    memset(buf, 'x', sizeof buf);
    if (jsonpath_get_text(doc, path, buf, sizeof buf) != -1)
        fail_msg("\"%s\" produced text \"%s\"", path, buf);
    assert_string_equal(buf, "");
}

static void expect_text(json_t *doc, const char *path, const char *want)
{
    char buf[64];

    if (jsonpath_get_text(doc, path, buf, sizeof buf) != 0)
        fail_msg("\"%s\" produced no text", path);
    assert_string_equal(buf, want);
}

static void test_get_text_scalars(void **state)
{
    json_t *doc = *state;

    expect_text(doc, "id", "evt_1");
    expect_text(doc, "data.object.metadata.order_id", "ord_123");
    expect_text(doc, "data.object.amount", "4200");
    expect_text(doc, "int", "-9223372036854775807");
    expect_text(doc, "whole_real", "12");
    expect_text(doc, "exp_real", "1000");
    expect_text(doc, "yes", "true");
    expect_text(doc, "no", "false");
    expect_text(doc, "empty", "");
    expect_text(doc, "items.1.tags.0", "x");
}

static void test_get_text_refuses_non_scalars(void **state)
{
    json_t *doc = *state;

    expect_no_text(doc, "missing");
    expect_no_text(doc, "nothing");   /* null */
    expect_no_text(doc, "data");      /* object */
    expect_no_text(doc, "items");     /* array */
    expect_no_text(doc, "frac_real"); /* 12.5 */
    expect_no_text(doc, "huge_real"); /* beyond int64 */
    expect_no_text(doc, "nul");       /* would be truncated at the NUL */
    expect_no_text(doc, "a..b");      /* invalid path */
    expect_no_text(NULL, "id");
}

static void test_get_text_length_bounds(void **state)
{
    json_t *doc = *state;
    char buf[8];

    /* "ord_123" is 7 bytes: fits in 8 with its NUL, not in 7. */
    assert_int_equal(jsonpath_get_text(doc, "data.object.metadata.order_id", buf, 8), 0);
    assert_string_equal(buf, "ord_123");
    memset(buf, 'x', sizeof buf);
    assert_int_equal(jsonpath_get_text(doc, "data.object.metadata.order_id", buf, 7), -1);
    assert_string_equal(buf, "");
    /* Same bound for numbers: "4200" needs 5 bytes. */
    assert_int_equal(jsonpath_get_text(doc, "data.object.amount", buf, 4), -1);
    assert_int_equal(jsonpath_get_text(doc, "data.object.amount", buf, 5), 0);
    assert_string_equal(buf, "4200");
    assert_int_equal(jsonpath_get_text(doc, "id", buf, 0), -1);
}

static void test_get_text_long_value(void **state)
{
    json_t *doc = json_object();
    char *big = malloc(5001);
    char *buf = malloc(5001);

    (void)state;
    assert_non_null(big);
    assert_non_null(buf);
    memset(big, 'v', 5000);
    big[5000] = '\0';
    assert_int_equal(json_object_set_new(doc, "k", json_string(big)), 0);
    assert_int_equal(jsonpath_get_text(doc, "k", buf, 5000), -1);
    assert_int_equal(jsonpath_get_text(doc, "k", buf, 5001), 0);
    assert_string_equal(buf, big);
    free(buf);
    free(big);
    json_decref(doc);
}

/* jsonpath_load_body(): numbers jansson cannot hold are read as their
 * exact text; everything else parses as json_loadb() would. */
static void test_load_body_big_numbers(void **state)
{
    (void)state;
    static const struct {
        const char *body, *path, *want;
    } cases[] = {
        {"{\"id\": 9223372036854775808, \"type\": \"t\"}", "id", "9223372036854775808"},
        {"{\"id\": -9223372036854775809}", "id", "-9223372036854775809"},
        {"{\"id\": 9223372036854775807}", "id", "9223372036854775807"}, /* int64 max stays a number */
        {"{\"a\": 1e400, \"id\": \"x\"}", "id", "x"},
        {"{\"id\": 1e400}", "id", "1e400"},
        {"{\"id\": -1.5E+999}", "id", "-1.5E+999"},
        {"{\"a\": 1e-400, \"id\": 7}", "id", "7"},
        {"[1e400, {\"k\": \"1e400 in a string \\\" 99999999999999999999\"}]", "1.k",
         "1e400 in a string \" 99999999999999999999"},
        {"{\"n\": [123456789012345678901234567890, 2]}", "n.1", "2"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        json_error_t err;
        json_t *doc = jsonpath_load_body(cases[i].body, strlen(cases[i].body), &err);
        assert_non_null(doc);
        char buf[128];
        assert_int_equal(jsonpath_get_text(doc, cases[i].path, buf, sizeof buf), 0);
        assert_string_equal(buf, cases[i].want);
        json_decref(doc);
    }
    /* a 400-digit integer */
    char big[420] = "{\"id\": ";
    size_t n = strlen(big);
    memset(big + n, '9', 400);
    strcpy(big + n + 400, "}");
    json_error_t err;
    json_t *doc = jsonpath_load_body(big, strlen(big), &err);
    assert_non_null(doc);
    assert_int_equal(json_string_length(json_object_get(doc, "id")), 400);
    json_decref(doc);
    /* a scalar at the top level, as jsonb takes it */
    doc = jsonpath_load_body("\"just a string\"", 15, &err);
    assert_non_null(doc);
    json_decref(doc);
    /* still refused: bad syntax, before or after a big number */
    static const char *const bad[] = {"{\"a\": 1e400,}",
                                      "{\"a\": [1, }",
                                      "{\"a\": 99999999999999999999 x}",
                                      "{\"a\": 1e400",
                                      "{\"a\": --1}",
                                      "{\"a\": 01}",
                                      ""};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        doc = jsonpath_load_body(bad[i], strlen(bad[i]), &err);
        if (doc)
            fail_msg("accepted: %s", bad[i]);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_valid_paths),
        cmocka_unit_test(test_get_nested_objects),
        cmocka_unit_test(test_get_arrays),
        cmocka_unit_test(test_get_missing),
        cmocka_unit_test(test_get_text_scalars),
        cmocka_unit_test(test_get_text_refuses_non_scalars),
        cmocka_unit_test(test_get_text_length_bounds),
        cmocka_unit_test(test_get_text_long_value),
        cmocka_unit_test(test_load_body_big_numbers),
    };

    return cmocka_run_group_tests(tests, setup, teardown);
}
