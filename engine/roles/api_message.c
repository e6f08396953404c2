/* Messages of an application: create (an outbox event of the tenant, with
 * `eventId` unique per application: a repeat is 409, as in Svix; the
 * `idempotency-key` header is handled by the router), get (by msg_… id or
 * eventId) and list (newest first). The relay fans a message out to the
 * tenant's matching endpoints like any event hookd_emit writes.
 *
 * Creation is batched (group commit, batcher.h), as ingest batches inbound
 * webhooks: the creations that arrive together run as one transaction of
 * a few set-based statements (sql/queries/api_*_batch.sql) instead of one
 * transaction each. Every request keeps what it would get alone:
 *   - its token authenticated, its application resolved in that token's
 *     scope (401, 404);
 *   - its idempotency key claimed (a repeat answers the first answer; the
 *     same key twice in one batch: the second answers the first's answer);
 *   - its body validated (422) — nothing is stored for it then;
 *   - its eventId claimed per application: a repeat (stored before, or
 *     earlier in the batch) is 409, stores nothing, and its idempotency key
 *     is removed again, as a rolled-back request would leave it;
 *   - the Svix answer body: hookd_api_message's fields, built in the
 *     batch's statement, with the `msg_…` id computed here (api_id.h).
 * What the batch cannot decide for one request alone — a statement failing
 * on one payload's content, a deadlock — rolls the batch back, and every
 * request of it then runs alone, as the router runs any request
 * (api_request_run). So does a request whose application must be created
 * first (the body's `application`), after the batch commits. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/rand.h>

#include "api_id.h"
#include "api_internal.h"
#include "batcher.h"
#include "clock.h"
#include "ctx.h"
#include "db.h"
#include "log.h"
#include "query.h"
#include "xmalloc.h"

/* Creations per batch, and batches running at once (each holds one
 * connection of the shared pool, db_pool_size, 8 by default, for five
 * round trips). The commit's WAL flush dominates a batch: batches that
 * commit at the same time share it, so a few in flight beat one large one
 * (measured on the shared test machine, 6,000 creations over 32
 * connections: 1 running 631/s, 3: 715/s, 4: 1,700/s, 6: 1,280/s, 8:
 * 1,099/s — one run each, under a load average of 15 to 20, so noisy). */
#define MSG_BATCH_MAX 256
#define MSG_BATCHES_RUNNING 4
#define MSG_BATCH_BYTES (64u << 20)

#define EVENT_TYPE_MAX 256
#define EVENT_ID_MAX 256

static const char *with_content(const struct api_req *r, bool dflt)
{
    const char *w = api_query(r, "with_content");
    if (!w)
        return dflt ? "true" : "false";
    return strcmp(w, "false") == 0 ? "false" : "true";
}

/* The path's application; when it does not exist and the body carries an
 * `application` (Svix: ApplicationIn whose uid is the path's), it is
 * created first, in the same transaction. */
static bool resolve_or_create_app(PGconn *conn, struct api_req *r)
{
    json_t *app = json_object_get(r->body, "application");
    if (!app || json_is_null(app) || r->tenant[0])
        return api_resolve_app(conn, r, r->params[0]);
    const char *p[] = {r->params[0], r->tenant};
    PGresult *res = api_exec(conn, r, Q_API_APP_RESOLVE, p);
    if (!res)
        return false;
    bool found = PQntuples(res) == 1;
    if (found)
        snprintf(r->app, sizeof r->app, "%s", PQgetvalue(res, 0, API_APP_RESOLVE_ID));
    PQclear(res);
    if (found)
        return true;
    const char *name = api_str(r, app, "name", true), *uid = api_str(r, app, "uid", false);
    if (uid && strcmp(uid, r->params[0]) != 0)
        api_invalid(r, "body", "application", "the application's uid must be the path's", "application_uid_mismatch");
    if (!uid && api_check_uid(r, "uid", r->params[0]))
        uid = r->params[0];
    if (api_failed(r))
        return false;
    const char *c[] = {name, uid, NULL, "{}"};
    if (!(res = api_exec(conn, r, Q_API_APP_CREATE, c)))
        return false;
    json_t *created = api_row_json(res, 0, API_APP_CREATE_BODY);
    PQclear(res);
    const char *id = json_string_value(json_object_get(created, "id"));
    snprintf(r->app, sizeof r->app, "%s", id ? id : "");
    json_decref(created);
    return r->app[0] != '\0';
}

