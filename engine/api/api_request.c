/* One API request's job: on a DB thread it authenticates the token, then
 * runs the operation in a transaction of its own (BEGIN, the idempotency
 * key, the operation, COMMIT or ROLLBACK); back on the loop it counts a
 * failed authentication (or answers it 429 when the address is blocked),
 * schedules the deliveries the operation made due and answers. Requests reach it one by one from the router (api.c) or in
 * batches of message creations (api_message.c). */
#include <event2/http.h>
#include <openssl/crypto.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admin_guard.h"
#include "api_internal.h"
#include "clock.h"
#include "config.h"
#include "db.h"
#include "http_server.h"
#include "log.h"
#include "query.h"
#include "sched.h"
#include "xmalloc.h"

void api_req_free(struct api_req *r)
{
    for (int i = 0; i < r->nparams; i++)
        free(r->params[i]);
    evhttp_clear_headers(&r->query);
    json_decref(r->body);
    free(r->payload_raw);
    json_decref(r->reply);
    free(r->idem_key);
    free(r->idem_scope);
    for (size_t i = 0; i < r->ndue; i++)
        free(r->due[i]);
    OPENSSL_cleanse(r->token_sha, sizeof r->token_sha);
    if (r->cfg)
        config_unref((struct hookd_config *)r->cfg);
    free(r);
}

static void send_answer(struct api_req *r)
{
    if (!r->req)
        return;
    evhttp_connection_set_closecb(evhttp_request_get_connection(r->req), NULL, NULL);
    /* an operation's answer is a tenant's data, and some carry a secret
     * (an endpoint's signing secret, a portal link's token): no cache keeps
     * any of them */
    evhttp_add_header(evhttp_request_get_output_headers(r->req), "Cache-Control", "no-store");
    if (r->status == 204 || !r->reply) {
        evhttp_send_reply(r->req, r->status ? r->status : 204, http_reason(r->status ? r->status : 204), NULL);
        return;
    }
    json_t *body = r->reply;
    r->reply = NULL;
    http_reply_json(r->req, r->status, body);
}

/* ---- the job (DB thread) -------------------------------------------------- */

static bool authenticate(PGconn *conn, struct api_req *r)
{
    const char *p[] = {r->token_sha};
    char err[256];
    PGresult *res = query_prepared(conn, Q_API_TOKEN_FIND, p, err, sizeof err);
    if (!res) {
        api_error(r, 503, "unavailable", "the database is unavailable");
        return false;
    }
    bool found = PQntuples(res) == 1;
    if (found)
        snprintf(r->tenant, sizeof r->tenant, "%s", PQgetvalue(res, 0, API_TOKEN_FIND_TENANT_ID));
    if (found && PQgetvalue(res, 0, API_TOKEN_FIND_STALE)[0] == 't') {
        const char *t[] = {PQgetvalue(res, 0, API_TOKEN_FIND_ID)};
        PGresult *u = query_prepared(conn, Q_API_TOKEN_TOUCH, t, err, sizeof err);
        PQclear(u); /* last_used_at is informative: a failure is not the request's */
    }
    PQclear(res);
    if (!found) {
        api_error(r, 401, "authentication_failed", "Incorrect authentication credentials.");
        return false;
    }
    r->auth_ok = true;
    return true;
}

/* The idempotency scope: the token's tenant, the method and the path
 * (read on the loop: the request is the loop's). */
void api_idem_scope(const struct api_req *r, char *out, size_t outlen)
{
    snprintf(out, outlen, "%s %s", r->tenant[0] ? r->tenant : "*", r->idem_scope ? r->idem_scope : "");
}

/* 1: the key was new (claimed in this transaction); 0: answered from the
 * record; -1: failed (answer set). */
static int claim_key(PGconn *conn, struct api_req *r, const char *scope)
{
    const char *p[] = {scope, r->idem_key};
    PGresult *res = api_exec(conn, r, Q_API_IDEMPOTENCY_CLAIM, p);
    if (!res)
        return -1;
    bool claimed = PQntuples(res) == 1;
    PQclear(res);
    if (claimed)
        return 1;
    if (!(res = api_exec(conn, r, Q_API_IDEMPOTENCY_GET, p)))
        return -1;
    if (PQntuples(res) != 1 || PQgetisnull(res, 0, API_IDEMPOTENCY_GET_STATUS)) {
        PQclear(res);
        api_error(r, 409, "conflict", "a request with this idempotency-key is in progress");
        return -1;
    }
    r->status = atoi(PQgetvalue(res, 0, API_IDEMPOTENCY_GET_STATUS));
    r->reply = PQgetisnull(res, 0, API_IDEMPOTENCY_GET_BODY) ? NULL : api_row_json(res, 0, API_IDEMPOTENCY_GET_BODY);
    r->replayed = true;
    PQclear(res);
    return 0;
}

