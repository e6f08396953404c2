/* `hookd tenant add|list|show|update|delete` and `hookd token create|list|revoke`.
 * A tenant is what Svix calls an application; its uid is the customer's id
 * in the user's own system. A token is printed once, alone on the last line
 * of stdout, and stored as its SHA-256 digest; `--tenant` scopes it to one
 * tenant. The statements are sql/queries/tenant_*.sql and token_*.sql. */
#include "cli_tenant.h"

#include <openssl/crypto.h>
#include <stdio.h>
#include <string.h>

#include "cli_portal.h"
#include "cli_util.h"
#include "config.h"
#include "db.h"
#include "query.h"
#include "token.h"

int cli_tenant_resolve(PGconn *conn, const char *id_or_uid, char *out, size_t outlen, const char *who)
{
    char err[512];
    const char *p[] = {id_or_uid};
    PGresult *r = query_exec(conn, Q_TENANT_RESOLVE, p, err, sizeof err);
    if (!r)
        return cli_fail(who, "%s", err), -1;
    int rc = PQntuples(r) == 1 ? 0 : -1;
    if (rc == 0)
        snprintf(out, outlen, "%s", PQgetvalue(r, 0, TENANT_RESOLVE_ID));
    else
        cli_fail(who, "no tenant '%s'", id_or_uid);
    PQclear(r);
    return rc;
}

/* ---- tenant ---- */

