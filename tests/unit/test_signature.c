/*
 * test_signature.c — unit tests for engine/signature.c. Each scheme is
 * checked against a known-good vector, then against every tampering the
 * scheme must catch (a flipped body byte, a wrong secret, a stale or future
 * timestamp, a changed header, a signature replayed with a new body), key
 * rotation, and malformed headers. Vectors:
 *   - Standard Webhooks: test_sign_function and the multi-signature test of
 *     the reference Python SDK (standard-webhooks/standard-webhooks,
 *     libraries/python/tests/test_webhooks.py).
 *   - GitHub: the example in GitHub's "Validating webhook deliveries" docs.
 *   - Slack: the example of "Verifying requests from Slack" (a slash command).
 *   - Twilio: the example of Twilio's webhook-security docs (auth token 12345).
 *   - Stripe publishes no fixed vector; this one uses the secret and payload
 *     of stripe-python's tests/test_webhook.py at a fixed timestamp, with the
 *     MAC computed independently (openssl dgst -hmac and Python's hmac).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <cmocka.h>
#include <openssl/evp.h>

#include "encoding.h"
#include "jsonpath.h"
#include "signature.h"

/* ---- fixtures ---- */

#define SW_SECRET "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
#define SW_SECRET_BARE "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
#define SW_ID "msg_p5jXN8AQM9LWM0D4loKWxJek"
#define SW_TS 1614265330
#define SW_TS_TEXT "1614265330"
#define SW_BODY "{\"test\": 2432232314}"
#define SW_SIG "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
#define SW_SIG_B64 "g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
/* From the SDK's invalid-signature test: the last base64 digit changed. */
#define SW_SIG_WRONG "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OA="
#define SW_SIG_OTHER "Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc="

#define STRIPE_SECRET "whsec_test_secret"
#define STRIPE_BODY "{\n  \"id\": \"evt_test_webhook\",\n  \"object\": \"event\"\n}"
#define STRIPE_TS 1614265330
#define STRIPE_HEX "af4ead0627a34a8cca29808e8de9ada8e41a92e6237c63cef6eacf51d36cca34"
#define STRIPE_HEADER "t=1614265330,v1=" STRIPE_HEX

#define GH_SECRET "It's a Secret to Everybody"
#define GH_BODY "Hello, World!"
#define GH_HEX "757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
#define GH_SIG "sha256=" GH_HEX
#define GH_B64 "dXEH6g6yUJ/CESIczphLijdXC211hsIsRvQ3nIsEPhc="

#define TOLERANCE 300
#define MAX_HEADERS 8

struct headers {
    const char *name[MAX_HEADERS];
    const char *value[MAX_HEADERS];
    size_t n;
};

/* Case-insensitive, as sig_header_fn requires (HTTP header names are). */
static const char *lookup_header(void *arg, const char *name)
{
    const struct headers *h = arg;

    for (size_t i = 0; i < h->n; i++)
        if (strcasecmp(h->name[i], name) == 0)
            return h->value[i];
    return NULL;
}

static void set_header(struct headers *h, const char *name, const char *value)
{
    for (size_t i = 0; i < h->n; i++) {
        if (strcasecmp(h->name[i], name) == 0) {
            h->value[i] = value;
            return;
        }
    }
    assert_true(h->n < MAX_HEADERS);
    h->name[h->n] = name;
    h->value[h->n] = value;
    h->n++;
}

static void del_header(struct headers *h, const char *name)
{
    for (size_t i = 0; i < h->n; i++) {
        if (strcasecmp(h->name[i], name) == 0) {
            h->name[i] = h->name[h->n - 1];
            h->value[i] = h->value[h->n - 1];
            h->n--;
            return;
        }
    }
}

/* One request/verification setup; keys are decoded from secrets. */
struct fixture {
    struct headers hdr;
    struct sig_key keys[3];
    size_t nkeys;
    struct sig_params params;
    struct sig_request req;
    const char *body;
    char err[256];
};

static void fixture_init(struct fixture *f, enum sig_scheme scheme, const char *body, int64_t now)
{
    memset(f, 0, sizeof *f);
    f->params.scheme = scheme;
    f->params.keys = f->keys;
    f->params.tolerance_s = TOLERANCE;
    f->body = body;
    f->req.body = (const unsigned char *)body;
    f->req.body_len = strlen(body);
    f->req.header = lookup_header;
    f->req.header_arg = &f->hdr;
    f->req.now = now;
}

static void fixture_add_key(struct fixture *f, const char *secret)
{
    char err[256];

    assert_true(f->nkeys < 3);
    if (sig_key_decode(f->params.scheme, secret, &f->keys[f->nkeys], err, sizeof err) != 0)
        fail_msg("key did not decode: %s", err);
    f->nkeys++;
    f->params.nkeys = f->nkeys;
}

static void fixture_set_body(struct fixture *f, const char *body)
{
    f->body = body;
    f->req.body = (const unsigned char *)body;
    f->req.body_len = strlen(body);
}

static void fixture_free(struct fixture *f)
{
    for (size_t i = 0; i < f->nkeys; i++)
        sig_key_clear(&f->keys[i]);
}

/* Verifies and checks the result; on a failure result also checks that the
 * message is non-empty and quotes neither a secret nor a full signature. */
static void expect_result(struct fixture *f, enum sig_result want)
{
    static const char *const never[] = {SW_SECRET_BARE, SW_SIG_B64, SW_SIG_OTHER, STRIPE_SECRET,
                                        STRIPE_HEX,     GH_SECRET,  GH_HEX,       GH_B64};
    enum sig_result got;

    memset(f->err, 'x', sizeof f->err);
    got = sig_verify(&f->params, &f->req, f->err, sizeof f->err);
    if (got != want)
        fail_msg("sig_verify returned %s (\"%s\"), expected %s", sig_result_name(got), f->err, sig_result_name(want));
    if (want == SIG_OK) {
        assert_string_equal(f->err, "");
        return;
    }
    assert_true(strlen(f->err) > 0 && strlen(f->err) < sizeof f->err);
    for (size_t i = 0; i < sizeof never / sizeof never[0]; i++)
        if (strstr(f->err, never[i]) != NULL)
            fail_msg("error message leaks \"%s\": %s", never[i], f->err);
}

static void expect_err(const struct fixture *f, const char *want)
{
    assert_string_equal(f->err, want);
}

/* ---- Standard Webhooks ---- */

static void sw_fixture(struct fixture *f, int64_t now)
{
    fixture_init(f, SIG_STANDARD_WEBHOOKS, SW_BODY, now);
    fixture_add_key(f, SW_SECRET);
    set_header(&f->hdr, "webhook-id", SW_ID);
    set_header(&f->hdr, "webhook-timestamp", SW_TS_TEXT);
    set_header(&f->hdr, "webhook-signature", SW_SIG);
}

static void test_sw_sign_vector(void **state)
{
    struct sig_key key;
    char err[128], out[SIG_STANDARD_SIGNATURE_SIZE];

    (void)state;
    assert_int_equal(sig_key_decode(SIG_STANDARD_WEBHOOKS, SW_SECRET, &key, err, sizeof err), 0);
    assert_int_equal(key.len, 24);
    assert_int_equal(sig_sign_standard(&key, SW_ID, SW_TS, (const unsigned char *)SW_BODY, strlen(SW_BODY), out,
                                       sizeof out),
                     0);
    assert_string_equal(out, SW_SIG);
    sig_key_clear(&key);
}

static void test_sw_verify_vector(void **state)
{
    struct fixture f;

    (void)state;
    sw_fixture(&f, SW_TS);
    expect_result(&f, SIG_OK);
    fixture_free(&f);

    /* The same secret without its whsec_ prefix, as the SDK accepts. */
    fixture_init(&f, SIG_STANDARD_WEBHOOKS, SW_BODY, SW_TS + 10);
    fixture_add_key(&f, SW_SECRET_BARE);
    set_header(&f.hdr, "Webhook-Id", SW_ID);
    set_header(&f.hdr, "Webhook-Timestamp", SW_TS_TEXT);
    set_header(&f.hdr, "Webhook-Signature", SW_SIG);
    expect_result(&f, SIG_OK);
    fixture_free(&f);
}

static void test_sw_multiple_signatures(void **state)
{
    struct fixture f;

    (void)state;
    sw_fixture(&f, SW_TS);
    /* The SDK's multi-signature header: one valid v1 among decoys, and a v2
     * entry that must be ignored. */
    set_header(&f.hdr, "webhook-signature", "v1," SW_SIG_OTHER " v2," SW_SIG_OTHER " " SW_SIG " v1," SW_SIG_OTHER);
    expect_result(&f, SIG_OK);
    /* A v1a entry (asymmetric) carrying the right MAC is not a v1 entry. */
    set_header(&f.hdr, "webhook-signature", "v1a," SW_SIG_B64 " v1," SW_SIG_OTHER);
    expect_result(&f, SIG_MISMATCH);
    fixture_free(&f);
}

