/*
 * test_signature_pk.c — unit tests for engine/core/signature_pk.c (the
 * sendgrid and discord presets), through the public path: keys decoded by
 * sig_public_key_decode(), requests checked by sig_verify() with the
 * presets' specs (signature.c), which call signature_pk.c's operations.
 * Vectors:
 *   - SendGrid: the vector every official SendGrid SDK tests its
 *     EventWebhook verifier with (sendgrid-nodejs packages/eventwebhook,
 *     sendgrid-python test/unit/test_eventwebhook.py, sendgrid-java, …): key,
 *     payload, timestamp 1588788367 and signature, and the SDKs' "failing"
 *     key and signature.
 *   - Discord publishes no vector: this one signs with the RFC 8032 TEST 1
 *     key (public d75a9801…511a), "1700000000" + a webhook-event PING body;
 *     the signature was made with Python's cryptography and checked with
 *     discord-interactions 4.4.0's verifyKey (tests/node) before it was
 *     written here.
 * Then every tampering (body byte, timestamp text, key, signature), key
 * rotation, missing and malformed headers, tolerance, and key decoding
 * (base64, PEM, wrong curve, wrong type, bad text).
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

#include "signature_pk.h"

/* The two presets, as the unit under test sees them. */
enum sigpk_kind { SIGPK_SENDGRID, SIGPK_DISCORD };

static enum sig_scheme scheme_of(enum sigpk_kind kind)
{
    return kind == SIGPK_SENDGRID ? SIG_SENDGRID : SIG_DISCORD;
}

static const char *sigpk_signature_header(enum sigpk_kind kind)
{
    return kind == SIGPK_SENDGRID ? "X-Twilio-Email-Event-Webhook-Signature" : "X-Signature-Ed25519";
}

static const char *sigpk_timestamp_header(enum sigpk_kind kind)
{
    return kind == SIGPK_SENDGRID ? "X-Twilio-Email-Event-Webhook-Timestamp" : "X-Signature-Timestamp";
}

static int sigpk_key_decode(enum sigpk_kind kind, const char *text, struct sig_key *out, char *err, size_t errlen)
{
    return sig_public_key_decode(scheme_of(kind), text, out, err, errlen);
}

#define SG_KEY                                                                                                        \
    "MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEEDr2LjtURuePQzplybdC+u4CwrqDqBaWjcMMsTbhdbcwHBcepxo7yAQGhHPTnlvFYPAZFceEu/"  \
    "1FwCM/QmGUhA=="
#define SG_FAILING_KEY                                                                                                \
    "MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEqTxd43gyp8IOEto2LdIfjRQrIbsd4SXZkLW6jDutdhXSJCWHw8REntlo7aNDthvj+y7GjUuFDb/" \
    "R1NGe1OPzpA=="
#define SG_SIG "MEUCIQCtIHJeH93Y+qpYeWrySphQgpNGNr/U+UyUlBkU6n7RAwIgJTz2C+8a8xonZGi6BpSzoQsbVRamr2nlxFDWYNH2j/0="
#define SG_FAILING_SIG                                                                                                \
    "MEUCIQCtIHJeH93Y+qpYeWrySphQgpNGNr/U+UyUlBkU6n7RAwIgJTz2C+8a8xonZGi6BpSzoQsbVRamr2nlxFDWYNH3j/0="
#define SG_TS "1588788367"
#define SG_TS_NUM 1588788367
#define SG_BODY "{\"category\":\"example_payload\",\"event\":\"test_event\",\"message_id\":\"message_id\"}"
/* An Ed25519 SubjectPublicKeyInfo: a key, but not SendGrid's kind. */
#define ED25519_SPKI "MCowBQYDK2VwAyEA11qYAYKxCrfVS/7TyWQHOg7hcvPapiMlrwIaaPcHURo="

#define DC_KEY "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a"
/* RFC 8032 TEST 2's public key: a valid key that did not sign. */
#define DC_OTHER_KEY "3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c"
#define DC_TS "1700000000"
#define DC_TS_NUM 1700000000
#define DC_BODY "{\"version\":1,\"application_id\":\"1234567890\",\"type\":0}"
#define DC_SIG                                                                                                        \
    "6e2fa919d26ffb7e31b89210817d5d6ac41e1e9f8ab386b40fc4d897ae104ae9618d3011a1b5fbe44a64824219fd4db22e0e08aa232db3c" \
    "8e"                                                                                                              \
    "ac65e3ce836360d"