#define NAME_CHARS "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"

bool api_name_set(struct api_req *r, const json_t *o, const char *field, size_t max_items, const char *extra,
                  char **out)
{
    *out = NULL;
    json_t *v = o ? json_object_get(o, field) : NULL;
    if (!v || json_is_null(v))
        return true;
    char msg[160];
    if (!json_is_array(v) || json_array_size(v) < 1 || json_array_size(v) > max_items) {
        snprintf(msg, sizeof msg, "%c%s must have at least 1 and at most %zu items, or be set to null.",
                 field[0] >= 'a' && field[0] <= 'z' ? field[0] - 32 : field[0], field + 1, max_items);
        api_invalid(r, "body", field, msg, "value_error");
        return false;
    }
    size_t i;
    json_t *x;
    json_array_foreach(v, i, x)
    {
        const char *t = json_string_value(x);
        size_t n = t ? json_string_length(x) : 0;
        if (!t || n == 0 || n > API_NAME_MAX || strlen(t) != n) {
            api_invalid(r, "body", field, "every item must be a string of 1 to 128 characters", "value_error");
            return false;
        }
        for (const char *c = t; *c; c++)
            if (!strchr(NAME_CHARS, *c) && !strchr(extra, *c)) {
                snprintf(msg, sizeof msg, "String must match the following pattern: [a-zA-Z0-9%s].", extra);
                api_invalid(r, "body", field, msg, "value_error");
                return false;
            }
    }
    *out = json_dumps(v, JSON_COMPACT);
    return true;
}

/* A message's fields from the request body. */
struct msg_in {
    const char *type, *event_id, *deliver_at;
    json_t *payload;       /* borrowed from the body */
    char *channels, *tags; /* JSON arrays, or NULL */
};

static void msg_in_free(struct msg_in *m)
{
    free(m->channels);
    free(m->tags);
    m->channels = m->tags = NULL;
}

/* The body's fields; false after answering 422 (m freed). */
static bool message_fields(struct api_req *r, struct msg_in *m)
{
    const json_t *b = r->body;
    memset(m, 0, sizeof *m);
    m->type = api_str(r, b, "eventType", true);
    m->event_id = api_str(r, b, "eventId", false);
    m->payload = json_object_get(b, "payload");
    if (!m->payload || !json_is_object(m->payload))
        api_invalid(r, "body", "payload", m->payload ? "value is not a valid dict" : "field required",
                    m->payload ? "type_error.dict" : "value_error.missing");
    const char *t = m->type;
    if (t && (strlen(t) > EVENT_TYPE_MAX || strspn(t, NAME_CHARS "-_.") != strlen(t)))
        api_invalid(r, "body", "eventType", "must be at most 256 characters of a-z, A-Z, 0-9, '-', '_' and '.'",
                    "value_error.str.regex");
    if (m->event_id && (strlen(m->event_id) == 0 || strlen(m->event_id) > EVENT_ID_MAX))
        api_invalid(r, "body", "eventId", "must be 1 to 256 characters", "value_error.any_str");
    /* Svix: channels [a-zA-Z0-9-_.], tags also '/', '\\' and '#'; 1 to 5 of
     * at most 128 characters */
    (void)api_name_set(r, b, "channels", 5, "-_.", &m->channels);
    (void)api_name_set(r, b, "tags", 5, "-_./\\#", &m->tags);
    /* deliverAt: an ISO 8601 time (Postgres reads it; a time past is now) */
    m->deliver_at = api_str(r, b, "deliverAt", false);
    if (m->deliver_at && (strlen(m->deliver_at) > 64 || m->deliver_at[0] < '0' || m->deliver_at[0] > '9'))
        api_invalid(r, "body", "deliverAt", "must be a date-time (ISO 8601)", "value_error.datetime");
    if (api_failed(r)) {
        msg_in_free(m);
        return false;
    }
    return true;
}

/* The answer's payload emptied when the request asked with_content=false. */
static json_t *message_answer(const struct api_req *r, json_t *body)
{
    if (body && strcmp(with_content(r, true), "false") == 0)
        json_object_set_new(body, "payload", json_object());
    return body;
}

