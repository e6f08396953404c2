/* Inbound webhooks; see ingest.h.
 *
 * Group commit (batcher.h): a request that passed every check is appended
 * to the open batch. The batch is submitted at the end of the current loop
 * turn when fewer than ingest_concurrency inserts are running, or as soon as
 * one of them completes, or when it is full. So a lone request waits for
 * nothing, and under load each commit (one fsync) carries many rows. */
#include "inbound.h"

#include <ctype.h>
#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api_id.h"
#include "batcher.h"
#include "clock.h"
#include "encoding.h"
#include "db.h"
#include "errbuf.h"
#include "handshake.h"
#include "http_server.h"
#include "jsonpath.h"
#include "keyindex.h"
#include "log.h"
#include "query.h"
#include "sched.h"
#include "ctx.h"
#include "xmalloc.h"

#define PARAMS_PER_ROW 9
#define ENTITY_ID_MAX 1000
/* A batch is also closed at this many bytes of payload and headers: its
 * rows travel as one array per column, and Postgres refuses a value over
 * 1 GB (partners' max_body can be large). */
#define BATCH_BYTES_MAX (64u << 20)

/* One accepted request waiting for its commit. */
struct pending {
    struct ingest *in;
    int64_t arrived_us;
    struct evhttp_request *req; /* NULL once the client went away */
    char *partner, *event_id, *event_type, *entity_type, *entity_id, *payload, *headers;
    char *digest;   /* hex SHA-256 of the body, for partners with content_dedup; else NULL */
    int ack_status; /* 200, or what the provider insists on (handshake_ack_status) */
    /* filled by the batch job */
    enum { RES_NONE, RES_ACCEPTED, RES_DUPLICATE, RES_UNAVAILABLE, RES_INVALID } result;
    char id[40]; /* the row's id, made before the insert (make_ids) */
    int64_t due_ms;
    char error[256];
};

struct batch {
    struct ingest *in;
    struct pending **items;
    size_t n;
};

struct ingest {
    struct hookd_ctx *ctx;
    struct http_server *http; /* borrowed: the listener the route is on */
    struct db_pool *db;       /* inserts only, so they never queue behind processing */
    struct batcher *batcher;  /* gathers struct pending *, weighed by payload and headers */
    size_t pending;
};

/* ---- answering ---------------------------------------------------------- */

static void on_client_closed(struct evhttp_connection *conn, void *arg)
{
    (void)conn;
    struct pending *p = arg;
    p->req = NULL; /* evhttp frees the request with its connection */
}

static void forget_close_cb(struct pending *p)
{
    if (p->req)
        evhttp_connection_set_closecb(evhttp_request_get_connection(p->req), NULL, NULL);
}

static void reject(struct ingest *in, struct evhttp_request *req, const char *partner, int code,
                   enum reject_reason reason, const char *fmt, ...) __attribute__((format(printf, 6, 7)));
static void reject(struct ingest *in, struct evhttp_request *req, const char *partner, int code,
                   enum reject_reason reason, const char *fmt, ...)
{
    char msg[384];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    stats_reject(&in->ctx->stats, reason);
    log_info("ingest.rejected", "partner=%s status=%d reason=%s detail=\"%s\"", partner ? partner : "-", code,
             stats_reject_name(reason), msg);
    if (code == 405)
        evhttp_add_header(evhttp_request_get_output_headers(req), "Allow", "POST");
    if (code == 503)
        evhttp_add_header(evhttp_request_get_output_headers(req), "Retry-After", "5");
    http_reply_error(req, code, stats_reject_name(reason), "%s", msg);
}

static void pending_free(struct pending *p)
{
    free(p->partner);
    free(p->event_id);
    free(p->event_type);
    free(p->entity_type);
    free(p->entity_id);
    free(p->payload);
    free(p->headers);
    free(p->digest);
    free(p);
}

