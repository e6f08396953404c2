/*
 * test_encoding.c — unit tests for engine/encoding.c: the RFC 4648 base64
 * test vectors in both directions, hex in both letter cases, every kind of
 * malformed input the decoders must refuse, and buffer bounds. Decoded output
 * goes into buffers of exactly the decoded size followed by guard bytes, so
 * any write past the real length (the EVP_DecodeBlock padding trap) fails.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <ctype.h>
#include <string.h>

#include <cmocka.h>

#include "encoding.h"

struct b64_vector {
    const char *plain;
    const char *encoded;
};

/* RFC 4648, section 10. */
static const struct b64_vector rfc4648[] = {
    {"", ""},
    {"f", "Zg=="},
    {"fo", "Zm8="},
    {"foo", "Zm9v"},
    {"foob", "Zm9vYg=="},
    {"fooba", "Zm9vYmE="},
    {"foobar", "Zm9vYmFy"},
};

#define NVECTORS (sizeof rfc4648 / sizeof rfc4648[0])

#define GUARD_LEN 8
#define GUARD_BYTE 0xa5

/* Decodes into a buffer of exactly `cap` bytes followed by guard bytes and
 * fails the test if the decoder wrote into the guard. A guard, not ASan, is
 * what catches this: the writes happen inside libcrypto, which is not
 * instrumented. Returns the enc_base64_decode() result; the caller frees
 * *out. */
static int decode_exact(const char *in, size_t inlen, size_t cap, unsigned char **out, size_t *outlen)
{
    int rc;

    *out = malloc(cap + GUARD_LEN);
    assert_non_null(*out);
    memset(*out, GUARD_BYTE, cap + GUARD_LEN);
    rc = enc_base64_decode(in, inlen, *out, cap, outlen);
    for (size_t i = cap; i < cap + GUARD_LEN; i++)
        if ((*out)[i] != GUARD_BYTE)
            fail_msg("decoding \"%.*s\" wrote past %zu bytes", (int)inlen, in, cap);
    return rc;
}

static void test_base64_encode_rfc4648(void **state)
{
    (void)state;
    for (size_t i = 0; i < NVECTORS; i++) {
        size_t n = strlen(rfc4648[i].plain);
        size_t cap = ENC_BASE64_LEN(n) + 1;
        char *out = malloc(cap);

        assert_non_null(out);
        assert_int_equal(enc_base64_encode((const unsigned char *)rfc4648[i].plain, n, out, cap), 0);
        assert_string_equal(out, rfc4648[i].encoded);
        free(out);
    }
}

static void test_base64_decode_rfc4648_exact_buffers(void **state)
{
    (void)state;
    for (size_t i = 0; i < NVECTORS; i++) {
        const char *enc = rfc4648[i].encoded;
        size_t want = strlen(rfc4648[i].plain);
        unsigned char *out;
        size_t outlen = 99;

        assert_int_equal(decode_exact(enc, strlen(enc), want, &out, &outlen), 0);
        assert_int_equal(outlen, want);
        assert_memory_equal(out, rfc4648[i].plain, want);
        free(out);
    }
}

static void test_base64_decode_refuses_small_buffer(void **state)
{
    unsigned char *out;
    size_t outlen = 99;

    (void)state;
    /* "Zm9vYg==" is 4 bytes: 3 must be refused, not truncated. */
    assert_int_equal(decode_exact("Zm9vYg==", 8, 3, &out, &outlen), -1);
    assert_int_equal(outlen, 0);
    free(out);
    assert_int_equal(decode_exact("Zm9v", 4, 2, &out, &outlen), -1);
    free(out);
}

static void test_base64_decode_rejects_malformed(void **state)
{
    static const char *const bad[] = {
        "Zg=",       /* not a multiple of 4 */
        "Zg",        /* unpadded */
        "Zm9vY",     /* 5 characters */
        "Zg=a",      /* '=' before the end */
        "Z===",      /* three '=' */
        "====",      /* nothing but padding */
        "Zm=v",      /* '=' in the middle of a group */
        "Zm9v Zm9v", /* whitespace inside */
        " Zm9",      /* leading whitespace (EVP_DecodeBlock would skip it) */
        "Zm9\n",     /* trailing newline */
        "Zm-v",      /* URL-safe alphabet */
        "Zm_v",      /* URL-safe alphabet */
        "Zm9v=Zm9",  /* padding then more data */
        "Zm9!",      /* punctuation */
    };
    unsigned char out[16];

    (void)state;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        size_t outlen = 99;

        if (enc_base64_decode(bad[i], strlen(bad[i]), out, sizeof out, &outlen) != -1)
            fail_msg("accepted malformed base64 \"%s\"", bad[i]);
        assert_int_equal(outlen, 0);
    }
}

static void test_base64_decode_rejects_embedded_nul(void **state)
{
    unsigned char out[8];
    size_t outlen;

    (void)state;
    assert_int_equal(enc_base64_decode("Zm\0v", 4, out, sizeof out, &outlen), -1);
}

