/*
 * signature_pk.c — SendGrid's ECDSA P-256 and Discord's Ed25519 webhook
 * signatures (see signature_pk.h). Both sign "timestamp header text" +
 * "raw body"; they differ in curve, hash and the encodings of key and
 * signature. The signed message is built once per request (Ed25519 is a
 * one-shot algorithm in OpenSSL, so it needs the bytes contiguous) and
 * checked against each configured key in turn.
 */
#include "signature_pk.h"

#include "encoding.h"
#include "errbuf.h"
#include "xmalloc.h"

#include <ctype.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/x509.h>

/* A DER-encoded P-256 signature is at most 72 bytes; leave room. */
#define ECDSA_SIG_MAX 80
/* Timestamps have at most this many digits (as in signature.c). */
#define TIMESTAMP_MAX_DIGITS 18
/* Longest public_key text accepted (a P-256 SPKI is 124 base64 characters;
 * a PEM block with armor and line breaks stays far below). */
#define KEY_TEXT_MAX 1024

const char *sigpk_signature_header(enum sigpk_kind kind)
{
    return kind == SIGPK_SENDGRID ? "X-Twilio-Email-Event-Webhook-Signature" : "X-Signature-Ed25519";
}

const char *sigpk_timestamp_header(enum sigpk_kind kind)
{
    return kind == SIGPK_SENDGRID ? "X-Twilio-Email-Event-Webhook-Timestamp" : "X-Signature-Timestamp";
}

static const char *kind_name(enum sigpk_kind kind)
{
    return kind == SIGPK_SENDGRID ? "sendgrid" : "discord";
}

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

/* 0 if der is a P-256 public key. */
static int check_p256(const unsigned char *der, size_t len, char *err, size_t errlen)
{
    const unsigned char *p = der;
    EVP_PKEY *pkey = d2i_PUBKEY(NULL, &p, (long)len);
    char group[64] = "";
    int rc = -1;

    if (!pkey || p != der + len) {
        err_set(err, errlen, "sendgrid public_key is not a DER SubjectPublicKeyInfo (%zu bytes)", len);
        goto done;
    }
    if (!EVP_PKEY_is_a(pkey, "EC") || !EVP_PKEY_get_group_name(pkey, group, sizeof group, NULL) ||
        strcmp(group, "prime256v1") != 0) {
        err_set(err, errlen, "sendgrid public_key is not an ECDSA P-256 key (%s%s%s)", EVP_PKEY_get0_type_name(pkey),
                group[0] ? " " : "", group);
        goto done;
    }
    rc = 0;
done:
    EVP_PKEY_free(pkey);
    return rc;
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
    if (check_p256(der, len, err, errlen) != 0)
        return -1;
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
    /* OpenSSL refuses nothing here but the length; it keeps the check in one place. */
    pkey = EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, NULL, raw, len);
    if (!pkey)
        return err_set(err, errlen, "discord public_key is not an Ed25519 key");
    EVP_PKEY_free(pkey);
    out->bytes = xmalloc(len);
    memcpy(out->bytes, raw, len);
    out->len = len;
    return 0;
}

int sigpk_key_decode(enum sigpk_kind kind, const char *text, struct sig_key *out, char *err, size_t errlen)
{
    if (!out)
        return -1;
    out->bytes = NULL;
    out->len = 0;
    if (!text || !text[0])
        return err_set(err, errlen, "%s public_key is empty", kind_name(kind));
    switch (kind) {
    case SIGPK_SENDGRID: return decode_sendgrid(text, out, err, errlen);
    case SIGPK_DISCORD: return decode_discord(text, out, err, errlen);
    }
    return err_set(err, errlen, "unknown public-key scheme %d", (int)kind);
}

static EVP_PKEY *load_key(enum sigpk_kind kind, const struct sig_key *key)
{
    const unsigned char *p = key->bytes;

    if (!key->bytes || key->len == 0)
        return NULL;
    if (kind == SIGPK_DISCORD)
        return EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, NULL, key->bytes, key->len);
    return d2i_PUBKEY(NULL, &p, (long)key->len);
}

/* ---- verification ---- */

static const char *trimmed(const char *v, size_t *n)
{
    while (*v == ' ' || *v == '\t')
        v++;
    *n = strlen(v);
    while (*n > 0 && (v[*n - 1] == ' ' || v[*n - 1] == '\t'))
        (*n)--;
    return v;
}

static enum sig_result get_header(const struct sig_request *req, const char *name, const char **v, size_t *n,
                                  char *err, size_t errlen)
{
    const char *raw = req->header ? req->header(req->header_arg, name) : NULL;

    if (!raw) {
        err_set(err, errlen, "missing %s header", name);
        return SIG_MISSING_HEADER;
    }
    *v = trimmed(raw, n);
    if (*n == 0) {
        err_set(err, errlen, "%s header is empty", name);
        return SIG_MALFORMED_HEADER;
    }
    return SIG_OK;
}

static int parse_timestamp(const char *s, size_t n, int64_t *out)
{
    int64_t v = 0;

    if (n == 0 || n > TIMESTAMP_MAX_DIGITS)
        return -1;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        v = v * 10 + (s[i] - '0');
    }
    *out = v;
    return 0;
}