static void answer(struct pending *p)
{
    struct ingest *in = p->in;
    struct hookd_ctx *ctx = in->ctx;
    forget_close_cb(p);
    histogram_observe(&ctx->stats.ingest_seconds, (double)(clock_mono_us() - p->arrived_us) / 1e6);
    switch (p->result) {
    case RES_ACCEPTED:
        stats_add(&ctx->stats, STAT_INGESTED, 1);
        log_debug("ingest.accepted", "partner=%s event_id=%s id=%s", p->partner, p->event_id, p->id);
        if (p->req)
            http_reply_json(p->req, p->ack_status, json_pack("{s:s, s:s}", "status", "accepted", "id", p->id));
        break;
    case RES_DUPLICATE:
        stats_add(&ctx->stats, STAT_DUPLICATE, 1);
        log_debug("ingest.duplicate", "partner=%s event_id=%s", p->partner, p->event_id);
        if (p->req)
            http_reply_json(p->req, p->ack_status, json_pack("{s:s}", "status", "duplicate"));
        break;
    case RES_INVALID:
        if (p->req)
            reject(in, p->req, p->partner, 400, REJECT_BAD_BODY, "%s", p->error);
        break;
    case RES_NONE:
    case RES_UNAVAILABLE:
        stats_add(&ctx->stats, STAT_DB_ERRORS, 1);
        if (p->req)
            reject(in, p->req, p->partner, 503, REJECT_UNAVAILABLE,
                   "database unavailable, nothing was stored; retry later");
        break;
    }
}

/* ---- the batch insert (DB thread) ----------------------------------------- */

static void add_text(struct db_array *a, const char *v, bool jsonb)
{
    if (!v)
        db_array_null(a);
    else if (jsonb)
        db_array_jsonb(a, v);
    else
        db_array_text(a, v);
}

/* A request's key, partner and event id with a NUL between them, into dst
 * (room for both strings and a NUL); returns its length. */
static size_t key_make(char *dst, const char *partner, const char *event_id)
{
    size_t a = strlen(partner) + 1, b = strlen(event_id);
    memcpy(dst, partner, a);
    memcpy(dst + a, event_id, b);
    return a + b;
}

/* Marks every request a duplicate, then gives each row the INSERT returned
 * to the first request of its key in the batch; the rest (the same event
 * sent twice at once) stay duplicates of it. One lookup per row. */
static void match_rows(PGresult *res, struct pending **items, size_t n)
{
    size_t longest = 0, total = 0;
    for (size_t i = 0; i < n; i++) {
        size_t len = strlen(items[i]->partner) + 1 + strlen(items[i]->event_id);
        longest = len > longest ? len : longest;
        total += len;
    }
    char *keys = xmalloc(total + 1), *at = keys, *key = xmalloc(longest + 1);
    struct keyindex *ix = keyindex_new(n);
    for (size_t i = 0; i < n; i++) {
        items[i]->result = RES_DUPLICATE;
        size_t len = key_make(at, items[i]->partner, items[i]->event_id);
        keyindex_add(ix, at, len, i);
        at += len;
    }
    for (int row = 0; row < PQntuples(res); row++) {
        const char *partner = PQgetvalue(res, row, INGEST_INSERT_PARTNER_NAME);
        const char *event_id = PQgetvalue(res, row, INGEST_INSERT_PARTNER_EVENT_ID);
        if (strlen(partner) + 1 + strlen(event_id) > longest)
            continue; /* no request has a key this long */
        size_t i = keyindex_take(ix, key, key_make(key, partner, event_id));
        if (i == KEYINDEX_NONE)
            continue;
        struct pending *p = items[i];
        p->result = RES_ACCEPTED;
        snprintf(p->id, sizeof p->id, "%s", PQgetvalue(res, row, INGEST_INSERT_ID));
        p->due_ms = strtoll(PQgetvalue(res, row, INGEST_INSERT_DUE_MS), NULL, 10);
    }
    keyindex_free(ix);
    free(key);
    free(keys);
}

/* One INSERT for items[0..n). Returns 0, or -1 with err (the statement
 * failed as a whole; nothing of it was stored) and *content set when
 * Postgres refused what a row holds (SQLSTATE class 22, data exception, or
 * 23, integrity constraint) rather than anything else (a schema it does not
 * expect, permissions, a full disk, a server going away). */
