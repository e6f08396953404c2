/* `hookd tenant portal-link T`: mints a login link as the API's
 * app-portal-access does (portal_link.c), for an operator at a shell. The
 * link is printed once, alone on the last line of stdout; only its digest
 * is stored. */
#include "cli_portal.h"

#include <openssl/crypto.h>
#include <stdio.h>

#include "backoff.h"
#include "cli_util.h"
#include "config.h"
#include "db.h"
#include "portal_link.h"
#include "query.h"

/* The tenant's id (by id or uid) into out; -1 after printing why. */
static int resolve(PGconn *conn, const char *id_or_uid, char *out, size_t outlen)
{
    char err[512];
    const char *p[] = {id_or_uid};
    PGresult *r = query_exec(conn, Q_TENANT_RESOLVE, p, err, sizeof err);
    int rc = r && PQntuples(r) == 1 ? 0 : -1;
    if (rc == 0)
        snprintf(out, outlen, "%s", PQgetvalue(r, 0, TENANT_RESOLVE_ID));
    else
        cli_fail("tenant portal-link", "%s", r ? "no such tenant" : err);
    PQclear(r);
    return rc;
}

static int run_portal_link(const struct cli_args *a, const struct hookd_config *cfg)
{
    char err[512], id[128], url[768], token[TOKEN_LEN], ttl[BACKOFF_DURATION_BUFLEN];
    PGconn *conn = cli_connect_db(cfg, "tenant portal-link", 0);
    if (!conn)
        return 1;
    int rc = 1;
    if (resolve(conn, a->args[0], id, sizeof id) != 0)
        goto done;
    if (portal_link_mint(conn, cfg, id, NULL, url, sizeof url, token, err, sizeof err) != 0) {
        cli_fail("tenant portal-link", "%s", err);
        goto done;
    }
    backoff_format_duration(cfg->portal.link_ttl, ttl, sizeof ttl);
    printf("portal link for %s; it opens once, within %s:\n%s\n", a->args[0], ttl, url);
    OPENSSL_cleanse(url, sizeof url);
    OPENSSL_cleanse(token, sizeof token);
    rc = 0;
done:
    PQfinish(conn);
    return rc;
}

const struct cli_args_cmd cli_portal_link_cmd =
    CLI_ARGS_CONFIG_LEAF("portal-link", "UID|ID",
                         "a single-use login link to the tenant's portal, printed alone on the last line", NULL, NULL,
                         run_portal_link, 1, 1);
