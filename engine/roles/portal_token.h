/* The portal's secrets: login-link and session tokens (random, 256 bits,
 * stored only as SHA-256 digests), the CSRF token derived from a session
 * token, and the minting of a login link (for the API's
 * `POST /api/v1/auth/app-portal-access/{app_id}` and for
 * `hookd tenant portal-link`). Thread-safe; no I/O but the given
 * connection. */
#ifndef HOOKD_PORTAL_TOKEN_H
#define HOOKD_PORTAL_TOKEN_H

#include <libpq-fe.h>
#include <stdbool.h>
#include <stddef.h>

struct api_req;
struct hookd_config;

#define PORTAL_TOKEN_LEN 80 /* buffer for a token: prefix + 64 hex + NUL */

/* A new random token "<prefix><64 hex>" into out and its SHA-256 (hex) into sha. */
__attribute__((warn_unused_result)) int portal_token_new(const char *prefix, char out[PORTAL_TOKEN_LEN], char sha[65]);
void portal_token_digest(const char *token, char sha[65]);
/* The CSRF token of a session: hex HMAC-SHA256 keyed with the session token. */
void portal_csrf_token(const char *session_token, char out[65]);
/* Constant-time comparison of a form's token with the session's. */
bool portal_csrf_check(const char *session_token, const char *given);

/* The links' base URL: [portal] base_url, or http://<listen>. Into out. */
void portal_base_url(const struct hookd_config *cfg, char *out, size_t outlen);

/* Stores a new single-use login link for tenant_id (an existing tenant id)
 * and writes its URL and token; the token is shown once and never stored.
 * 0, or -1 with err. */
__attribute__((warn_unused_result)) int portal_link_mint(PGconn *conn, const struct hookd_config *cfg,
                                                         const char *tenant_id, char *url, size_t urllen,
                                                         char token[PORTAL_TOKEN_LEN], char *err, size_t errlen);

/* The API operation v1.authentication.app-portal-access (api.c's route
 * table): {url, token} for the application the path names. */
void portal_app_portal_access(PGconn *conn, struct api_req *r);

#endif