static int insert_rows(PGconn *conn, struct pending **items, size_t n, bool retried, bool *content, char *err,
                       size_t errlen)
{
    *content = false;
    struct db_array cols[PARAMS_PER_ROW];
    static const unsigned oids[PARAMS_PER_ROW] = {DB_OID_TEXT, DB_OID_TEXT,  DB_OID_JSONB, DB_OID_TEXT, DB_OID_TEXT,
                                                  DB_OID_TEXT, DB_OID_JSONB, DB_OID_TEXT,  DB_OID_UUID};
    for (int c = 0; c < PARAMS_PER_ROW; c++)
        db_array_init(&cols[c], oids[c], n);
    for (size_t i = 0; i < n; i++) {
        const struct pending *p = items[i];
        const char *row[PARAMS_PER_ROW - 1] = {p->partner,     p->event_id,  p->payload, p->event_type,
                                               p->entity_type, p->entity_id, p->headers, p->digest};
        for (int c = 0; c < PARAMS_PER_ROW - 1; c++)
            add_text(&cols[c], row[c], oids[c] == DB_OID_JSONB);
        int bad = db_array_uuid(&cols[PARAMS_PER_ROW - 1], p->id);
        HOOKD_ASSERT(bad == 0); /* make_ids wrote it */
    }
    const char *params[PARAMS_PER_ROW];
    int lengths[PARAMS_PER_ROW], formats[PARAMS_PER_ROW];
    for (int c = 0; c < PARAMS_PER_ROW; c++) {
        params[c] = cols[c].buf;
        lengths[c] = (int)cols[c].len;
        formats[c] = 1;
    }
    PGresult *res = query_prepared_raw(conn, Q_INGEST_INSERT, params, lengths, formats);
    for (int c = 0; c < PARAMS_PER_ROW; c++)
        free(cols[c].buf);
    if (PQresultStatus(res) != PGRES_TUPLES_OK) {
        const char *state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
        *content = state && (strncmp(state, "22", 2) == 0 || strncmp(state, "23", 2) == 0);
        const char *msg = res && *PQresultErrorMessage(res) ? PQresultErrorMessage(res) : PQerrorMessage(conn);
        err_set(err, errlen, "%.*s", (int)strcspn(msg, "\n"), msg);
        PQclear(res);
        return -1;
    }
    match_rows(res, items, n);
    PQclear(res);
    if (retried) {
        /* The first attempt's commit may have landed before the connection
         * broke: a row that now "conflicts" may be ours. It is ours only if
         * it has the id this request gave it (make_ids); a row with another
         * id was stored for an earlier request, and this one is a duplicate. */
        for (size_t i = 0; i < n; i++) {
            struct pending *p = items[i];
            if (p->result != RES_DUPLICATE)
                continue;
            const char *key[] = {p->partner, p->event_id};
            res = query_exec(conn, Q_INGEST_FIND, key, err, errlen);
            if (res && PQntuples(res) == 1 && strcmp(PQgetvalue(res, 0, INGEST_FIND_ID), p->id) == 0) {
                p->result = RES_ACCEPTED;
                p->due_ms = strtoll(PQgetvalue(res, 0, INGEST_FIND_DUE_MS), NULL, 10);
            }
            PQclear(res);
        }
    }
    return 0;
}

/* Gives each request the id its row will have: a version 4 UUID, as
 * gen_random_uuid() would make. An id made here, not by Postgres, is what
 * tells a retried insert its own rows from an earlier request's. -1 when
 * OpenSSL has no random bytes. */
static int make_ids(struct pending **items, size_t n)
{
    struct api_id_batch ids;
    if (api_id_batch_init(&ids, n, clock_wall_ms()) != 0)
        return -1;
    /* version 7 on this clock: the id's clock is the row's part_at
     * (ingest_insert.sql, sql/0018_ids_carry_partition.sql), so lookups by
     * id prune to its partition */
    for (size_t i = 0; i < n; i++)
        api_id_batch_uuid(&ids, i, NULL, items[i]->id);
    api_id_batch_release(&ids);
    return 0;
}

