/*
 * fuzz_signature_pk.c — libFuzzer target for the public-key presets
 * (sendgrid: ECDSA P-256, discord: Ed25519; engine/core/signature_pk.c
 * through sig_verify() and sig_public_key_decode() of signature.c). Input
 * format, one item per line ('\n'); a line whose first byte is NUL stands
 * for an absent header, and when the input ends early the remaining
 * headers are absent:
 *
 *   line 0   "NOW TOLERANCE" (decimal int64s: the clock and tolerance_s)
 *   line 1   X-Twilio-Email-Event-Webhook-Signature
 *   line 2   X-Twilio-Email-Event-Webhook-Timestamp
 *   line 3   X-Signature-Ed25519
 *   line 4   X-Signature-Timestamp
 *   line 5   a `public_key =` text, decoded for both presets
 *   rest     the raw body (any bytes)
 *
 * Both presets verify the fuzzed headers with two keys each (a wrong one
 * first: rotation). Checked besides memory safety and leaks: the result is
 * a defined sig_result, err is NUL-terminated (also in a 9-byte buffer) and
 * never quotes the fuzzed key text. Oracle: the body signed here with the
 * right private key and timestamp NOW (OpenSSL EVP_DigestSign, independent
 * of the code under test) verifies as SIG_OK when the tolerance is not
 * negative, and fails once a body byte is flipped.
 */
/* fuzz.sh links: engine/core/signature.c engine/core/signature_content.c engine/core/signature_mac.c engine/core/signature_verify.c engine/core/signature_pk.c engine/base/encoding.c engine/base/xmalloc.c engine/base/errbuf.c engine/base/jsonpath.c engine/base/log.c */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <openssl/evp.h>
#include <openssl/x509.h>

#include "encoding.h"
#include "fuzz_check.h"
#include "signature.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

enum { H_SG_SIG, H_SG_TS, H_DC_SIG, H_DC_TS, NHEADERS };
static const char *const header_names[NHEADERS] = {
    "X-Twilio-Email-Event-Webhook-Signature",
    "X-Twilio-Email-Event-Webhook-Timestamp",
    "X-Signature-Ed25519",
    "X-Signature-Timestamp",
};

/* [0] = sendgrid, [1] = discord; per preset a wrong key, then the right one. */
static EVP_PKEY *priv[2];
static struct sig_key keys[2][2];
static const enum sig_scheme schemes[2] = {SIG_SENDGRID, SIG_DISCORD};

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

/* The public key of pk as its provider's console shows it. */
static void public_text(EVP_PKEY *pk, int discord, char *out, size_t cap)
{
    if (discord) {
        unsigned char raw[32];
        size_t n = sizeof raw;
        CHECK(EVP_PKEY_get_raw_public_key(pk, raw, &n) == 1 && n == 32);
        CHECK(enc_hex_encode(raw, n, out, cap) == 0);
        return;
    }
    unsigned char *der = NULL;
    int n = i2d_PUBKEY(pk, &der);
    CHECK(n > 0);
    CHECK(enc_base64_encode(der, (size_t)n, out, cap) == 0);
    OPENSSL_free(der);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    char err[256], text[256];

    (void)argc;
    (void)argv;
    for (int s = 0; s < 2; s++) {
        for (int k = 0; k < 2; k++) {
            EVP_PKEY *pk = s == 0 ? EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256")
                                  : EVP_PKEY_Q_keygen(NULL, NULL, "ED25519");
            CHECK(pk != NULL);
            public_text(pk, s, text, sizeof text);
            CHECK(sig_public_key_decode(schemes[s], text, &keys[s][k], err, sizeof err) == 0);
            if (k == 1)
                priv[s] = pk;
            else
                EVP_PKEY_free(pk);
        }
    }
    return 0;
}

static enum sig_result verify(int s, const struct request *r, size_t errlen)
{
    char err[256];
    struct sig_request req = {r->body, r->body_len, lookup, (void *)r, r->now, "POST", "", "application/json"};
    struct sig_params params = {schemes[s], keys[s], 2, r->tolerance, NULL, NULL};
    enum sig_result res = sig_verify(&params, &req, err, errlen);