static void test_sw_tampering(void **state)
{
    struct fixture f;

    (void)state;
    sw_fixture(&f, SW_TS);

    /* The SDK's invalid signature. */
    set_header(&f.hdr, "webhook-signature", SW_SIG_WRONG);
    expect_result(&f, SIG_MISMATCH);
    expect_err(&f, "no signature in webhook-signature matches the request (1 candidate, 1 key)");
    set_header(&f.hdr, "webhook-signature", SW_SIG);

    /* One body byte flipped; the old signature replayed with a new body. */
    fixture_set_body(&f, "{\"test\": 2432232315}");
    expect_result(&f, SIG_MISMATCH);
    fixture_set_body(&f, "{\"test\": 1, \"amount\": 1000000}");
    expect_result(&f, SIG_MISMATCH);
    fixture_set_body(&f, SW_BODY);
    expect_result(&f, SIG_OK);

    /* Signed headers changed: the id, and the timestamp within tolerance. */
    set_header(&f.hdr, "webhook-id", "msg_p5jXN8AQM9LWM0D4loKWxJel");
    expect_result(&f, SIG_MISMATCH);
    set_header(&f.hdr, "webhook-id", SW_ID);
    set_header(&f.hdr, "webhook-timestamp", "1614265331");
    expect_result(&f, SIG_MISMATCH);
    fixture_free(&f);

    /* A different secret. */
    fixture_init(&f, SIG_STANDARD_WEBHOOKS, SW_BODY, SW_TS);
    fixture_add_key(&f, "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSx");
    set_header(&f.hdr, "webhook-id", SW_ID);
    set_header(&f.hdr, "webhook-timestamp", SW_TS_TEXT);
    set_header(&f.hdr, "webhook-signature", SW_SIG);
    expect_result(&f, SIG_MISMATCH);
    fixture_free(&f);
}

static void test_sw_timestamp_tolerance(void **state)
{
    struct fixture f;

    (void)state;
    /* The boundary in both directions is accepted... */
    sw_fixture(&f, SW_TS + TOLERANCE);
    expect_result(&f, SIG_OK);
    f.req.now = SW_TS - TOLERANCE;
    expect_result(&f, SIG_OK);

    /* ...one second beyond it is not. */
    f.req.now = SW_TS + TOLERANCE + 1;
    expect_result(&f, SIG_TIMESTAMP_OUT_OF_TOLERANCE);
    expect_err(&f, "webhook-timestamp is 301s in the past (tolerance 300s)");
    f.req.now = SW_TS + 600;
    expect_result(&f, SIG_TIMESTAMP_OUT_OF_TOLERANCE);
    expect_err(&f, "webhook-timestamp is 600s in the past (tolerance 300s)");
    f.req.now = SW_TS - TOLERANCE - 1;
    expect_result(&f, SIG_TIMESTAMP_OUT_OF_TOLERANCE);
    expect_err(&f, "webhook-timestamp is 301s in the future (tolerance 300s)");

    /* The MAC is checked first: a forged stale request is a bad signature. */
    f.req.now = SW_TS + 600;
    set_header(&f.hdr, "webhook-signature", SW_SIG_WRONG);
    expect_result(&f, SIG_MISMATCH);

    set_header(&f.hdr, "webhook-signature", SW_SIG);

    /* Absurd clocks are refused, not overflowed. */
    f.req.now = INT64_MIN;
    expect_result(&f, SIG_TIMESTAMP_OUT_OF_TOLERANCE);
    expect_err(&f, "webhook-timestamp is out of range of the current time");
    f.req.now = INT64_MIN + SW_TS;
    expect_result(&f, SIG_TIMESTAMP_OUT_OF_TOLERANCE);
    f.req.now = INT64_MAX;
    expect_result(&f, SIG_TIMESTAMP_OUT_OF_TOLERANCE);

    /* A negative tolerance rejects even a current, correct request. */
    f.req.now = SW_TS;
    f.params.tolerance_s = -1;
    expect_result(&f, SIG_TIMESTAMP_OUT_OF_TOLERANCE);
    fixture_free(&f);
}

static void test_sw_key_rotation(void **state)
{
    struct fixture f;

    (void)state;
    fixture_init(&f, SIG_STANDARD_WEBHOOKS, SW_BODY, SW_TS);
    fixture_add_key(&f, "whsec_dGhpcyBpcyB0aGUgbmV3IHNlY3JldCBrZXkh");
    set_header(&f.hdr, "webhook-id", SW_ID);
    set_header(&f.hdr, "webhook-timestamp", SW_TS_TEXT);
    set_header(&f.hdr, "webhook-signature", SW_SIG);
    expect_result(&f, SIG_MISMATCH);
    fixture_add_key(&f, SW_SECRET); /* the second key matches */
    expect_result(&f, SIG_OK);
    fixture_free(&f);
}

static void test_sw_missing_headers(void **state)
{
    static const char *const names[] = {"webhook-id", "webhook-timestamp", "webhook-signature"};

    (void)state;
    for (size_t i = 0; i < 3; i++) {
        struct fixture f;
        char want[64];

        sw_fixture(&f, SW_TS);
        del_header(&f.hdr, names[i]);
        expect_result(&f, SIG_MISSING_HEADER);
        snprintf(want, sizeof want, "missing %s header", names[i]);
        expect_err(&f, want);
        fixture_free(&f);
    }
}

static void test_sw_malformed_headers(void **state)
{
    static const char *const bad_ts[] = {"hello", "",           "-1614265330",         "1614265330.5",
                                         "1e9",   "0x60372d72", "16142653301614265330"};
    static const char *const bad_sig[] = {
        "",                                                /* empty */
        "   ",                                             /* blank */
        SW_SIG_B64,                                        /* no version */
        "v1a," SW_SIG_B64,                                 /* only another version */
        "v2," SW_SIG_B64,                                  /* only another version */
        "v1,",                                             /* empty MAC */
        "v1,not base64!",                                  /* not base64 */
        "v1,Zm9vYmFy",                                     /* base64, but 6 bytes, not 32 */
        "v1," SW_SIG_B64 "AAAA",                           /* padding in the middle */
        "v1,g0hM9SsE-OTPJTGt_tmIKtSyZlE3uFJELVlNIOLJ1OE=", /* URL-safe alphabet */
    };
    struct fixture f;

    (void)state;
    sw_fixture(&f, SW_TS);
    for (size_t i = 0; i < sizeof bad_ts / sizeof bad_ts[0]; i++) {
        set_header(&f.hdr, "webhook-timestamp", bad_ts[i]);
        expect_result(&f, SIG_MALFORMED_HEADER);
    }
    set_header(&f.hdr, "webhook-timestamp", "hello");
    expect_result(&f, SIG_MALFORMED_HEADER);
    expect_err(&f, "webhook-timestamp is not a decimal unix time (5 characters)");
    set_header(&f.hdr, "webhook-timestamp", SW_TS_TEXT);

    for (size_t i = 0; i < sizeof bad_sig / sizeof bad_sig[0]; i++) {
        set_header(&f.hdr, "webhook-signature", bad_sig[i]);
        expect_result(&f, SIG_MALFORMED_HEADER);
    }
    set_header(&f.hdr, "webhook-signature", "v1a,abc");
    expect_result(&f, SIG_MALFORMED_HEADER);
    expect_err(&f, "webhook-signature has no v1, element");
    set_header(&f.hdr, "webhook-signature", "v1,Zm9vYmFy");
    expect_result(&f, SIG_MALFORMED_HEADER);
    expect_err(&f, "webhook-signature has 1 v1, element but none is base64 of 32 bytes");

    /* A malformed entry next to the valid one does not spoil it. */
    set_header(&f.hdr, "webhook-signature", "v1,@@@ garbage " SW_SIG);
    expect_result(&f, SIG_OK);

    set_header(&f.hdr, "webhook-id", "  ");
    expect_result(&f, SIG_MALFORMED_HEADER);
    expect_err(&f, "webhook-id header is empty");
    fixture_free(&f);
}