static void work_batch(PGconn *conn, void *arg)
{
    struct batch *b = arg;
    char err[256];
    bool content;
    if (!conn)
        return; /* RES_NONE: 503 */
    if (make_ids(b->items, b->n) != 0) {
        log_error("ingest.insert_failed", "rows=%zu error=\"no random bytes for the row ids\"", b->n);
        return; /* RES_NONE: 503 */
    }
    if (insert_rows(conn, b->items, b->n, false, &content, err, sizeof err) == 0)
        return;
    if (db_conn_lost(conn)) {
        /* Lost mid-statement: the outcome is unknown. Reconnect once and
         * insert again; ON CONFLICT makes the second attempt safe. */
        PQreset(conn);
        if (PQstatus(conn) == CONNECTION_OK && insert_rows(conn, b->items, b->n, true, &content, err, sizeof err) == 0)
            return;
        for (size_t i = 0; i < b->n; i++)
            b->items[i]->result = RES_UNAVAILABLE;
        return;
    }
    if (!content) { /* not the senders' fault: 503, they retry later */
        log_error("ingest.insert_failed", "rows=%zu error=\"%s\"", b->n, err);
        for (size_t i = 0; i < b->n; i++)
            b->items[i]->result = RES_UNAVAILABLE;
        return;
    }
    /* Some row's content (a payload Postgres refuses): insert one by one so
     * only the bad request fails, with a 400. */
    for (size_t i = 0; i < b->n; i++) {
        struct pending *p = b->items[i];
        if (insert_rows(conn, &p, 1, false, &content, p->error, sizeof p->error) != 0)
            p->result = content ? RES_INVALID : RES_UNAVAILABLE;
    }
}

static void done_batch(void *arg)
{
    struct batch *b = arg;
    struct ingest *in = b->in;
    struct hookd_ctx *ctx = in->ctx;
    char **ids = xcalloc(b->n, sizeof *ids);
    int64_t *due = xcalloc(b->n, sizeof *due);
    size_t nnew = 0;
    for (size_t i = 0; i < b->n; i++) {
        struct pending *p = b->items[i];
        if (p->result == RES_ACCEPTED && p->id[0]) {
            ids[nnew] = p->id;
            due[nnew++] = p->due_ms;
        }
    }
    /* After the commit: schedule, then answer. If Redis is down the rows are
     * safe anyway; the reconciler schedules them. */
    sched_seed(ctx, "inbox", ids, due, nnew, false);
    for (size_t i = 0; i < b->n; i++) {
        answer(b->items[i]);
        pending_free(b->items[i]);
    }
    in->pending -= b->n;
    free(ids);
    free(due);
    free(b->items);
    free(b);
    batcher_done(in->batcher);
}

/* batcher_submit_fn: one insert job for the batch. */
static void on_batch(void *arg, void *items, size_t n, size_t bytes)
{
    (void)bytes;
    struct batch *b = xcalloc(1, sizeof *b);
    b->in = arg;
    b->items = items;
    b->n = n;
    db_pool_submit(b->in->db, work_batch, done_batch, b);
}

static void enqueue(struct ingest *in, struct pending *p)
{
    in->pending++;
    /* before the add: a full batch is submitted, and may be answered, in it */
    evhttp_connection_set_closecb(evhttp_request_get_connection(p->req), on_client_closed, p);
    batcher_add(in->batcher, &p, strlen(p->payload) + (p->headers ? strlen(p->headers) : 0));
}

/* ---- request checks ------------------------------------------------------- */

static const char *header_lookup(void *arg, const char *name)
{
    return evhttp_find_header(arg, name);
}

/* Extracts a field from the body or a header (read through the partner's
 * spec: sig_spec_header, with its aliases) into a new string, or NULL. */
static char *extract(const struct field_source *f, const struct sig_spec *spec, json_t *body,
                     struct evkeyvalq *headers, size_t max)
{
    if (f->kind == FIELD_HEADER) {
        const char *v = sig_spec_header(spec, header_lookup, headers, f->path);
        return v && *v && strlen(v) <= max ? xstrdup(v) : NULL;
    }
    if (f->kind == FIELD_JSON) {
        char buf[ENTITY_ID_MAX + 1];
        if (jsonpath_get_text(body, f->path, buf, sizeof buf) != 0 || !buf[0] || strlen(buf) > max)
            return NULL;
        return xstrdup(buf);
    }
    return NULL;
}

