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


#include "api_id.h"
#include "api_internal.h"
#include "batcher.h"
#include "clock.h"
#include "ctx.h"
#include "db.h"
#include "log.h"
#include "query.h"
#include "xmalloc.h"

/* Creations per batch, and batches running at once. The batches run on a
 * pool of their own (MSG_BATCHES_RUNNING connections, in addition to
 * db_pool_size), with generic plans: the shared pool plans every execution
 * for its parameters (db_pool_new's custom_plans), and planning this
 * statement of a dozen CTEs costs a large share of Postgres's CPU per
 * message. Each batch is one statement that commits on its own, as
 * ingest's insert; most of a batch's time is the commit's WAL flush, and
 * the requests that arrive meanwhile make the next batch. One batch at a
 * time: larger batches, and no two statements contending for the same
 * application row lock and index pages, cost Postgres less CPU per message
 * than two running at once. */
#define MSG_BATCH_MAX 256
#define MSG_BATCHES_RUNNING 1
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
    if (api_check_uid(r, "uid", r->params[0], "app"))
        uid = r->params[0];
    if (api_failed(r))
        return false;
    const char *c[] = {name, uid, NULL, "{}", NULL}; /* no rate limit, empty metadata, no settings */
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
    int64_t hours;         /* payload retention in hours; 0: as long as the row */
};

static void msg_in_free(struct msg_in *m)
{
    free(m->channels);
    free(m->tags);
    m->channels = m->tags = NULL;
}

/* How deeply a payload's objects and arrays nest (an object is 1). A
 * payload past API_PAYLOAD_DEPTH_MAX is refused: every later read of it
 * (Postgres's jsonb, the API's answers, the pages) costs time and memory
 * that grow with the depth, and no webhook needs it. Iterative, with a
 * stack as deep as the limit allows: the parser bounds it anyway. */
static int payload_depth(const json_t *root)
{
    struct frame {
        const json_t *v;
        void *it;    /* an object's iterator */
        size_t next; /* an array's next index */
    } stack[API_PAYLOAD_DEPTH_MAX + 2];
    int top = 0, deepest = 1;
    stack[0] = (struct frame){root, json_object_iter((json_t *)root), 0};
    while (top >= 0) {
        struct frame *f = &stack[top];
        const json_t *child = NULL;
        if (json_is_object(f->v) && f->it) {
            child = json_object_iter_value(f->it);
            f->it = json_object_iter_next((json_t *)f->v, f->it);
        } else if (json_is_array(f->v) && f->next < json_array_size(f->v)) {
            child = json_array_get(f->v, f->next++);
        } else {
            top--;
            continue;
        }
        if (!json_is_object(child) && !json_is_array(child))
            continue;
        if (top + 2 > deepest)
            deepest = top + 2;
        if (deepest > API_PAYLOAD_DEPTH_MAX)
            return deepest;
        stack[++top] = (struct frame){child, json_is_object(child) ? json_object_iter((json_t *)child) : NULL, 0};
    }
    return deepest;
}

/* Svix's default payload retention (MessageIn.payloadRetentionPeriod),
 * and its bounds in days (svix-server's MessageIn: range(min = 5, max =
 * 90)) and in hours (Svix's API: payloadRetentionHours 1 to 2160). */
#define RETENTION_DAYS_DEFAULT 90
#define RETENTION_DAYS_MIN 5
#define RETENTION_DAYS_MAX 90
#define RETENTION_HOURS_MAX 2160
/* deliverAt: "at least one minute and no more than 24 hours in the future"
 * (Svix's API reference for MessageIn.deliverAt). */
#define DELIVER_AT_MIN_MS (60 * 1000LL)
#define DELIVER_AT_MAX_MS (24 * 3600 * 1000LL)

/* An RFC 3339 date-time (what Svix's SDKs send: `2026-12-03T18:00:00.000Z`,
 * or an offset for Z) in ms since the epoch; -1 when s is not one. */