static void test_sw_sign_verify_round_trip(void **state)
{
    static const unsigned char body[] = "{\"type\":\"order.paid\",\"id\":\"ord_1\"}\n\0binary";
    struct sig_key key;
    struct fixture f;
    char err[128], sig[SIG_STANDARD_SIGNATURE_SIZE];

    (void)state;
    assert_int_equal(sig_key_decode(SIG_STANDARD_WEBHOOKS, "whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD", &key, err,
                                    sizeof err),
                     0);
    assert_int_equal(sig_sign_standard(&key, "0a9f0c1e-4b1e-4f5e-9d7e-1d2c3b4a5f60", 1700000000, body, sizeof body,
                                       sig, sizeof sig),
                     0);
    assert_int_equal(strlen(sig), 3 + 44);
    assert_memory_equal(sig, "v1,", 3);

    fixture_init(&f, SIG_STANDARD_WEBHOOKS, "", 1700000042);
    f.req.body = body; /* includes a NUL byte: verification is not string-based */
    f.req.body_len = sizeof body;
    fixture_add_key(&f, "whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD");
    set_header(&f.hdr, "webhook-id", "0a9f0c1e-4b1e-4f5e-9d7e-1d2c3b4a5f60");
    set_header(&f.hdr, "webhook-timestamp", "1700000000");
    set_header(&f.hdr, "webhook-signature", sig);
    expect_result(&f, SIG_OK);
    f.req.body_len--; /* the last byte dropped */
    expect_result(&f, SIG_MISMATCH);
    fixture_free(&f);

    /* Bad arguments and short buffers. */
    memset(sig, 'x', sizeof sig);
    assert_int_equal(sig_sign_standard(&key, "id", 1, body, 1, sig, SIG_STANDARD_SIGNATURE_SIZE - 1), -1);
    assert_string_equal(sig, "");
    assert_int_equal(sig_sign_standard(&key, "", 1, body, 1, sig, sizeof sig), -1);
    assert_int_equal(sig_sign_standard(&key, "id", -1, body, 1, sig, sizeof sig), -1);
    assert_int_equal(sig_sign_standard(NULL, "id", 1, body, 1, sig, sizeof sig), -1);
    assert_int_equal(sig_sign_standard(&key, "id", 1, body, 1, sig, sizeof sig), 0);
    sig_key_clear(&key);
}

/* ---- Stripe ---- */

static void stripe_fixture(struct fixture *f, int64_t now)
{
    fixture_init(f, SIG_STRIPE, STRIPE_BODY, now);
    fixture_add_key(f, STRIPE_SECRET);
    set_header(&f->hdr, "Stripe-Signature", STRIPE_HEADER);
}

static void test_stripe_vector(void **state)
{
    struct fixture f;

    (void)state;
    stripe_fixture(&f, STRIPE_TS);
    /* Stripe signs with the whole secret string, whsec_ included. */
    assert_int_equal(f.keys[0].len, strlen(STRIPE_SECRET));
    assert_memory_equal(f.keys[0].bytes, STRIPE_SECRET, strlen(STRIPE_SECRET));
    expect_result(&f, SIG_OK);

    /* v0 (test-mode) elements are ignored, several v1 are allowed, hex case
     * does not matter, and whitespace around elements is tolerated. */
    set_header(&f.hdr, "stripe-signature", "t=1614265330, v0=" STRIPE_HEX ", v1=" GH_HEX ", v1=" STRIPE_HEX);
    expect_result(&f, SIG_OK);
    set_header(&f.hdr, "stripe-signature",
               "v1=AF4EAD0627A34A8CCA29808E8DE9ADA8E41A92E6237C63CEF6EACF51D36CCA34,t=1614265330");
    expect_result(&f, SIG_OK);
    /* The right MAC under another scheme name does not count. */
    set_header(&f.hdr, "stripe-signature", "t=1614265330,v0=" STRIPE_HEX ",v1=" GH_HEX);
    expect_result(&f, SIG_MISMATCH);
    fixture_free(&f);
}

static void test_stripe_tampering(void **state)
{
    struct fixture f;

    (void)state;
    stripe_fixture(&f, STRIPE_TS);
    fixture_set_body(&f, "{\n  \"id\": \"evt_test_webhooK\",\n  \"object\": \"event\"\n}");
    expect_result(&f, SIG_MISMATCH);
    expect_err(&f, "no signature in Stripe-Signature matches the request (1 candidate, 1 key)");
    fixture_set_body(&f, "{\"id\": \"evt_other\", \"object\": \"event\"}"); /* replay */
    expect_result(&f, SIG_MISMATCH);
    fixture_set_body(&f, STRIPE_BODY);

    /* t is part of the signed content. */
    set_header(&f.hdr, "Stripe-Signature", "t=1614265331,v1=" STRIPE_HEX);
    expect_result(&f, SIG_MISMATCH);
    /* One hex digit of the MAC changed. */
    set_header(&f.hdr, "Stripe-Signature",
               "t=1614265330,v1=af4ead0627a34a8cca29808e8de9ada8e41a92e6237c63cef6eacf51d36cca35");
    expect_result(&f, SIG_MISMATCH);
    fixture_free(&f);

    fixture_init(&f, SIG_STRIPE, STRIPE_BODY, STRIPE_TS);
    fixture_add_key(&f, "whsec_test_secreT");
    set_header(&f.hdr, "Stripe-Signature", STRIPE_HEADER);
    expect_result(&f, SIG_MISMATCH);
    fixture_add_key(&f, STRIPE_SECRET); /* rotation: the second key matches */
    expect_result(&f, SIG_OK);
    fixture_free(&f);
}

static void test_stripe_timestamp_tolerance(void **state)
{
    struct fixture f;

    (void)state;
    stripe_fixture(&f, STRIPE_TS + TOLERANCE);
    expect_result(&f, SIG_OK);
    f.req.now = STRIPE_TS + 600;
    expect_result(&f, SIG_TIMESTAMP_OUT_OF_TOLERANCE);
    expect_err(&f, "Stripe-Signature t= is 600s in the past (tolerance 300s)");
    f.req.now = STRIPE_TS - 3600;
    expect_result(&f, SIG_TIMESTAMP_OUT_OF_TOLERANCE);
    expect_err(&f, "Stripe-Signature t= is 3600s in the future (tolerance 300s)");
    fixture_free(&f);
}

static void test_stripe_malformed_headers(void **state)
{
    static const struct {
        const char *header;
        const char *err;
    } cases[] = {
        {"v1=" STRIPE_HEX, "Stripe-Signature has no t= element"},
        {"t=1614265330", "Stripe-Signature has no v1= element"},
        {"t=1614265330,v0=" STRIPE_HEX, "Stripe-Signature has no v1= element"},
        {"t=abc,v1=" STRIPE_HEX, "Stripe-Signature t= is not a decimal unix time (3 characters)"},
        {"t=,v1=" STRIPE_HEX, "Stripe-Signature t= is not a decimal unix time (0 characters)"},
        {"t=1614265330,t=1614265330,v1=" STRIPE_HEX, "Stripe-Signature has 2 t= elements, expected one"},
        {"t=1614265330,v1=zz", "Stripe-Signature has 1 v1= element but none is 64 hex digits"},
        {"t=1614265330,v1=" STRIPE_HEX "00,v1=", "Stripe-Signature has 2 v1= elements but none is 64 hex digits"},
        {"t=1614265330 v1=" STRIPE_HEX, "Stripe-Signature t= is not a decimal unix time (78 characters)"},
        {"garbage", "Stripe-Signature has no t= element"},
        {"", "Stripe-Signature header is empty"},
    };
    struct fixture f;

    (void)state;
    stripe_fixture(&f, STRIPE_TS);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        set_header(&f.hdr, "Stripe-Signature", cases[i].header);
        expect_result(&f, SIG_MALFORMED_HEADER);
        expect_err(&f, cases[i].err);
    }
    del_header(&f.hdr, "Stripe-Signature");
    expect_result(&f, SIG_MISSING_HEADER);
    expect_err(&f, "missing Stripe-Signature header");
    /* Other schemes' headers are not consulted. */
    set_header(&f.hdr, "X-Hub-Signature-256", GH_SIG);
    expect_result(&f, SIG_MISSING_HEADER);
    fixture_free(&f);
}

/* ---- GitHub ---- */

static void github_fixture(struct fixture *f)
{
    /* GitHub signs no timestamp: any clock must do. */
    fixture_init(f, SIG_GITHUB, GH_BODY, 0);
    fixture_add_key(f, GH_SECRET);
    set_header(&f->hdr, "X-Hub-Signature-256", GH_SIG);
}

static void test_github_vector(void **state)
{
    struct fixture f;

    (void)state;
    github_fixture(&f);
    expect_result(&f, SIG_OK);
    f.req.now = INT64_MAX;
    f.params.tolerance_s = -1; /* and no tolerance applies */
    expect_result(&f, SIG_OK);
    fixture_free(&f);
}