static bool secret_header(const char *name, const struct partner_config *p)
{
    if (p->spec.signature_header && strcasecmp(name, p->spec.signature_header) == 0)
        return true; /* X-Gitlab-Token is the secret itself */
    static const char *const drop[] = {"authorization",       "cookie",
                                       "webhook-signature",   "svix-signature",
                                       "stripe-signature",    "x-hub-signature",
                                       "x-hub-signature-256", "proxy-authorization"};
    for (size_t i = 0; i < sizeof drop / sizeof drop[0]; i++)
        if (strcasecmp(name, drop[i]) == 0)
            return true;
    return p->header && strcasecmp(name, p->header) == 0;
}

/* The request headers worth keeping for a person debugging a DLQ entry:
 * all but the credentials and signatures hookd knows (left out), with the
 * values of those matching [hookd] redact_headers replaced by "<redacted>"
 * here, before they are stored, so no later reader (dlq show, /admin) can
 * show them. */
static char *kept_headers(struct evkeyvalq *headers, const struct partner_config *p, const struct hookd_config *cfg)
{
    json_t *obj = json_object();
    for (struct evkeyval *kv = headers->tqh_first; kv; kv = kv->next.tqe_next) {
        /* A name with blanks ("Authorization :") is malformed; it must not
         * slip a credential past secret_header(). */
        if (strpbrk(kv->key, " \t") || secret_header(kv->key, p))
            continue;
        bool redacted = config_header_redacted(cfg, kv->key);
        if (!redacted && strlen(kv->value) > 1024)
            continue;
        char name[128];
        size_t i = 0;
        for (; kv->key[i] && i < sizeof name - 1; i++)
            name[i] = (char)tolower((unsigned char)kv->key[i]);
        name[i] = '\0';
        json_object_set_new(obj, name, json_string(redacted ? "<redacted>" : kv->value));
    }
    char *text = json_dumps(obj, JSON_COMPACT);
    json_decref(obj);
    return text ? text : xstrdup("{}");
}

/* The hex digest deduplicating a body of a partner whose signature covers
 * neither the event id and type nor a timestamp (config.h, content_dedup):
 * whatever id or type header a replay carries, its body is stored once. */
static char *hex_digest(const unsigned char d[SIG_DIGEST_LEN])
{
    char *hex = xmalloc(ENC_HEX_LEN(SIG_DIGEST_LEN) + 1);
    int rc = enc_hex_encode(d, SIG_DIGEST_LEN, hex, ENC_HEX_LEN(SIG_DIGEST_LEN) + 1);
    HOOKD_ASSERT(rc == 0);
    return hex;
}

static char *content_digest(const unsigned char *raw, size_t len)
{
    unsigned char d[SIG_DIGEST_LEN];
    sig_content_digest(raw, len, d);
    return hex_digest(d);
}

static bool form_content_type(const char *ct)
{
    static const char form[] = "application/x-www-form-urlencoded";
    if (!ct)
        return false;
    size_t n = strcspn(ct, ";");
    while (n > 0 && ct[n - 1] == ' ')
        n--;
    return n == sizeof form - 1 && strncasecmp(ct, form, n) == 0;
}

/* A form body (Twilio, Slack's interactive payloads) as the JSON object
 * that is stored: each field a string, a repeated field an array of them,
 * in the order sent. NULL if the body is not a well-formed form, or a name
 * or value is not UTF-8 (JSON cannot hold it: dropping it would store less
 * than was signed). */
static json_t *form_to_json(const unsigned char *raw, size_t len)
{
    char *text = xstrndup((const char *)raw, len);
    struct evkeyvalq fields;
    fields.tqh_first = NULL;
    fields.tqh_last = &fields.tqh_first;
    json_t *obj = NULL;
    if (evhttp_parse_query_str(text, &fields) == 0) {
        obj = json_object();
        int bad = 0;
        for (struct evkeyval *kv = fields.tqh_first; kv && !bad; kv = kv->next.tqe_next) {
            json_t *old = json_object_get(obj, kv->key);
            if (!old)
                bad = json_object_set_new(obj, kv->key, json_string(kv->value));
            else if (json_is_array(old))
                bad = json_array_append_new(old, json_string(kv->value));
            else
                bad = json_object_set_new(obj, kv->key, json_pack("[O, s]", old, kv->value));
        }
        if (bad) {
            json_decref(obj);
            obj = NULL;
        }
    }
    evhttp_clear_headers(&fields);
    free(text);
    return obj;
}