static enum sig_result check_timestamp(const char *label, int64_t ts, int64_t now, int64_t tolerance, char *err,
                                       size_t errlen)
{
    int64_t age;

    if (tolerance < 0) {
        err_set(err, errlen, "%s cannot be checked: tolerance is negative (%" PRId64 "s)", label, tolerance);
        return SIG_TIMESTAMP_OUT_OF_TOLERANCE;
    }
    if (__builtin_sub_overflow(now, ts, &age) || age == INT64_MIN) {
        err_set(err, errlen, "%s is out of range of the current time", label);
        return SIG_TIMESTAMP_OUT_OF_TOLERANCE;
    }
    if (age > tolerance || age < -tolerance) {
        err_set(err, errlen, "%s is %" PRId64 "s in the %s (tolerance %" PRId64 "s)", label, age > 0 ? age : -age,
                age > 0 ? "past" : "future", tolerance);
        return SIG_TIMESTAMP_OUT_OF_TOLERANCE;
    }
    return SIG_OK;
}

/* 1 if key verifies sig over msg, 0 if not, -1 if OpenSSL failed otherwise. */
static int verify_one(enum sigpk_kind kind, const struct sig_key *key, const unsigned char *sig, size_t siglen,
                      const unsigned char *msg, size_t msglen)
{
    EVP_PKEY *pkey = load_key(kind, key);
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    int rc = -1;

    if (!pkey || !md)
        goto done;
    if (EVP_DigestVerifyInit(md, NULL, kind == SIGPK_SENDGRID ? EVP_sha256() : NULL, NULL, pkey) != 1)
        goto done;
    /* 1 = valid; 0 = invalid; a negative value also covers a signature
     * that is not even DER: either way not this key's. */
    rc = EVP_DigestVerify(md, sig, siglen, msg, msglen) == 1 ? 1 : 0;
done:
    EVP_MD_CTX_free(md);
    EVP_PKEY_free(pkey);
    return rc;
}

/* Decodes the signature header into sig; SIG_MALFORMED_HEADER if unusable. */
static enum sig_result decode_signature(enum sigpk_kind kind, const char *v, size_t n, unsigned char *sig, size_t cap,
                                        size_t *siglen, char *err, size_t errlen)
{
    *siglen = 0;
    if (kind == SIGPK_DISCORD) {
        if (n != ENC_HEX_LEN(SIGPK_ED25519_SIG_LEN) || enc_hex_decode(v, n, sig, cap, siglen) != 0) {
            err_set(err, errlen, "X-Signature-Ed25519 is not 128 hex digits (%zu characters)", n);
            return SIG_MALFORMED_HEADER;
        }
        return SIG_OK;
    }
    if (n > ENC_BASE64_LEN(ECDSA_SIG_MAX) || enc_base64_decode(v, n, sig, cap, siglen) != 0 || *siglen < 8) {
        err_set(err, errlen,
                "X-Twilio-Email-Event-Webhook-Signature is not base64 of a DER signature (%zu characters)", n);
        return SIG_MALFORMED_HEADER;
    }
    return SIG_OK;
}

enum sig_result sigpk_verify(enum sigpk_kind kind, const struct sig_key *keys, size_t nkeys, int64_t tolerance_s,
                             const struct sig_request *req, char *err, size_t errlen)
{
    unsigned char sig[ECDSA_SIG_MAX > SIGPK_ED25519_SIG_LEN ? ECDSA_SIG_MAX : SIGPK_ED25519_SIG_LEN];
    const char *sigtext, *tstext;
    size_t sign, tsn, siglen, msglen;
    unsigned char *msg = NULL;
    enum sig_result r;
    int64_t ts;
    int found = 0;

    err_set(err, errlen, "%s", "");
    if (!req || (!req->body && req->body_len > 0))
        return err_set(err, errlen, "signature verification called without a request"), SIG_MISMATCH;
    if (!keys || nkeys == 0)
        return err_set(err, errlen, "no public_key is configured, so nothing can be verified"), SIG_MISMATCH;
    if ((r = get_header(req, sigpk_signature_header(kind), &sigtext, &sign, err, errlen)) != SIG_OK ||
        (r = get_header(req, sigpk_timestamp_header(kind), &tstext, &tsn, err, errlen)) != SIG_OK)
        return r;
    if (parse_timestamp(tstext, tsn, &ts) != 0) {
        err_set(err, errlen, "%s is not a decimal unix time (%zu characters)", sigpk_timestamp_header(kind), tsn);
        return SIG_MALFORMED_HEADER;
    }
    if ((r = decode_signature(kind, sigtext, sign, sig, sizeof sig, &siglen, err, errlen)) != SIG_OK)
        return r;
    /* The providers sign the timestamp text as sent, then the body. */
    msglen = tsn + req->body_len;
    msg = xmalloc(msglen ? msglen : 1);
    memcpy(msg, tstext, tsn);
    if (req->body_len)
        memcpy(msg + tsn, req->body, req->body_len);
    for (size_t k = 0; k < nkeys && found == 0; k++)
        found = verify_one(kind, &keys[k], sig, siglen, msg, msglen) == 1;
    free(msg);
    if (!found) {
        err_set(err, errlen, "the %s signature in %s does not verify with %s (%zu key%s)",
                kind == SIGPK_SENDGRID ? "ECDSA P-256" : "Ed25519", sigpk_signature_header(kind),
                nkeys == 1 ? "the public key" : "any public key", nkeys, nkeys == 1 ? "" : "s");
        return SIG_MISMATCH;
    }
    return check_timestamp(sigpk_timestamp_header(kind), ts, req->now, tolerance_s, err, errlen);
}