void api_message_create(PGconn *conn, struct api_req *r)
{
    struct msg_in m;
    if (!message_fields(r, &m))
        return;
    if (!resolve_or_create_app(conn, r)) {
        msg_in_free(&m);
        return;
    }
    char *text = json_dumps(m.payload, JSON_COMPACT);
    const char *p[] = {r->app, m.type, text, m.event_id, with_content(r, true), m.channels, m.tags, m.deliver_at};
    PGresult *res = api_exec(conn, r, Q_API_MESSAGE_CREATE, p);
    free(text);
    msg_in_free(&m);
    if (!res) {
        if (r->status == 409)
            api_error(r, 409, "conflict", "a message with this eventId already exists");
        return;
    }
    json_t *body = api_row_json(res, 0, 0);
    PQclear(res);
    if (body)
        api_reply(r, 202, body);
    else
        api_error(r, 500, "server_error", "the message was not stored");
}

/* ---- the batch -------------------------------------------------------------- */

struct api_msgs {
    struct hookd_ctx *ctx;
    struct batcher *batcher; /* gathers struct api_req *, weighed by their bodies */
};

/* One creation of a batch, as the batch's job sees it. */
struct item {
    struct api_req *r;
    char scope[512]; /* the idempotency scope, when keyed */
    size_t leader;   /* the first item of the batch with the same key; itself if none */
    bool claimed;    /* its key was claimed in the batch's transaction */
    bool live;       /* authenticated, and not answered yet */
    bool written;    /* answered 202 from the batch's writes */
    bool alone;      /* runs alone after the batch (api_request_run) */
    char touch[40];  /* its token's id when its last use should be recorded */
    char *payload;   /* JSON text */
    struct msg_in in;
    char uuid[37]; /* the message's id (outbox_events.id) */
};

struct msg_batch {
    struct api_msgs *m;
    struct api_req **reqs; /* the batcher's array */
    struct item *it;
    size_t n;
};

enum outcome { BATCH_DONE, BATCH_ALONE };

/* Forgets an answer, so that the request can run again, alone. */
static void reset(struct api_req *r)
{
    json_decref(r->reply);
    r->reply = NULL;
    r->status = 0;
    r->replayed = false;
    r->auth_ok = false;
    r->tenant[0] = r->app[0] = '\0';
}

static bool keyed(const struct api_req *r)
{
    return r->idem_key != NULL;
}

/* Runs statement q with the binary array parameters a[0..n) (freed). The
 * result, or NULL with *down true when Postgres is unavailable (the batch
 * answers 503) and false when the statement itself failed (the batch is
 * rolled back, and its requests run alone). */
static PGresult *step(PGconn *conn, enum query_id q, struct db_array *a, int n, bool *down)
{
    const char *params[8] = {0};
    int lengths[8] = {0}, formats[8] = {0};
    HOOKD_ASSERT(n <= 8);
    for (int i = 0; i < n; i++) {
        params[i] = a[i].buf;
        lengths[i] = (int)a[i].len;
        formats[i] = 1;
    }
    PGresult *res = query_prepared_raw(conn, q, params, lengths, formats);
    for (int i = 0; i < n; i++)
        free(a[i].buf);
    ExecStatusType st = res ? PQresultStatus(res) : PGRES_FATAL_ERROR;
    if (st == PGRES_TUPLES_OK || st == PGRES_COMMAND_OK)
        return res;
    *down = db_unavailable(conn, res) || db_conn_lost(conn);
    if (!*down) {
        const char *state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
        log_info("api.batch_alone", "query=%s sqlstate=%s", query_defs[q].name, state ? state : "-");
    }
    PQclear(res);
    return NULL;
}

