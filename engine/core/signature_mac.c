/*
 * signature_mac.c — the HMAC primitive every shared-secret scheme and the
 * outbound signature use, the SHA-256 content digest, the decoding of
 * configured secrets and public keys into struct sig_key, and the outbound
 * Standard Webhooks signature (`webhook-signature: v1,<base64>`). Key bytes
 * are cleansed when released; error messages never quote a secret.
 */
#include "signature_internal.h"

#include "encoding.h"
#include "errbuf.h"
#include "xmalloc.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>

#define STANDARD_SECRET_PREFIX "whsec_"

/* ---- MACs ------------------------------------------------------------------ */

/* The HMAC implementation, fetched from the provider once: a fetch per
 * signature would search the provider's method store on every delivery.
 * EVP_MAC objects may be shared between threads. */
static EVP_MAC *hmac_alg;
static pthread_once_t hmac_once = PTHREAD_ONCE_INIT;

static void hmac_release(void)
{
    EVP_MAC_free(hmac_alg);
    hmac_alg = NULL;
}

static void hmac_fetch(void)
{
    hmac_alg = EVP_MAC_fetch(NULL, "HMAC", NULL);
    if (hmac_alg)
        atexit(hmac_release);
}

/* Bytes of the MAC of an HMAC algorithm; 0 for the others. */
size_t sig_alg_mac_len(enum sig_alg alg)
{
    switch (alg) {
    case SIG_ALG_HMAC_SHA1: return 20;
    case SIG_ALG_HMAC_SHA256: return 32;
    case SIG_ALG_HMAC_SHA512: return 64;
    case SIG_ALG_TOKEN:
    case SIG_ALG_PUBLIC_KEY: return 0;
    }
    return 0;
}

const char *sig_alg_label(enum sig_alg alg)
{
    switch (alg) {
    case SIG_ALG_HMAC_SHA1: return "HMAC-SHA1";
    case SIG_ALG_HMAC_SHA256: return "HMAC-SHA256";
    case SIG_ALG_HMAC_SHA512: return "HMAC-SHA512";
    case SIG_ALG_TOKEN: return "token";
    case SIG_ALG_PUBLIC_KEY: return "public-key signature";
    }
    return "?";
}

/* HMAC over the concatenation of parts. Returns -1 if OpenSSL fails (no
 * HMAC provider, out of memory) or alg is not an HMAC. */
int sig_hmac_parts(enum sig_alg alg, const struct sig_key *key, const struct sig_span *parts, size_t nparts,
                   unsigned char *mac, size_t *maclen)
{
    char digest[8];
    OSSL_PARAM params[2];
    EVP_MAC_CTX *ctx = NULL;
    size_t want = sig_alg_mac_len(alg), got = 0;
    int rc = -1;

    if (key == NULL || key->bytes == NULL || key->len == 0 || want == 0)
        return -1;
    snprintf(digest, sizeof digest, "%s", alg == SIG_ALG_HMAC_SHA1 ? "SHA1" : want == 32 ? "SHA256" : "SHA512");
    params[0] = OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest, 0);
    params[1] = OSSL_PARAM_construct_end();
    pthread_once(&hmac_once, hmac_fetch);
    if (hmac_alg == NULL)
        goto done;
    ctx = EVP_MAC_CTX_new(hmac_alg);
    if (ctx == NULL || !EVP_MAC_init(ctx, key->bytes, key->len, params))
        goto done;
    for (size_t i = 0; i < nparts; i++)
        if (parts[i].n > 0 && !EVP_MAC_update(ctx, (const unsigned char *)parts[i].p, parts[i].n))
            goto done;
    if (!EVP_MAC_final(ctx, mac, &got, want) || got != want)
        goto done;
    *maclen = got;
    rc = 0;
done:
    EVP_MAC_CTX_free(ctx);
    return rc;
}

int sig_hmac(enum sig_alg alg, const struct sig_key *key, const void *data, size_t len, unsigned char *out,
             size_t *outlen)
{
    struct sig_span part = {data, len};

    if (out == NULL || outlen == NULL || (data == NULL && len > 0))
        return -1;
    return sig_hmac_parts(alg, key, &part, 1, out, outlen);
}

void sig_content_digest(const unsigned char *body, size_t len, unsigned char out[SIG_DIGEST_LEN])
{
    unsigned int n = 0;
    /* EVP_Digest fails only when OpenSSL cannot allocate (or SHA-256 is
     * missing): an invariant, like allocation. */
    int ok = EVP_Digest(body, len, out, &n, EVP_sha256(), NULL);
    HOOKD_ASSERT(ok == 1 && n == SIG_DIGEST_LEN);
}

/* ---- keys ------------------------------------------------------------------ */

/* Decodes the base64 part of a Standard Webhooks secret into *out. The
 * reference SDKs accept secrets whose '=' padding was dropped, so it is
 * restored here before the strict decoder sees the text. */
