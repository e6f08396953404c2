/* Internal to the API role (api*.c): one request as the operations see it,
 * and the helpers they share (api_util.c). Not for other roles.
 *
 * An operation runs on a DB thread, inside the request's transaction (the
 * router opens it, checks the idempotency key, and commits when the answer
 * is a success, rolls back otherwise: a refused request stores nothing). It
 * reads the request (path parameters, query, JSON body, the token's tenant)
 * and sets the answer with api_reply / api_error / api_invalid. The answers
 * follow Svix's server: `{"code", "detail"}` errors, 422 with a `detail`
 * array of `{loc, msg, type}`, lists as `{data, iterator, prevIterator,
 * done}`. */
#ifndef HOOKD_API_INTERNAL_H
#define HOOKD_API_INTERNAL_H

#include <event2/keyvalq_struct.h>
#include <jansson.h>
#include <libpq-fe.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "api.h"
#include "queries.h"

struct api;
struct api_req;
struct hookd_config;

#define API_MAX_PARAMS 4
#define API_LIMIT_DEFAULT 50
#define API_PAYLOAD_DEPTH_MAX 64 /* nesting of a message's payload */
#define API_LIMIT_MAX 250

typedef void api_op_fn(PGconn *conn, struct api_req *r);

/* One operation: method, path pattern below /api/v1/ ('*' = one segment,
 * a path parameter), Svix's operation id; fn NULL: answered 501. */
struct api_route {
    const char *method;
    const char *pattern;
    const char *op;
    api_op_fn *fn;
    const char *summary;                          /* for the OpenAPI document */
    int status;                                   /* the success status */
    const char *request_schema, *response_schema; /* component names, or NULL */
};

struct api_req {
    struct api *api;
    struct evhttp_request *req; /* NULL once the client left */
    const struct api_route *route;
    const struct hookd_config *cfg; /* a ref taken for the request */
    char method[8];
    char *params[API_MAX_PARAMS]; /* the path's '*' segments, decoded */
    int nparams;
    struct evkeyvalq query;
    json_t *body; /* parsed JSON body (POST, PUT, PATCH), or NULL */
    size_t body_len;
    char *payload_raw; /* the text of the body's top-level "payload", as sent, or NULL; owned */
    char token_sha[65];
    char *idem_key;
    char *idem_scope;  /* the token's tenant is added on the DB thread */
    char client[64];   /* the throttle's key of the client's address */
    int64_t blocked_s; /* > 0: the address is blocked this long; a wrong token gets 429 */
    /* set on the DB thread */
    bool auth_ok;
    char tenant[64]; /* the token's tenant id; "" = every tenant */
    char app[64];    /* the application (tenant) id the path names, once resolved */
    bool replayed;   /* answered from the idempotency record */
    int status;
    json_t *reply; /* NULL: no body (204) */
    /* deliveries made due by the operation (resend, recover): scheduled
     * in Redis after the commit (the reconciler would find them too) */
    char *due[API_DELIVERIES_MAX];
    int64_t due_ms[API_DELIVERIES_MAX]; /* when each is due (wall ms); 0 or past: now */
    size_t ndue;
};

