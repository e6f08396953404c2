/*
 * test_delivery_policy.c — an endpoint's custom static headers as the
 * delivery path sends them (engine/outbound/delivery_policy.h): added after
 * hookd's own, never a name hookd or the HTTP client sets (any case), only
 * string values; no headers, or a stored value that is not a JSON object,
 * leave hookd's own alone.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "delivery_policy.h"

static const struct http_header base[] = {
    {"Content-Type", "application/json"},
    {"User-Agent", "hookd/test"},
    {"webhook-id", "msg_1"},
};
#define NBASE (sizeof base / sizeof base[0])

static const char *value_of(const struct http_header *h, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(h[i].name, name) == 0)
            return h[i].value;
    return NULL;
}

static void test_custom_headers_follow_hookds_own(void **state)
{
    (void)state;
    struct http_header *h;
    void *hold;
    size_t n = delivery_policy_headers("{\"X-Tenant\": \"acme\", \"Authorization\": \"Bearer t\"}", NULL, base, NBASE,
                                       &h, &hold);
    assert_int_equal(n, NBASE + 2);
    for (size_t i = 0; i < NBASE; i++) /* hookd's own first, unchanged */
        assert_string_equal(h[i].name, base[i].name);
    assert_string_equal(value_of(h, n, "X-Tenant"), "acme");
    assert_string_equal(value_of(h, n, "Authorization"), "Bearer t");
    delivery_policy_headers_release(h, hold);
}

static void test_reserved_names_and_non_strings_are_skipped(void **state)
{
    (void)state;
    struct http_header *h;
    void *hold;
    size_t n =
        delivery_policy_headers("{\"WEBHOOK-ID\": \"forged\", \"webhook-signature\": \"v1,x\","
                                " \"Webhook-Timestamp\": \"1\", \"content-type\": \"text/plain\","
                                " \"user-agent\": \"x\", \"Host\": \"evil\", \"Content-Length\": \"1\","
                                " \"Connection\": \"close\", \"Transfer-Encoding\": \"chunked\","
                                " \"svix-id\": \"forged\", \"Svix-Signature\": \"v1,x\", \"svix-timestamp\": \"1\","
                                " \"X-Num\": 1, \"X-Null\": null, \"X-Ok\": \"yes\"}",
                                "ep", base, NBASE, &h, &hold);
    assert_int_equal(n, NBASE + 1);
    assert_string_equal(value_of(h, n, "webhook-id"), "msg_1");
    assert_string_equal(value_of(h, n, "X-Ok"), "yes");
    delivery_policy_headers_release(h, hold);
}

static void test_none_or_not_an_object(void **state)
{
    (void)state;
    const char *inputs[] = {NULL, "", "[\"a\"]", "not json", "{}"};
    for (size_t k = 0; k < sizeof inputs / sizeof inputs[0]; k++) {
        struct http_header *h;
        void *hold;
        size_t n = delivery_policy_headers(inputs[k], NULL, base, NBASE, &h, &hold);
        assert_int_equal(n, NBASE);
        assert_string_equal(h[2].value, "msg_1");
        delivery_policy_headers_release(h, hold);
    }
}

static void test_inline_first_attempts_only_without_policies(void **state)
{
    (void)state;
    assert_true(delivery_policy_inline_ok(0, false));
    assert_false(delivery_policy_inline_ok(10, false));
    assert_false(delivery_policy_inline_ok(0, true));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_custom_headers_follow_hookds_own),
        cmocka_unit_test(test_reserved_names_and_non_strings_are_skipped),
        cmocka_unit_test(test_none_or_not_an_object),
        cmocka_unit_test(test_inline_first_attempts_only_without_policies),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
