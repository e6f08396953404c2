/* The portal's single-use login links: minted for the API's
 * `POST /api/v1/auth/app-portal-access/{app_id}`, the admin view and
 * `hookd tenant portal-link`, redeemed by the portal. Thread-safe; no I/O
 * but the given connection. */
#ifndef HOOKD_PORTAL_LINK_H
#define HOOKD_PORTAL_LINK_H

#include <libpq-fe.h>
#include <stddef.h>

#include "token.h"

struct hookd_config;

/* The links' base URL: [portal] base_url, or http://<listen>. Into out. */
void portal_link_base_url(const struct hookd_config *cfg, char *out, size_t outlen);

/* Stores a new single-use login link for tenant_id (an existing tenant id)
 * and writes its URL and token; session_id (the API's sessionId, or NULL)
 * goes with the link and the session it opens, so that the API's
 * expire-all can name them. -1 with err set when it cannot. */
__attribute__((warn_unused_result)) int portal_link_mint(PGconn *conn, const struct hookd_config *cfg,
                                                         const char *tenant_id, const char *session_id, char *url,
                                                         size_t urllen, char token[TOKEN_LEN], char *err,
                                                         size_t errlen);

#endif
