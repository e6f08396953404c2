/*
 * test_json_span.c — unit tests for engine/base/json_span.c: the span of a
 * top-level member's value in JSON text, with odd spacing, nested strings
 * holding brackets and quotes, escaped keys, duplicated keys (the last
 * wins, as jansson keeps it) and malformed text.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "json_span.h"

/* The value text of key in doc, or NULL; static storage. */
static const char *span(const char *doc, const char *key)
{
    static char out[512];
    size_t off, n;
    if (json_span_member(doc, strlen(doc), key, &off, &n) != 0)
        return NULL;
    assert_true(n < sizeof out);
    memcpy(out, doc + off, n);
    out[n] = '\0';
    return out;
}

static void test_object_value_verbatim(void **state)
{
    (void)state;
    const char *doc = "{\"eventType\":\"a.b\",\n  \"payload\" :  { \"b\" : 1.0e+2,\"a\":[1 , 2],"
                      "\"n\":12345678901234567890 } , \"x\":1}";
    assert_string_equal(span(doc, "payload"), "{ \"b\" : 1.0e+2,\"a\":[1 , 2],\"n\":12345678901234567890 }");
    assert_string_equal(span(doc, "eventType"), "\"a.b\"");
    assert_string_equal(span(doc, "x"), "1");
}

static void test_strings_inside(void **state)
{
    (void)state;
    const char *doc = "{\"a\":{\"payload\":\"}\"},\"payload\":{\"s\":\"q\\\"}]\\\\\",\"t\":\"\\u00e9\"}}";
    assert_string_equal(span(doc, "payload"), "{\"s\":\"q\\\"}]\\\\\",\"t\":\"\\u00e9\"}");
}

static void test_escaped_key_and_duplicates(void **state)
{
    (void)state;
    assert_string_equal(span("{\"pay\\u006coad\":{\"k\":1}}", "payload"), "{\"k\":1}");
    assert_string_equal(span("{\"payload\":{\"first\":1},\"payload\":{\"last\":2}}", "payload"), "{\"last\":2}");
    assert_null(span("{\"payloads\":{}}", "payload"));
    assert_null(span("{\"pay\\\"load\":{}}", "payload"));
}

static void test_scalars_and_whitespace(void **state)
{
    (void)state;
    assert_string_equal(span(" \t\r\n{ \"payload\"\t:\r\nnull\n}\n", "payload"), "null");
    assert_string_equal(span("{\"payload\":-0.5E-3}", "payload"), "-0.5E-3");
    assert_string_equal(span("{\"payload\":[]}", "payload"), "[]");
}

static void test_malformed(void **state)
{
    (void)state;
    static const char *const bad[] = {"",
                                      "[]",
                                      "{}",
                                      "{\"payload\"}",
                                      "{\"payload\":}",
                                      "{\"payload\":{\"a\":1}",
                                      "{\"payload\":\"abc",
                                      "{\"payload\":1 \"x\":2}",
                                      "{\"payload\":{\"a\":\"\\",
                                      "{payload:1}"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_null(span(bad[i], "payload"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_object_value_verbatim),
        cmocka_unit_test(test_strings_inside),
        cmocka_unit_test(test_escaped_key_and_duplicates),
        cmocka_unit_test(test_scalars_and_whitespace),
        cmocka_unit_test(test_malformed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