static void test_github_tampering(void **state)
{
    struct fixture f;

    (void)state;
    github_fixture(&f);
    fixture_set_body(&f, "Hello, World?");
    expect_result(&f, SIG_MISMATCH);
    fixture_set_body(&f, "{\"action\":\"deleted\"}");
    expect_result(&f, SIG_MISMATCH);
    fixture_set_body(&f, GH_BODY);
    set_header(&f.hdr, "X-Hub-Signature-256",
               "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e18");
    expect_result(&f, SIG_MISMATCH);
    expect_err(&f, "no signature in X-Hub-Signature-256 matches the request (1 candidate, 1 key)");
    fixture_free(&f);

    fixture_init(&f, SIG_GITHUB, GH_BODY, 0);
    fixture_add_key(&f, "It's a Secret to Everybody!");
    set_header(&f.hdr, "X-Hub-Signature-256", GH_SIG);
    expect_result(&f, SIG_MISMATCH);
    fixture_add_key(&f, GH_SECRET);
    expect_result(&f, SIG_OK);
    fixture_free(&f);
}

static void test_github_malformed_headers(void **state)
{
    static const char *const bad[] = {
        GH_HEX,                    /* no prefix */
        "sha1=" GH_HEX,            /* wrong algorithm */
        "sha256=",                 /* empty MAC */
        "sha256=757107ea0eb2509f", /* short */
        "sha256=" GH_HEX "00",     /* long */
        "sha256=" GH_B64,          /* base64 is not GitHub's format */
        "sha256=" GH_HEX " sha256=" GH_HEX,
    };
    struct fixture f;

    (void)state;
    github_fixture(&f);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        set_header(&f.hdr, "X-Hub-Signature-256", bad[i]);
        expect_result(&f, SIG_MALFORMED_HEADER);
    }
    set_header(&f.hdr, "X-Hub-Signature-256", "sha1=abc");
    expect_result(&f, SIG_MALFORMED_HEADER);
    expect_err(&f, "X-Hub-Signature-256 is not sha256=<64 hex digits> (8 characters)");
    del_header(&f.hdr, "X-Hub-Signature-256");
    set_header(&f.hdr, "X-Hub-Signature", "sha1=" GH_HEX); /* the legacy SHA-1 header */
    expect_result(&f, SIG_MISSING_HEADER);
    expect_err(&f, "missing X-Hub-Signature-256 header");
    fixture_free(&f);
}

/* ---- generic hmac-sha256 ---- */

static void generic_fixture(struct fixture *f, const char *value)
{
    fixture_init(f, SIG_HMAC_SHA256, GH_BODY, 0);
    fixture_add_key(f, GH_SECRET);
    f->params.header_name = "X-Signature";
    set_header(&f->hdr, "x-signature", value);
}

static void test_generic_formats(void **state)
{
    static const char *const good[] = {
        GH_HEX,           "757107EA0EB2509FC211221CCE984B8A37570B6D7586C22C46F4379C8B043E17",
        GH_SIG,           "SHA256=" GH_HEX,
        GH_B64,           "sha256=" GH_B64,
        "  " GH_HEX "\t",
    };

    (void)state;
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        struct fixture f;

        generic_fixture(&f, good[i]);
        expect_result(&f, SIG_OK);
        fixture_free(&f);
    }
}

static void test_generic_tampering_and_errors(void **state)
{
    struct fixture f;

    (void)state;
    generic_fixture(&f, GH_HEX);
    fixture_set_body(&f, "Hello, World.");
    expect_result(&f, SIG_MISMATCH);
    expect_err(&f, "no signature in X-Signature matches the request (1 candidate, 1 key)");
    fixture_set_body(&f, GH_BODY);
    set_header(&f.hdr, "X-Signature", "eXEH6g6yUJ/CESIczphLijdXC211hsIsRvQ3nIsEPhc=");
    expect_result(&f, SIG_MISMATCH);

    set_header(&f.hdr, "X-Signature", "sha256=nope");
    expect_result(&f, SIG_MALFORMED_HEADER);
    expect_err(&f, "X-Signature is not optional sha256=<64 hex digits or base64 of 32 bytes> (11 characters)");
    set_header(&f.hdr, "X-Signature", "dXEH6g6yUJ_CESIczphLijdXC211hsIsRvQ3nIsEPhc=");
    expect_result(&f, SIG_MALFORMED_HEADER);

    del_header(&f.hdr, "X-Signature");
    expect_result(&f, SIG_MISSING_HEADER);
    expect_err(&f, "missing X-Signature header");

    set_header(&f.hdr, "X-Signature", GH_HEX);
    f.params.header_name = NULL;
    expect_result(&f, SIG_MISSING_HEADER);
    expect_err(&f, "hmac-sha256 needs the name of the signature header in the config");
    fixture_free(&f);
}

/* ---- configuration, keys, names ---- */

static void test_no_keys_fails_closed(void **state)
{
    struct fixture f;

    (void)state;
    github_fixture(&f);
    f.params.nkeys = 0;
    expect_result(&f, SIG_MISMATCH);
    expect_err(&f, "no signing secret is configured, so nothing can be verified");
    f.params.nkeys = 1;
    expect_result(&f, SIG_OK);
    fixture_free(&f);
}

static void test_key_decode(void **state)
{
    struct sig_key key;
    char err[128];

    (void)state;
    /* Unpadded base64 is restored the way the reference SDK does. */
    assert_int_equal(sig_key_decode(SIG_STANDARD_WEBHOOKS, "whsec_Zm9vYg", &key, err, sizeof err), 0);
    assert_int_equal(key.len, 4);
    assert_memory_equal(key.bytes, "foob", 4);
    sig_key_clear(&key);
    assert_null(key.bytes);
    assert_int_equal(key.len, 0);
    sig_key_clear(&key); /* twice is harmless */
    sig_key_clear(NULL);

    assert_int_equal(sig_key_decode(SIG_STANDARD_WEBHOOKS, "whsec_Zm9vYmE=", &key, err, sizeof err), 0);
    assert_int_equal(key.len, 5);
    sig_key_clear(&key);

    static const char *const bad[] = {"whsec_!!!!hunter2", "whsec_",          "",
                                      "whsec_Zm9vY",       "whsec_Zm9v Zm9v", "whsec_===="};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        key.bytes = (unsigned char *)"stale";
        key.len = 5;
        if (sig_key_decode(SIG_STANDARD_WEBHOOKS, bad[i], &key, err, sizeof err) != -1)
            fail_msg("accepted standard-webhooks secret \"%s\"", bad[i]);
        assert_null(key.bytes);
        assert_int_equal(key.len, 0);
        assert_true(strlen(err) > 0);
        assert_null(strstr(err, "hunter2"));
    }
    assert_int_equal(sig_key_decode(SIG_STANDARD_WEBHOOKS, NULL, &key, err, sizeof err), -1);
    assert_int_equal(sig_key_decode(SIG_GITHUB, "", &key, err, sizeof err), -1);
    assert_string_equal(err, "github signing secret is empty");

    /* The other schemes keep the bytes, base64-looking or not. */
    assert_int_equal(sig_key_decode(SIG_HMAC_SHA256, "Zm9v", &key, err, sizeof err), 0);
    assert_int_equal(key.len, 4);
    assert_memory_equal(key.bytes, "Zm9v", 4);
    sig_key_clear(&key);
}

/* What each scheme signs besides the body, and the content digest
 * (FIPS 180-2's "abc" vector). */
static void test_what_is_signed_and_digest(void **state)
{
    (void)state;
    assert_true(sig_signs_header(SIG_STANDARD_WEBHOOKS, "webhook-id"));
    assert_true(sig_signs_header(SIG_STANDARD_WEBHOOKS, "Webhook-Timestamp"));
    assert_false(sig_signs_header(SIG_STANDARD_WEBHOOKS, "webhook-signature"));
    assert_false(sig_signs_header(SIG_STANDARD_WEBHOOKS, "X-Type"));
    assert_false(sig_signs_header(SIG_STRIPE, "webhook-id"));
    assert_false(sig_signs_header(SIG_GITHUB, "X-GitHub-Delivery"));
    assert_false(sig_signs_header(SIG_GITHUB, "X-GitHub-Event"));
    assert_false(sig_signs_header(SIG_HMAC_SHA256, "webhook-id"));
    assert_false(sig_signs_header(SIG_STANDARD_WEBHOOKS, NULL));
    assert_true(sig_signs_timestamp(SIG_STANDARD_WEBHOOKS));
    assert_true(sig_signs_timestamp(SIG_STRIPE));
    assert_false(sig_signs_timestamp(SIG_GITHUB));
    assert_false(sig_signs_timestamp(SIG_HMAC_SHA256));

    static const unsigned char want[SIG_DIGEST_LEN] = {0xba, 0x78, 0x16, 0xbf, 0x8f, 0x01, 0xcf, 0xea,
                                                       0x41, 0x41, 0x40, 0xde, 0x5d, 0xae, 0x22, 0x23,
                                                       0xb0, 0x03, 0x61, 0xa3, 0x96, 0x17, 0x7a, 0x9c,
                                                       0xb4, 0x10, 0xff, 0x61, 0xf2, 0x00, 0x15, 0xad};
    unsigned char got[SIG_DIGEST_LEN];
    sig_content_digest((const unsigned char *)"abc", 3, got);
    assert_memory_equal(got, want, SIG_DIGEST_LEN);
}