#define TOLERANCE 300

struct headers {
    const char *name[4];
    const char *value[4];
    size_t n;
};

static const char *lookup(void *arg, const char *name)
{
    struct headers *h = arg;
    for (size_t i = 0; i < h->n; i++)
        if (strcasecmp(h->name[i], name) == 0)
            return h->value[i];
    return NULL;
}

struct keys {
    struct sig_key k[3];
    size_t n;
};

static void add_key(struct keys *ks, enum sigpk_kind kind, const char *text)
{
    char err[256];
    assert_int_equal(sigpk_key_decode(kind, text, &ks->k[ks->n], err, sizeof err), 0);
    ks->n++;
}

static void free_keys(struct keys *ks)
{
    for (size_t i = 0; i < ks->n; i++)
        sig_key_clear(&ks->k[i]);
    ks->n = 0;
}

static enum sig_result check(enum sigpk_kind kind, struct keys *ks, const char *sig, const char *ts, const char *body,
                             int64_t now, char *err, size_t errlen)
{
    struct headers h = {{0}, {0}, 0};
    if (sig) {
        h.name[h.n] = sigpk_signature_header(kind);
        h.value[h.n++] = sig;
    }
    if (ts) {
        h.name[h.n] = sigpk_timestamp_header(kind);
        h.value[h.n++] = ts;
    }
    struct sig_request req = {(const unsigned char *)body, strlen(body), lookup, &h, now, "POST", "",
                              "application/json"};
    struct sig_params params = {scheme_of(kind), ks->k, ks->n, TOLERANCE, NULL, NULL};
    return sig_verify(&params, &req, err, errlen);
}

static void test_sendgrid_sdk_vector(void **state)
{
    (void)state;
    struct keys ks = {0};
    char err[256];
    add_key(&ks, SIGPK_SENDGRID, SG_KEY);
    assert_int_equal(check(SIGPK_SENDGRID, &ks, SG_SIG, SG_TS, SG_BODY, SG_TS_NUM, err, sizeof err), SIG_OK);
    assert_string_equal(err, "");
    /* within the tolerance either way */
    assert_int_equal(check(SIGPK_SENDGRID, &ks, SG_SIG, SG_TS, SG_BODY, SG_TS_NUM + TOLERANCE, err, sizeof err),
                     SIG_OK);
    assert_int_equal(check(SIGPK_SENDGRID, &ks, SG_SIG, SG_TS, SG_BODY, SG_TS_NUM - TOLERANCE, err, sizeof err),
                     SIG_OK);
    free_keys(&ks);
}

static void test_sendgrid_tampering(void **state)
{
    (void)state;
    struct keys ks = {0};
    char err[256];
    char body[] = SG_BODY;
    add_key(&ks, SIGPK_SENDGRID, SG_KEY);
    /* the SDKs' failing signature, and their changed timestamp */
    assert_int_equal(check(SIGPK_SENDGRID, &ks, SG_FAILING_SIG, SG_TS, SG_BODY, SG_TS_NUM, err, sizeof err),
                     SIG_MISMATCH);
    assert_non_null(strstr(err, "X-Twilio-Email-Event-Webhook-Signature"));
    assert_int_equal(check(SIGPK_SENDGRID, &ks, SG_SIG, "1388788367", SG_BODY, 1388788367, err, sizeof err),
                     SIG_MISMATCH);
    /* one body byte */
    body[3] ^= 1;
    assert_int_equal(check(SIGPK_SENDGRID, &ks, SG_SIG, SG_TS, body, SG_TS_NUM, err, sizeof err), SIG_MISMATCH);
    free_keys(&ks);
    /* the SDKs' failing key */
    add_key(&ks, SIGPK_SENDGRID, SG_FAILING_KEY);
    assert_int_equal(check(SIGPK_SENDGRID, &ks, SG_SIG, SG_TS, SG_BODY, SG_TS_NUM, err, sizeof err), SIG_MISMATCH);
    /* rotation: the right key second */
    add_key(&ks, SIGPK_SENDGRID, SG_KEY);
    assert_int_equal(check(SIGPK_SENDGRID, &ks, SG_SIG, SG_TS, SG_BODY, SG_TS_NUM, err, sizeof err), SIG_OK);
    free_keys(&ks);
}