/* The URL the provider called, as it signed it: the partner's public_url
 * (with the query received), else built from the Host header. Caller
 * frees. */
static char *signed_url(struct evhttp_request *req, const struct partner_config *p, struct evkeyvalq *headers)
{
    const char *uri = evhttp_request_get_uri(req);
    const char *q = uri ? strchr(uri, '?') : NULL;
    char *out;
    if (p->public_url) {
        out = xmalloc(strlen(p->public_url) + (q ? strlen(q) : 0) + 1);
        strcpy(out, p->public_url);
        if (q)
            strcat(out, q);
        return out;
    }
    const char *host = evhttp_find_header(headers, "Host");
    if (!host || !uri)
        return xstrdup("");
    out = xmalloc(strlen("http://") + strlen(host) + strlen(uri) + 1);
    sprintf(out, "http://%s%s", host, uri);
    return out;
}

static bool json_content_type(const char *ct)
{
    if (!ct)
        return false;
    size_t n = strcspn(ct, ";");
    while (n > 0 && ct[n - 1] == ' ')
        n--;
    return (n == 16 && strncasecmp(ct, "application/json", 16) == 0) ||
           (n > 5 && strncasecmp(ct + n - 5, "+json", 5) == 0);
}

static enum reject_reason sig_reason(enum sig_result r, int *code)
{
    switch (r) {
    case SIG_MISSING_HEADER: *code = 400; return REJECT_MISSING_SIGNATURE;
    case SIG_MALFORMED_HEADER: *code = 400; return REJECT_MALFORMED_SIGNATURE;
    case SIG_TIMESTAMP_OUT_OF_TOLERANCE: *code = 401; return REJECT_TIMESTAMP;
    default: *code = 401; return REJECT_BAD_SIGNATURE;
    }
}

