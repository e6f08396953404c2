/*
 * signature_pk.h — public-key webhook signatures (OpenSSL EVP) for the two
 * presets whose providers sign with a private key and publish the public
 * one. This module defines sig_pk_ops_for() (declared in signature.h, weak
 * in signature.c): the preset table there does the rest.
 *   - sendgrid (SIG_PK_ECDSA_P256): ECDSA P-256 with SHA-256 over the
 *     X-Twilio-Email-Event-Webhook-Timestamp value followed by the raw body;
 *     X-Twilio-Email-Event-Webhook-Signature holds the base64 DER signature.
 *     `public_key =` is the base64 of the DER SubjectPublicKeyInfo as
 *     SendGrid's console shows it (a PEM block is accepted too); a key of
 *     another curve or type is refused at load.
 *   - discord (SIG_PK_ED25519): Ed25519 over the X-Signature-Timestamp
 *     value followed by the raw body; X-Signature-Ed25519 holds the 64-byte
 *     signature in hex. `public_key =` is the 32-byte key in hex, as the
 *     developer portal shows it.
 * Several `public_key =` lines per partner stay accepted (rotation). Errors
 * name lengths and key types, never key text. Thread-safe: decoded keys are
 * only read.
 */
#ifndef HOOKD_SIGNATURE_PK_H
#define HOOKD_SIGNATURE_PK_H

#include "signature.h"

/* Bytes of a raw Ed25519 public key and signature. */
#define SIGPK_ED25519_KEY_LEN 32
#define SIGPK_ED25519_SIG_LEN 64

#endif