static void test_sendgrid_timestamp_and_headers(void **state)
{
    (void)state;
    struct keys ks = {0};
    char err[256];
    add_key(&ks, SIGPK_SENDGRID, SG_KEY);
    assert_int_equal(check(SIGPK_SENDGRID, &ks, SG_SIG, SG_TS, SG_BODY, SG_TS_NUM + TOLERANCE + 1, err, sizeof err),
                     SIG_TIMESTAMP_OUT_OF_TOLERANCE);
    assert_non_null(strstr(err, "in the past"));
    assert_int_equal(check(SIGPK_SENDGRID, &ks, SG_SIG, SG_TS, SG_BODY, SG_TS_NUM - TOLERANCE - 1, err, sizeof err),
                     SIG_TIMESTAMP_OUT_OF_TOLERANCE);
    assert_non_null(strstr(err, "in the future"));
    /* a stale timestamp with a wrong signature is a bad signature */
    assert_int_equal(check(SIGPK_SENDGRID, &ks, SG_FAILING_SIG, SG_TS, SG_BODY, SG_TS_NUM + 10 * TOLERANCE, err,
                           sizeof err),
                     SIG_MISMATCH);
    assert_int_equal(check(SIGPK_SENDGRID, &ks, NULL, SG_TS, SG_BODY, SG_TS_NUM, err, sizeof err), SIG_MISSING_HEADER);
    assert_int_equal(check(SIGPK_SENDGRID, &ks, SG_SIG, NULL, SG_BODY, SG_TS_NUM, err, sizeof err),
                     SIG_MISSING_HEADER);
    assert_non_null(strstr(err, "X-Twilio-Email-Event-Webhook-Timestamp"));
    assert_int_equal(check(SIGPK_SENDGRID, &ks, "not base64!", SG_TS, SG_BODY, SG_TS_NUM, err, sizeof err),
                     SIG_MALFORMED_HEADER);
    assert_int_equal(check(SIGPK_SENDGRID, &ks, SG_SIG, "15887x8367", SG_BODY, SG_TS_NUM, err, sizeof err),
                     SIG_MALFORMED_HEADER);
    assert_int_equal(check(SIGPK_SENDGRID, &ks, "  ", SG_TS, SG_BODY, SG_TS_NUM, err, sizeof err),
                     SIG_MALFORMED_HEADER);
    /* base64 that is not a DER signature: well-formed, does not verify */
    assert_int_equal(check(SIGPK_SENDGRID, &ks, "AAAAAAAAAAAAAAAA", SG_TS, SG_BODY, SG_TS_NUM, err, sizeof err),
                     SIG_MISMATCH);
    free_keys(&ks);
}

