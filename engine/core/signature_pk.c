/*
 * signature_pk.c — the public-key algorithms of the sendgrid (ECDSA P-256
 * with SHA-256) and discord (Ed25519) presets, on OpenSSL EVP; see
 * signature_pk.h. signature.c's preset table names the algorithm
 * (enum sig_pk_alg) and does everything around it — finding and decoding
 * the signature header, rendering "{timestamp}{body}", the tolerance, key
 * rotation — and asks sig_pk_ops_for() (defined weakly there, strongly
 * here) for two operations: decode a `public_key =` text into a key, and
 * verify one signature with one key. A decoded key keeps its EVP_PKEY in
 * sig_key.handle (released by sig_key_clear()), so a request costs one
 * verification per key, no parsing.
 */
#include "signature_pk.h"

#include "encoding.h"
#include "errbuf.h"
#include "xmalloc.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>
#include <openssl/x509.h>

/* Longest public_key text accepted (a P-256 SPKI is 124 base64 characters;
 * a PEM block with armor and line breaks stays far below). */
#define KEY_TEXT_MAX 1024

/* ---- keys ---- */

/* The base64 characters of text, without PEM armor lines and whitespace,
 * into buf; -1 if it does not fit. */
static int strip_pem(const char *text, char *buf, size_t cap, size_t *len)
{
    size_t n = 0;

    for (const char *p = text; *p;) {
        const char *eol = strchr(p, '\n');
        size_t linelen = eol ? (size_t)(eol - p) : strlen(p);

        if (!(linelen >= 5 && strncmp(p, "-----", 5) == 0)) {
            for (size_t i = 0; i < linelen; i++) {
                if (isspace((unsigned char)p[i]))
                    continue;
                if (n + 1 >= cap)
                    return -1;
                buf[n++] = p[i];
            }
        }
        p += linelen + (eol ? 1 : 0);
    }
    buf[n] = '\0';
    *len = n;
    return 0;
}

/* der as a P-256 public key, or NULL with err. */
static EVP_PKEY *load_p256(const unsigned char *der, size_t len, char *err, size_t errlen)
{
    const unsigned char *p = der;
    EVP_PKEY *pkey = d2i_PUBKEY(NULL, &p, (long)len);
    char group[64] = "";

    if (!pkey || p != der + len) {
        err_set(err, errlen, "sendgrid public_key is not a DER SubjectPublicKeyInfo (%zu bytes)", len);
        goto fail;
    }
    if (!EVP_PKEY_is_a(pkey, "EC") || !EVP_PKEY_get_group_name(pkey, group, sizeof group, NULL) ||
        strcmp(group, "prime256v1") != 0) {
        err_set(err, errlen, "sendgrid public_key is not an ECDSA P-256 key (%s%s%s)", EVP_PKEY_get0_type_name(pkey),
                group[0] ? " " : "", group);
        goto fail;
    }
    return pkey;
fail:
    EVP_PKEY_free(pkey);
    return NULL;
}

static void release_pkey(void *handle)
{
    EVP_PKEY_free(handle);
}

static int decode_sendgrid(const char *text, struct sig_key *out, char *err, size_t errlen)
{
    char b64[KEY_TEXT_MAX];
    unsigned char der[KEY_TEXT_MAX];
    size_t n = 0, len = 0;

    if (strlen(text) >= KEY_TEXT_MAX || strip_pem(text, b64, sizeof b64, &n) != 0)
        return err_set(err, errlen, "sendgrid public_key is too long for a P-256 key");
    if (enc_base64_decode(b64, n, der, sizeof der, &len) != 0 || len == 0)
        return err_set(err, errlen, "sendgrid public_key is not base64 (%zu characters)", n);
    if (!(out->handle = load_p256(der, len, err, errlen)))
        return -1;
    out->release = release_pkey;
    out->bytes = xmalloc(len);
    memcpy(out->bytes, der, len);
    out->len = len;
    return 0;
}

static int decode_discord(const char *text, struct sig_key *out, char *err, size_t errlen)
{
    unsigned char raw[SIGPK_ED25519_KEY_LEN];
    size_t n = strlen(text), len = 0;
    EVP_PKEY *pkey;

    if (n != ENC_HEX_LEN(SIGPK_ED25519_KEY_LEN) || enc_hex_decode(text, n, raw, sizeof raw, &len) != 0)
        return err_set(err, errlen, "discord public_key is not 64 hex digits (%zu characters)", n);
    pkey = EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, NULL, raw, len);
    if (!pkey)
        return err_set(err, errlen, "discord public_key is not an Ed25519 key");
    out->handle = pkey;
    out->release = release_pkey;
    out->bytes = xmalloc(len);
    memcpy(out->bytes, raw, len);
    out->len = len;
    return 0;
}

/* ---- verification ---- */

/* 1 if key verifies sig over msg, 0 if not (a signature that is not even
 * DER included), -1 if the key or OpenSSL failed. */
static int verify_with(const EVP_MD *md, const struct sig_key *key, const unsigned char *msg, size_t msglen,
                       const unsigned char *sig, size_t siglen)
{
    EVP_PKEY *pkey = key ? key->handle : NULL;
    EVP_MD_CTX *ctx;
    int rc = -1;

    if (!pkey || !(ctx = EVP_MD_CTX_new()))
        return -1;
    if (EVP_DigestVerifyInit(ctx, NULL, md, NULL, pkey) == 1)
        rc = EVP_DigestVerify(ctx, sig, siglen, msg, msglen) == 1 ? 1 : 0;
    EVP_MD_CTX_free(ctx);
    return rc;
}

static int verify_p256(const struct sig_key *key, const unsigned char *msg, size_t msglen, const unsigned char *sig,
                       size_t siglen)
{
    return verify_with(EVP_sha256(), key, msg, msglen, sig, siglen);
}

static int verify_ed25519(const struct sig_key *key, const unsigned char *msg, size_t msglen, const unsigned char *sig,
                          size_t siglen)
{
    if (siglen != SIGPK_ED25519_SIG_LEN)
        return 0;
    return verify_with(NULL, key, msg, msglen, sig, siglen); /* Ed25519 hashes itself */
}

static const struct sig_pk_ops p256_ops = {decode_sendgrid, verify_p256};
static const struct sig_pk_ops ed25519_ops = {decode_discord, verify_ed25519};

const struct sig_pk_ops *sig_pk_ops_for(enum sig_pk_alg alg)
{
    switch (alg) {
    case SIG_PK_ECDSA_P256: return &p256_ops;
    case SIG_PK_ED25519: return &ed25519_ops;
    case SIG_PK_NONE: break;
    }
    return NULL;
}