static void handle_inbox(struct evhttp_request *req, void *arg)
{
    struct ingest *in = arg;
    struct hookd_config *cfg = in->ctx->cfg;
    int64_t arrived = clock_mono_us();
    char *path = http_request_path(req);
    const char *name = path ? path + strlen("/v1/inbox/") : "";
    const struct partner_config *p = NULL;
    json_t *body = NULL;
    struct pending *pend = NULL;
    bool enqueued = false;
    char *url = NULL, *form_payload = NULL;

    struct partner_refusal refusal;
    if (evhttp_request_get_command(req) != EVHTTP_REQ_POST) {
        /* Meta's and X's subscription checks are GETs (handshake.c). */
        p = config_partner(cfg, name);
        enum handshake_verdict hv = p ? handshake_get(req, cfg, p, &refusal) : HANDSHAKE_NONE;
        if (hv == HANDSHAKE_REFUSED)
            reject(in, req, p->name, refusal.code, refusal.reason, "%s", refusal.msg);
        else if (hv == HANDSHAKE_NONE)
            reject(in, req, NULL, 405, REJECT_METHOD, "use POST");
        goto done;
    }
    if (in->ctx->draining) {
        reject(in, req, NULL, 503, REJECT_UNAVAILABLE, "worker is shutting down");
        goto done;
    }
    p = config_partner(cfg, name);
    if (!p) {
        reject(in, req, NULL, 404, REJECT_UNKNOWN_PARTNER, "unknown partner '%.50s'", name);
        goto done;
    }
    if (partner_policy_address(req, cfg, p, &refusal) != 0) {
        reject(in, req, p->name, refusal.code, refusal.reason, "%s", refusal.msg);
        goto done;
    }
    struct evbuffer *buf = evhttp_request_get_input_buffer(req);
    size_t len = evbuffer_get_length(buf);
    int64_t max = p->max_body ? p->max_body : cfg->max_body;
    if ((int64_t)len > max) {
        reject(in, req, p->name, 413, REJECT_TOO_LARGE, "body is %zu bytes; the limit is %lld", len, (long long)max);
        goto done;
    }
    struct evkeyvalq *headers = evhttp_request_get_input_headers(req);
    if (handshake_unsigned(req, p, len ? evbuffer_pullup(buf, -1) : (const unsigned char *)"", len) ==
        HANDSHAKE_ANSWERED)
        goto done;
    const char *ctype = evhttp_find_header(headers, "Content-Type");
    bool form = (p->preset->bodies & SIG_BODY_FORM) && form_content_type(ctype);
    if (!form && !json_content_type(ctype)) {
        reject(in, req, p->name, 415, REJECT_CONTENT_TYPE, "Content-Type must be application/json%s",
               (p->preset->bodies & SIG_BODY_FORM) ? " or application/x-www-form-urlencoded" : "");
        goto done;
    }
    const unsigned char *raw = len ? evbuffer_pullup(buf, -1) : (const unsigned char *)"";
    url = signed_url(req, p, headers);
    struct sig_params sp = {p->scheme, p->keys, p->nkeys, p->tolerance / 1000, p->header, &p->spec};
    struct sig_request sr = {raw,    len, header_lookup, headers, clock_wall_ms() / 1000, /* Postgres's clock */
                             "POST", url, ctype};
    char err[256];
    unsigned char digest[SIG_DIGEST_LEN];
    enum sig_result sres = sig_verify_digest(&sp, &sr, digest, err, sizeof err);
    if (sres != SIG_OK) {
        int code;
        enum reject_reason reason = sig_reason(sres, &code);
        reject(in, req, p->name, code, reason, "%s", err);
        goto done;
    }
    /* jansson skips a NUL right after a number or literal, but the payload
     * is stored as text: refuse NUL bytes outright. */
    if (memchr(raw, '\0', len)) {
        reject(in, req, p->name, 400, REJECT_BAD_BODY, "body contains a NUL byte");
        goto done;
    }
    json_error_t jerr;
    if (form) {
        body = form_to_json(raw, len);
        if (!body) {
            reject(in, req, p->name, 400, REJECT_BAD_BODY, "body is not a well-formed UTF-8 form");
            goto done;
        }
        form_payload = json_dumps(body, JSON_COMPACT | JSON_PRESERVE_ORDER);
    } else {
        /* Any JSON Postgres stores (numbers of any size, a scalar at the
         * top); the payload stored is raw, this document only serves
         * extract(). */
        body = jsonpath_load_body((const char *)raw, len, &jerr);
    }
    if (!body) {
        /* jansson's text quotes the offending token: it stays out of the log. */
        reject(in, req, p->name, 400, REJECT_BAD_BODY, "body is not valid JSON (line %d, column %d)", jerr.line,
               jerr.column);
        goto done;
    }
    /* Slack, Zoom, Twitch, Discord, GitHub pings: answered, never stored. */
    enum handshake_verdict hv = handshake_post(req, p, body, &refusal);
    if (hv != HANDSHAKE_NONE) {
        if (hv == HANDSHAKE_REFUSED)
            reject(in, req, p->name, refusal.code, refusal.reason, "%s", refusal.msg);
        goto done;
    }
    pend = xcalloc(1, sizeof *pend);
    pend->event_id = p->event_id.kind == FIELD_DIGEST ? hex_digest(digest)
                                                      : extract(&p->event_id, &p->spec, body, headers, 100);
    pend->event_type = extract(&p->event_type, &p->spec, body, headers, 100);
    pend->entity_id = p->entity_id.kind != FIELD_NONE ? extract(&p->entity_id, &p->spec, body, headers, ENTITY_ID_MAX)
                                                      : NULL;
    if (!pend->event_id || !pend->event_type) {
        const struct field_source *f = !pend->event_id ? &p->event_id : &p->event_type;
        reject(in, req, p->name, 400, REJECT_BAD_BODY, "%s not found at %s:%s (or empty, or over 100 characters)",
               !pend->event_id ? "event id" : "event type", f->kind == FIELD_JSON ? "json" : "header", f->path);
        pending_free(pend);
        goto done;
    }
    if (partner_policy_event_type(p, pend->event_type, &refusal) != 0) {
        reject(in, req, p->name, refusal.code, refusal.reason, "%s", refusal.msg);
        pending_free(pend);
        goto done;
    }
    const struct machine_config *m = config_machine_for(cfg, p->entity_type, pend->event_type);
    pend->in = in;
    pend->req = req;
    pend->ack_status = handshake_ack_status(p);
    pend->arrived_us = arrived;
    pend->partner = xstrdup(p->name);
    pend->entity_type = m ? xstrdup(m->name) : (p->entity_type ? xstrdup(p->entity_type) : NULL);
    pend->payload = form_payload ? form_payload : xstrndup((const char *)raw, len);
    form_payload = NULL;
    pend->headers = kept_headers(headers, p, cfg);
    if (p->content_dedup)
        pend->digest = content_digest(raw, len);
    enqueue(in, pend);
    pend = NULL;
    enqueued = true;
done:
    if (!enqueued) /* answered already: refused */
        histogram_observe(&in->ctx->stats.ingest_seconds, (double)(clock_mono_us() - arrived) / 1e6);
    json_decref(body);
    free(path);
    free(url);
    free(form_payload);
}