/* 1. Every request's token and application, one statement. */
static int authenticate_all(PGconn *conn, struct msg_batch *b, bool *down)
{
    struct db_array a[2];
    db_array_init(&a[0], DB_OID_TEXT, b->n);
    db_array_init(&a[1], DB_OID_TEXT, b->n);
    for (size_t i = 0; i < b->n; i++) {
        db_array_text(&a[0], b->it[i].r->token_sha);
        db_array_text(&a[1], b->it[i].r->params[0]);
    }
    PGresult *res = step(conn, Q_API_MESSAGE_BATCH_AUTH, a, 2, down);
    if (!res)
        return -1;
    if ((size_t)PQntuples(res) != b->n) {
        PQclear(res);
        return -1;
    }
    for (size_t i = 0; i < b->n; i++) {
        struct item *it = &b->it[i];
        struct api_req *r = it->r;
        if (PQgetisnull(res, (int)i, API_MESSAGE_BATCH_AUTH_TOKEN_ID)) {
            api_error(r, 401, "authentication_failed", "Incorrect authentication credentials.");
            continue;
        }
        r->auth_ok = true;
        it->live = true;
        snprintf(r->tenant, sizeof r->tenant, "%s", PQgetvalue(res, (int)i, API_MESSAGE_BATCH_AUTH_TENANT_ID));
        if (PQgetvalue(res, (int)i, API_MESSAGE_BATCH_AUTH_STALE)[0] == 't')
            snprintf(it->touch, sizeof it->touch, "%s", PQgetvalue(res, (int)i, API_MESSAGE_BATCH_AUTH_TOKEN_ID));
        if (!PQgetisnull(res, (int)i, API_MESSAGE_BATCH_AUTH_APP_ID))
            snprintf(r->app, sizeof r->app, "%s", PQgetvalue(res, (int)i, API_MESSAGE_BATCH_AUTH_APP_ID));
    }
    PQclear(res);
    return 0;
}

/* The leader (first live keyed item of the batch) with this scope and key,
 * or b->n. */
static size_t find_key(const struct msg_batch *b, const char *scope, const char *key)
{
    for (size_t j = 0; j < b->n; j++) {
        const struct item *o = &b->it[j];
        if (o->leader == j && keyed(o->r) && o->scope[0] && strcmp(o->scope, scope) == 0 &&
            strcmp(o->r->idem_key, key) == 0)
            return j;
    }
    return b->n;
}

/* 2. The idempotency keys: claimed together; a key claimed before answers
 * its recorded answer; the same key twice in the batch: the later request
 * follows the first (after the transaction). */
static int claim_keys(PGconn *conn, struct msg_batch *b, bool *down)
{
    size_t nkeys = 0;
    for (size_t i = 0; i < b->n; i++) {
        struct item *it = &b->it[i];
        if (!it->live || !keyed(it->r))
            continue;
        api_idem_scope(it->r, it->scope, sizeof it->scope);
        size_t j = find_key(b, it->scope, it->r->idem_key);
        if (j < i) { /* a follower: no longer live, answered after the transaction */
            it->leader = j;
            it->live = false;
            continue;
        }
        nkeys++;
    }
    if (nkeys == 0)
        return 0;
    struct db_array a[2];
    db_array_init(&a[0], DB_OID_TEXT, nkeys);
    db_array_init(&a[1], DB_OID_TEXT, nkeys);
    for (size_t i = 0; i < b->n; i++)
        if (b->it[i].live && keyed(b->it[i].r)) {
            db_array_text(&a[0], b->it[i].scope);
            db_array_text(&a[1], b->it[i].r->idem_key);
        }
    PGresult *res = step(conn, Q_API_IDEMPOTENCY_CLAIM_BATCH, a, 2, down);
    if (!res)
        return -1;
    for (int row = 0; row < PQntuples(res); row++) {
        size_t j = find_key(b, PQgetvalue(res, row, API_IDEMPOTENCY_CLAIM_BATCH_SCOPE),
                            PQgetvalue(res, row, API_IDEMPOTENCY_CLAIM_BATCH_KEY));
        if (j < b->n)
            b->it[j].claimed = true;
    }
    PQclear(res);
    size_t nold = 0;
    for (size_t i = 0; i < b->n; i++)
        if (b->it[i].live && keyed(b->it[i].r) && !b->it[i].claimed)
            nold++;
    if (nold == 0)
        return 0;
    db_array_init(&a[0], DB_OID_TEXT, nold);
    db_array_init(&a[1], DB_OID_TEXT, nold);
    for (size_t i = 0; i < b->n; i++) {
        struct item *it = &b->it[i];
        if (it->live && keyed(it->r) && !it->claimed) {
            db_array_text(&a[0], it->scope);
            db_array_text(&a[1], it->r->idem_key);
            /* held by a request still running, unless its record is found */
            api_error(it->r, 409, "conflict", "a request with this idempotency-key is in progress");
            it->live = false;
        }
    }
    if (!(res = step(conn, Q_API_IDEMPOTENCY_GET_BATCH, a, 2, down)))
        return -1;
    for (int row = 0; row < PQntuples(res); row++) {
        size_t j = find_key(b, PQgetvalue(res, row, API_IDEMPOTENCY_GET_BATCH_SCOPE),
                            PQgetvalue(res, row, API_IDEMPOTENCY_GET_BATCH_KEY));
        if (j == b->n || PQgetisnull(res, row, API_IDEMPOTENCY_GET_BATCH_STATUS))
            continue;
        struct api_req *r = b->it[j].r;
        json_decref(r->reply);
        r->status = atoi(PQgetvalue(res, row, API_IDEMPOTENCY_GET_BATCH_STATUS));
        r->reply = api_row_json(res, row, API_IDEMPOTENCY_GET_BATCH_BODY);
        r->replayed = true;
    }
    PQclear(res);
    return 0;
}