static bool valid_uid(const char *uid)
{
    size_t n = strlen(uid);
    return n >= 1 && n <= 256 && strspn(uid, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.") == n;
}

static int run_tenant_add(const struct cli_args *a, const struct hookd_config *cfg)
{
    const char *uid = a->args[0], *name = cli_args_value(a, "name");
    if (!valid_uid(uid))
        return cli_fail("tenant add", "the uid must be 1 to 256 characters of a-z, A-Z, 0-9, '-', '_' and '.'");
    PGconn *conn = cli_connect_db(cfg, "tenant add", 0);
    if (!conn)
        return 1;
    char err[512];
    const char *p[] = {uid, name ? name : uid};
    PGresult *r = query_exec(conn, Q_TENANT_ADD, p, err, sizeof err);
    int rc = 0;
    if (!r)
        rc = cli_fail("tenant add", "%s", strstr(err, "duplicate key") ? "a tenant with that uid exists" : err);
    else
        printf("tenant %s added (id %s)\n", uid, PQgetvalue(r, 0, TENANT_ADD_ID));
    PQclear(r);
    PQfinish(conn);
    return rc;
}

static int run_tenant_list(const struct cli_args *a, const struct hookd_config *cfg)
{
    PGconn *conn = cli_connect_db(cfg, "tenant list", 0);
    if (!conn)
        return 1;
    char err[512];
    PGresult *r = query_exec(conn, Q_TENANT_LIST, NULL, err, sizeof err);
    int rc = 0;
    if (!r) {
        rc = cli_fail("tenant list", "%s", err);
    } else if (a->json) {
        printf("[");
        for (int i = 0; i < PQntuples(r); i++)
            printf("%s{\"id\":\"%s\",\"uid\":\"%s\",\"endpoints\":%s}", i ? "," : "", PQgetvalue(r, i, TENANT_LIST_ID),
                   PQgetvalue(r, i, TENANT_LIST_UID), PQgetvalue(r, i, TENANT_LIST_ENDPOINTS));
        printf("]\n");
    } else {
        printf("%-32s %-24s %-9s %s\n", "ID", "UID", "ENDPOINTS", "NAME");
        for (int i = 0; i < PQntuples(r); i++)
            printf("%-32s %-24s %-9s %s\n", PQgetvalue(r, i, TENANT_LIST_ID), PQgetvalue(r, i, TENANT_LIST_UID),
                   PQgetvalue(r, i, TENANT_LIST_ENDPOINTS), PQgetvalue(r, i, TENANT_LIST_NAME));
    }
    PQclear(r);
    PQfinish(conn);
    return rc;
}

static int run_tenant_show(const struct cli_args *a, const struct hookd_config *cfg)
{
    PGconn *conn = cli_connect_db(cfg, "tenant show", 0);
    if (!conn)
        return 1;
    char id[128], err[512];
    int rc = 1;
    PGresult *r = NULL;
    if (cli_tenant_resolve(conn, a->args[0], id, sizeof id, "tenant show") != 0)
        goto done;
    const char *p[] = {id};
    if (!(r = query_exec(conn, Q_TENANT_SHOW, p, err, sizeof err))) {
        cli_fail("tenant show", "%s", err);
        goto done;
    }
#define V(col) PQgetvalue(r, 0, TENANT_SHOW_##col)
    printf("id: %s\nuid: %s\nname: %s\nrate_limit: %s\nmetadata: %s\ncreated_at: %s\nendpoints: %s\nmessages: %s\n"
           "pending_deliveries: %s\ndead_deliveries: %s\ntokens: %s\nsettings: %s\n",
           V(ID), V(UID), V(NAME), *V(RATE_LIMIT) ? V(RATE_LIMIT) : "-", V(METADATA), V(CREATED_AT), V(ENDPOINTS),
           V(MESSAGES), V(PENDING_DELIVERIES), V(DEAD_DELIVERIES), V(TOKENS), V(SETTINGS));
#undef V
    rc = 0;
done:
    PQclear(r);
    PQfinish(conn);
    return rc;
}

static int run_tenant_update(const struct cli_args *a, const struct hookd_config *cfg)
{
    const char *name = cli_args_value(a, "name"), *settings;
    if (cli_settings_option(a, "tenant update", true, &settings) != 0)
        return 1;
    if (!name && !settings)
        return cli_fail("tenant update", "nothing to change: give --name or --settings");
    PGconn *conn = cli_connect_db(cfg, "tenant update", 0);
    if (!conn)
        return 1;
    char id[128], err[512];
    int rc = 1;
    if (cli_tenant_resolve(conn, a->args[0], id, sizeof id, "tenant update") == 0) {
        const char *p[] = {id, name, settings};
        PGresult *r = query_exec(conn, Q_TENANT_UPDATE, p, err, sizeof err);
        if (!r)
            cli_fail("tenant update", "%s", err);
        else
            printf("tenant %s updated\n", a->args[0]), rc = 0;
        PQclear(r);
    }
    PQfinish(conn);
    return rc;
}

static int run_tenant_delete(const struct cli_args *a, const struct hookd_config *cfg)
{
    PGconn *conn = cli_connect_db(cfg, "tenant delete", 0);
    if (!conn)
        return 1;
    char id[128], err[512];
    int rc = 1;
    if (cli_tenant_resolve(conn, a->args[0], id, sizeof id, "tenant delete") == 0) {
        const char *p[] = {id};
        PGresult *r = query_exec(conn, Q_TENANT_DELETE, p, err, sizeof err);
        if (!r)
            cli_fail("tenant delete", "%s", err);
        else
            printf("tenant %s deleted, with its endpoints and tokens\n", a->args[0]), rc = 0;
        PQclear(r);
    }
    PQfinish(conn);
    return rc;
}

/* ---- token ---- */

static int run_token_create(const struct cli_args *a, const struct hookd_config *cfg)
{
    const char *name = cli_args_value(a, "name"), *tenant = cli_args_value(a, "tenant");
    if (!name || !*name)
        return cli_fail("token create", "needs --name N");
    PGconn *conn = cli_connect_db(cfg, "token create", 0);
    if (!conn)
        return 1;
    char tid[128], token[TOKEN_LEN], sha[TOKEN_SHA_HEX], prefix[12], err[512];
    int rc = 1;
    if (tenant && cli_tenant_resolve(conn, tenant, tid, sizeof tid, "token create") != 0)
        goto done;
    if (token_new("hk_", token, sha) != 0) {
        cli_fail("token create", "cannot generate a token");
        goto done;
    }
    snprintf(prefix, sizeof prefix, "%.10s", token);
    const char *p[] = {name, tenant ? tid : NULL, sha, prefix};
    PGresult *r = query_exec(conn, Q_TOKEN_CREATE, p, err, sizeof err);
    if (!r) {
        cli_fail("token create", "%s", strstr(err, "duplicate key") ? "a token with that name exists" : err);
    } else {
        printf("token %s created for %s; it is shown once, store it now:\n%s\n", name,
               tenant ? tenant : "every tenant", token);
        rc = 0;
    }
    PQclear(r);
    OPENSSL_cleanse(token, sizeof token);
done:
    PQfinish(conn);
    return rc;
}

static int run_token_list(const struct cli_args *a, const struct hookd_config *cfg)
{
    (void)a;
    PGconn *conn = cli_connect_db(cfg, "token list", 0);
    if (!conn)
        return 1;
    char err[512];
    PGresult *r = query_exec(conn, Q_TOKEN_LIST, NULL, err, sizeof err);
    int rc = 0;
    if (!r) {
        rc = cli_fail("token list", "%s", err);
    } else {
        printf("%-24s %-24s %-12s %-8s %s\n", "NAME", "TENANT", "PREFIX", "STATE", "LAST USED");
        for (int i = 0; i < PQntuples(r); i++)
            printf("%-24s %-24s %-12s %-8s %s\n", PQgetvalue(r, i, TOKEN_LIST_NAME),
                   PQgetvalue(r, i, TOKEN_LIST_TENANT), PQgetvalue(r, i, TOKEN_LIST_PREFIX),
                   PQgetvalue(r, i, TOKEN_LIST_STATE),
                   *PQgetvalue(r, i, TOKEN_LIST_LAST_USED_AT) ? PQgetvalue(r, i, TOKEN_LIST_LAST_USED_AT) : "never");
    }
    PQclear(r);
    PQfinish(conn);
    return rc;
}

static int run_token_revoke(const struct cli_args *a, const struct hookd_config *cfg)
{
    PGconn *conn = cli_connect_db(cfg, "token revoke", 0);
    if (!conn)
        return 1;
    char err[512];
    const char *p[] = {a->args[0]};
    PGresult *r = query_exec(conn, Q_TOKEN_REVOKE, p, err, sizeof err);
    int rc = 1;
    if (!r)
        cli_fail("token revoke", "%s", err);
    else if (PQntuples(r) == 0)
        cli_fail("token revoke", "no active token named '%s'", a->args[0]);
    else
        printf("token %s revoked\n", a->args[0]), rc = 0;
    PQclear(r);
    PQfinish(conn);
    return rc;
}

/* ---- the tables ---- */

static const struct cli_args_opt tenant_add_opts[] = {
    {"name", "N", "a display name (default: the uid)", NULL},
    {0},
};
static const struct cli_args_cmd tenant_add = {
    .name = "add",
    .synopsis = "UID [--name N]",
    .summary = "add a tenant (a Svix application); UID is the customer's id in your system",
    .opts = tenant_add_opts,
    .run = run_tenant_add,
    .min_args = 1,
    .max_args = 1,
    .config = true,
};
static const struct cli_args_cmd tenant_list = {
    .name = "list",
    .summary = "every tenant: id, uid, endpoints, name",
    .run = run_tenant_list,
    .config = true,
};
static const struct cli_args_cmd tenant_show = {
    .name = "show",
    .synopsis = "UID|ID",
    .summary = "one tenant with its endpoints, messages and deliveries",
    .run = run_tenant_show,
    .min_args = 1,
    .max_args = 1,
    .config = true,
};
static const struct cli_args_opt tenant_update_opts[] = {
    {"name", "N", "a new display name", NULL},
    {"settings", "JSON",
     "delivery settings of its endpoints: {\"signature_headers\": \"svix\"} (merged, null removes one; an "
     "endpoint's own take precedence)",
     NULL},
    {0},
};
static const struct cli_args_cmd tenant_update = {
    .name = "update",
    .synopsis = "UID|ID [--name N] [--settings JSON]",
    .summary = "change a tenant's name or delivery settings; what is not given stays",
    .opts = tenant_update_opts,
    .run = run_tenant_update,
    .min_args = 1,
    .max_args = 1,
    .config = true,
};
static const struct cli_args_cmd tenant_delete = {
    .name = "delete",
    .synopsis = "UID|ID",
    .summary = "delete a tenant with its endpoints and tokens (its messages stay in the outbox)",
    .run = run_tenant_delete,
    .min_args = 1,
    .max_args = 1,
    .config = true,
};
static const struct cli_args_cmd *const tenant_subs[] =
    {&tenant_add, &tenant_list, &tenant_show, &tenant_update, &tenant_delete, &cli_portal_link_cmd, NULL};
const struct cli_args_cmd cli_tenant_cmd = {
    .name = "tenant",
    .summary = "tenants: the customers whose endpoints receive their own events (Svix applications)",
    .subs = tenant_subs,
};

static const struct cli_args_opt token_create_opts[] = {
    {"name", "N", "the token's name (for list and revoke)", NULL},
    {"tenant", "T", "scope the token to one tenant (uid or id); default: every tenant", NULL},
    {0},
};
static const struct cli_args_cmd token_create = {
    .name = "create",
    .synopsis = "--name N [--tenant T]",
    .summary = "a new API token, printed once alone on the last line; stored hashed",
    .opts = token_create_opts,
    .run = run_token_create,
    .config = true,
};
static const struct cli_args_cmd token_list = {
    .name = "list",
    .summary = "every API token: name, tenant, prefix, state, last use",
    .run = run_token_list,
    .config = true,
};
static const struct cli_args_cmd token_revoke = {
    .name = "revoke",
    .synopsis = "NAME",
    .summary = "revoke an API token",
    .run = run_token_revoke,
    .min_args = 1,
    .max_args = 1,
    .config = true,
};
static const struct cli_args_cmd *const token_subs[] = {&token_create, &token_list, &token_revoke, NULL};
const struct cli_args_cmd cli_token_cmd = {
    .name = "token",
    .summary = "API tokens (Authorization: Bearer) for /api/v1/",
    .subs = token_subs,
};
