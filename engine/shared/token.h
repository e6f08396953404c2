/* Random secrets and their digests: login-link, session and API tokens
 * (256 random bits, stored only as SHA-256 digests) and the CSRF token
 * derived from a session token. Thread-safe; no I/O. */
#ifndef HOOKD_TOKEN_H
#define HOOKD_TOKEN_H

#include <stdbool.h>
#include <stddef.h>

#define TOKEN_LEN 80     /* buffer for a token: prefix (at most 12) + 64 hex + NUL */
#define TOKEN_SHA_HEX 65 /* a SHA-256 digest in hex, with its NUL */

/* A new random token "<prefix><64 hex>" into out and its digest into sha. */
__attribute__((warn_unused_result)) int token_new(const char *prefix, char out[TOKEN_LEN], char sha[TOKEN_SHA_HEX]);
/* A new endpoint signing secret into out: "whsec_" and the base64 of 24
 * random bytes (the Standard Webhooks form). -1 when the generator fails or
 * outlen is below TOKEN_WHSEC_LEN. */
#define TOKEN_WHSEC_LEN 39 /* "whsec_" + 32 base64 + NUL */
__attribute__((warn_unused_result)) int token_whsec_new(char *out, size_t outlen);
/* The SHA-256 of token, as lowercase hex. */
void token_digest(const char *token, char sha[TOKEN_SHA_HEX]);
/* The CSRF token of a session: hex HMAC-SHA256 keyed with the session token. */
void token_csrf(const char *session_token, char out[TOKEN_SHA_HEX]);
/* Constant-time comparison of a form's token with the session's. */
bool token_csrf_check(const char *session_token, const char *given);

#endif
