/*
 * signature.h — HMAC-SHA256 webhook signatures. Inbound, the ingest role
 * calls sig_verify() on the raw request body before it stores anything; the
 * partner's scheme (Standard Webhooks, Stripe, GitHub, or a generic MAC in a
 * named header) comes from its `[partner NAME]` section and the secrets are
 * decoded once at config load with sig_key_decode(). Outbound, the relay role
 * signs each delivery with sig_sign_standard() for the `webhook-signature`
 * header. MACs are decoded from their hex/base64 text and compared as raw
 * bytes in constant time; timestamps are checked against a tolerance so that
 * captured requests cannot be replayed later. Error messages name headers,
 * lengths and clock differences, never secrets or signatures. Pure logic on
 * caller-supplied data (the clock is a parameter): no I/O, no globals, safe
 * to call from any thread.
 */
#ifndef HOOKD_SIGNATURE_H
#define HOOKD_SIGNATURE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Bytes of an HMAC-SHA256 MAC. */
#define SIG_MAC_LEN 32

/* Buffer size that always holds sig_sign_standard()'s "v1,<base64>" + NUL. */
#define SIG_STANDARD_SIGNATURE_SIZE 48

enum sig_scheme {
    SIG_STANDARD_WEBHOOKS, /* webhook-id / webhook-timestamp / webhook-signature */
    SIG_STRIPE,            /* Stripe-Signature: t=...,v1=<hex> */
    SIG_GITHUB,            /* X-Hub-Signature-256: sha256=<hex> */
    SIG_HMAC_SHA256,       /* hex or base64 MAC of the body in a configured header */
};

/* Parses a config value ("standard-webhooks", "stripe", "github",
 * "hmac-sha256", in any letter case) into *out. Returns -1 for anything
 * else, leaving *out unchanged. */
__attribute__((warn_unused_result)) int sig_scheme_parse(const char *name, enum sig_scheme *out);

/* The config spelling of a scheme; "invalid" outside the enum. Static
 * storage. */
const char *sig_scheme_name(enum sig_scheme scheme);

/* A decoded secret: the HMAC key bytes. Owned by whoever filled it in with
 * sig_key_decode(); released with sig_key_clear(). */
struct sig_key {
    unsigned char *bytes;
    size_t len;
};

/* Decodes a configured secret into the HMAC key for `scheme`:
 *   - standard-webhooks: "whsec_<base64>", or the bare base64 text; the
 *     base64 part is decoded (missing '=' padding is tolerated, as the
 *     reference SDKs do). Keys are the decoded bytes.
 *   - stripe, github, hmac-sha256: the secret's bytes as they are (Stripe's
 *     "whsec_..." included: Stripe signs with the whole string).
 * An empty secret or empty decoded key is refused, since an HMAC with an
 * empty key proves nothing. On success *out owns a heap copy (free it with
 * sig_key_clear()); on failure *out is {NULL, 0} and err says why without
 * quoting the secret. Allocation failure aborts (xmalloc). */
__attribute__((warn_unused_result)) int sig_key_decode(enum sig_scheme scheme, const char *secret, struct sig_key *out,
                                                       char *err, size_t errlen);

/* Zeroes the key bytes (OPENSSL_cleanse), frees them and resets *key to
 * {NULL, 0}. Accepts NULL and an already cleared key. */
void sig_key_clear(struct sig_key *key);

/* Case-insensitive request header lookup: returns the value (borrowed, valid
 * for the duration of sig_verify()) or NULL when the header is absent. */
typedef const char *(*sig_header_fn)(void *arg, const char *name);

/* The request as received. All pointers are borrowed for the call. */
struct sig_request {
    const unsigned char *body; /* raw body bytes exactly as received */
    size_t body_len;
    sig_header_fn header;
    void *header_arg;
    int64_t now; /* unix seconds */
};

/* What a partner's requests must satisfy. All pointers are borrowed. */
struct sig_params {
    enum sig_scheme scheme;
    const struct sig_key *keys; /* key rotation: a match with any key is accepted */
    size_t nkeys;
    /* Standard Webhooks and Stripe: the largest accepted difference, in
     * either direction, between the signed timestamp and `now`. 0 demands
     * the same second; a negative value rejects every request. */
    int64_t tolerance_s;
    /* hmac-sha256 only: header holding the MAC, e.g. "X-Signature"; its
     * value is 64 hex digits or padded base64, optionally prefixed
     * "sha256=". */
    const char *header_name;
};

enum sig_result {
    SIG_OK = 0,
    SIG_MISSING_HEADER,             /* a required header is absent */
    SIG_MALFORMED_HEADER,           /* present but unparseable, or no usable signature */
    SIG_MISMATCH,                   /* well-formed, but no key produces any given MAC */
    SIG_TIMESTAMP_OUT_OF_TOLERANCE, /* authentic, but signed too long ago or in the future */
};

/* Verifies req against params. The MAC is checked before the timestamp, so
 * SIG_TIMESTAMP_OUT_OF_TOLERANCE is only reported for correctly signed
 * requests (which makes it a reliable clock-skew or replay signal). A
 * configuration that cannot verify anything (no keys, hmac-sha256 without a
 * header name) fails closed with SIG_MISMATCH or SIG_MISSING_HEADER and says
 * so in err. err receives "" on SIG_OK and a one-line reason otherwise. */
__attribute__((warn_unused_result)) enum sig_result sig_verify(const struct sig_params *params,
                                                               const struct sig_request *req, char *err,
                                                               size_t errlen);

/* "ok", "missing_header", "malformed_header", "bad_signature",
 * "timestamp_out_of_tolerance"; "invalid" outside the enum. Static storage. */
const char *sig_result_name(enum sig_result result);

/* What a scheme's MAC covers besides the body, so that a caller can tell
 * whether a value it reads from a request is authenticated: a JSON field is
 * (every scheme signs the whole body); a header is only when
 * sig_signs_header() says so (standard-webhooks: webhook-id and
 * webhook-timestamp; no other scheme signs a header). sig_signs_timestamp()
 * is true for the schemes whose signed timestamp is held against the
 * tolerance (standard-webhooks, stripe): only they refuse a captured
 * request replayed later. Names compare case-insensitively. */
bool sig_signs_header(enum sig_scheme scheme, const char *name);
bool sig_signs_timestamp(enum sig_scheme scheme);

/* Bytes of sig_content_digest()'s output. */
#define SIG_DIGEST_LEN 32

/* SHA-256 of the signed body, into out: the identity of a request's signed
 * content, for deduplicating replays of schemes whose signature covers
 * neither the event id nor a timestamp. */
void sig_content_digest(const unsigned char *body, size_t len, unsigned char out[SIG_DIGEST_LEN]);

/* Outbound Standard Webhooks signature: writes "v1,<base64>" (NUL-terminated)
 * of HMAC-SHA256(key, id "." timestamp "." body) into out, ready for the
 * `webhook-signature` header. outlen >= SIG_STANDARD_SIGNATURE_SIZE always
 * suffices. Returns -1 for an empty key or id, a negative timestamp, or a
 * buffer that is too small (out is then "" if outlen > 0). */
__attribute__((warn_unused_result)) int sig_sign_standard(const struct sig_key *key, const char *id, int64_t timestamp,
                                                          const unsigned char *body, size_t len, char *out,
                                                          size_t outlen);

#endif