static void store_answer(PGconn *conn, struct api_req *r, const char *scope)
{
    char status[16];
    snprintf(status, sizeof status, "%d", r->status);
    char *body = r->reply ? json_dumps(r->reply, JSON_COMPACT) : NULL;
    const char *p[] = {scope, r->idem_key, status, body};
    PGresult *res = api_exec(conn, r, Q_API_IDEMPOTENCY_STORE, p);
    free(body);
    PQclear(res);
}

static void run_op(PGconn *conn, struct api_req *r)
{
    char err[256], scope[512];
    if (db_command(conn, "BEGIN", err, sizeof err) != 0) {
        api_error(r, 503, "unavailable", "the database is unavailable");
        return;
    }
    /* a portal link is never kept in an idempotency record (its token would
     * be stored in clear); a repeat just mints another link */
    bool keyed = r->idem_key && strcmp(r->method, "POST") == 0 && r->route->fn != api_app_portal_access;
    if (keyed) {
        api_idem_scope(r, scope, sizeof scope);
        int c = claim_key(conn, r, scope);
        if (c <= 0) {
            if (c == 0 && db_command(conn, "COMMIT", err, sizeof err) == 0)
                return;
            db_rollback(conn);
            return;
        }
    }
    r->route->fn(conn, r);
    if (!r->status)
        api_error(r, 500, "server_error", "the operation gave no answer");
    if (r->status >= 300) {
        db_rollback(conn);
        r->ndue = 0; /* nothing became due */
        return;
    }
    if (keyed)
        store_answer(conn, r, scope);
    if (r->status >= 300 || db_command(conn, "COMMIT", err, sizeof err) != 0) {
        db_rollback(conn);
        if (r->status < 300) {
            json_decref(r->reply);
            r->reply = NULL;
            api_error(r, 503, "unavailable", "the transaction could not commit: %s", err);
        }
    }
}

void api_request_run(PGconn *conn, void *arg)
{
    struct api_req *r = arg;
    if (!conn) {
        api_error(r, 503, "unavailable", "the database is unavailable");
        return;
    }
    if (!authenticate(conn, r))
        return;
    if (!r->route->fn) {
        api_error(r, 501, "not_implemented", "%s is not implemented by hookd", r->route->op);
        return;
    }
    run_op(conn, r);
}

void api_request_done(void *arg)
{
    struct api_req *r = arg;
    struct api *a = r->api;
    a->pending--;
    if (!r->auth_ok && r->status == 401 && r->blocked_s > 0) {
        api_error(r, 429, "rate_limited", "too many failed authentications from this address");
        if (r->req) {
            char s[24];
            snprintf(s, sizeof s, "%lld", (long long)r->blocked_s);
            evhttp_add_header(evhttp_request_get_output_headers(r->req), "Retry-After", s);
        }
    } else if (!r->auth_ok && r->status == 401) {
        bool blocked = false;
        admin_guard_failed(a->guard, r->client, clock_mono_ms(), &blocked);
        log_info("api.auth_failed", "client=%s blocked=%s", r->client, blocked ? "yes" : "no");
    }
    if (r->ndue > 0) {
        int64_t *due = xcalloc(r->ndue, sizeof *due);
        int64_t now = clock_wall_ms();
        for (size_t i = 0; i < r->ndue; i++)
            due[i] = r->due_ms[i] > now ? r->due_ms[i] : now; /* a deliverAt still ahead */
        sched_seed(a->ctx, "delivery", r->due, due, r->ndue, false);
        free(due);
    }
    if (r->status >= 500)
        log_warn("api.failed", "op=%s status=%d", r->route->op, r->status);
    else
        log_debug("api.request", "op=%s status=%d replayed=%s", r->route->op, r->status, r->replayed ? "yes" : "no");
    send_answer(r);
    api_req_free(r);
}