/* 3. The bodies and the applications; 4. the messages, one statement. */
static int insert_messages(PGconn *conn, struct msg_batch *b, bool *down)
{
    size_t nlive = 0;
    for (size_t i = 0; i < b->n; i++) {
        struct item *it = &b->it[i];
        if (!it->live)
            continue;
        struct api_req *r = it->r;
        if (!message_fields(r, &it->in)) {
            it->live = false; /* 422 */
            continue;
        }
        if (!r->app[0]) {
            json_t *app = json_object_get(r->body, "application");
            if (app && !json_is_null(app) && !r->tenant[0])
                it->alone = true; /* created with its application, after the batch */
            else
                api_not_found(r, "Application");
            it->live = false;
            continue;
        }
        it->payload = json_dumps(it->in.payload, JSON_COMPACT);
        nlive++;
    }
    if (nlive == 0)
        return 0;
    size_t *pos = xcalloc(nlive, sizeof *pos);
    unsigned char *rnd = xmalloc(10 * nlive);
    if (RAND_bytes(rnd, (int)(10 * nlive)) != 1) {
        free(rnd);
        free(pos);
        return -1; /* alone: hookd_uuid7 makes the ids */
    }
    int64_t ms = clock_wall_ms();
    struct db_array a[8];
    static const unsigned oids[7] = {DB_OID_TEXT,  DB_OID_TEXT,  DB_OID_JSONB, DB_OID_TEXT,
                                     DB_OID_JSONB, DB_OID_JSONB, DB_OID_TEXT};
    for (int c = 0; c < 7; c++)
        db_array_init(&a[c], oids[c], nlive);
    db_array_init(&a[7], DB_OID_UUID, nlive);
    size_t k = 0;
    for (size_t i = 0; i < b->n; i++) {
        struct item *it = &b->it[i];
        if (!it->live)
            continue;
        api_id_uuid7(ms, rnd + 10 * k, it->uuid);
        (void)db_array_uuid(&a[7], it->uuid); /* a UUID: made just above */
        pos[k++] = i;
        const char *v[7] = {it->r->app,      it->in.type, it->payload,      it->in.event_id,
                            it->in.channels, it->in.tags, it->in.deliver_at};
        for (int c = 0; c < 7; c++) {
            if (!v[c])
                db_array_null(&a[c]);
            else if (oids[c] == DB_OID_JSONB)
                db_array_jsonb(&a[c], v[c]);
            else
                db_array_text(&a[c], v[c]);
        }
    }
    free(rnd);
    PGresult *res = step(conn, Q_API_MESSAGE_CREATE_BATCH, a, 8, down);
    if (!res) {
        free(pos);
        return -1;
    }
    for (int row = 0; row < PQntuples(res); row++) {
        long at = strtol(PQgetvalue(res, row, API_MESSAGE_CREATE_BATCH_I), NULL, 10);
        if (at < 0 || (size_t)at >= nlive)
            continue;
        struct item *it = &b->it[pos[at]];
        json_t *body = api_row_json(res, row, API_MESSAGE_CREATE_BATCH_BODY);
        char id[48];
        it->live = false;
        if (body && api_id_of_uuid("msg", it->uuid, id, sizeof id) == 0) {
            json_object_set_new(body, "id", json_string(id));
            api_reply(it->r, 202, message_answer(it->r, body));
            it->written = true;
        } else { /* cannot happen: SQL builds the body, the id is a UUID */
            json_decref(body);
            api_error(it->r, 500, "server_error", "the message was stored; its answer could not be read");
        }
    }
    PQclear(res);
    free(pos);
    for (size_t i = 0; i < b->n; i++) { /* no row: its eventId exists (or came first in the batch) */
        struct item *it = &b->it[i];
        if (it->live)
            api_error(it->r, 409, "conflict", "a message with this eventId already exists");
        it->live = false;
    }
    return 0;
}