static int decode_standard_secret(const char *b64, struct sig_key *out, char *err, size_t errlen)
{
    size_t n = strlen(b64), padded_len, cap, len = 0;
    char *padded;
    int rc = -1;

    if (n % 4 == 1) {
        err_set(err, errlen, "standard-webhooks secret is not valid base64 (bad length)");
        return -1;
    }
    padded_len = n + (4 - n % 4) % 4;
    cap = ENC_BASE64_DECODED_MAX(padded_len);
    padded = xmalloc(padded_len + 1);
    memcpy(padded, b64, n);
    memset(padded + n, '=', padded_len - n);
    padded[padded_len] = '\0';
    /* len covers the whole buffer until the decode succeeds, so that a
     * failure cleanses whatever was partly decoded. n >= 2 here, so a
     * successful decode yields at least one byte. */
    out->bytes = xmalloc(cap);
    out->len = cap;
    if (enc_base64_decode(padded, padded_len, out->bytes, cap, &len) < 0) {
        err_set(err, errlen, "standard-webhooks secret is not whsec_<base64> or base64");
        goto done;
    }
    out->len = len;
    rc = 0;
done:
    OPENSSL_cleanse(padded, padded_len);
    free(padded);
    if (rc < 0)
        sig_key_clear(out);
    return rc;
}

int sig_key_decode(enum sig_scheme scheme, const char *secret, struct sig_key *out, char *err, size_t errlen)
{
    const struct sig_preset *p = sig_preset_get(scheme);
    size_t n;

    if (out == NULL)
        return -1;
    memset(out, 0, sizeof *out);
    if (p == NULL) {
        err_set(err, errlen, "unknown signature scheme %d", (int)scheme);
        return -1;
    }
    if (secret == NULL || secret[0] == '\0') {
        err_set(err, errlen, "%s signing secret is empty", p->name);
        return -1;
    }
    switch (p->spec.key_format) {
    case SIG_KEY_WHSEC_BASE64:
        if (strncmp(secret, STANDARD_SECRET_PREFIX, strlen(STANDARD_SECRET_PREFIX)) == 0)
            secret += strlen(STANDARD_SECRET_PREFIX);
        if (secret[0] == '\0') {
            err_set(err, errlen, "standard-webhooks secret has nothing after the whsec_ prefix");
            return -1;
        }
        return decode_standard_secret(secret, out, err, errlen);
    case SIG_KEY_RAW:
        n = strlen(secret);
        out->bytes = xmalloc(n);
        memcpy(out->bytes, secret, n);
        out->len = n;
        return 0;
    case SIG_KEY_PUBLIC:
        err_set(err, errlen, "%s verifies with a public key: use public_key, not secret", p->name);
        return -1;
    }
    err_set(err, errlen, "unknown key format for scheme %s", p->name);
    return -1;
}

int sig_public_key_decode(enum sig_scheme scheme, const char *text, struct sig_key *out, char *err, size_t errlen)
{
    const struct sig_preset *p = sig_preset_get(scheme);
    const struct sig_pk_ops *ops;

    if (out == NULL)
        return -1;
    memset(out, 0, sizeof *out);
    if (p == NULL || p->spec.alg != SIG_ALG_PUBLIC_KEY) {
        err_set(err, errlen, "%s verifies with a shared secret: use secret, not public_key",
                p != NULL ? p->name : "this scheme");
        return -1;
    }
    ops = sig_pk_ops_for(p->spec.pk);
    if (ops == NULL || ops->decode == NULL) {
        err_set(err, errlen, "scheme %s is not available in this build (no public-key algorithm)", p->name);
        return -1;
    }
    if (text == NULL || text[0] == '\0') {
        err_set(err, errlen, "%s public key is empty", p->name);
        return -1;
    }
    if (ops->decode(text, out, err, errlen) != 0) {
        sig_key_clear(out);
        return -1;
    }
    return 0;
}

void sig_key_clear(struct sig_key *key)
{
    if (key == NULL)
        return;
    if (key->bytes != NULL) {
        OPENSSL_cleanse(key->bytes, key->len);
        free(key->bytes);
    }
    if (key->handle != NULL && key->release != NULL)
        key->release(key->handle);
    memset(key, 0, sizeof *key);
}

/* ---- outbound -------------------------------------------------------------- */

int sig_sign_standard(const struct sig_key *key, const char *id, int64_t timestamp, const unsigned char *body,
                      size_t len, char *out, size_t outlen)
{
    char ts_text[24]; /* "." ts ".", sized for any int64 */
    unsigned char mac[SIG_MAC_LEN];
    struct sig_span parts[3];
    size_t maclen = 0;
    int rc = -1;

    if (out == NULL || outlen == 0)
        return -1;
    out[0] = '\0';
    if (key == NULL || key->bytes == NULL || key->len == 0 || id == NULL || id[0] == '\0' || timestamp < 0 ||
        (body == NULL && len > 0) || outlen < 3 + ENC_BASE64_LEN(SIG_MAC_LEN) + 1)
        return -1;
    snprintf(ts_text, sizeof ts_text, ".%" PRId64 ".", timestamp);
    parts[0] = (struct sig_span){id, strlen(id)};
    parts[1] = (struct sig_span){ts_text, strlen(ts_text)};
    parts[2] = (struct sig_span){(const char *)body, len};
    if (sig_hmac_parts(SIG_ALG_HMAC_SHA256, key, parts, 3, mac, &maclen) < 0)
        goto done;
    memcpy(out, "v1,", 3);
    if (enc_base64_encode(mac, sizeof mac, out + 3, outlen - 3) < 0) {
        out[0] = '\0';
        goto done;
    }
    rc = 0;
done:
    OPENSSL_cleanse(mac, sizeof mac);
    return rc;
}