/* ---- lifecycle ------------------------------------------------------------ */

static int64_t largest_body(const struct hookd_config *cfg)
{
    int64_t max = cfg->max_body;
    for (size_t i = 0; i < cfg->npartners; i++)
        if (cfg->partners[i].max_body > max)
            max = cfg->partners[i].max_body;
    return max;
}

struct ingest *ingest_new(struct hookd_ctx *ctx, struct http_server *http, char *err, size_t errlen)
{
    struct db_pool *db = db_pool_new(ctx->base, ctx->cfg->database.text, (int)ctx->cfg->ingest_concurrency, false);
    if (!db) {
        err_set(err, errlen, "cannot start the database threads");
        return NULL;
    }
    struct ingest *in = xcalloc(1, sizeof *in);
    in->ctx = ctx;
    in->http = http;
    in->db = db;
    /* Requests read in the same loop turn share a commit. */
    struct batcher_config bc = {sizeof(struct pending *), (size_t)ctx->cfg->ingest_batch_max, BATCH_BYTES_MAX,
                                (int)ctx->cfg->ingest_concurrency, BATCHER_LINGER_TURN};
    in->batcher = batcher_new(ctx->base, &bc, on_batch, in);
    if (!in->batcher) {
        err_set(err, errlen, "cannot create the ingest batcher");
        db_pool_free(db);
        free(in);
        return NULL;
    }
    http_server_route(http, "/v1/inbox/*", handle_inbox, in);
    ingest_config_changed(in);
    return in;
}

void ingest_config_changed(struct ingest *in)
{
    /* Bodies over the largest limit are refused by evhttp itself (413)
     * before they are buffered; smaller per-partner limits are checked in
     * the handler. */
    http_server_set_max_body(in->http, largest_body(in->ctx->cfg));
    batcher_set_limits(in->batcher, (size_t)in->ctx->cfg->ingest_batch_max, BATCH_BYTES_MAX);
}

void ingest_flush(struct ingest *in)
{
    batcher_flush(in->batcher);
}

size_t ingest_pending(const struct ingest *in)
{
    return in->pending + db_pool_pending(in->db);
}

void ingest_close(struct ingest *in)
{
    /* Runs the insert jobs still queued and their completions (which answer
     * their requests) while the ingest lives. */
    db_pool_free(in->db);
    in->db = NULL;
}

void ingest_free(struct ingest *in)
{
    if (!in)
        return;
    ingest_close(in);
    size_t n;
    struct pending **open = batcher_take(in->batcher, &n);
    for (size_t i = 0; i < n; i++) {
        open[i]->result = RES_UNAVAILABLE;
        answer(open[i]);
        pending_free(open[i]);
    }
    free(open);
    batcher_free(in->batcher);
    free(in);
}
