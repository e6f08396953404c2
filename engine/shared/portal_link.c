/* Portal login links; see portal_link.h. A link token is exchanged once
 * (sql/queries/portal_link_redeem.sql) for a session token that lives only
 * in the browser's cookie. */
#include "portal_link.h"

#include <openssl/crypto.h>
#include <stdio.h>
#include <string.h>

#include "config.h"
#include "errbuf.h"
#include "query.h"

void portal_link_base_url(const struct hookd_config *cfg, char *out, size_t outlen)
{
    if (cfg->portal.base_url)
        snprintf(out, outlen, "%s", cfg->portal.base_url);
    else
        snprintf(out, outlen, "http://%s", cfg->listen);
    size_t n = strlen(out);
    while (n > 0 && out[n - 1] == '/')
        out[--n] = '\0';
}

int portal_link_mint(PGconn *conn, const struct hookd_config *cfg, const char *tenant_id, const char *session_id,
                     char *url, size_t urllen, char token[TOKEN_LEN], char *err, size_t errlen)
{
    char sha[TOKEN_SHA_HEX], link_ttl[24], session_ttl[24], base[512];
    if (token_new("hkp_", token, sha) != 0) {
        err_set(err, errlen, "cannot generate a token");
        return -1;
    }
    snprintf(link_ttl, sizeof link_ttl, "%lld", (long long)cfg->portal.link_ttl);
    snprintf(session_ttl, sizeof session_ttl, "%lld", (long long)cfg->portal.session_ttl);
    const char *p[] = {sha, tenant_id, link_ttl, session_ttl, session_id};
    PGresult *res = query_prepared(conn, Q_PORTAL_LINK_CREATE, p, err, errlen);
    if (!res) {
        OPENSSL_cleanse(token, TOKEN_LEN);
        return -1;
    }
    PQclear(res);
    portal_link_base_url(cfg, base, sizeof base);
    snprintf(url, urllen, "%s/portal/login?token=%s", base, token);
    return 0;
}
