/*
 * fuzz_signature.c — libFuzzer target for inbound signature verification
 * (engine/core/signature.h) and the hex/base64 codecs beneath it
 * (engine/base/encoding.h): the code that reads attacker-controlled header text
 * before anything else in hookd looks at a request. Input format, one item
 * per line ('\n'); a line whose first byte is NUL stands for an absent
 * header, and when the input ends early the remaining headers are absent:
 *
 *   line 0   "NOW TOLERANCE" (decimal int64s: the clock and tolerance_s)
 *   line 1   webhook-id
 *   line 2   webhook-timestamp
 *   line 3   webhook-signature
 *   line 4   Stripe-Signature
 *   line 5   X-Hub-Signature-256
 *   line 6   X-Signature        (the hmac-sha256 scheme's configured header)
 *   rest     the raw body (any bytes)
 *
 * sig_verify() runs for all four schemes with fixed keys (two per scheme,
 * the right one second, so key rotation is walked). Checked besides memory
 * safety and leaks: the result is a defined sig_result; err is a
 * NUL-terminated string, also with a 9-byte buffer, and never contains a
 * secret or a long signature header value. Two oracles: for the body and
 * clock of each input, a signature made independently (OpenSSL EVP_Q_mac,
 * and sig_sign_standard() for Standard Webhooks) must verify as SIG_OK for
 * every scheme, and must fail once a body byte is flipped. The codecs are
 * fed every line and the body, into exactly-sized heap buffers, and
 * round-tripped.
 */
/* fuzz.sh links: engine/core/signature.c engine/base/encoding.c engine/base/xmalloc.c engine/base/errbuf.c */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <openssl/evp.h>

#include "encoding.h"
#include "fuzz_check.h"
#include "signature.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

enum { H_ID, H_TS, H_STANDARD, H_STRIPE, H_GITHUB, H_GENERIC, NHEADERS };

static const char *const header_names[NHEADERS] = {
    "webhook-id", "webhook-timestamp", "webhook-signature", "Stripe-Signature", "X-Hub-Signature-256", "X-Signature",
};

/* The published vectors' secrets (see tests/unit/test_signature.c), and a
 * wrong key tried first for each scheme. */
