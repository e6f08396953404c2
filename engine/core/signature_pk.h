/*
 * signature_pk.h — public-key webhook signatures (OpenSSL EVP), the two
 * presets whose partners sign with a private key and publish the public one:
 *   - sendgrid: ECDSA P-256 with SHA-256 over the
 *     X-Twilio-Email-Event-Webhook-Timestamp header text followed by the raw
 *     body; X-Twilio-Email-Event-Webhook-Signature holds the base64 DER
 *     signature. `public_key =` is the base64 of the DER SubjectPublicKeyInfo
 *     as SendGrid's console shows it (a PEM block is accepted too).
 *   - discord: Ed25519 over the X-Signature-Timestamp header text followed by
 *     the raw body; X-Signature-Ed25519 holds the 64-byte signature in hex.
 *     `public_key =` is the 32-byte key in hex, as the developer portal
 *     shows it.
 * Several public keys per partner (rotation): a signature valid under any of
 * them is accepted. The signature is checked before the timestamp, so a
 * stale-timestamp verdict is only given to authentic requests (as in
 * signature.c). Keys are kept as their decoded bytes in a struct sig_key
 * (DER for sendgrid, raw for discord); the EVP_PKEY is built per check. Pure
 * logic on caller data, thread-safe; error messages name headers and
 * lengths, never key or signature text.
 */
#ifndef HOOKD_SIGNATURE_PK_H
#define HOOKD_SIGNATURE_PK_H

#include <stddef.h>
#include <stdint.h>

#include "signature.h"

enum sigpk_kind {
    SIGPK_SENDGRID, /* ECDSA P-256 / SHA-256, base64 DER signature */
    SIGPK_DISCORD,  /* Ed25519, hex signature */
};

/* Bytes of a raw Ed25519 public key and signature. */
#define SIGPK_ED25519_KEY_LEN 32
#define SIGPK_ED25519_SIG_LEN 64

/* Decodes a `public_key =` value for kind into *out (heap copy, release
 * with sig_key_clear()). sendgrid: base64 (or PEM) of a DER
 * SubjectPublicKeyInfo holding a P-256 key; discord: 64 hex digits. A key
 * of another curve or type, or text that is not a key, is refused with a
 * reason in err (never the text itself); *out is then {NULL, 0}. */
__attribute__((warn_unused_result)) int sigpk_key_decode(enum sigpk_kind kind, const char *text, struct sig_key *out,
                                                         char *err, size_t errlen);

/* Verifies req for kind with any of keys[0..nkeys). tolerance_s as in
 * struct sig_params (a negative value refuses every request). Results and
 * err as sig_verify(). */
__attribute__((warn_unused_result)) enum sig_result sigpk_verify(enum sigpk_kind kind, const struct sig_key *keys,
                                                                 size_t nkeys, int64_t tolerance_s,
                                                                 const struct sig_request *req, char *err,
                                                                 size_t errlen);

/* The header names of kind, for callers that keep request headers. */
const char *sigpk_signature_header(enum sigpk_kind kind);
const char *sigpk_timestamp_header(enum sigpk_kind kind);

#endif
