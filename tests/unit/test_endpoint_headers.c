/*
 * test_endpoint_headers.c — unit tests for engine/base/endpoint_headers.c:
 * the custom headers the API and `hookd endpoint add|update --headers`
 * accept and refuse (names, reserved names, values, count, nulls in a
 * patch), and which names are listed without their values.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "endpoint_headers.h"

/* The check's result on the JSON text; err gets its message. */
static int check(const char *text, bool nulls_ok, char *err, size_t errlen)
{
    json_t *h = json_loads(text, JSON_DECODE_ANY, NULL);
    assert_non_null(h);
    err[0] = '\0';
    int rc = endpoint_headers_check(h, nulls_ok, err, errlen);
    json_decref(h);
    return rc;
}

static void accepted(void)
{
    char err[256];
    assert_int_equal(check("{}", false, err, sizeof err), 0);
    assert_int_equal(check("{\"X-Team\": \"billing\", \"Authorization\": \"Bearer x\", \"x_y\": \"\"}", false, err,
                           sizeof err),
                     0);
    assert_int_equal(check("{\"X-Gone\": null}", true, err, sizeof err), 0); /* a removal in a patch */
}

static void refused(void)
{
    static const struct {
        const char *headers, *needle; /* the JSON, and a word the message must hold */
    } cases[] = {
        {"[]", "object"},
        {"{\"Host\": \"evil\"}", "Host"},
        {"{\"webhook-signature\": \"v1,x\"}", "reserved"},
        {"{\"Content-Length\": \"1\"}", "reserved"},
        {"{\"svix-signature\": \"v1,x\"}", "svix-signature is a reserved header"},
        {"{\"Svix-Id\": \"msg_1\"}", "Svix-Id is a reserved header"},
        {"{\"bad name\": \"x\"}", "malformed"},
        {"{\"\": \"x\"}", "malformed"},
        {"{\"X-A\": \"line\\r\\nInjected: 1\"}", "X-A"},
        {"{\"X-A\": 7}", "X-A"},
        {"{\"X-A\": null}", "X-A"}, /* null: only in a patch */
    };
    char err[256];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        assert_int_equal(check(cases[i].headers, false, err, sizeof err), -1);
        assert_non_null(strstr(err, cases[i].needle));
    }
}

static void limits(void)
{
    char err[256], name[16];
    json_t *many = json_object();
    for (int i = 0; i <= ENDPOINT_HEADERS_MAX; i++) {
        snprintf(name, sizeof name, "X-%d", i);
        json_object_set_new(many, name, json_string("v"));
    }
    assert_int_equal(endpoint_headers_check(many, false, err, sizeof err), -1);
    assert_non_null(strstr(err, "at most"));
    json_object_del(many, "X-0");
    assert_int_equal(endpoint_headers_check(many, false, err, sizeof err), 0);
    json_decref(many);
    char *long_value = malloc(4098);
    assert_non_null(long_value);
    memset(long_value, 'v', 4097);
    long_value[4097] = '\0';
    json_t *h = json_pack("{s:s}", "X-Long", long_value);
    assert_int_equal(endpoint_headers_check(h, false, err, sizeof err), -1);
    long_value[4096] = '\0'; /* 4096 characters: the most a value may have */
    json_object_set_new(h, "X-Long", json_string(long_value));
    assert_int_equal(endpoint_headers_check(h, false, err, sizeof err), 0);
    json_decref(h);
    free(long_value);
}

/* What is accepted, what is refused and why, and the limits. */
static void test_check(void **state)
{
    accepted();
    refused();
    limits();
    (void)state;
}

static void test_sensitive(void **state)
{
    (void)state;
    static const char *const hidden[] = {"Authorization", "cookie", "X-Api-Key", "X-Client-Secret", "X-Token"};
    for (size_t i = 0; i < sizeof hidden / sizeof hidden[0]; i++)
        assert_true(endpoint_headers_sensitive(hidden[i]));
    assert_false(endpoint_headers_sensitive("X-Team"));
}

static void test_reserved(void **state)
{
    (void)state;
    static const char *const owned[] = {"Host",
                                        "content-length",
                                        "Content-Type",
                                        "webhook-id",
                                        "Webhook-Signature",
                                        "webhook-timestamp",
                                        "svix-id",
                                        "SVIX-SIGNATURE",
                                        "Svix-Timestamp",
                                        "User-Agent",
                                        "TE",
                                        "upgrade"};
    for (size_t i = 0; i < sizeof owned / sizeof owned[0]; i++)
        assert_true(endpoint_headers_reserved(owned[i]));
    assert_false(endpoint_headers_reserved("X-Team"));
    assert_false(endpoint_headers_reserved("webhook-idx"));
    assert_false(endpoint_headers_reserved("svix-team"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_check),
        cmocka_unit_test(test_sensitive),
        cmocka_unit_test(test_reserved),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