static const char *const secrets[4][2] = {
    [SIG_STANDARD_WEBHOOKS] = {"whsec_dGhpcyBpcyB0aGUgbmV3IHNlY3JldCBrZXkh", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"},
    [SIG_STRIPE] = {"whsec_old_secret", "whsec_test_secret"},
    [SIG_GITHUB] = {"an older secret", "It's a Secret to Everybody"},
    [SIG_HMAC_SHA256] = {"an older secret", "It's a Secret to Everybody"},
};
/* Text that must never appear in an error message. */
static const char *const secret_texts[] = {
    "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
    "dGhpcyBpcyB0aGUgbmV3IHNlY3JldCBrZXkh",
    "test_secret",
    "old_secret",
    "Secret to Everybody",
    "an older secret",
};

static struct sig_key keys[4][2];

struct request {
    char *hdr[NHEADERS]; /* NULL = absent */
    const unsigned char *body;
    size_t body_len;
    int64_t now, tolerance;
};

static const char *lookup(void *arg, const char *name)
{
    const struct request *r = arg;

    for (int i = 0; i < NHEADERS; i++)
        if (strcasecmp(header_names[i], name) == 0)
            return r->hdr[i];
    return NULL;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    char err[256];

    (void)argc;
    (void)argv;
    for (int s = 0; s < 4; s++)
        for (int k = 0; k < 2; k++)
            if (sig_key_decode((enum sig_scheme)s, secrets[s][k], &keys[s][k], err, sizeof err) != 0) {
                fprintf(stderr, "fuzz_signature: key %d/%d: %s\n", s, k, err);
                abort();
            }
    return 0;
}

/* ---- codecs ---- */

static void *xalloc(size_t n)
{
    void *p = malloc(n ? n : 1);

    if (p == NULL)
        abort();
    return p;
}

static void fuzz_hex(const char *in, size_t len)
{
    size_t cap = len / 2, out_len = 99;
    unsigned char *out = xalloc(cap);

    if (enc_hex_decode(in, len, out, cap, &out_len) == 0) {
        char *text = xalloc(ENC_HEX_LEN(out_len) + 1);

        CHECK(out_len == len / 2);
        CHECK(enc_hex_encode(out, out_len, text, ENC_HEX_LEN(out_len) + 1) == 0);
        CHECK(strncasecmp(text, in, len) == 0);
        free(text);
        if (cap > 0) /* one byte short must be refused */
            CHECK(enc_hex_decode(in, len, out, cap - 1, &out_len) == -1 && out_len == 0);
    } else {
        CHECK(out_len == 0);
    }
    free(out);
}

static void fuzz_base64(const char *in, size_t len)
{
    size_t cap = ENC_BASE64_DECODED_MAX(len), out_len = 99, exact_len = 99;
    unsigned char *out = xalloc(cap);

    if (enc_base64_decode(in, len, out, cap, &out_len) == 0) {
        unsigned char *exact = xalloc(out_len);
        char *text = xalloc(ENC_BASE64_LEN(out_len) + 1);

        CHECK(out_len <= cap && (len == 0 || out_len + 2 >= cap));
        /* The exact length suffices and gives the same bytes... */
        CHECK(enc_base64_decode(in, len, exact, out_len, &exact_len) == 0);
        CHECK(exact_len == out_len && memcmp(exact, out, out_len) == 0);
        /* ...and one byte less does not. */
        if (out_len > 0)
            CHECK(enc_base64_decode(in, len, exact, out_len - 1, &exact_len) == -1 && exact_len == 0);
        /* Re-encoding gives the input back, except for the unused low bits
         * of the last character, which the decoder does not check. */
        CHECK(enc_base64_encode(out, out_len, text, ENC_BASE64_LEN(out_len) + 1) == 0);
        CHECK(strlen(text) == len);
        if (len > 0) {
            size_t last = len - 1;

            while (last > 0 && in[last] == '=')
                last--;
            CHECK(memcmp(text, in, last) == 0 && memcmp(text + last + 1, in + last + 1, len - last - 1) == 0);
        }
        free(exact);
        free(text);
    } else {
        CHECK(out_len == 0);
    }
    free(out);
}

/* Bytes -> text -> the same bytes, for both encodings. */
static void round_trip(const unsigned char *in, size_t len)
{
    char *hex = xalloc(ENC_HEX_LEN(len) + 1), *b64 = xalloc(ENC_BASE64_LEN(len) + 1);
    unsigned char *back = xalloc(len);
    size_t n = 0;

    CHECK(enc_hex_encode(in, len, hex, ENC_HEX_LEN(len) + 1) == 0);
    CHECK(enc_hex_encode(in, len, hex, ENC_HEX_LEN(len)) == -1);
    CHECK(enc_hex_decode(hex, ENC_HEX_LEN(len), back, len, &n) == 0);
    CHECK(n == len && memcmp(back, in, len) == 0);
    CHECK(enc_base64_encode(in, len, b64, ENC_BASE64_LEN(len) + 1) == 0);
    CHECK(enc_base64_encode(in, len, b64, ENC_BASE64_LEN(len)) == -1);
    CHECK(enc_base64_decode(b64, ENC_BASE64_LEN(len), back, len, &n) == 0);
    CHECK(n == len && memcmp(back, in, len) == 0);
    free(hex);
    free(b64);
    free(back);
}

static void fuzz_codecs(const char *in, size_t len)
{
    fuzz_hex(in, len);
    fuzz_base64(in, len);
}

/* ---- sig_verify ---- */

static void check_message(const struct request *r, const char *err, size_t errlen)
{
    CHECK(memchr(err, '\0', errlen) != NULL);
    for (size_t i = 0; i < sizeof secret_texts / sizeof secret_texts[0]; i++)
        CHECK(strstr(err, secret_texts[i]) == NULL);
    for (int h = H_STANDARD; h < NHEADERS; h++)
        if (r->hdr[h] != NULL && strlen(r->hdr[h]) >= 24)
            CHECK(strstr(err, r->hdr[h]) == NULL);
}

static enum sig_result verify(enum sig_scheme scheme, const struct request *r, size_t nkeys, size_t errlen)
{
    struct sig_params params = {scheme, keys[scheme] + 2 - nkeys, nkeys, r->tolerance, "X-Signature"};
    struct sig_request req = {r->body, r->body_len, lookup, (void *)r, r->now};
    char *err = xalloc(errlen);
    enum sig_result res;

    memset(err, 'x', errlen);
    res = sig_verify(&params, &req, err, errlen);
    CHECK(res >= SIG_OK && res <= SIG_TIMESTAMP_OUT_OF_TOLERANCE);
    CHECK(strcmp(sig_result_name(res), "invalid") != 0);
    check_message(r, err, errlen);
    if (res == SIG_OK)
        CHECK(err[0] == '\0');
    else
        CHECK(err[0] != '\0' || errlen == 1);
    free(err);
    return res;
}

/* HMAC-SHA256 of prefix || body with the scheme's right key, via OpenSSL's
 * one-shot API rather than hookd's code. */
static void reference_mac(enum sig_scheme scheme, const char *prefix, const unsigned char *body, size_t len,
                          unsigned char mac[SIG_MAC_LEN])
{
    size_t plen = strlen(prefix), maclen = 0;
    unsigned char *msg = xalloc(plen + len);
    const struct sig_key *k = &keys[scheme][1];

    memcpy(msg, prefix, plen);
    if (len > 0)
        memcpy(msg + plen, body, len);
    CHECK(EVP_Q_mac(NULL, "HMAC", NULL, "SHA256", NULL, k->bytes, k->len, msg, plen + len, mac, SIG_MAC_LEN,
                    &maclen) != NULL);
    CHECK(maclen == SIG_MAC_LEN);
    free(msg);
}

static int ows_at_ends(const char *s)
{
    size_t n = strlen(s);

    return n == 0 || s[0] == ' ' || s[0] == '\t' || s[n - 1] == ' ' || s[n - 1] == '\t';
}

/* Signs the input's body at its clock for every scheme and expects
 * SIG_OK; then flips one body byte and expects a mismatch. */
static void oracle(const struct request *in)
{
    struct request r = *in;
    unsigned char mac[SIG_MAC_LEN];
    char ts[24], id[64], hex[ENC_HEX_LEN(SIG_MAC_LEN) + 1], b64[ENC_BASE64_LEN(SIG_MAC_LEN) + 1];
    char sw[SIG_STANDARD_SIGNATURE_SIZE], stripe[128], gh[128], prefix[128];
    unsigned char *flipped;

    if (r.now < 0 || r.now > INT64_C(999999999999999999) || r.tolerance < 0)
        return;
    snprintf(ts, sizeof ts, "%" PRId64, r.now);
    snprintf(id, sizeof id, "%s", in->hdr[H_ID] != NULL && !ows_at_ends(in->hdr[H_ID]) ? in->hdr[H_ID] : "msg_1");
    if (ows_at_ends(id))
        snprintf(id, sizeof id, "msg_1");

    CHECK(sig_sign_standard(&keys[SIG_STANDARD_WEBHOOKS][1], id, r.now, r.body, r.body_len, sw, sizeof sw) == 0);
    snprintf(prefix, sizeof prefix, "%s.%s.", id, ts);
    reference_mac(SIG_STANDARD_WEBHOOKS, prefix, r.body, r.body_len, mac);
    CHECK(enc_base64_encode(mac, sizeof mac, b64, sizeof b64) == 0);
    CHECK(strncmp(sw, "v1,", 3) == 0 && strcmp(sw + 3, b64) == 0);

    snprintf(prefix, sizeof prefix, "%s.", ts);
    reference_mac(SIG_STRIPE, prefix, r.body, r.body_len, mac);
    CHECK(enc_hex_encode(mac, sizeof mac, hex, sizeof hex) == 0);
    snprintf(stripe, sizeof stripe, "t=%s,v1=%s", ts, hex);

    reference_mac(SIG_GITHUB, "", r.body, r.body_len, mac);
    CHECK(enc_hex_encode(mac, sizeof mac, hex, sizeof hex) == 0);
    CHECK(enc_base64_encode(mac, sizeof mac, b64, sizeof b64) == 0);
    snprintf(gh, sizeof gh, "sha256=%s", hex);

    memset(r.hdr, 0, sizeof r.hdr);
    r.hdr[H_ID] = id;
    r.hdr[H_TS] = ts;
    r.hdr[H_STANDARD] = sw;
    r.hdr[H_STRIPE] = stripe;
    r.hdr[H_GITHUB] = gh;
    r.hdr[H_GENERIC] = in->body_len % 2 ? b64 : hex; /* both forms are accepted */
    for (int s = 0; s < 4; s++)
        CHECK(verify((enum sig_scheme)s, &r, 2, 256) == SIG_OK);

    if (r.body_len == 0)
        return;
    flipped = xalloc(r.body_len);
    memcpy(flipped, r.body, r.body_len);
    flipped[r.body_len / 2] ^= 0x01;
    r.body = flipped;
    for (int s = 0; s < 4; s++)
        CHECK(verify((enum sig_scheme)s, &r, 2, 256) == SIG_MISMATCH);
    free(flipped);
}

/* Splits the next line off [*p, end) into a new string (NULL when the
 * line starts with NUL or the input is used up). */
static char *next_line(const uint8_t **p, const uint8_t *end, int *done)
{
    const uint8_t *nl;
    char *line;
    size_t n;

    if (*done || *p >= end) {
        *done = 1;
        return NULL;
    }
    nl = memchr(*p, '\n', (size_t)(end - *p));
    n = nl != NULL ? (size_t)(nl - *p) : (size_t)(end - *p);
    line = xalloc(n + 1);
    memcpy(line, *p, n);
    line[n] = '\0';
    *p += n + (nl != NULL);
    if (nl == NULL)
        *done = 1;
    if (n > 0 && line[0] == '\0') {
        free(line);
        return NULL;
    }
    return line;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *p = data, *end = data + size;
    struct request r;
    int done = 0;
    char *clock;

    memset(&r, 0, sizeof r);
    r.now = INT64_C(1614265330);
    r.tolerance = 300;
    clock = next_line(&p, end, &done);
    if (clock != NULL) {
        char *rest = NULL;

        r.now = strtoll(clock, &rest, 10);
        if (rest != NULL && *rest != '\0')
            r.tolerance = strtoll(rest, NULL, 10);
        free(clock);
    }
    for (int h = 0; h < NHEADERS; h++)
        r.hdr[h] = next_line(&p, end, &done);
    r.body = done ? (const unsigned char *)"" : p;
    r.body_len = done ? 0 : (size_t)(end - p);

    for (int s = 0; s < 4; s++) {
        enum sig_result one = verify((enum sig_scheme)s, &r, 1, 256);
        enum sig_result two = verify((enum sig_scheme)s, &r, 2, 256);

        /* The right key is in both sets: adding a wrong one changes nothing. */
        CHECK(one == two);
        (void)verify((enum sig_scheme)s, &r, 1, 9);
    }
    oracle(&r);

    for (int h = 0; h < NHEADERS; h++)
        if (r.hdr[h] != NULL)
            fuzz_codecs(r.hdr[h], strlen(r.hdr[h]));
    fuzz_codecs((const char *)r.body, r.body_len);
    round_trip(r.body, r.body_len);

    for (int h = 0; h < NHEADERS; h++)
        free(r.hdr[h]);
    return 0;
}