static void test_names(void **state)
{
    static const char *const names[] = {"standard-webhooks", "stripe", "github", "hmac-sha256"};
    enum sig_scheme s = SIG_GITHUB;

    (void)state;
    for (size_t i = 0; i < 4; i++) {
        assert_int_equal(sig_scheme_parse(names[i], &s), 0);
        assert_int_equal(s, (enum sig_scheme)i);
        assert_string_equal(sig_scheme_name(s), names[i]);
    }
    assert_int_equal(sig_scheme_parse("Stripe", &s), 0);
    assert_int_equal(s, SIG_STRIPE);
    s = SIG_GITHUB;
    assert_int_equal(sig_scheme_parse("svix", &s), -1);
    assert_int_equal(sig_scheme_parse("", &s), -1);
    assert_int_equal(sig_scheme_parse("stripe ", &s), -1);
    assert_int_equal(sig_scheme_parse(NULL, &s), -1);
    assert_int_equal(s, SIG_GITHUB);
    assert_string_equal(sig_scheme_name((enum sig_scheme)42), "invalid");

    assert_string_equal(sig_result_name(SIG_OK), "ok");
    assert_string_equal(sig_result_name(SIG_MISSING_HEADER), "missing_header");
    assert_string_equal(sig_result_name(SIG_MALFORMED_HEADER), "malformed_header");
    assert_string_equal(sig_result_name(SIG_MISMATCH), "bad_signature");
    assert_string_equal(sig_result_name(SIG_TIMESTAMP_OUT_OF_TOLERANCE), "timestamp_out_of_tolerance");
    assert_string_equal(sig_result_name((enum sig_result)42), "invalid");
}

/* ---- the other presets ---- */

/* HMAC of text with key, encoded (hex or base64) after a prefix, into out:
 * computed with OpenSSL's one-shot API, not with signature.c. */
static void ref_mac(const char *digest, const char *key, const void *msg, size_t len, int base64, const char *prefix,
                    char *out, size_t outlen)
{
    unsigned char mac[64];
    size_t maclen = 0, n = strlen(prefix);

    assert_non_null(EVP_Q_mac(NULL, "HMAC", NULL, digest, NULL, key, strlen(key), msg, len, mac, sizeof mac, &maclen));
    assert_true(outlen > n);
    memcpy(out, prefix, n + 1);
    if (base64)
        assert_int_equal(enc_base64_encode(mac, maclen, out + n, outlen - n), 0);
    else
        assert_int_equal(enc_hex_encode(mac, maclen, out + n, outlen - n), 0);
}

/* Slack's published example ("Verifying requests from Slack"): a slash
 * command's form body, its timestamp and signing secret. */
#define SLACK_SECRET "8f742231b10e8888abcd99yyyzzz85a5"
#define SLACK_BODY                                                                                                    \
    "token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name="     \
    "foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%"        \
    "2Fhooks."                                                                                                        \
    "slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&trigger_id=398738663015."             \
    "47445629121.803a0bc887a14d10d2c447fce8b6703c"
#define SLACK_SIG "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503"

static void test_slack_published_vector(void **state)
{
    struct fixture f;

    (void)state;
    fixture_init(&f, SIG_SLACK, SLACK_BODY, 1531420618 + 30);
    fixture_add_key(&f, SLACK_SECRET);
    set_header(&f.hdr, "X-Slack-Request-Timestamp", "1531420618");
    set_header(&f.hdr, "X-Slack-Signature", SLACK_SIG);
    expect_result(&f, SIG_OK);
    /* five minutes later it is a replay */
    f.req.now = 1531420618 + 301;
    expect_result(&f, SIG_TIMESTAMP_OUT_OF_TOLERANCE);
    expect_err(&f, "X-Slack-Request-Timestamp is 301s in the past (tolerance 300s)");
    f.req.now = 1531420618;
    set_header(&f.hdr, "X-Slack-Request-Timestamp", "1531420619");
    expect_result(&f, SIG_MISMATCH);
    del_header(&f.hdr, "X-Slack-Request-Timestamp");
    expect_result(&f, SIG_MISSING_HEADER);
    expect_err(&f, "missing X-Slack-Request-Timestamp header");
    fixture_free(&f);
}

/* The example of Twilio's "Webhooks security" documentation: auth token
 * 12345, a URL with a query, and five form parameters; twilio-node 6.3.1's
 * getExpectedTwilioSignature() gives the same value. */
#define TWILIO_URL "https://mycompany.com/myapp.php?foo=1&bar=2"
#define TWILIO_SIG "0/KCTR6DLpKmkAf8muzZqo1nDgQ="

static void test_twilio_published_vector(void **state)
{
    struct fixture f;

    (void)state;
    /* the fields in another order than sorted, with form encoding */
    fixture_init(&f, SIG_TWILIO,
                 "To=%2B18005551212&Digits=1234&CallSid=CA1234567890ABCDE&Caller=%2B12349013030&From=%2B12349013030",
                 1700000000);
    fixture_add_key(&f, "12345");
    f.req.url = TWILIO_URL;
    f.req.content_type = "application/x-www-form-urlencoded; charset=utf-8";
    set_header(&f.hdr, "X-Twilio-Signature", TWILIO_SIG);
    expect_result(&f, SIG_OK);
    /* the URL is signed */
    f.req.url = "https://mycompany.com/myapp.php?foo=1&bar=3";
    expect_result(&f, SIG_MISMATCH);
    f.req.url = TWILIO_URL;
    /* a field changed */
    fixture_set_body(&f, "To=%2B18005551213&Digits=1234&CallSid=CA1234567890ABCDE&Caller=%2B12349013030&From="
                         "%2B12349013030");
    expect_result(&f, SIG_MISMATCH);
    fixture_free(&f);
}

/* Twilio's JSON bodies: the URL carries bodySHA256, the URL is signed. */
static void test_twilio_body_sha256(void **state)
{
    static const char body[] = "{\"MessageSid\":\"SM1\"}";
    char url[256], sig[64], hex[65];
    unsigned char d[SIG_DIGEST_LEN];
    struct fixture f;

    (void)state;
    sig_content_digest((const unsigned char *)body, strlen(body), d);
    assert_int_equal(enc_hex_encode(d, sizeof d, hex, sizeof hex), 0);
    snprintf(url, sizeof url, "https://hookd.example/v1/inbox/tw?bodySHA256=%s", hex);
    ref_mac("SHA1", "twilio-token-0123456789", url, strlen(url), 1, "", sig, sizeof sig);
    fixture_init(&f, SIG_TWILIO, body, 1700000000);
    fixture_add_key(&f, "twilio-token-0123456789");
    f.req.url = url;
    f.req.content_type = "application/json";
    set_header(&f.hdr, "X-Twilio-Signature", sig);
    expect_result(&f, SIG_OK);
    fixture_set_body(&f, "{\"MessageSid\":\"SM2\"}");
    expect_result(&f, SIG_MISMATCH);
    expect_err(&f, "the body's SHA-256 is not the signed URL's bodySHA256");
    /* a signature of the URL alone (without bodySHA256) does not sign a
     * JSON body: any body would pass (twilio-node's validateRequestWithBody
     * refuses it too) */
    snprintf(url, sizeof url, "https://hookd.example/v1/inbox/tw?x=1");
    ref_mac("SHA1", "twilio-token-0123456789", url, strlen(url), 1, "", sig, sizeof sig);
    set_header(&f.hdr, "X-Twilio-Signature", sig);
    expect_result(&f, SIG_MISMATCH);
    expect_err(&f, "the signed URL has no bodySHA256, so the body is not signed");
    snprintf(url, sizeof url, "https://hookd.example/v1/inbox/tw");
    ref_mac("SHA1", "twilio-token-0123456789", url, strlen(url), 1, "", sig, sizeof sig);
    set_header(&f.hdr, "X-Twilio-Signature", sig);
    expect_result(&f, SIG_MISMATCH);
    /* a form body is signed field by field: no bodySHA256 needed */
    fixture_set_body(&f, "MessageSid=SM1");
    f.req.content_type = "application/x-www-form-urlencoded";
    ref_mac("SHA1", "twilio-token-0123456789", "https://hookd.example/v1/inbox/twMessageSidSM1",
            strlen("https://hookd.example/v1/inbox/twMessageSidSM1"), 1, "", sig, sizeof sig);
    set_header(&f.hdr, "X-Twilio-Signature", sig);
    expect_result(&f, SIG_OK);
    fixture_free(&f);
}

