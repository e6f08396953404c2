/* Applications (Svix) = hookd's tenants: list, create (and get-or-create
 * with `get_if_exists=true`), get, update (PUT: create when missing),
 * patch, delete, and the portal login link of one (app-portal-access). A tenant-scoped token sees its own application only, and
 * may neither create nor delete one (403). Statements:
 * sql/queries/api_app_*.sql; the JSON shape: hookd_api_app() in sql/0013. */
#include <openssl/crypto.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_internal.h"
#include "portal_link.h"
#include "query.h"
#include "xmalloc.h"

/* name, uid, throttleRate (or rateLimit) and metadata of an ApplicationIn,
 * and hookd's settings. */
struct app_fields {
    const char *name, *uid;
    int64_t rate;
    bool has_uid, has_rate;
    char *metadata;
    char *settings; /* delivery settings (settings.h), merged into the stored ones; NULL: none given */
    char rate_text[24];
};

static void fields_free(struct app_fields *f)
{
    free(f->metadata);
    free(f->settings);
    f->metadata = f->settings = NULL;
}

static int read_fields(struct api_req *r, struct app_fields *f, bool name_required)
{
    memset(f, 0, sizeof *f);
    const json_t *b = r->body;
    f->name = api_str(r, b, "name", name_required);
    if (!name_required && json_is_string(json_object_get(b, "name")) && !*f->name)
        api_invalid(r, "body", "name", "ensure this value has at least 1 characters", "value_error");
    f->has_uid = json_object_get(b, "uid") != NULL;
    f->uid = api_str(r, b, "uid", false);
    if (f->uid)
        api_check_uid(r, "uid", f->uid, "app");
    const char *rk = json_object_get(b, "rateLimit") ? "rateLimit" : "throttleRate";
    f->has_rate = json_object_get(b, rk) != NULL;
    f->rate = api_int(r, b, rk, 1, 65535);
    snprintf(f->rate_text, sizeof f->rate_text, "%lld", (long long)f->rate);
    f->metadata = api_metadata_text(r, b, "metadata");
    f->settings = api_settings_text(r, b);
    if (api_failed(r)) {
        fields_free(f);
        return -1;
    }
    return 0;
}

static void reply_body(struct api_req *r, PGresult *res, int status)
{
    json_t *body = res && PQntuples(res) == 1 ? api_row_json(res, 0, 0) : NULL;
    if (body)
        api_reply(r, status, body);
    else if (!api_failed(r))
        api_not_found(r, "Application");
    PQclear(res);
}

void api_app_list(PGconn *conn, struct api_req *r)
{
    bool no_endpoints, disabled, play;
    /* Svix Play endpoints do not exist in hookd: that exclusion excludes nothing */
    if (!api_bool_query(r, "exclude_apps_with_no_endpoints", false, &no_endpoints) ||
        !api_bool_query(r, "exclude_apps_with_disabled_endpoints", false, &disabled) ||
        !api_bool_query(r, "exclude_apps_with_svix_play_endpoints", false, &play))
        return;
    const char *p[] = {r->tenant, no_endpoints ? "true" : "false", disabled ? "true" : "false"};
    api_list(conn, r, Q_API_APP_LIST, p, 3, API_ORDER_ASC, API_APP_LIST_BODY, API_APP_LIST_ID);
}

static void create(PGconn *conn, struct api_req *r, const struct app_fields *f)
{
    const char *p[] = {f->name, f->uid, f->rate >= 0 ? f->rate_text : NULL, f->metadata ? f->metadata : "{}",
                       f->settings};
    PGresult *res = query_prepared_raw(conn, Q_API_APP_CREATE, p, NULL, NULL);
    if (PQresultStatus(res) != PGRES_TUPLES_OK) {
        api_db_error(r, conn, res, "An application with this uid");
        PQclear(res);
        return;
    }
    reply_body(r, res, 201);
}

void api_app_create(PGconn *conn, struct api_req *r)
{
    struct app_fields f;
    if (read_fields(r, &f, true) != 0)
        return;
    const char *gie = api_query(r, "get_if_exists");
    if (gie && strcmp(gie, "true") == 0 && f.uid) {
        const char *p[] = {f.uid, r->tenant};
        PGresult *res = api_exec(conn, r, Q_API_APP_FIND_UID, p);
        if (res && PQntuples(res) == 1) {
            reply_body(r, res, 200);
            fields_free(&f);
            return;
        }
        PQclear(res);
        if (api_failed(r))
            goto done;
    }
    if (api_global_token(r))
        create(conn, r, &f);
done:
    fields_free(&f);
}

