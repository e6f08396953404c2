/* Portal tokens and login links; see portal_token.h. A link token is
 * exchanged once (sql/queries/portal_link_redeem.sql) for a session token
 * that lives only in the browser's cookie; the database keeps digests, so
 * neither a backup nor a log line can open a portal. */
#include "portal_token.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <openssl/sha.h>
#include <stdio.h>
#include <string.h>

#include "api_internal.h"
#include "config.h"
#include "db.h"
#include "query.h"

static void hex(const unsigned char *b, size_t n, char *out)
{
    for (size_t i = 0; i < n; i++)
        snprintf(out + 2 * i, 3, "%02x", b[i]);
}

int portal_token_new(const char *prefix, char out[PORTAL_TOKEN_LEN], char sha[65])
{
    unsigned char raw[32];
    if (strlen(prefix) > 12 || RAND_bytes(raw, sizeof raw) != 1)
        return -1;
    int o = snprintf(out, PORTAL_TOKEN_LEN, "%s", prefix);
    hex(raw, sizeof raw, out + o);
    OPENSSL_cleanse(raw, sizeof raw);
    portal_token_digest(out, sha);
    return 0;
}

void portal_token_digest(const char *token, char sha[65])
{
    unsigned char md[SHA256_DIGEST_LENGTH];
    SHA256((const unsigned char *)token, strlen(token), md);
    hex(md, sizeof md, sha);
    OPENSSL_cleanse(md, sizeof md);
}

void portal_csrf_token(const char *session_token, char out[65])
{
    static const char label[] = "hookd-portal-csrf-v1";
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    HMAC(EVP_sha256(), session_token, (int)strlen(session_token), (const unsigned char *)label, sizeof label - 1, md,
         &n);
    hex(md, n > 32 ? 32 : n, out);
    OPENSSL_cleanse(md, sizeof md);
}

bool portal_csrf_check(const char *session_token, const char *given)
{
    char want[65];
    if (!given || strlen(given) != 64)
        return false;
    portal_csrf_token(session_token, want);
    bool ok = CRYPTO_memcmp(want, given, 64) == 0;
    OPENSSL_cleanse(want, sizeof want);
    return ok;
}

void portal_base_url(const struct hookd_config *cfg, char *out, size_t outlen)
{
    if (cfg->portal.base_url)
        snprintf(out, outlen, "%s", cfg->portal.base_url);
    else
        snprintf(out, outlen, "http://%s", cfg->listen);
    size_t n = strlen(out);
    while (n > 0 && out[n - 1] == '/')
        out[--n] = '\0';
}

int portal_link_mint(PGconn *conn, const struct hookd_config *cfg, const char *tenant_id, char *url, size_t urllen,
                     char token[PORTAL_TOKEN_LEN], char *err, size_t errlen)
{
    char sha[65], link_ttl[24], session_ttl[24], base[512];
    if (portal_token_new("hkp_", token, sha) != 0) {
        snprintf(err, errlen, "cannot generate a token");
        return -1;
    }
    snprintf(link_ttl, sizeof link_ttl, "%lld", (long long)cfg->portal.link_ttl);
    snprintf(session_ttl, sizeof session_ttl, "%lld", (long long)cfg->portal.session_ttl);
    const char *p[] = {sha, tenant_id, link_ttl, session_ttl};
    PGresult *res = query_prepared(conn, Q_PORTAL_LINK_CREATE, p, err, errlen);
    if (!res) {
        OPENSSL_cleanse(token, PORTAL_TOKEN_LEN);
        return -1;
    }
    PQclear(res);
    portal_base_url(cfg, base, sizeof base);
    snprintf(url, urllen, "%s/portal/login?token=%s", base, token);
    return 0;
}

void portal_app_portal_access(PGconn *conn, struct api_req *r)
{
    char url[768], token[PORTAL_TOKEN_LEN], err[256];
    if (!api_resolve_app(conn, r, r->params[0]))
        return;
    if (portal_link_mint(conn, r->cfg, r->app, url, sizeof url, token, err, sizeof err) != 0) {
        api_error(r, 503, "unavailable", "the portal link could not be stored");
        return;
    }
    api_reply(r, 200, json_pack("{s:s, s:s}", "url", url, "token", token));
    OPENSSL_cleanse(token, sizeof token);
    OPENSSL_cleanse(url, sizeof url);
}