/* 5. The answers under the claimed keys (a refused request's key removed). */
static int store_keys(PGconn *conn, struct msg_batch *b, bool *down)
{
    size_t n = 0;
    for (size_t i = 0; i < b->n; i++)
        n += b->it[i].claimed;
    if (n == 0)
        return 0;
    struct db_array a[4];
    db_array_init(&a[0], DB_OID_TEXT, n);
    db_array_init(&a[1], DB_OID_TEXT, n);
    db_array_init(&a[2], DB_OID_INT4, n);
    db_array_init(&a[3], DB_OID_TEXT, n);
    for (size_t i = 0; i < b->n; i++) {
        const struct item *it = &b->it[i];
        if (!it->claimed)
            continue;
        db_array_text(&a[0], it->scope);
        db_array_text(&a[1], it->r->idem_key);
        char *body = it->written && it->r->reply ? json_dumps(it->r->reply, JSON_COMPACT) : NULL;
        if (it->written)
            db_array_int4(&a[2], it->r->status);
        else
            db_array_null(&a[2]);
        if (body)
            db_array_text(&a[3], body);
        else
            db_array_null(&a[3]);
        free(body);
    }
    PGresult *res = step(conn, Q_API_IDEMPOTENCY_STORE_BATCH, a, 4, down);
    if (!res)
        return -1;
    PQclear(res);
    return 0;
}

/* The batch's transaction. BATCH_DONE: every item is answered, or marked to
 * run alone; BATCH_ALONE: rolled back, every request runs alone. */
static enum outcome batch_tx(PGconn *conn, struct msg_batch *b)
{
    char err[256];
    bool down = false;
    if (db_run(conn, "BEGIN", 0, NULL, err, sizeof err) != 0) {
        down = true;
        goto failed;
    }
    if (authenticate_all(conn, b, &down) != 0 || claim_keys(conn, b, &down) != 0 ||
        insert_messages(conn, b, &down) != 0 || store_keys(conn, b, &down) != 0)
        goto failed;
    if (db_run(conn, "COMMIT", 0, NULL, err, sizeof err) != 0) {
        db_rollback(conn);
        for (size_t i = 0; i < b->n; i++)
            if (b->it[i].written) {
                b->it[i].written = false;
                api_error(b->it[i].r, 503, "unavailable", "the transaction could not commit: %s", err);
            }
    }
    return BATCH_DONE;
failed:
    db_rollback(conn);
    if (!down)
        return BATCH_ALONE;
    for (size_t i = 0; i < b->n; i++) {
        struct item *it = &b->it[i];
        it->written = it->alone = false;
        it->leader = i;
        api_error(it->r, 503, "unavailable", "the database is unavailable");
    }
    return BATCH_DONE;
}

