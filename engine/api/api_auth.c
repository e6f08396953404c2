/* Svix's authentication operations on an application's tokens: expire-all
 * ends an application's portal links, portal sessions and tenant-scoped API
 * tokens (now, or after a grace period; only the portal sessions of some
 * sessionIds when it names them), and logout revokes the tenant-scoped
 * token that asks. The portal login link itself (app-portal-access) is
 * minted in api_app.c, which reads its sessionId here. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_internal.h"

/* Svix's sessionId: 1 to 64 characters of [a-zA-Z0-9@_-]. */
#define SESSION_ID_MAX 64
#define SESSION_ID_CHARS "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789@_-"
/* expire-all: at most this many sessionIds, a grace period of at most
 * three days (Svix's limits) */
#define SESSION_IDS_MAX 1000
#define EXPIRY_MAX_S 259200

static bool session_id_ok(const char *s)
{
    size_t n = strlen(s);
    return n >= 1 && n <= SESSION_ID_MAX && strspn(s, SESSION_ID_CHARS) == n;
}

static void invalid_session_id(struct api_req *r, const char *field)
{
    api_invalid(r, "body", field,
                "must be 1 to " API_STR(SESSION_ID_MAX) " characters of a-z, A-Z, 0-9, '@', '_', '-'",
                "value_error.str.regex");
}

const char *api_auth_session_id(struct api_req *r)
{
    const char *s = api_str(r, r->body, "sessionId", false);
    if (s && !session_id_ok(s)) {
        invalid_session_id(r, "sessionId");
        return NULL;
    }
    return s;
}

/* The body's sessionIds as a JSON array (caller frees), NULL when absent,
 * null or empty (every session); false after answering 422. */
static bool read_session_ids(struct api_req *r, char **out)
{
    *out = NULL;
    json_t *v = r->body ? json_object_get(r->body, "sessionIds") : NULL;
    if (!v || json_is_null(v) || (json_is_array(v) && json_array_size(v) == 0))
        return true;
    if (!json_is_array(v) || json_array_size(v) > SESSION_IDS_MAX) {
        api_invalid(r, "body", "sessionIds", "must be a list of at most " API_STR(SESSION_IDS_MAX) " session ids",
                    "value_error.list");
        return false;
    }
    size_t i;
    json_t *x;
    json_array_foreach(v, i, x)
    {
        if (!json_is_string(x) || !session_id_ok(json_string_value(x))) {
            invalid_session_id(r, "sessionIds");
            return false;
        }
    }
    *out = json_dumps(v, JSON_COMPACT);
    return true;
}

void api_auth_expire_all(PGconn *conn, struct api_req *r)
{
    if (!api_global_token(r) || !api_resolve_app(conn, r, r->params[0]))
        return;
    int64_t expiry = api_int(r, r->body, "expiry", 0, EXPIRY_MAX_S);
    char *ids = NULL;
    if (!read_session_ids(r, &ids) || api_failed(r))
        return;
    char grace[24];
    snprintf(grace, sizeof grace, "%lld", (long long)(expiry > 0 ? expiry : 0));
    const char *p[] = {r->app, grace, ids};
    PGresult *res = api_exec(conn, r, Q_API_AUTH_EXPIRE_ALL, p);
    free(ids);
    if (res)
        api_reply(r, 204, NULL);
    PQclear(res);
}

void api_auth_logout(PGconn *conn, struct api_req *r)
{
    if (!r->tenant[0]) {
        api_error(r, 403, "insufficient access", "Only an application's token can be logged out.");
        return;
    }
    const char *p[] = {r->token_sha};
    PGresult *res = api_exec(conn, r, Q_API_AUTH_LOGOUT, p);
    if (res)
        api_reply(r, 204, NULL);
    PQclear(res);
}
