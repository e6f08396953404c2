/*
 * encoding.h — bounded hex and base64 (RFC 4648 standard alphabet) encoding
 * and strict decoding. Webhook signatures and secrets travel as text (hex in
 * Stripe and GitHub headers, base64 in Standard Webhooks headers and `whsec_`
 * secrets); signature.c decodes them to raw bytes with these functions so
 * that MACs are compared as bytes, never as strings. Every function writes
 * only inside the caller's buffer and returns -1 on bad input or a buffer
 * that is too small, so attacker-controlled header values cannot overflow
 * anything. Pure functions: no allocation, no globals, thread-safe.
 */
#ifndef HOOKD_ENCODING_H
#define HOOKD_ENCODING_H

#include <stddef.h>

/* Characters enc_hex_encode() writes for n bytes, not counting the NUL. */
#define ENC_HEX_LEN(n) ((n)*2)

/* Characters enc_base64_encode() writes for n bytes, not counting the NUL. */
#define ENC_BASE64_LEN(n) ((((n) + 2) / 3) * 4)

/* Upper bound of the bytes a base64 text of n characters decodes to. */
#define ENC_BASE64_DECODED_MAX(n) (((n) / 4) * 3)

/* Writes the lowercase hex form of in[0..len) and a NUL into out. Needs
 * outcap >= ENC_HEX_LEN(len) + 1; returns -1 (and writes nothing) otherwise. */
__attribute__((warn_unused_result)) int enc_hex_encode(const unsigned char *in, size_t len, char *out, size_t outcap);

/* Decodes inlen hex digits (either case) into out and stores the byte count
 * in *outlen. Returns -1, leaving *outlen at 0, for an odd length, a non-hex
 * character (including whitespace and NUL) or outcap < inlen / 2. out may be
 * partly written on failure. */
__attribute__((warn_unused_result)) int enc_hex_decode(const char *in, size_t inlen, unsigned char *out, size_t outcap,
                                                       size_t *outlen);

/* The value 0..15 of one hex digit (either case), or -1 for any other character. */
int enc_hex_value(char c);

/* Writes the padded standard base64 form of in[0..len) and a NUL into out.
 * Needs outcap >= ENC_BASE64_LEN(len) + 1; returns -1 (and writes nothing)
 * otherwise, or when len is too large for OpenSSL's int-sized interface. */
__attribute__((warn_unused_result)) int enc_base64_encode(const unsigned char *in, size_t len, char *out,
                                                          size_t outcap);

/* Decodes padded standard base64 into out and stores the exact byte count
 * (padding excluded) in *outlen; an empty input decodes to 0 bytes. Returns
 * -1, leaving *outlen at 0, when: inlen is not a multiple of 4 or exceeds
 * INT_MAX (OpenSSL's interface is int-sized); a character is outside A-Z a-z 0-9 + /
 * (whitespace, NUL, and the URL-safe - _ included); '=' appears anywhere but
 * as one or two final characters; or outcap is smaller than the decoded
 * length. Unused bits of the last character are not required to be zero
 * (decoders commonly accept them, and the decoded bytes are what we
 * compare). out may be partly written on failure. */
__attribute__((warn_unused_result)) int enc_base64_decode(const char *in, size_t inlen, unsigned char *out,
                                                          size_t outcap, size_t *outlen);

#endif