static void test_base64_decode_accepts_nonzero_trailing_bits(void **state)
{
    unsigned char out[1];
    size_t outlen = 0;

    (void)state;
    /* "Zh==" differs from "Zg==" only in bits that padding discards. */
    assert_int_equal(enc_base64_decode("Zh==", 4, out, sizeof out, &outlen), 0);
    assert_int_equal(outlen, 1);
    assert_int_equal(out[0], 'f');
}

static void test_base64_round_trip_binary(void **state)
{
    unsigned char in[200];

    (void)state;
    for (size_t i = 0; i < sizeof in; i++)
        in[i] = (unsigned char)(255 - i * 7);
    for (size_t n = 0; n <= sizeof in; n++) {
        char enc[ENC_BASE64_LEN(sizeof in) + 1];
        unsigned char *dec;
        size_t declen = 0;

        assert_int_equal(enc_base64_encode(in, n, enc, ENC_BASE64_LEN(n) + 1), 0);
        assert_int_equal(strlen(enc), ENC_BASE64_LEN(n));
        assert_int_equal(decode_exact(enc, strlen(enc), n, &dec, &declen), 0);
        assert_int_equal(declen, n);
        assert_memory_equal(dec, in, n);
        free(dec);
    }
}

static void test_base64_encode_refuses_small_buffer(void **state)
{
    char out[8];

    (void)state;
    memset(out, 'x', sizeof out);
    /* "foob" needs 8 characters plus the NUL. */
    assert_int_equal(enc_base64_encode((const unsigned char *)"foob", 4, out, 8), -1);
    assert_int_equal(out[0], 'x');
    assert_int_equal(enc_base64_encode((const unsigned char *)"foo", 3, out, 5), 0);
    assert_string_equal(out, "Zm9v");
}

static void test_hex_encode(void **state)
{
    static const unsigned char in[] = {0x00, 0x01, 0xab, 0xff, 0x7e};
    char out[11];

    (void)state;
    assert_int_equal(enc_hex_encode(in, sizeof in, out, sizeof out), 0);
    assert_string_equal(out, "0001abff7e");
    assert_int_equal(enc_hex_encode(in, sizeof in, out, sizeof out - 1), -1);
    assert_int_equal(enc_hex_encode(in, 0, out, 1), 0);
    assert_string_equal(out, "");
}

static void test_hex_decode_either_case(void **state)
{
    static const unsigned char want[] = {0x00, 0x01, 0xab, 0xff, 0xc3};
    unsigned char *out = malloc(sizeof want);
    size_t outlen = 0;

    (void)state;
    assert_non_null(out);
    assert_int_equal(enc_hex_decode("0001AbfFC3", 10, out, sizeof want, &outlen), 0);
    assert_int_equal(outlen, sizeof want);
    assert_memory_equal(out, want, sizeof want);
    assert_int_equal(enc_hex_decode("", 0, out, 0, &outlen), 0);
    assert_int_equal(outlen, 0);
    free(out);
}

static void test_hex_decode_rejects_malformed(void **state)
{
    static const char *const bad[] = {"abc", "0g", "g0", " 0", "0 ", "+1", "0x", "zz", "-1"};
    unsigned char out[8];

    (void)state;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        size_t outlen = 99;

        if (enc_hex_decode(bad[i], strlen(bad[i]), out, sizeof out, &outlen) != -1)
            fail_msg("accepted malformed hex \"%s\"", bad[i]);
        assert_int_equal(outlen, 0);
    }
    assert_int_equal(enc_hex_decode("a\0", 2, out, sizeof out, &(size_t){0}), -1);
}

static void test_hex_value_of_every_byte(void **state)
{
    static const char digits[] = "0123456789abcdef";

    (void)state;
    for (int c = 0; c < 256; c++) {
        const char *at = c ? strchr(digits, tolower(c)) : NULL;
        int want = at ? (int)(at - digits) : -1;
        if (enc_hex_value((char)c) != want)
            fail_msg("enc_hex_value(%d) = %d, want %d", c, enc_hex_value((char)c), want);
    }
}

static void test_hex_decode_refuses_small_buffer(void **state)
{
    unsigned char out[2];
    size_t outlen = 99;

    (void)state;
    assert_int_equal(enc_hex_decode("aabbcc", 6, out, sizeof out, &outlen), -1);
    assert_int_equal(outlen, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_base64_encode_rfc4648),
        cmocka_unit_test(test_base64_decode_rfc4648_exact_buffers),
        cmocka_unit_test(test_base64_decode_refuses_small_buffer),
        cmocka_unit_test(test_base64_decode_rejects_malformed),
        cmocka_unit_test(test_base64_decode_rejects_embedded_nul),
        cmocka_unit_test(test_base64_decode_accepts_nonzero_trailing_bits),
        cmocka_unit_test(test_base64_round_trip_binary),
        cmocka_unit_test(test_base64_encode_refuses_small_buffer),
        cmocka_unit_test(test_hex_encode),
        cmocka_unit_test(test_hex_decode_either_case),
        cmocka_unit_test(test_hex_decode_rejects_malformed),
        cmocka_unit_test(test_hex_decode_refuses_small_buffer),
        cmocka_unit_test(test_hex_value_of_every_byte),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