void api_app_get(PGconn *conn, struct api_req *r)
{
    if (!api_resolve_app(conn, r, r->params[0]))
        return;
    const char *p[] = {r->app};
    reply_body(r, api_exec(conn, r, Q_API_APP_GET, p), 200);
}

/* Whether a tenant token's update keeps its application's uid. The uid is
 * how the operator names the tenant (hookd_emit, the CLI): unique over
 * every tenant, so a change to a uid another tenant holds could only be
 * refused by telling that it is taken. A tenant token may send its uid
 * unchanged (a PUT of the whole application) or leave it out (kept, also
 * by a PUT); any other value is refused with 403 whether or not another
 * tenant holds it. false after answering. */
static bool tenant_keeps_uid(PGconn *conn, struct api_req *r, const struct app_fields *f)
{
    if (!r->tenant[0] || !f->has_uid)
        return true;
    const char *p[] = {r->app};
    PGresult *res = api_exec(conn, r, Q_API_APP_GET, p);
    json_t *app = res ? api_row_json(res, 0, API_APP_GET_BODY) : NULL;
    PQclear(res);
    const char *cur = json_string_value(json_object_get(app, "uid"));
    bool same = (!cur && !f->uid) || (cur && f->uid && strcmp(cur, f->uid) == 0);
    json_decref(app);
    if (!same && !api_failed(r))
        api_error(r, 403, "insufficient access",
                  "An application's uid is set by the operator: a tenant token may not change it.");
    return same;
}

static void update(PGconn *conn, struct api_req *r, const struct app_fields *f, bool put)
{
    if (!tenant_keeps_uid(conn, r, f))
        return;
    /* a tenant's PUT without a uid keeps it (tenant_keeps_uid) */
    const char *set_uid = (put && !r->tenant[0]) || f->has_uid ? "true" : "false";
    const char *set_rate = put || f->has_rate ? "true" : "false";
    const char *meta = f->metadata ? f->metadata : (put ? "{}" : NULL);
    const char *p[] = {r->app, f->name,    set_uid, f->uid, set_rate, f->rate >= 0 ? f->rate_text : NULL,
                       meta,   f->settings};
    PGresult *res = query_prepared_raw(conn, Q_API_APP_UPDATE, p, NULL, NULL);
    if (PQresultStatus(res) != PGRES_TUPLES_OK) {
        api_db_error(r, conn, res, "An application with this uid");
        PQclear(res);
        return;
    }
    reply_body(r, res, 200);
}

void api_app_update(PGconn *conn, struct api_req *r)
{
    struct app_fields f;
    if (read_fields(r, &f, true) != 0)
        return;
    const char *p[] = {r->params[0], r->tenant};
    PGresult *res = api_exec(conn, r, Q_API_APP_RESOLVE, p);
    bool found = res && PQntuples(res) == 1;
    if (found)
        snprintf(r->app, sizeof r->app, "%s", PQgetvalue(res, 0, API_APP_RESOLVE_ID));
    PQclear(res);
    if (api_failed(r))
        goto done;
    if (found) {
        update(conn, r, &f, true);
    } else if (r->tenant[0]) {
        api_not_found(r, "Application");
    } else if (api_check_uid(r, "uid", r->params[0], "app")) {
        f.uid = f.uid ? f.uid : r->params[0]; /* Svix: the path names the new application's uid */
        create(conn, r, &f);
    }
done:
    fields_free(&f);
}

void api_app_patch(PGconn *conn, struct api_req *r)
{
    struct app_fields f;
    if (read_fields(r, &f, false) != 0)
        return;
    if (api_resolve_app(conn, r, r->params[0]))
        update(conn, r, &f, false);
    fields_free(&f);
}

void api_app_delete(PGconn *conn, struct api_req *r)
{
    if (!api_resolve_app(conn, r, r->params[0]) || !api_global_token(r))
        return;
    const char *p[] = {r->app};
    PGresult *res = api_exec(conn, r, Q_API_APP_DELETE, p);
    if (res)
        api_reply(r, 204, NULL);
    PQclear(res);
}

void api_app_portal_access(PGconn *conn, struct api_req *r)
{
    char url[768], token[TOKEN_LEN], err[256];
    const char *session_id = api_auth_session_id(r);
    if (api_failed(r) || !api_resolve_app(conn, r, r->params[0]))
        return;
    if (portal_link_mint(conn, r->cfg, r->app, session_id, url, sizeof url, token, err, sizeof err) != 0) {
        api_error(r, 503, "unavailable", "the portal link could not be stored");
        return;
    }
    api_reply(r, 200, json_pack("{s:s, s:s}", "url", url, "token", token));
    OPENSSL_cleanse(token, sizeof token);
    OPENSSL_cleanse(url, sizeof url);
}