static void work_batch(PGconn *conn, void *arg)
{
    struct msg_batch *b = arg;
    if (!conn) {
        for (size_t i = 0; i < b->n; i++)
            api_error(b->it[i].r, 503, "unavailable", "the database is unavailable");
        return;
    }
    int64_t t0 = clock_mono_us();
    enum outcome o = batch_tx(conn, b);
    int64_t took = clock_mono_us() - t0;
    if (o == BATCH_ALONE) {
        for (size_t i = 0; i < b->n; i++) {
            b->it[i].alone = true;
            b->it[i].leader = i;
        }
    }
    size_t written = 0;
    for (size_t i = 0; i < b->n; i++)
        written += b->it[i].written;
    log_debug("api.batch", "requests=%zu written=%zu alone=%s us=%lld", b->n, written,
              o == BATCH_ALONE ? "all" : "some", (long long)took);
    /* the same key twice in the batch: the later request answers what the
     * first answered when that is recorded; otherwise it runs alone, as it
     * would have after the first rolled back */
    for (size_t i = 0; i < b->n; i++) {
        struct item *it = &b->it[i];
        if (it->leader == i)
            continue;
        const struct item *first = &b->it[it->leader];
        if (first->written || first->r->replayed) {
            json_decref(it->r->reply);
            it->r->status = first->r->status;
            it->r->reply = first->r->reply ? json_deep_copy(first->r->reply) : NULL;
            it->r->replayed = true;
        } else {
            it->alone = true;
        }
    }
    /* last uses of tokens (informative, once a minute per token) */
    for (size_t i = 0; i < b->n; i++) {
        if (!b->it[i].touch[0])
            continue;
        bool seen = false;
        for (size_t j = 0; j < i && !seen; j++)
            seen = strcmp(b->it[j].touch, b->it[i].touch) == 0;
        if (seen)
            continue;
        const char *p[] = {b->it[i].touch};
        char err[256];
        PQclear(query_prepared(conn, Q_API_TOKEN_TOUCH, p, err, sizeof err));
    }
    for (size_t i = 0; i < b->n; i++)
        if (b->it[i].alone) {
            reset(b->it[i].r);
            api_request_run(conn, b->it[i].r);
        }
}

static void done_batch(void *arg)
{
    struct msg_batch *b = arg;
    struct api_msgs *m = b->m;
    for (size_t i = 0; i < b->n; i++) {
        free(b->it[i].payload);
        msg_in_free(&b->it[i].in);
        api_request_done(b->reqs[i]);
    }
    free(b->it);
    free(b->reqs);
    free(b);
    batcher_done(m->batcher);
}

/* batcher_submit_fn: one job for the batch. */
static void on_batch(void *arg, void *items, size_t n, size_t bytes)
{
    (void)bytes;
    struct msg_batch *b = xcalloc(1, sizeof *b);
    b->m = arg;
    b->reqs = items;
    b->n = n;
    b->it = xcalloc(n, sizeof *b->it);
    for (size_t i = 0; i < n; i++) {
        b->it[i].r = b->reqs[i];
        b->it[i].leader = i;
    }
    db_pool_submit(b->m->ctx->db, work_batch, done_batch, b);
}

struct api_msgs *api_msgs_new(struct hookd_ctx *ctx)
{
    struct api_msgs *m = xcalloc(1, sizeof *m);
    m->ctx = ctx;
    /* the bodies of one batch travel as one jsonb[]: bounded well below
     * Postgres's 1 GB per value */
    struct batcher_config bc = {sizeof(struct api_req *), MSG_BATCH_MAX, MSG_BATCH_BYTES, MSG_BATCHES_RUNNING,
                                BATCHER_LINGER_TURN};
    m->batcher = batcher_new(ctx->base, &bc, on_batch, m);
    if (!m->batcher) {
        free(m);
        return NULL;
    }
    return m;
}

void api_msgs_add(struct api_msgs *m, struct api_req *r)
{
    batcher_add(m->batcher, &r, r->body_len);
}

void api_msgs_free(struct api_msgs *m)
{
    if (!m)
        return;
    size_t n;
    struct api_req **open = batcher_take(m->batcher, &n);
    for (size_t i = 0; i < n; i++) {
        api_error(open[i], 503, "unavailable", "this worker is shutting down");
        api_request_done(open[i]);
    }
    free(open);
    batcher_free(m->batcher);
    free(m);
}

void api_message_get(PGconn *conn, struct api_req *r)
{
    if (!api_resolve_app(conn, r, r->params[0]))
        return;
    const char *p[] = {r->app, r->params[1], with_content(r, true)};
    api_reply_one(conn, r, Q_API_MESSAGE_GET, p, API_MESSAGE_GET_BODY, "Message");
}

void api_message_list(PGconn *conn, struct api_req *r)
{
    if (!api_resolve_app(conn, r, r->params[0]))
        return;
    const char *p[] = {r->app, api_query(r, "event_types"), with_content(r, true), api_query(r, "channel"),
                       api_query(r, "tag")};
    api_list(conn, r, Q_API_MESSAGE_LIST, p, 5, API_ORDER_FIXED, API_MESSAGE_LIST_BODY, API_MESSAGE_LIST_API_ID);
}
