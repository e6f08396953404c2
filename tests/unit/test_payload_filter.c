/*
 * test_payload_filter.c — unit tests for engine/base/payload_filter.c: every
 * operator on present, missing and mistyped values, the implicit $eq,
 * $and/$or nesting, dotted paths into arrays, and the filters that
 * payload_filter_check refuses.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "payload_filter.h"

static const char payload_text[] = "{\"type\": \"invoice.paid\", \"amount\": 4200, \"ratio\": 0.5, \"vip\": true,"
                                   " \"gone\": null, \"customer\": {\"tier\": \"gold\", \"country\": \"DE\"},"
                                   " \"items\": [{\"sku\": \"a\"}, {\"sku\": \"b\"}]}";

static bool matches(const char *filter_text)
{
    json_t *f = json_loads(filter_text, 0, NULL), *p = json_loads(payload_text, 0, NULL);
    assert_non_null(f);
    assert_non_null(p);
    char err[256];
    assert_int_equal(payload_filter_check(f, err, sizeof err), 0);
    bool m = payload_filter_match(f, p);
    json_decref(f);
    json_decref(p);
    return m;
}

static void refused(const char *filter_text, const char *needle)
{
    json_t *f = json_loads(filter_text, JSON_DECODE_ANY, NULL);
    assert_non_null(f);
    char err[256] = "";
    assert_int_equal(payload_filter_check(f, err, sizeof err), -1);
    assert_non_null(strstr(err, needle));
    json_decref(f);
}

static void test_eq_and_implicit_eq(void **state)
{
    (void)state;
    assert_true(matches("{}"));
    assert_true(matches("{\"customer.tier\": \"gold\"}"));
    assert_false(matches("{\"customer.tier\": \"silver\"}"));
    assert_true(matches("{\"customer.tier\": {\"$eq\": \"gold\"}}"));
    assert_true(matches("{\"amount\": 4200.0}")); /* numbers compare as numbers */
    assert_true(matches("{\"items.1.sku\": \"b\"}"));
    assert_false(matches("{\"missing\": \"x\"}"));
    assert_true(matches("{\"customer\": {}}") == false); /* an empty object literal: $eq {} */
}

static void test_neq_in_gt_lt(void **state)
{
    (void)state;
    assert_true(matches("{\"customer.country\": {\"$neq\": \"US\"}}"));
    assert_false(matches("{\"customer.country\": {\"$neq\": \"DE\"}}"));
    assert_true(matches("{\"missing\": {\"$neq\": 1}}"));
    assert_true(matches("{\"customer.country\": {\"$in\": [\"FR\", \"DE\"]}}"));
    assert_false(matches("{\"customer.country\": {\"$in\": []}}"));
    assert_true(matches("{\"amount\": {\"$gt\": 1000, \"$lt\": 5000}}"));
    assert_false(matches("{\"amount\": {\"$gt\": 4200}}"));
    assert_true(matches("{\"ratio\": {\"$lt\": 1}}"));
    assert_false(matches("{\"customer.tier\": {\"$gt\": 1}}")); /* not a number */
    assert_false(matches("{\"missing\": {\"$lt\": 1}}"));
}

static void test_exists(void **state)
{
    (void)state;
    assert_true(matches("{\"vip\": {\"$exists\": true}}"));
    assert_true(matches("{\"gone\": {\"$exists\": true}}")); /* null is present */
    assert_true(matches("{\"missing\": {\"$exists\": false}}"));
    assert_false(matches("{\"missing\": {\"$exists\": true}}"));
}

static void test_and_or(void **state)
{
    (void)state;
    assert_true(matches("{\"$or\": [{\"customer.tier\": \"silver\"}, {\"vip\": true}]}"));
    assert_false(matches("{\"$or\": [{\"customer.tier\": \"silver\"}, {\"vip\": false}]}"));
    assert_true(matches("{\"$and\": [{\"amount\": {\"$gt\": 1}}, {\"$or\": [{\"type\": \"x\"}, {\"vip\": true}]}]}"));
    assert_false(matches("{\"$and\": [{\"amount\": {\"$gt\": 1}}, {\"type\": \"x\"}]}"));
    assert_false(matches("{\"vip\": true, \"type\": \"x\"}")); /* keys are ANDed */
}

static void test_refused(void **state)
{
    (void)state;
    refused("[]", "JSON object");
    refused("{\"a\": {\"$regex\": \"x\"}}", "unknown operator");
    refused("{\"$not\": {}}", "unknown combinator");
    refused("{\"$or\": []}", "non-empty array");
    refused("{\"a\": {\"$in\": 1}}", "$in takes an array");
    refused("{\"a\": {\"$gt\": \"1\"}}", "takes a number");
    refused("{\"a\": {\"$exists\": 1}}", "true or false");
    refused("{\"a..b\": 1}", "dotted path");
    refused("{\"a\": {\"$eq\": 1, \"b\": 2}}", "mixes operators");
}

static void test_null_payload(void **state)
{
    (void)state;
    json_t *f = json_loads("{\"missing\": {\"$exists\": false}}", 0, NULL);
    assert_true(payload_filter_match(f, NULL));
    json_decref(f);
    f = json_loads("{\"a\": 1}", 0, NULL);
    assert_false(payload_filter_match(f, NULL));
    json_decref(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_eq_and_implicit_eq),
        cmocka_unit_test(test_neq_in_gt_lt),
        cmocka_unit_test(test_exists),
        cmocka_unit_test(test_and_or),
        cmocka_unit_test(test_refused),
        cmocka_unit_test(test_null_payload),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