/* GitHub's published vector, for the presets that sign the same way. */
static void test_body_hmac_presets_with_github_vector(void **state)
{
    static const struct {
        enum sig_scheme scheme;
        const char *header;
    } cases[] = {{SIG_META, "X-Hub-Signature-256"}, {SIG_BITBUCKET, "X-Hub-Signature"}};
    struct fixture f;

    (void)state;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        fixture_init(&f, cases[i].scheme, GH_BODY, 1700000000);
        fixture_add_key(&f, GH_SECRET);
        set_header(&f.hdr, cases[i].header, "sha256=" GH_HEX);
        expect_result(&f, SIG_OK);
        fixture_set_body(&f, "Hello, World?");
        expect_result(&f, SIG_MISMATCH);
        fixture_free(&f);
    }
}

/* One request per preset, signed by ref_mac(): accepted; a changed body,
 * another key, a missing signature refused. */
static void test_every_hmac_preset_round_trip(void **state)
{
    static const char key[] = "a-preset-secret-of-32-bytes-0001";
    static const char body[] = "{\"id\":\"e1\",\"type\":\"t\",\"webhookTimestamp\":1700000000000}";
    static const struct {
        enum sig_scheme scheme;
        const char *digest, *sig_header, *prefix, *before, *after, *ts_header, *ts;
        int base64;
    } cases[] = {
        {SIG_SHOPIFY, "SHA256", "X-Shopify-Hmac-Sha256", "", "", "", NULL, NULL, 1},
        {SIG_SQUARE, "SHA256", "X-Square-Hmacsha256-Signature", "", "https://h.example/p", "", NULL, NULL, 1},
        {SIG_ZOOM, "SHA256", "x-zm-signature", "v0=", "v0:1700000000:", "", "x-zm-request-timestamp", "1700000000", 0},
        {SIG_LINEAR, "SHA256", "Linear-Signature", "", "", "", NULL, NULL, 0},
        {SIG_INTERCOM, "SHA1", "X-Hub-Signature", "sha1=", "", "", NULL, NULL, 0},
        {SIG_TYPEFORM, "SHA256", "Typeform-Signature", "sha256=", "", "", NULL, NULL, 1},
        {SIG_HUBSPOT, "SHA256", "X-HubSpot-Signature-v3", "", "POSThttps://h.example/p", "1700000000123",
         "X-HubSpot-Request-Timestamp", "1700000000123", 1},
        {SIG_PAGERDUTY, "SHA256", "X-PagerDuty-Signature", "v1=", "", "", NULL, NULL, 0},
        {SIG_WOOCOMMERCE, "SHA256", "X-WC-Webhook-Signature", "", "", "", NULL, NULL, 1},
        {SIG_X, "SHA256", "X-Twitter-Webhooks-Signature", "sha256=", "", "", NULL, NULL, 1},
        {SIG_TWITCH, "SHA256", "Twitch-Eventsub-Message-Signature", "sha256=",
         "m-1"
         "2023-11-14T22:13:20.123456789Z",
         "", "Twitch-Eventsub-Message-Timestamp", "2023-11-14T22:13:20.123456789Z", 0},
    };
    char msg[512], sig[160];
    struct fixture f;

    (void)state;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        snprintf(msg, sizeof msg, "%s%s%s", cases[i].before, body, cases[i].after);
        ref_mac(cases[i].digest, key, msg, strlen(msg), cases[i].base64, cases[i].prefix, sig, sizeof sig);
        fixture_init(&f, cases[i].scheme, body, 1700000000 + 20);
        fixture_add_key(&f, "another-key-that-does-not-match");
        fixture_add_key(&f, key);
        f.req.url = "https://h.example/p";
        set_header(&f.hdr, cases[i].sig_header, sig);
        set_header(&f.hdr, "Twitch-Eventsub-Message-Id", "m-1");
        if (cases[i].ts_header)
            set_header(&f.hdr, cases[i].ts_header, cases[i].ts);
        expect_result(&f, SIG_OK);
        fixture_set_body(&f, "{\"id\":\"e1\",\"type\":\"u\",\"webhookTimestamp\":1700000000000}");
        expect_result(&f, SIG_MISMATCH);
        fixture_set_body(&f, body);
        del_header(&f.hdr, cases[i].sig_header);
        expect_result(&f, SIG_MISSING_HEADER);
        set_header(&f.hdr, cases[i].sig_header, sig);
        if (cases[i].ts_header || cases[i].scheme == SIG_LINEAR) {
            f.req.now = 1700000000 + 3600;
            expect_result(&f, SIG_TIMESTAMP_OUT_OF_TOLERANCE);
        }
        fixture_free(&f);
    }
}

/* Paddle and Calendly: the timestamp and the signatures share one header. */
static void test_timestamp_inside_the_signature_header(void **state)
{
    static const char key[] = "pdl_ntfset_01a-paddle-secret-key";
    static const char body[] = "{\"event_id\":\"evt_1\"}";
    char msg[256], sig[100], hdr[256];
    struct fixture f;

    (void)state;
    snprintf(msg, sizeof msg, "1700000000:%s", body);
    ref_mac("SHA256", key, msg, strlen(msg), 0, "", sig, sizeof sig);
    snprintf(hdr, sizeof hdr, "ts=1700000000;h1=%064d;h1=%s", 0, sig);
    fixture_init(&f, SIG_PADDLE, body, 1700000003);
    fixture_add_key(&f, key);
    set_header(&f.hdr, "Paddle-Signature", hdr);
    expect_result(&f, SIG_OK);
    f.req.now = 1700000006; /* Paddle's own tolerance: 5 s */
    f.params.tolerance_s = 5;
    expect_result(&f, SIG_TIMESTAMP_OUT_OF_TOLERANCE);
    set_header(&f.hdr, "Paddle-Signature", "h1=00");
    expect_result(&f, SIG_MALFORMED_HEADER);
    expect_err(&f, "Paddle-Signature has no ts= element");
    fixture_free(&f);

    snprintf(msg, sizeof msg, "1700000000.%s", body);
    ref_mac("SHA256", key, msg, strlen(msg), 0, "", sig, sizeof sig);
    snprintf(hdr, sizeof hdr, "t=1700000000,v1=%s", sig);
    fixture_init(&f, SIG_CALENDLY, body, 1700000000);
    fixture_add_key(&f, key);
    set_header(&f.hdr, "Calendly-Webhook-Signature", hdr);
    expect_result(&f, SIG_OK);
    fixture_free(&f);
}

/* Mailgun: signature, timestamp and token are fields of the JSON body. */
static void test_mailgun_signature_in_the_body(void **state)
{
    static const char key[] = "key-mailgun-signing-key-00000001";
    char sig[80], body[512];
    struct fixture f;

    (void)state;
    ref_mac("SHA256", key, "1700000000tok-0123456789abcdef", 30, 0, "", sig, sizeof sig);
    snprintf(body, sizeof body,
             "{\"signature\":{\"timestamp\":\"1700000000\",\"token\":\"tok-0123456789abcdef\",\"signature\":\"%s\"},"
             "\"event-data\":{\"id\":\"e1\",\"event\":\"delivered\"}}",
             sig);
    fixture_init(&f, SIG_MAILGUN, body, 1700000010);
    fixture_add_key(&f, key);
    expect_result(&f, SIG_OK);
    f.req.now = 1700001000;
    expect_result(&f, SIG_TIMESTAMP_OUT_OF_TOLERANCE);
    fixture_set_body(&f, "{\"signature\":{\"timestamp\":\"1700000000\",\"token\":\"t\"}}");
    expect_result(&f, SIG_MISSING_HEADER);
    fixture_set_body(&f, "not json");
    expect_result(&f, SIG_MALFORMED_HEADER);
    fixture_free(&f);
}