    CHECK(res >= SIG_OK && res <= SIG_TIMESTAMP_OUT_OF_TOLERANCE);
    CHECK(memchr(err, '\0', errlen) != NULL);
    if (res == SIG_OK)
        CHECK(err[0] == '\0');
    return res;
}

/* The signature of ts + body with the preset's right private key, as its
 * header carries it, into out. */
static void sign(int s, const char *ts, const unsigned char *body, size_t len, char *out, size_t cap)
{
    size_t tl = strlen(ts), siglen = 0;
    unsigned char *msg = malloc(tl + len + 1), sig[128];
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();

    CHECK(msg && ctx);
    memcpy(msg, ts, tl);
    if (len)
        memcpy(msg + tl, body, len);
    CHECK(EVP_DigestSignInit(ctx, NULL, s == 0 ? EVP_sha256() : NULL, NULL, priv[s]) == 1);
    siglen = sizeof sig;
    CHECK(EVP_DigestSign(ctx, sig, &siglen, msg, tl + len) == 1);
    if (s == 0)
        CHECK(enc_base64_encode(sig, siglen, out, cap) == 0);
    else
        CHECK(enc_hex_encode(sig, siglen, out, cap) == 0);
    EVP_MD_CTX_free(ctx);
    free(msg);
}

static void oracle(int s, struct request *r)
{
    char ts[24], sigtext[256];
    struct request good = *r;
    unsigned char *flipped;

    if (r->now < 0)
        return;
    snprintf(ts, sizeof ts, "%" PRId64, r->now);
    sign(s, ts, r->body, r->body_len, sigtext, sizeof sigtext);
    memset(good.hdr, 0, sizeof good.hdr);
    good.hdr[s == 0 ? H_SG_SIG : H_DC_SIG] = sigtext;
    good.hdr[s == 0 ? H_SG_TS : H_DC_TS] = ts;
    CHECK(verify(s, &good, 256) == (r->tolerance >= 0 ? SIG_OK : SIG_TIMESTAMP_OUT_OF_TOLERANCE));
    if (r->body_len == 0)
        return;
    flipped = malloc(r->body_len);
    CHECK(flipped);
    memcpy(flipped, r->body, r->body_len);
    flipped[r->body_len / 2] ^= 0x01;
    good.body = flipped;
    CHECK(verify(s, &good, 256) == SIG_MISMATCH);
    free(flipped);
}

static void fuzz_key_text(const char *text)
{
    char err[256];

    for (int s = 0; s < 2; s++) {
        struct sig_key k;
        if (sig_public_key_decode(schemes[s], text, &k, err, sizeof err) == 0) {
            CHECK(k.bytes != NULL && k.len > 0 && k.handle != NULL);
            sig_key_clear(&k);
        } else {
            CHECK(k.bytes == NULL && k.handle == NULL);
            /* (a short or spaced text may spell a word of the message itself) */
            CHECK(strlen(text) < 24 || strpbrk(text, " ()") || strstr(err, text) == NULL);
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct request r;
    char *lines[NHEADERS + 2] = {0}, *key = NULL;
    size_t pos = 0;

    memset(&r, 0, sizeof r);
    for (int i = 0; i < NHEADERS + 2 && pos < size; i++) {
        const uint8_t *nl = memchr(data + pos, '\n', size - pos);
        size_t n = nl ? (size_t)(nl - (data + pos)) : size - pos;
        lines[i] = strndup((const char *)data + pos, n);
        CHECK(lines[i]);
        pos += n + (nl ? 1 : 0);
    }
    if (!lines[0] || sscanf(lines[0], "%" SCNd64 " %" SCNd64, &r.now, &r.tolerance) != 2)
        r.now = 1700000000, r.tolerance = 300;
    if (r.now > 100000000000LL || r.now < -100000000000LL)
        r.now = 1700000000;
    for (int i = 0; i < NHEADERS; i++)
        r.hdr[i] = lines[i + 1] && lines[i + 1][0] ? lines[i + 1] : NULL;
    key = lines[NHEADERS + 1];
    r.body = data + pos;
    r.body_len = size - pos;

    for (int s = 0; s < 2; s++) {
        verify(s, &r, 256);
        verify(s, &r, 9);
        oracle(s, &r);
    }
    if (key)
        fuzz_key_text(key);
    for (int i = 0; i < NHEADERS + 2; i++)
        free(lines[i]);
    return 0;
}