static int64_t rfc3339_ms(const char *s)
{
    int y, mo, d, h, mi, sec, n = 0;
    if (sscanf(s, "%4d-%2d-%2d%n", &y, &mo, &d, &n) != 3 || n != 10 || (s[10] != 'T' && s[10] != 't' && s[10] != ' '))
        return -1;
    const char *p = s + 11;
    if (sscanf(p, "%2d:%2d:%2d%n", &h, &mi, &sec, &n) != 3 || n != 8)
        return -1;
    p += 8;
    int64_t frac_ms = 0;
    if (*p == '.') {
        int digits = 0;
        for (p++; *p >= '0' && *p <= '9'; p++, digits++)
            if (digits < 3)
                frac_ms = frac_ms * 10 + (*p - '0');
        if (digits == 0)
            return -1;
        for (; digits < 3; digits++)
            frac_ms *= 10;
    }
    int64_t offset_s = 0;
    if (*p == 'Z' || *p == 'z') {
        p++;
    } else if (*p == '+' || *p == '-') {
        int oh, om;
        if (sscanf(p + 1, "%2d:%2d%n", &oh, &om, &n) != 2 || n != 5 || oh > 23 || om > 59)
            return -1;
        offset_s = (*p == '-' ? -1 : 1) * (oh * 3600 + om * 60);
        p += 6;
    } else {
        return -1;
    }
    if (*p || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || sec > 60)
        return -1;
    static const int mdays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    if (d > mdays[mo - 1] || (mo == 2 && d == 29 && !leap))
        return -1;
    /* days from the civil date (Howard Hinnant's algorithm) */
    int yy = y - (mo <= 2);
    int era = (yy >= 0 ? yy : yy - 399) / 400;
    int yoe = yy - era * 400;
    int doy = (153 * (mo + (mo > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    int doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    int64_t days = (int64_t)era * 146097 + doe - 719468;
    return ((days * 86400 + h * 3600 + mi * 60 + sec) - offset_s) * 1000 + frac_ms;
}

/* A whole number field within [min, max], answered as Svix's validator
 * answers a range (loc: the field's name in Svix's error, "Validation
 * error", value_error); 0 when absent or null, -1 after a 422. */
static int64_t retention_field(struct api_req *r, const char *field, const char *loc, int64_t min, int64_t max)
{
    json_t *v = json_object_get(r->body, field);
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_integer(v)) {
        api_invalid(r, "body", field, "value is not a valid integer", "type_error.integer");
        return -1;
    }
    if (json_integer_value(v) < min || json_integer_value(v) > max) {
        api_invalid(r, "body", loc, "Validation error", "value_error");
        return -1;
    }
    return json_integer_value(v);
}

/* The body's fields; false after answering 422 (m freed). keep_ms: how long
 * an outbox row lives ([retention] outbox; 0: for ever) — a payload
 * retention at least that long needs no expiry of its own. */
static bool message_fields(struct api_req *r, struct msg_in *m, int64_t keep_ms)
{
    const json_t *b = r->body;
    memset(m, 0, sizeof *m);
    m->type = api_str(r, b, "eventType", true);
    m->event_id = api_str(r, b, "eventId", false);
    m->payload = json_object_get(b, "payload");
    if (!m->payload || !json_is_object(m->payload))
        api_invalid(r, "body", "payload", m->payload ? "value is not a valid dict" : "field required",
                    m->payload ? "type_error.dict" : "value_error.missing");
    else if (payload_depth(m->payload) > API_PAYLOAD_DEPTH_MAX)
        api_invalid(r, "body", "payload", "nests objects and arrays more than 64 levels deep", "value_error");
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
    /* deliverAt: an RFC 3339 time from one minute to 24 hours ahead */
    m->deliver_at = api_str(r, b, "deliverAt", false);
    if (m->deliver_at) {
        int64_t at = strlen(m->deliver_at) <= 64 ? rfc3339_ms(m->deliver_at) : -1;
        int64_t now = clock_wall_ms();
        if (at < 0)
            api_invalid(r, "body", "deliverAt", "invalid datetime format", "value_error.datetime");
        else if (at < now + DELIVER_AT_MIN_MS || at > now + DELIVER_AT_MAX_MS)
            api_invalid(r, "body", "deliverAt", "must be at least one minute and no more than 24 hours in the future",
                        "value_error");
    }
    /* payload retention: days (svix-server: 5 to 90, 90 by default) or
     * hours (1 to 2160); not both */
    int64_t days = retention_field(r, "payloadRetentionPeriod", "payload_retention_period", RETENTION_DAYS_MIN,
                                   RETENTION_DAYS_MAX);
    int64_t hours = retention_field(r, "payloadRetentionHours", "payloadRetentionHours", 1, RETENTION_HOURS_MAX);
    if (days > 0 && hours > 0)
        api_invalid(r, "body", "payloadRetentionHours",
                    "payloadRetentionPeriod and payloadRetentionHours are mutually exclusive", "value_error");
    if (api_failed(r)) {
        msg_in_free(m);
        return false;
    }
    m->hours = hours > 0 ? hours : 24 * (days > 0 ? days : RETENTION_DAYS_DEFAULT);
    /* asked explicitly: always kept; the default only when the row would
     * outlive it */
    if (hours <= 0 && days <= 0 && keep_ms > 0 && keep_ms <= m->hours * 3600 * 1000LL)
        m->hours = 0;
    return true;
}

/* The payload's text as the request sent it (api_body.c): stored and
 * delivered byte for byte. Caller frees. */
static char *payload_text(const struct api_req *r, const json_t *payload)
{
    return r->payload_raw ? xstrdup(r->payload_raw) : json_dumps(payload, JSON_COMPACT);
}

void api_message_create(PGconn *conn, struct api_req *r)
{
    struct msg_in m;
    if (!message_fields(r, &m, r->cfg ? r->cfg->retention.outbox : 0))
        return;
    if (!resolve_or_create_app(conn, r)) {
        msg_in_free(&m);
        return;
    }
    char *text = payload_text(r, m.payload);
    char hours[24] = "";
    if (m.hours > 0)
        snprintf(hours, sizeof hours, "%lld", (long long)m.hours);
    const char *p[] = {r->app,
                       m.type,
                       text,
                       m.event_id,
                       with_content(r, true),
                       m.channels,
                       m.tags,
                       m.deliver_at,
                       hours[0] ? hours : NULL};
    PGresult *res = api_exec(conn, r, Q_API_MESSAGE_CREATE, p);
    free(text);
    msg_in_free(&m);
    if (!res) {
        if (r->status == 409)
            api_error(r, 409, "conflict", "a message with this eventId already exists");
        return;
    }
    bool gone = PQntuples(res) == 0; /* its application was deleted meanwhile */
    json_t *body = api_row_json(res, 0, 0);
    PQclear(res);
    if (body)
        api_reply(r, 202, body);
    else if (gone)
        api_not_found(r, "Application");
    else
        api_error(r, 500, "server_error", "the message was not stored");
}

/* ---- the batch -------------------------------------------------------------- */

struct api_msgs {
    struct hookd_ctx *ctx;
    struct batcher *batcher; /* gathers struct api_req *, weighed by their bodies */
    struct db_pool *db;      /* MSG_BATCHES_RUNNING connections of its own, generic plans */
};

/* One creation of a batch, as the batch's job sees it. */
struct item {
    struct api_req *r;
    size_t leader;  /* the first item of the batch with the same key; itself if none */
    bool valid;     /* its body passed the checks (else r holds its 422) */
    bool written;   /* answered 202 from the batch's statement */
    bool alone;     /* runs alone after the batch (api_request_run) */
    char touch[40]; /* its token's id when its last use should be recorded */
    char *payload;  /* JSON text, as sent */
    struct msg_in in;
    char uuid[37];   /* the message's id (outbox_events.id) */
    char api_id[48]; /* its msg_… form */
    char hours[24];  /* payload retention, hours; "" for as long as the row */
    char *scope;     /* the idempotency scope the statement used, when keyed */
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

/* Runs statement q with the binary array parameters a[0..n) (freed). The
 * result, or NULL with *down true when Postgres is unavailable (the batch
 * answers 503) and false when the statement itself failed (nothing of it
 * stays, and its requests run alone). */
static PGresult *step(PGconn *conn, enum query_id q, struct db_array *a, int n, bool *down)
{
    const char *params[16] = {0};
    int lengths[16] = {0}, formats[16] = {0};
    HOOKD_ASSERT(n <= 16);
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

/* Before the statement: every body checked (the 422 kept in its request,
 * answered only if the token and the idempotency record let it through),
 * and every message given its ids. -1 without random bytes. */
static int prepare(struct msg_batch *b)
{
    struct api_id_batch ids;
    if (api_id_batch_init(&ids, b->n, clock_wall_ms()) != 0)
        return -1;
    for (size_t i = 0; i < b->n; i++) {
        struct item *it = &b->it[i];
        it->valid = message_fields(it->r, &it->in, it->r->cfg ? it->r->cfg->retention.outbox : 0);
        if (it->valid) {
            it->payload = payload_text(it->r, it->in.payload);
            if (it->in.hours > 0)
                snprintf(it->hours, sizeof it->hours, "%lld", (long long)it->in.hours);
        }
        api_id_batch_uuid(&ids, i, NULL, it->uuid);
        if (api_id_of_uuid("msg", it->uuid, it->api_id, sizeof it->api_id) != 0) {
            api_id_batch_release(&ids);
            return -1; /* cannot happen: a UUID made just above */
        }
    }
    api_id_batch_release(&ids);
    return 0;
}

static bool keyed(const struct api_req *r)
{
    return r->idem_key != NULL;
}

/* One row of the statement's answer, for item i. */
static void settle(struct msg_batch *b, size_t i, const PGresult *res, int row)
{
    struct item *it = &b->it[i];
    struct api_req *r = it->r;
    if (PQgetisnull(res, row, API_MESSAGE_BATCH_TOKEN_ID)) {
        api_error(r, 401, "authentication_failed", "Incorrect authentication credentials.");
        return;
    }
    r->auth_ok = true;
    snprintf(r->tenant, sizeof r->tenant, "%s", PQgetvalue(res, row, API_MESSAGE_BATCH_TENANT_ID));
    if (PQgetvalue(res, row, API_MESSAGE_BATCH_STALE)[0] == 't')
        snprintf(it->touch, sizeof it->touch, "%s", PQgetvalue(res, row, API_MESSAGE_BATCH_TOKEN_ID));
    if (!PQgetisnull(res, row, API_MESSAGE_BATCH_APP_ID))
        snprintf(r->app, sizeof r->app, "%s", PQgetvalue(res, row, API_MESSAGE_BATCH_APP_ID));
    if (keyed(r) && !PQgetisnull(res, row, API_MESSAGE_BATCH_SCOPE))
        it->scope = xstrdup(PQgetvalue(res, row, API_MESSAGE_BATCH_SCOPE));
    if (atoi(PQgetvalue(res, row, API_MESSAGE_BATCH_NTH)) > 1) {
        /* the same key earlier in the batch: answered as that one, after */
        for (size_t j = 0; j < i; j++)
            if (b->it[j].leader == j && b->it[j].scope && it->scope && strcmp(b->it[j].scope, it->scope) == 0 &&
                strcmp(b->it[j].r->idem_key, r->idem_key) == 0) {
                it->leader = j;
                break;
            }
        if (it->leader == i)
            it->alone = true; /* cannot happen: the statement saw the first */
        return;
    }
    if (PQgetvalue(res, row, API_MESSAGE_BATCH_OLD_FOUND)[0] == 't') {
        if (PQgetisnull(res, row, API_MESSAGE_BATCH_OLD_STATUS)) {
            api_error(r, 409, "conflict", "a request with this idempotency-key is in progress");
            return;
        }
        json_decref(r->reply);
        r->status = atoi(PQgetvalue(res, row, API_MESSAGE_BATCH_OLD_STATUS));
        r->reply = PQgetisnull(res, row, API_MESSAGE_BATCH_OLD_BODY)
                       ? NULL
                       : api_row_json(res, row, API_MESSAGE_BATCH_OLD_BODY);
        r->replayed = true;
        return;
    }
    if (!it->valid)
        return; /* its 422, set by message_fields */
    if (!r->app[0]) {
        json_t *app = json_object_get(r->body, "application");
        if (app && !json_is_null(app) && !r->tenant[0])
            it->alone = true; /* created with its application, after the batch */
        else
            api_not_found(r, "Application");
        return;
    }
    if (PQgetisnull(res, row, API_MESSAGE_BATCH_BODY)) {
        /* its eventId exists (or came earlier in the batch); a keyed request
         * runs alone, so that a concurrent first request with its key is
         * answered as a replay, as the router would */
        if (keyed(r))
            it->alone = true;
        else
            api_error(r, 409, "conflict", "a message with this eventId already exists");
        return;
    }
    json_t *body = api_row_json(res, row, API_MESSAGE_BATCH_BODY);
    if (!body) { /* cannot happen: SQL builds the body */
        api_error(r, 500, "server_error", "the message was stored; its answer could not be read");
        return;
    }
    api_reply(r, 202, body);
    it->written = true;
}

/* The batch's statement. BATCH_DONE: every item is answered, or marked to
 * run alone; BATCH_ALONE: nothing stayed, every request runs alone. */
static enum outcome batch_run(PGconn *conn, struct msg_batch *b)
{
    bool down = false;
    if (prepare(b) != 0)
        return BATCH_ALONE;
    enum { NCOL = 15 };
    static const unsigned oids[NCOL] = {DB_OID_TEXT,  DB_OID_TEXT, DB_OID_TEXT, DB_OID_TEXT, DB_OID_BOOL,
                                        DB_OID_BOOL,  DB_OID_TEXT, DB_OID_TEXT, DB_OID_TEXT, DB_OID_JSONB,
                                        DB_OID_JSONB, DB_OID_TEXT, DB_OID_UUID, DB_OID_TEXT, DB_OID_INT4};
    struct db_array a[NCOL];
    for (int c = 0; c < NCOL; c++)
        db_array_init(&a[c], oids[c], b->n);
    for (size_t i = 0; i < b->n; i++) {
        struct item *it = &b->it[i];
        struct api_req *r = it->r;
        db_array_text(&a[0], r->token_sha);
        db_array_text(&a[1], r->params[0]);
        if (keyed(r)) {
            db_array_text(&a[2], r->idem_scope ? r->idem_scope : "");
            db_array_text(&a[3], r->idem_key);
        } else {
            db_array_null(&a[2]);
            db_array_null(&a[3]);
        }
        db_array_bool(&a[4], it->valid);
        db_array_bool(&a[5], strcmp(with_content(r, true), "true") == 0);
        const char *v[6] = {it->valid ? it->in.type : NULL,     it->valid ? it->payload : NULL,
                            it->valid ? it->in.event_id : NULL, it->valid ? it->in.channels : NULL,
                            it->valid ? it->in.tags : NULL,     it->valid ? it->in.deliver_at : NULL};
        for (int c = 0; c < 6; c++) {
            if (!v[c])
                db_array_null(&a[6 + c]);
            else if (oids[6 + c] == DB_OID_JSONB)
                db_array_jsonb(&a[6 + c], v[c]);
            else
                db_array_text(&a[6 + c], v[c]);
        }
        (void)db_array_uuid(&a[12], it->uuid); /* a UUID: made by prepare */
        db_array_text(&a[13], it->api_id);
        if (it->hours[0])
            db_array_int4(&a[14], atoi(it->hours));
        else
            db_array_null(&a[14]);
    }
    PGresult *res = step(conn, Q_API_MESSAGE_BATCH, a, NCOL, &down);
    if (!res) {
        if (!down)
            return BATCH_ALONE;
        for (size_t i = 0; i < b->n; i++)
            api_error(b->it[i].r, 503, "unavailable", "the database is unavailable");
        return BATCH_DONE;
    }
    if ((size_t)PQntuples(res) != b->n) { /* cannot happen: one row per request */
        PQclear(res);
        return BATCH_ALONE;
    }
    for (size_t i = 0; i < b->n; i++)
        settle(b, i, res, (int)i);
    PQclear(res);
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
    enum outcome o = batch_run(conn, b);
    int64_t took = clock_mono_us() - t0;
    if (o == BATCH_ALONE) {
        for (size_t i = 0; i < b->n; i++) {
            b->it[i].alone = true;
            b->it[i].written = false;
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
        free(b->it[i].scope);
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
    db_pool_submit(b->m->db, work_batch, done_batch, b);
}

struct api_msgs *api_msgs_new(struct hookd_ctx *ctx)
{
    struct api_msgs *m = xcalloc(1, sizeof *m);
    m->ctx = ctx;
    /* the bodies of one batch travel as one text[]: bounded well below
     * Postgres's 1 GB per value */
    struct batcher_config bc = {sizeof(struct api_req *), MSG_BATCH_MAX, MSG_BATCH_BYTES, MSG_BATCHES_RUNNING,
                                BATCHER_LINGER_TURN};
    m->batcher = batcher_new(ctx->base, &bc, on_batch, m);
    m->db = db_pool_new(ctx->base, ctx->cfg->database.text, MSG_BATCHES_RUNNING, false);
    if (!m->batcher || !m->db) {
        batcher_free(m->batcher);
        db_pool_free(m->db);
        free(m);
        return NULL;
    }
    return m;
}

void api_msgs_close(struct api_msgs *m)
{
    if (!m)
        return;
    /* runs the batches still queued and their completions (which answer
     * their requests) while the API lives; later batches answer 503 */
    db_pool_free(m->db);
    m->db = NULL;
}

void api_msgs_add(struct api_msgs *m, struct api_req *r)
{
    batcher_add(m->batcher, &r, r->body_len);
}

void api_msgs_free(struct api_msgs *m)
{
    if (!m)
        return;
    api_msgs_close(m);
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

/* Svix's get-raw-payload: {"payload": "<the payload's text as sent>"}. */
void api_message_get_raw(PGconn *conn, struct api_req *r)
{
    if (!api_resolve_app(conn, r, r->params[0]))
        return;
    const char *p[] = {r->app, r->params[1]};
    PGresult *res = api_exec(conn, r, Q_API_MESSAGE_RAW, p);
    if (!res)
        return;
    if (PQntuples(res) == 1)
        api_reply(r, 200, json_pack("{s:s}", "payload", PQgetvalue(res, 0, API_MESSAGE_RAW_PAYLOAD)));
    else
        api_not_found(r, "Message");
    PQclear(res);
}

void api_message_list(PGconn *conn, struct api_req *r)
{
    struct api_msg_filter f;
    bool content;
    if (api_message_filters(r, &f) && api_bool_query(r, "with_content", true, &content) &&
        api_resolve_app(conn, r, r->params[0])) {
        const char *p[] = {r->app, f.event_types, content ? "true" : "false", f.channel, f.tag, f.before, f.after};
        api_list(conn, r, Q_API_MESSAGE_LIST, p, 7, API_ORDER_TIME, API_MESSAGE_LIST_BODY, API_MESSAGE_LIST_API_ID);
    }
    free(f.event_types);
}