/* GitLab: the header is the secret; compared through digests. */
static void test_gitlab_token(void **state)
{
    struct fixture f;

    (void)state;
    fixture_init(&f, SIG_GITLAB, "{}", 1700000000);
    fixture_add_key(&f, "old-gitlab-token-000000");
    fixture_add_key(&f, "gitlab-token-0123456789");
    set_header(&f.hdr, "X-Gitlab-Token", "gitlab-token-0123456789");
    expect_result(&f, SIG_OK);
    set_header(&f.hdr, "X-Gitlab-Token", "gitlab-token-012345678");
    expect_result(&f, SIG_MISMATCH);
    set_header(&f.hdr, "X-Gitlab-Token", "gitlab-token-0123456789x");
    expect_result(&f, SIG_MISMATCH);
    del_header(&f.hdr, "X-Gitlab-Token");
    expect_result(&f, SIG_MISSING_HEADER);
    fixture_free(&f);
}

/* Twitch's RFC 3339 timestamps: offsets, fractions, junk. */
static void test_twitch_timestamp_formats(void **state)
{
    static const char key[] = "twitch-secret-0123456789";
    static const char *const bad[] = {"2023-11-14 22:13", "2023-13-14T22:13:20Z", "1700000000", "2023-11-14T22:13:20",
                                      "2023-11-14T22:13:20.Z"};
    char msg[256], sig[100];
    struct fixture f;

    (void)state;
    /* 23:13:20+01:00 is 22:13:20Z = 1700000000 */
    snprintf(msg, sizeof msg, "m-12023-11-14T23:13:20+01:00{}");
    ref_mac("SHA256", key, msg, strlen(msg), 0, "sha256=", sig, sizeof sig);
    fixture_init(&f, SIG_TWITCH, "{}", 1700000000);
    f.params.tolerance_s = 0;
    fixture_add_key(&f, key);
    set_header(&f.hdr, "Twitch-Eventsub-Message-Id", "m-1");
    set_header(&f.hdr, "Twitch-Eventsub-Message-Timestamp", "2023-11-14T23:13:20+01:00");
    set_header(&f.hdr, "Twitch-Eventsub-Message-Signature", sig);
    expect_result(&f, SIG_OK);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        set_header(&f.hdr, "Twitch-Eventsub-Message-Timestamp", bad[i]);
        expect_result(&f, SIG_MALFORMED_HEADER);
    }
    fixture_free(&f);
}

/* Verifies a Zoom request for body signed at ts; its digest into out. */
static void zoom_digest(const char *body, int64_t ts, unsigned char out[SIG_DIGEST_LEN])
{
    static const char key[] = "zoom-secret-token-000000001";
    char msg[256], sig[100], ts_text[24];
    struct fixture f;

    snprintf(ts_text, sizeof ts_text, "%lld", (long long)ts);
    snprintf(msg, sizeof msg, "v0:%s:%s", ts_text, body);
    ref_mac("SHA256", key, msg, strlen(msg), 0, "v0=", sig, sizeof sig);
    fixture_init(&f, SIG_ZOOM, body, 1700000000);
    fixture_add_key(&f, key);
    set_header(&f.hdr, "x-zm-request-timestamp", ts_text);
    set_header(&f.hdr, "x-zm-signature", sig);
    assert_int_equal(sig_verify_digest(&f.params, &f.req, out, f.err, sizeof f.err), SIG_OK);
    fixture_free(&f);
}

/* sig_verify_digest(): the SHA-256 of the rendered signed content without
 * its timestamp, so that a provider's retry (re-signed with a new
 * timestamp) has its first delivery's digest, and another body has
 * another. */
static void test_digest_names_the_event_not_the_attempt(void **state)
{
    unsigned char first[SIG_DIGEST_LEN], retry[SIG_DIGEST_LEN], other[SIG_DIGEST_LEN], want[SIG_DIGEST_LEN];

    (void)state;
    zoom_digest("{\"a\":1}", 1700000000, first);
    zoom_digest("{\"a\":1}", 1700000010, retry);
    zoom_digest("{\"a\":2}", 1700000010, other);
    sig_content_digest((const unsigned char *)"v0::{\"a\":1}", 11, want);
    assert_memory_equal(first, want, SIG_DIGEST_LEN);
    assert_memory_equal(retry, first, SIG_DIGEST_LEN);
    assert_memory_not_equal(other, first, SIG_DIGEST_LEN);
}

/* A signed header stays in the digest (Twitch signs its message id before
 * the timestamp); only the timestamp leaves it. */
static void test_digest_keeps_signed_headers(void **state)
{
    static const char key[] = "twitch-secret-0123456789";
    static const char *const stamps[] = {"2023-11-14T22:13:20Z", "2023-11-14T22:13:30Z", "2023-11-14T22:13:30Z"};
    static const char *const ids[] = {"m-1", "m-1", "m-2"};
    unsigned char got[3][SIG_DIGEST_LEN];
    char msg[256], sig[100];
    struct fixture f;

    (void)state;
    for (size_t i = 0; i < 3; i++) {
        snprintf(msg, sizeof msg, "%s%s{}", ids[i], stamps[i]);
        ref_mac("SHA256", key, msg, strlen(msg), 0, "sha256=", sig, sizeof sig);
        fixture_init(&f, SIG_TWITCH, "{}", 1700000000);
        fixture_add_key(&f, key);
        set_header(&f.hdr, "Twitch-Eventsub-Message-Id", ids[i]);
        set_header(&f.hdr, "Twitch-Eventsub-Message-Timestamp", stamps[i]);
        set_header(&f.hdr, "Twitch-Eventsub-Message-Signature", sig);
        assert_int_equal(sig_verify_digest(&f.params, &f.req, got[i], f.err, sizeof f.err), SIG_OK);
        fixture_free(&f);
    }
    assert_memory_equal(got[0], got[1], SIG_DIGEST_LEN);
    assert_memory_not_equal(got[1], got[2], SIG_DIGEST_LEN);
}

/* A spec written as the config's `scheme = hmac` builds it gives the
 * preset's verdict on the preset's requests and their tamperings. */
static void test_config_spec_reproduces_presets(void **state)
{
    static const struct sig_spec stripe = {.alg = SIG_ALG_HMAC_SHA256,
                                           .signed_template = "{timestamp}.{body}",
                                           .signature_header = "Stripe-Signature",
                                           .signature_prefix = "v1=",
                                           .multiple = true,
                                           .separators = ",",
                                           .encoding = SIG_ENC_HEX,
                                           .timestamp_header = "Stripe-Signature",
                                           .timestamp_prefix = "t="};
    static const struct sig_spec github = {.alg = SIG_ALG_HMAC_SHA256,
                                           .signed_template = "{body}",
                                           .signature_header = "X-Hub-Signature-256",
                                           .signature_prefix = "sha256=",
                                           .encoding = SIG_ENC_HEX};
    static const char *const stripe_headers[] =
        {STRIPE_HEADER, STRIPE_HEADER ",v1=00", "t=1,v1=" STRIPE_HEX, "v1=" STRIPE_HEX, "t=1614265330", "", "x"};
    static const char *const github_headers[] =
        {"sha256=" GH_HEX, "sha256=" GH_HEX " ", "SHA256=" GH_HEX, GH_HEX, "sha256=" GH_B64, "sha256=00", ""};
    struct fixture f;

    (void)state;
    stripe_fixture(&f, STRIPE_TS);
    for (size_t i = 0; i < sizeof stripe_headers / sizeof stripe_headers[0]; i++) {
        set_header(&f.hdr, "Stripe-Signature", stripe_headers[i]);
        f.params.spec = NULL;
        enum sig_result preset = sig_verify(&f.params, &f.req, f.err, sizeof f.err);
        f.params.spec = &stripe;
        assert_int_equal(sig_verify(&f.params, &f.req, f.err, sizeof f.err), preset);
    }
    fixture_free(&f);
    fixture_init(&f, SIG_GITHUB, GH_BODY, 1700000000);
    fixture_add_key(&f, GH_SECRET);
    for (size_t i = 0; i < sizeof github_headers / sizeof github_headers[0]; i++) {
        set_header(&f.hdr, "X-Hub-Signature-256", github_headers[i]);
        f.params.spec = NULL;
        enum sig_result preset = sig_verify(&f.params, &f.req, f.err, sizeof f.err);
        f.params.spec = &github;
        assert_int_equal(sig_verify(&f.params, &f.req, f.err, sizeof f.err), preset);
    }
    fixture_free(&f);
}

/* The table itself: every row named, parsable, its template valid, a
 * signature location, a line for the README. */