static void test_discord_vector_and_tampering(void **state)
{
    (void)state;
    struct keys ks = {0};
    char err[256];
    char body[] = DC_BODY, sig[] = DC_SIG;
    add_key(&ks, SIGPK_DISCORD, DC_KEY);
    assert_int_equal(check(SIGPK_DISCORD, &ks, DC_SIG, DC_TS, DC_BODY, DC_TS_NUM, err, sizeof err), SIG_OK);
    body[5] ^= 1;
    assert_int_equal(check(SIGPK_DISCORD, &ks, DC_SIG, DC_TS, body, DC_TS_NUM, err, sizeof err), SIG_MISMATCH);
    assert_non_null(strstr(err, "Ed25519"));
    assert_int_equal(check(SIGPK_DISCORD, &ks, DC_SIG, "1700000001", DC_BODY, DC_TS_NUM, err, sizeof err),
                     SIG_MISMATCH);
    sig[10] = sig[10] == '0' ? '1' : '0';
    assert_int_equal(check(SIGPK_DISCORD, &ks, sig, DC_TS, DC_BODY, DC_TS_NUM, err, sizeof err), SIG_MISMATCH);
    /* upper-case hex is the same signature */
    char upper[sizeof DC_SIG];
    for (size_t i = 0; i < sizeof upper; i++)
        upper[i] = (char)((DC_SIG[i] >= 'a' && DC_SIG[i] <= 'f') ? DC_SIG[i] - 32 : DC_SIG[i]);
    assert_int_equal(check(SIGPK_DISCORD, &ks, upper, DC_TS, DC_BODY, DC_TS_NUM, err, sizeof err), SIG_OK);
    free_keys(&ks);
    add_key(&ks, SIGPK_DISCORD, DC_OTHER_KEY);
    assert_int_equal(check(SIGPK_DISCORD, &ks, DC_SIG, DC_TS, DC_BODY, DC_TS_NUM, err, sizeof err), SIG_MISMATCH);
    add_key(&ks, SIGPK_DISCORD, DC_KEY); /* rotation */
    assert_int_equal(check(SIGPK_DISCORD, &ks, DC_SIG, DC_TS, DC_BODY, DC_TS_NUM, err, sizeof err), SIG_OK);
    assert_int_equal(check(SIGPK_DISCORD, &ks, DC_SIG, DC_TS, DC_BODY, DC_TS_NUM + 3600, err, sizeof err),
                     SIG_TIMESTAMP_OUT_OF_TOLERANCE);
    assert_int_equal(check(SIGPK_DISCORD, &ks, DC_SIG, NULL, DC_BODY, DC_TS_NUM, err, sizeof err), SIG_MISSING_HEADER);
    assert_int_equal(check(SIGPK_DISCORD, &ks, NULL, DC_TS, DC_BODY, DC_TS_NUM, err, sizeof err), SIG_MISSING_HEADER);
    /* hex of the wrong length is no Ed25519 signature; text that is not hex is malformed */
    assert_int_equal(check(SIGPK_DISCORD, &ks, "abcd", DC_TS, DC_BODY, DC_TS_NUM, err, sizeof err), SIG_MISMATCH);
    assert_int_equal(check(SIGPK_DISCORD, &ks, "not hex", DC_TS, DC_BODY, DC_TS_NUM, err, sizeof err),
                     SIG_MALFORMED_HEADER);
    free_keys(&ks);
    /* no key at all fails closed */
    assert_int_equal(check(SIGPK_DISCORD, &ks, DC_SIG, DC_TS, DC_BODY, DC_TS_NUM, err, sizeof err), SIG_MISMATCH);
}

static void test_key_decode(void **state)
{
    (void)state;
    struct sig_key k = {0};
    char err[256];
    static const char pem[] = "-----BEGIN PUBLIC KEY-----\n"
                              "MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEEDr2LjtURuePQzplybdC+u4CwrqD\n"
                              "qBaWjcMMsTbhdbcwHBcepxo7yAQGhHPTnlvFYPAZFceEu/1FwCM/QmGUhA==\n"
                              "-----END PUBLIC KEY-----\n";
    assert_int_equal(sigpk_key_decode(SIGPK_SENDGRID, pem, &k, err, sizeof err), 0);
    assert_int_equal(k.len, 91); /* a P-256 SubjectPublicKeyInfo */
    sig_key_clear(&k);
    assert_int_equal(sigpk_key_decode(SIGPK_SENDGRID, ED25519_SPKI, &k, err, sizeof err), -1);
    assert_non_null(strstr(err, "P-256"));
    assert_null(k.bytes);
    assert_int_equal(sigpk_key_decode(SIGPK_SENDGRID, "bm90IGEga2V5", &k, err, sizeof err), -1);
    assert_int_equal(sigpk_key_decode(SIGPK_SENDGRID, "%%%", &k, err, sizeof err), -1);
    assert_int_equal(sigpk_key_decode(SIGPK_SENDGRID, "", &k, err, sizeof err), -1);
    /* a discord key is not a sendgrid key, and the other way round */
    assert_int_equal(sigpk_key_decode(SIGPK_SENDGRID, DC_KEY, &k, err, sizeof err), -1);
    assert_int_equal(sigpk_key_decode(SIGPK_DISCORD, SG_KEY, &k, err, sizeof err), -1);
    assert_null(strstr(err, "MFkw")); /* the text is never quoted */
    assert_int_equal(sigpk_key_decode(SIGPK_DISCORD, DC_KEY "00", &k, err, sizeof err), -1);
    assert_int_equal(sigpk_key_decode(SIGPK_DISCORD,
                                      "zz5a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a", &k, err,
                                      sizeof err),
                     -1);
    assert_int_equal(sigpk_key_decode(SIGPK_DISCORD, DC_KEY, &k, err, sizeof err), 0);
    assert_int_equal(k.len, 32);
    sig_key_clear(&k);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sendgrid_sdk_vector),
        cmocka_unit_test(test_sendgrid_tampering),
        cmocka_unit_test(test_sendgrid_timestamp_and_headers),
        cmocka_unit_test(test_discord_vector_and_tampering),
        cmocka_unit_test(test_key_decode),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