/* ---- answers ---- */
void api_reply(struct api_req *r, int status, json_t *body); /* steals body; NULL: none */
void api_error(struct api_req *r, int status, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Adds one item to a 422 answer (loc: "body", field). */
void api_invalid(struct api_req *r, const char *where, const char *field, const char *msg, const char *type);
bool api_failed(const struct api_req *r); /* an error answer is set */
void api_not_found(struct api_req *r, const char *what);
void api_db_error(struct api_req *r, PGconn *conn, const PGresult *res, const char *what);

/* ---- running statements (prepared; text parameters) ---- */
/* The result when its status is OK; otherwise the answer is set (409 for a
 * unique violation, 422 for a check violation, 500 else) and NULL. */
PGresult *api_exec(PGconn *conn, struct api_req *r, enum query_id q, const char *const *params);
/* The first row's first column parsed as JSON (a body built by SQL), or NULL. */
json_t *api_row_json(const PGresult *res, int row, int col);

/* ---- the request ---- */
/* The request body text[0..len) parsed (api_body.c), or NULL with jerr set;
 * *payload_raw: the exact text of its top-level "payload" member's value
 * (caller frees), or NULL when it has none. */
json_t *api_body_parse(const char *text, size_t len, char **payload_raw, json_error_t *jerr)
    __attribute__((warn_unused_result));
const char *api_query(const struct api_req *r, const char *name); /* NULL when absent */
/* A list request's page: `limit` (1 to 250, default 50) and `iterator`, as
 * Svix reads them; an iterator that begins with '-' (a `prevIterator`)
 * pages backwards. */
struct api_page {
    int limit;
    const char *iterator; /* without the '-'; NULL: the first page */
    bool prev;            /* backwards: the rows come in reverse order */
    char rows[16];        /* limit + 1 as text: one more row tells whether it is done */
};
/* 0, or -1 after answering 422. */
int api_page(struct api_req *r, struct api_page *pg);
/* A list answer from rows whose column col is a JSON body and whose column
 * idcol is the item's id: `{data, iterator, prevIterator, done}`, with
 * Svix's rules (the rows of a backward page are reversed; prevIterator is
 * "-" + the first item's id, absent on an empty page). */
void api_reply_list(struct api_req *r, const PGresult *res, int col, int idcol, const struct api_page *pg);
/* How a list reads Svix's `order` (ascending|descending): API_ORDER_FIXED:
 * it has none (its statement's order, reversed only to page back);
 * API_ORDER_ASC / _DESC: it does, with this default, over a statement in
 * ascending order. */
enum api_order { API_ORDER_FIXED, API_ORDER_ASC, API_ORDER_DESC, API_ORDER_TIME };
/* API_ORDER_TIME: newest first (the statement's order) with Svix's rule for
 * lists filtered by time: `after` without `before` or an iterator pages
 * forwards from `after` (the oldest items after it, newest first), as a
 * prevIterator does; the statement takes a NULL iterator backwards. */
/* A list operation: reads the page, runs statement q with params[0..n)
 * followed by the page's iterator, rows and whether to scan against the
 * statement's order (every list statement takes those three last), and
 * answers the list. */
void api_list(PGconn *conn, struct api_req *r, enum query_id q, const char *const *params, int n, enum api_order order,
              int col, int idcol);
/* Answers 200 with column col of the one row statement q returns (a JSON
 * body), or 404 "<what> not found" when there is none. */
void api_reply_one(PGconn *conn, struct api_req *r, enum query_id q, const char *const *params, int col,
                   const char *what);
/* The id (column idcol) of the one row statement q returns, into id;
 * 404 "<what> not found" answered (false returned) when there is none, the
 * database error answered when it fails. */
bool api_find_one(PGconn *conn, struct api_req *r, enum query_id q, const char *const *params, int idcol,
                  const char *what, char *id, size_t idlen);
/* false after answering 403 when the token is a tenant's (operations on
 * the whole installation: applications, the event-type catalog, expunge). */
bool api_global_token(struct api_req *r);
/* Resolves the path's application (id or uid) into r->app within the
 * token's scope; 404 answered (0 returned) when there is none. */
bool api_resolve_app(PGconn *conn, struct api_req *r, const char *id_or_uid);
/* The path's application (params[0]) and its message (params[1]: msg_… id
 * or eventId) into id, and whether the message's content was expunged
 * (expunged may be NULL); 404 answered (false returned) when there is none. */
bool api_resolve_message(PGconn *conn, struct api_req *r, char id[40], bool *expunged);
/* Answers a background task that the request did itself (Svix's
 * BackgroundTaskOut shapes: a new qtask_ id, status "finished", task, and
 * updatedAt now) with fields (stolen: the operation's own, such as `data`)
 * added. */
void api_reply_done_task(PGconn *conn, struct api_req *r, int status, const char *task, json_t *fields);

/* ---- body fields ---- */
/* The string field, NULL when absent or null; 422 answered when present
 * with another type (or empty when !empty_ok). */
const char *api_str(struct api_req *r, const json_t *o, const char *field, bool required);
/* -1 absent or null, the value otherwise; 422 when not an integer in [min, max]. */
int64_t api_int(struct api_req *r, const json_t *o, const char *field, int64_t min, int64_t max);
/* 1 true, 0 false, -1 absent; 422 when not a boolean. */
int api_bool(struct api_req *r, const json_t *o, const char *field);
/* What a tenant may store: every list and map it sends is bounded, so that
 * what a request stores (and what the relay reads back for each pass) stays
 * small whatever the body limit. The limits of the endpoint's fields are in
 * api_endpoint.c, the per-application budget in [hookd]
 * tenant_max_endpoints and tenant_max_filter_bytes. */
#define API_STR_(x) #x
#define API_STR(x) API_STR_(x)
#define API_METADATA_KEYS_MAX 64
#define API_METADATA_BYTES_MAX 16384
#define API_NAME_LONG_MAX 256 /* an event type's name (Svix's limit) */
/* A metadata field (an object of strings, at most API_METADATA_KEYS_MAX
 * keys and API_METADATA_BYTES_MAX bytes as compact JSON) as JSON text
 * (caller frees), NULL when absent or null; 422 answered otherwise. */
char *api_metadata_text(struct api_req *r, const json_t *o, const char *field);
/* The `settings` field (delivery settings, settings.h: an object of names
 * and words; a null value removes one when merged) as JSON text (caller
 * frees), NULL when absent or null; 422 answered for a bad one. */
char *api_settings_text(struct api_req *r, const json_t *o);
/* A list of strings of 1 to API_NAME_LONG_MAX characters, at most max_items
 * of them, as the JSON text of the set they make (each once, in the order
 * of first occurrence; caller frees); NULL when absent or null, and after
 * answering 422. */
char *api_str_set_text(struct api_req *r, const json_t *o, const char *field, size_t max_items);
/* A set of names (Svix's channels and tags: api_message.c): a JSON array of
 * 1 to max_items strings of 1 to API_NAME_MAX characters of a-z, A-Z, 0-9
 * and extra's, into *out as JSON text (caller frees); NULL when absent or
 * null. false after answering 422. */
#define API_NAME_MAX 128
bool api_name_set(struct api_req *r, const json_t *o, const char *field, size_t max_items, const char *extra,
                  char **out);
/* An http(s) URL that delivery may reach (the SSRF policy of the config). */
bool api_check_url(struct api_req *r, const char *field, const char *url);
/* An RFC 3339 date-time (2026-12-03T15:00:00Z, fractions and offsets
 * allowed) in a query parameter or body field; false after answering 422. */
bool api_check_time(struct api_req *r, const char *where, const char *field, const char *s);
/* A uid (Svix: [a-zA-Z0-9-_.], 1 to 256 characters) that does not start
 * with id_prefix and '_' ("app", "ep"): a uid never looks like an id of its
 * kind, so no lookup by id or uid can take one for the other. */
bool api_check_uid(struct api_req *r, const char *field, const char *uid, const char *id_prefix);

/* ---- list filters (api_filter.c): query parameters as Svix reads them;
 * each answers 422 (through api_invalid, the parameter named) and returns
 * false on a bad value ---- */
#define API_NAME_CHARS "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
#define API_CHANNEL_EXTRA "-_.:+" /* a channel's characters besides a-z, A-Z, 0-9 */
#define API_TAG_EXTRA "-_./\\#"   /* a tag's */
/* `event_types`, `event_types[]` and `event_types[N]`, each repeated or
 * comma-separated, as one comma-separated set (caller frees; NULL: none). */
bool api_event_types_query(struct api_req *r, char **out);
/* A name of 1 to API_NAME_MAX characters of a-z, A-Z, 0-9 and extra's. */
bool api_name_query(struct api_req *r, const char *field, const char *extra, const char **out);
/* "true" or "false"; dflt when absent. */
bool api_bool_query(struct api_req *r, const char *field, bool dflt, bool *out);
/* `before` and `after` (RFC 3339), NULL when absent. */
bool api_time_query(struct api_req *r, const char **before, const char **after);
/* What filters a list of messages or attempts by their message. */
struct api_msg_filter {
    const char *channel, *tag, *before, *after; /* borrowed from the query */
    char *event_types;                          /* owned: free() it */
};
bool api_message_filters(struct api_req *r, struct api_msg_filter *f);

/* ---- operations (api_app.c, api_endpoint.c, api_message.c,
 * api_attempt.c, api_content.c, api_event_type.c, api_send_example.c) ---- */
api_op_fn api_app_list, api_app_create, api_app_get, api_app_update, api_app_patch, api_app_delete,
    api_app_portal_access;
api_op_fn api_endpoint_list, api_endpoint_create, api_endpoint_get, api_endpoint_update, api_endpoint_patch,
    api_endpoint_delete, api_endpoint_secret_get, api_endpoint_secret_rotate, api_endpoint_headers_get,
    api_endpoint_headers_update, api_endpoint_headers_patch, api_endpoint_recover;
api_op_fn api_endpoint_stats, api_endpoint_replay_missing, api_endpoint_bulk_replay;
/* Svix's operational-webhook endpoints: hookd's global endpoints (api_endpoint.c) */
api_op_fn api_endpoint_operational_list, api_endpoint_operational_create, api_endpoint_operational_upsert;
api_op_fn api_endpoint_send_example; /* api_send_example.c */
api_op_fn api_message_list, api_message_create, api_message_get, api_message_get_raw;
api_op_fn api_message_precheck; /* api_precheck.c */
api_op_fn api_attempt_list_by_msg, api_attempt_list_by_endpoint, api_attempt_resend, api_attempt_get,
    api_attempt_list_messages, api_attempt_list_destinations, api_attempt_count_by_endpoint, api_attempt_headers;
api_op_fn api_content_expunge_message, api_content_expunge_attempt, api_content_expunge_all, api_content_bulk_expunge;
api_op_fn api_task_list, api_task_get; /* api_task.c */
/* Starts a background task of kind (Svix's BackgroundTaskType) for the
 * resolved application r->app with params (stolen) and answers 202 with
 * Svix's RecoverOut shape (id, status, task, updatedAt). */
void api_task_start(PGconn *conn, struct api_req *r, const char *kind, json_t *params);
api_op_fn api_event_type_list, api_event_type_create, api_event_type_get, api_event_type_update, api_event_type_patch,
    api_event_type_delete;
api_op_fn api_auth_expire_all, api_auth_logout;                         /* api_auth.c */
api_op_fn api_stats_app_usage, api_stats_event_types;                   /* api_stats.c */
api_op_fn api_event_type_import_openapi, api_event_type_export_openapi; /* api_event_type_openapi.c */
api_op_fn api_environment_export, api_environment_import;               /* api_environment.c */
/* An event type's name (1 to 256 of a-z, A-Z, 0-9, '-', '_', '.'); false
 * after answering 422 (api_event_type.c). */
bool api_event_type_name_ok(struct api_req *r, const char *name);
/* The fields of an EventTypeIn object o as the JSON text of the columns to
 * set (api_event_type_upsert.sql; absent: unchanged; caller frees), NULL
 * after answering 422. */
char *api_event_type_fields(struct api_req *r, const json_t *o, bool description_required);
/* The body's sessionId (app-portal-access), NULL when absent or null and
 * after answering 422 (then api_failed). */
const char *api_auth_session_id(struct api_req *r);

/* ---- the role (api.c) ---- */
struct admin_guard;
struct event;
struct hookd_ctx;
struct api_msgs;

/* The role: its router state, read by a request's job (api_request.c). */
struct api {
    struct hookd_ctx *ctx;
    struct admin_guard *guard; /* failed authentications per client address */
    struct event *purge_ev;
    bool purging;
    size_t pending;
    struct api_msgs *msgs; /* message creations, batched (api_message.c) */
};

/* ---- the routes (api_routes.c) ---- */
/* Whether path (below /api/v1/, or absolute from '/' for the paths outside
 * it, no trailing slash) matches pattern; with r, fills the '*' segments
 * (decoded copies) into r->params. */
bool api_route_match(const char *pattern, const char *path, struct api_req *r);
/* The route for method and path: the table's most specific match (a literal
 * segment beats '*' at the first place they differ), else the route that
 * answers 405 (another method matches) or 404 — never NULL. */
const struct api_route *api_route_find(const char *method, const char *path);
/* The route's full path pattern ("/api/v1/app/ *"), into out. */
void api_route_path(const struct api_route *rt, char *out, size_t outlen);
/* The route of an operation id ("v1.endpoint.create"), or NULL. */
const struct api_route *api_route_by_op(const char *op);

/* ---- a request's job (api_request.c), for the router and the message batch ---- */
/* Frees a request and everything it holds. */
void api_req_free(struct api_req *r);
/* DB thread: authenticates, then runs the operation in a transaction of its
 * own (BEGIN, idempotency key, operation, COMMIT or ROLLBACK). */
void api_request_run(PGconn *conn, void *r);
/* Loop: answers the request and frees it. */
void api_request_done(void *r);
/* The idempotency scope of a request: its token's tenant, method and path. */
void api_idem_scope(const struct api_req *r, char *out, size_t outlen);

/* Message creations gathered into one transaction per batch (api_message.c).
 * api_msgs_add takes a request the router counted as pending; it is
 * answered through api_request_done. api_msgs_free answers 503 to those
 * never submitted. */
struct api_msgs *api_msgs_new(struct hookd_ctx *ctx);
void api_msgs_add(struct api_msgs *m, struct api_req *r);
/* Runs the batches in flight to their answers and closes the batches'
 * connections (the worker's close phase); api_msgs_free does it too. */
void api_msgs_close(struct api_msgs *m);
void api_msgs_free(struct api_msgs *m);

/* The routes (api_routes.c) and the OpenAPI document built from them (api_openapi.c). */
extern const struct api_route api_routes[];
extern const size_t api_nroutes;
json_t *api_openapi(void);

#endif