static void test_preset_table(void **state)
{
    char err[200];

    (void)state;
    for (int s = 0; s < SIG_SCHEME_COUNT; s++) {
        const struct sig_preset *p = sig_preset_get((enum sig_scheme)s);
        enum sig_scheme back;

        assert_non_null(p);
        assert_int_equal(p->scheme, s);
        assert_int_equal(sig_scheme_parse(p->name, &back), 0);
        assert_int_equal(back, s);
        assert_int_equal(sig_template_check(p->spec.signed_template, err, sizeof err), 0);
        assert_true(p->verified != NULL && p->verified[0] != '\0');
        assert_true(s == SIG_HMAC || s == SIG_HMAC_SHA256 || p->spec.signature_header != NULL ||
                    p->spec.signature_json != NULL);
        /* a timestamp that is read is also signed */
        if (p->spec.timestamp_header != NULL)
            assert_true(sig_spec_signs_timestamp(&p->spec));
    }
    assert_null(sig_preset_get(SIG_SCHEME_COUNT));
    assert_int_equal(sig_template_check("{timestamp}.{body}{header:X-Id}{json:a.b}{url}{method}{form}", err,
                                        sizeof err),
                     0);
    assert_int_equal(sig_template_check("{bodyy}", err, sizeof err), -1);
    assert_int_equal(sig_template_check("{body", err, sizeof err), -1);
    assert_int_equal(sig_template_check("{json:a..b}", err, sizeof err), -1);
    assert_int_equal(sig_template_check("", err, sizeof err), -1);
    /* a header name the verifier cannot render is refused at load, not on
     * every request */
    {
        char tpl[JSONPATH_MAX_LEN + 32];
        int n = snprintf(tpl, sizeof tpl, "{header:%0*d}", JSONPATH_MAX_LEN, 0);

        assert_true(n > 0 && (size_t)n < sizeof tpl);
        assert_int_equal(sig_template_check(tpl, err, sizeof err), 0);
        snprintf(tpl, sizeof tpl, "{header:%0*d}", JSONPATH_MAX_LEN + 1, 0);
        assert_int_equal(sig_template_check(tpl, err, sizeof err), -1);
    }
}

/* Twilio's X-Twilio-Webhooks-Signature-Settings: algorithm=HMAC_SHA256. */
static void test_twilio_sha256_settings(void **state)
{
    static const char body[] = "Body=hi&From=%2B15551234567";
    static const char signed_text[] = "https://h.example/p"
                                      "Bodyhi"
                                      "From+15551234567";
    char sig[64];
    struct fixture f;

    (void)state;
    ref_mac("SHA256", "twilio-shared-key-0123456789", signed_text, strlen(signed_text), 1, "", sig, sizeof sig);
    fixture_init(&f, SIG_TWILIO, body, 1700000000);
    fixture_add_key(&f, "twilio-shared-key-0123456789");
    f.req.url = "https://h.example/p";
    f.req.content_type = "application/x-www-form-urlencoded";
    set_header(&f.hdr, "X-Twilio-Signature", sig);
    expect_result(&f, SIG_MALFORMED_HEADER); /* a SHA-256 MAC is no SHA-1 MAC */
    set_header(&f.hdr, "X-Twilio-Webhooks-Signature-Settings", "key=webhooks_sharedkey_1, algorithm=HMAC_SHA256");
    expect_result(&f, SIG_OK);
    set_header(&f.hdr, "X-Twilio-Webhooks-Signature-Settings", "algorithm=HMAC_MD5");
    expect_result(&f, SIG_MALFORMED_HEADER);
    fixture_free(&f);
}

/* HubSpot v3 signs its URI with some reserved characters decoded. */
static void test_hubspot_url_decoding(void **state)
{
    static const char key[] = "hubspot-client-secret-0001";
    static const char signed_text[] = "POSThttps://h.example/p?a=:/x%20y&b=@!{}1700000000123";
    char sig[64];
    struct fixture f;

    (void)state;
    ref_mac("SHA256", key, signed_text, strlen(signed_text), 1, "", sig, sizeof sig);
    fixture_init(&f, SIG_HUBSPOT, "{}", 1700000000);
    fixture_add_key(&f, key);
    f.req.url = "https://h.example/p?a=%3A%2fx%20y&b=%40%21";
    set_header(&f.hdr, "X-HubSpot-Request-Timestamp", "1700000000123");
    set_header(&f.hdr, "X-HubSpot-Signature-v3", sig);
    expect_result(&f, SIG_OK);
    f.req.url = "https://h.example/p?a=%3A%2fx%20y&b=%40%22";
    expect_result(&f, SIG_MISMATCH);
    fixture_free(&f);
}

/* Twilio signs the URL as configured: with or without the default port. */
static void test_twilio_port_variants(void **state)
{
    static const char *const urls[] = {"https://mycompany.com:443/myapp.php?foo=1&bar=2",
                                       "https://mycompany.com/myapp.php?foo=1&bar=2"};
    char sig[64];
    struct fixture f;

    (void)state;
    fixture_init(&f, SIG_TWILIO,
                 "CallSid=CA1234567890ABCDE&Caller=%2B12349013030&Digits=1234&From=%2B12349013030&To=%2B18005551212",
                 1700000000);
    fixture_add_key(&f, "12345");
    f.req.content_type = "application/x-www-form-urlencoded";
    /* the documented signature (over the URL without a port), received on the URL with :443 */
    f.req.url = urls[0];
    set_header(&f.hdr, "X-Twilio-Signature", TWILIO_SIG);
    expect_result(&f, SIG_OK);
    /* any port is removed for the second try, as twilio-node's removePort() does */
    f.req.url = "https://mycompany.com:8443/myapp.php?foo=1&bar=2";
    expect_result(&f, SIG_OK);
    /* another path is another URL */
    f.req.url = "https://mycompany.com:443/myapp.php?foo=1&bar=3";
    expect_result(&f, SIG_MISMATCH);
    /* signed over the URL with :443, received without it */
    {
        static const char text[] =
            "https://mycompany.com:443/myapp.php?foo=1&bar=2"
            "CallSidCA1234567890ABCDECaller+12349013030Digits1234From+12349013030To+18005551212";
        ref_mac("SHA1", "12345", text, strlen(text), 1, "", sig, sizeof sig);
    }
    f.req.url = urls[1];
    set_header(&f.hdr, "X-Twilio-Signature", sig);
    expect_result(&f, SIG_OK);
    /* http and IPv6 with user info */
    f.req.url = "http://user@[::1]/myapp.php";
    expect_result(&f, SIG_MISMATCH);
    fixture_free(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sw_sign_vector),
        cmocka_unit_test(test_sw_verify_vector),
        cmocka_unit_test(test_sw_multiple_signatures),
        cmocka_unit_test(test_sw_tampering),
        cmocka_unit_test(test_sw_timestamp_tolerance),
        cmocka_unit_test(test_sw_key_rotation),
        cmocka_unit_test(test_sw_missing_headers),
        cmocka_unit_test(test_sw_malformed_headers),
        cmocka_unit_test(test_sw_sign_verify_round_trip),
        cmocka_unit_test(test_stripe_vector),
        cmocka_unit_test(test_stripe_tampering),
        cmocka_unit_test(test_stripe_timestamp_tolerance),
        cmocka_unit_test(test_stripe_malformed_headers),
        cmocka_unit_test(test_github_vector),
        cmocka_unit_test(test_github_tampering),
        cmocka_unit_test(test_github_malformed_headers),
        cmocka_unit_test(test_generic_formats),
        cmocka_unit_test(test_generic_tampering_and_errors),
        cmocka_unit_test(test_no_keys_fails_closed),
        cmocka_unit_test(test_key_decode),
        cmocka_unit_test(test_what_is_signed_and_digest),
        cmocka_unit_test(test_names),
        cmocka_unit_test(test_slack_published_vector),
        cmocka_unit_test(test_twilio_published_vector),
        cmocka_unit_test(test_twilio_body_sha256),
        cmocka_unit_test(test_body_hmac_presets_with_github_vector),
        cmocka_unit_test(test_every_hmac_preset_round_trip),
        cmocka_unit_test(test_timestamp_inside_the_signature_header),
        cmocka_unit_test(test_mailgun_signature_in_the_body),
        cmocka_unit_test(test_gitlab_token),
        cmocka_unit_test(test_twitch_timestamp_formats),
        cmocka_unit_test(test_digest_names_the_event_not_the_attempt),
        cmocka_unit_test(test_digest_keeps_signed_headers),
        cmocka_unit_test(test_config_spec_reproduces_presets),
        cmocka_unit_test(test_preset_table),
        cmocka_unit_test(test_twilio_sha256_settings),
        cmocka_unit_test(test_hubspot_url_decoding),
        cmocka_unit_test(test_twilio_port_variants),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
