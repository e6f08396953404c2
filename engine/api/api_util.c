/* The API's shared helpers: answers in Svix's shapes, statements with
 * their errors mapped to statuses, request fields, pagination and the
 * resolution of an application in the token's scope. See api_internal.h.
 * Everything here runs on a DB thread, on one request. */
#include <event2/http.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_internal.h"
#include "config.h"
#include "db.h"
#include "http_server.h"
#include "jsonpath.h"
#include "log.h"
#include "netguard.h"
#include "query.h"
#include "settings.h"
#include "xmalloc.h"

/* ---- answers ---- */

void api_reply(struct api_req *r, int status, json_t *body)
{
    json_decref(r->reply);
    r->status = status;
    r->reply = body;
}

void api_error(struct api_req *r, int status, const char *code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    api_reply(r, status, http_error_vjson("code", code, "detail", fmt, ap)); /* Svix's error body */
    va_end(ap);
}

/* A query parameter that cannot be read as its type (not a number, not one
 * of an enumeration's values, not a date-time) fails where Svix's query
 * deserialisation fails: 400. A value of the right type that breaks a rule
 * (a limit over 250, a name's pattern) is a validation error: 422. */
static bool query_type_error(const char *where, const char *type)
{
    return strcmp(where, "query") == 0 &&
           (strncmp(type, "type_error", 10) == 0 || strcmp(type, "value_error.datetime") == 0);
}

void api_invalid(struct api_req *r, const char *where, const char *field, const char *msg, const char *type)
{
    if (query_type_error(where, type)) {
        if (!api_failed(r))
            api_error(r, 400, "generic_error", "Failed to deserialize query string: %s: %s", field ? field : "query",
                      msg);
        return;
    }
    if (r->status != 422 || !r->reply || !json_is_array(json_object_get(r->reply, "detail")))
        api_reply(r, 422, json_pack("{s:[]}", "detail"));
    json_t *loc = json_pack("[s]", where);
    if (field)
        json_array_append_new(loc, json_string(field));
    json_array_append_new(json_object_get(r->reply, "detail"),
                          json_pack("{s:o, s:s, s:s}", "loc", loc, "msg", msg, "type", type));
}

bool api_failed(const struct api_req *r)
{
    return r->status >= 300;
}

void api_not_found(struct api_req *r, const char *what)
{
    api_error(r, 404, "not_found", "%s not found", what);
}

void api_db_error(struct api_req *r, PGconn *conn, const PGresult *res, const char *what)
{
    const char *state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
    if (state && strcmp(state, "23505") == 0) {
        api_error(r, 409, "conflict", "%s already exists", what);
        return;
    }
    if (state && (strcmp(state, "23514") == 0 || strcmp(state, "22P02") == 0 || strcmp(state, "22023") == 0 ||
                  strcmp(state, "22007") == 0 || strcmp(state, "22008") == 0 || strcmp(state, "22003") == 0)) {
        api_invalid(r, "body", NULL, "a value is out of range or malformed", "value_error");
        return;
    }
    if (state && strcmp(state, "23503") == 0) {
        api_not_found(r, what);
        return;
    }
    const char *msg = PQerrorMessage(conn);
    if (db_unavailable(conn, res)) {
        api_error(r, 503, "unavailable", "the database is unavailable");
        return;
    }
    log_error("api.sql_failed", "op=%s sqlstate=%s error=\"%.*s\"", r->route->op, state ? state : "-",
              (int)strcspn(msg, "\n"), msg);
    api_error(r, 500, "server_error", "Internal Server Error");
}

PGresult *api_exec(PGconn *conn, struct api_req *r, enum query_id q, const char *const *params)
{
    PGresult *res = query_prepared_raw(conn, q, params, NULL, NULL);
    ExecStatusType st = res ? PQresultStatus(res) : PGRES_FATAL_ERROR;
    if (st == PGRES_TUPLES_OK || st == PGRES_COMMAND_OK)
        return res;
    api_db_error(r, conn, res, "the object");
    PQclear(res);
    return NULL;
}

json_t *api_row_json(const PGresult *res, int row, int col)
{
    if (row >= PQntuples(res) || PQgetisnull(res, row, col))
        return NULL;
    /* a message's payload may hold a number beyond what jansson holds (an
     * integer past 64 bits): the answer carries it as a string of its digits
     * (the exact payload: get-raw-payload, and every delivery) */
    const char *text = PQgetvalue(res, row, col);
    json_error_t jerr;
    return jsonpath_load_body(text, strlen(text), &jerr);
}

/* ---- the request ---- */

const char *api_query(const struct api_req *r, const char *name)
{
    return evhttp_find_header((struct evkeyvalq *)&r->query, name);
}

/* The id prefix of a list's items, by the list's answer schema; NULL when
 * its iterator is a name (event types) or another kind of id. */
static const char *iterator_prefix(const struct api_req *r)
{
    static const char *const prefixes[][2] = {
        {"ListResponseApplicationOut", "app_"},     {"ListResponseEndpointOut", "ep_"},
        {"ListResponseMessageOut", "msg_"},         {"ListResponseMessageAttemptOut", "atmpt_"},
        {"ListResponseEndpointMessageOut", "msg_"}, {"ListResponseMessageEndpointOut", "ep_"},
    };
    const char *schema = r->route ? r->route->response_schema : NULL;
    for (size_t i = 0; schema && i < sizeof prefixes / sizeof prefixes[0]; i++)
        if (strcmp(schema, prefixes[i][0]) == 0)
            return prefixes[i][1];
    return NULL;
}

/* An iterator is an item's id (its prefix, then letters and digits) or, for
 * the lists of names, a name of a-z, A-Z, 0-9, '-', '_' and '.': anything
 * else is Svix's 422, never an empty page. */
static bool iterator_valid(const struct api_req *r, const char *it)
{
    const char *prefix = iterator_prefix(r);
    size_t n = strlen(it), np = prefix ? strlen(prefix) : 0;
    static const char alnum[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    if (prefix)
        return n > np && n <= 64 && strncmp(it, prefix, np) == 0 && strspn(it + np, alnum) == n - np;
    return n <= 256 && strspn(it, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.") == n;
}

int api_page(struct api_req *r, struct api_page *pg)
{
    pg->limit = API_LIMIT_DEFAULT;
    pg->iterator = api_query(r, "iterator");
    pg->prev = false;
    const char *l = api_query(r, "limit");
    if (l) {
        char *end = NULL;
        long v = strtol(l, &end, 10);
        if (!*l || *end || *l == '-' || *l == '+') {
            api_invalid(r, "query", "limit", "invalid digit found in string", "type_error.integer");
            return -1;
        }
        if (v < 1 || v > API_LIMIT_MAX) {
            api_invalid(r, "query", "limit", "Given limit must be between 1 and 250", "value_error");
            return -1;
        }
        pg->limit = (int)v;
    }
    if (pg->iterator && pg->iterator[0] == '-') { /* Svix's ReversibleIterator::Prev */
        pg->iterator++;
        pg->prev = true;
    }
    if (pg->iterator && !*pg->iterator)
        pg->iterator = NULL;
    if (pg->iterator && !iterator_valid(r, pg->iterator)) {
        api_invalid(r, "query", "iterator", "not an iterator of this list", "value_error.iterator");
        return -1;
    }
    snprintf(pg->rows, sizeof pg->rows, "%d", pg->limit + 1);
    return 0;
}

void api_reply_list(struct api_req *r, const PGresult *res, int col, int idcol, const struct api_page *pg)
{
    int n = PQntuples(res);
    bool done = n <= pg->limit;
    int shown = done ? n : pg->limit;
    json_t *data = json_array();
    for (int k = 0; k < shown; k++) {
        int i = pg->prev ? shown - 1 - k : k; /* a backward page is read in reverse */
        json_t *item = api_row_json(res, i, col);
        json_array_append_new(data, item ? item : json_null());
    }
    json_t *body = json_pack("{s:o, s:o, s:b}", "data", data, "iterator", json_null(), "done", done);
    if (shown > 0) {
        const char *first = PQgetvalue(res, pg->prev ? shown - 1 : 0, idcol);
        const char *last = PQgetvalue(res, pg->prev ? 0 : shown - 1, idcol);
        char prev[300];
        snprintf(prev, sizeof prev, "-%s", first);
        json_object_set_new(body, "iterator", json_string(last));
        json_object_set_new(body, "prevIterator", json_string(prev));
    }
    api_reply(r, 200, body);
}

void api_list(PGconn *conn, struct api_req *r, enum query_id q, const char *const *params, int n, enum api_order order,
              int col, int idcol)
{
    struct api_page pg;
    const char *p[16], *o = order == API_ORDER_FIXED || order == API_ORDER_TIME ? NULL : api_query(r, "order");
    if (n > 13 || api_page(r, &pg) != 0)
        return;
    if (order == API_ORDER_TIME && !pg.iterator && api_query(r, "after") && !api_query(r, "before"))
        pg.prev = true; /* Svix's filter_and_paginate_time_limited */
    if (o && strcmp(o, "ascending") != 0 && strcmp(o, "descending") != 0) {
        api_invalid(r, "query", "order",
                    "value is not a valid enumeration member; permitted: 'ascending', "
                    "'descending'",
                    "type_error.enum");
        return;
    }
    bool desc = o ? strcmp(o, "descending") == 0 : order == API_ORDER_DESC;
    for (int i = 0; i < n; i++)
        p[i] = params[i];
    p[n] = pg.iterator;
    p[n + 1] = pg.rows;
    p[n + 2] = desc != pg.prev ? "true" : "false"; /* a backward page scans the other way */
    PGresult *res = api_exec(conn, r, q, p);
    if (!res)
        return;
    api_reply_list(r, res, col, idcol, &pg);
    PQclear(res);
}

void api_reply_one(PGconn *conn, struct api_req *r, enum query_id q, const char *const *params, int col,
                   const char *what)
{
    PGresult *res = api_exec(conn, r, q, params);
    if (!res)
        return;
    json_t *body = api_row_json(res, 0, col);
    PQclear(res);
    if (body)
        api_reply(r, 200, body);
    else
        api_not_found(r, what);
}

bool api_find_one(PGconn *conn, struct api_req *r, enum query_id q, const char *const *params, int idcol,
                  const char *what, char *id, size_t idlen)
{
    PGresult *res = api_exec(conn, r, q, params);
    if (!res)
        return false;
    bool found = PQntuples(res) == 1;
    if (found)
        snprintf(id, idlen, "%s", PQgetvalue(res, 0, idcol));
    PQclear(res);
    if (!found)
        api_not_found(r, what);
    return found;
}

bool api_global_token(struct api_req *r)
{
    if (!r->tenant[0])
        return true;
    api_error(r, 403, "insufficient access", "Insufficient access for the given operation.");
    return false;
}

bool api_resolve_app(PGconn *conn, struct api_req *r, const char *id_or_uid)
{
    const char *p[] = {id_or_uid, r->tenant};
    return api_find_one(conn, r, Q_API_APP_RESOLVE, p, API_APP_RESOLVE_ID, "Application", r->app, sizeof r->app);
}

bool api_resolve_message(PGconn *conn, struct api_req *r, char id[40], bool *expunged)
{
    if (!api_resolve_app(conn, r, r->params[0]))
        return false;
    const char *p[] = {r->app, r->params[1]};
    PGresult *res = api_exec(conn, r, Q_API_MESSAGE_FIND, p);
    if (!res)
        return false;
    bool found = PQntuples(res) == 1;
    if (found) {
        snprintf(id, 40, "%s", PQgetvalue(res, 0, API_MESSAGE_FIND_ID));
        if (expunged)
            *expunged = PQgetvalue(res, 0, API_MESSAGE_FIND_EXPUNGED)[0] == 't';
    }
    PQclear(res);
    if (!found)
        api_not_found(r, "Message");
    return found;
}

/* ---- body fields ---- */

static bool present(const json_t *o, const char *field, json_t **v)
{
    *v = o ? json_object_get(o, field) : NULL;
    return *v && !json_is_null(*v);
}

const char *api_str(struct api_req *r, const json_t *o, const char *field, bool required)
{
    json_t *v;
    if (!present(o, field, &v)) {
        if (required)
            api_invalid(r, "body", field, "field required", "value_error.missing");
        return NULL;
    }
    if (!json_is_string(v)) {
        api_invalid(r, "body", field, "str type expected", "type_error.str");
        return NULL;
    }
    if (required && json_string_length(v) == 0) {
        api_invalid(r, "body", field, "ensure this value has at least 1 characters", "value_error.any_str.min_length");
        return NULL;
    }
    return json_string_value(v);
}

int64_t api_int(struct api_req *r, const json_t *o, const char *field, int64_t min, int64_t max)
{
    json_t *v;
    if (!present(o, field, &v))
        return -1;
    if (!json_is_integer(v) || json_integer_value(v) < min || json_integer_value(v) > max) {
        char msg[96];
        snprintf(msg, sizeof msg, "must be an integer from %lld to %lld", (long long)min, (long long)max);
        api_invalid(r, "body", field, msg, "value_error.number");
        return -1;
    }
    return json_integer_value(v);
}

int api_bool(struct api_req *r, const json_t *o, const char *field)
{
    json_t *v;
    if (!present(o, field, &v))
        return -1;
    if (!json_is_boolean(v)) {
        api_invalid(r, "body", field, "value could not be parsed to a boolean", "type_error.bool");
        return -1;
    }
    return json_is_true(v);
}

char *api_metadata_text(struct api_req *r, const json_t *o, const char *field)
{
    json_t *v;
    if (!present(o, field, &v))
        return NULL;
    if (!json_is_object(v)) {
        api_invalid(r, "body", field, "value is not a valid dict", "type_error.dict");
        return NULL;
    }
    if (json_object_size(v) > API_METADATA_KEYS_MAX) {
        api_invalid(r, "body", field, "at most " API_STR(API_METADATA_KEYS_MAX) " keys", "value_error");
        return NULL;
    }
    const char *k;
    json_t *x;
    json_object_foreach(v, k, x)
    {
        if (!json_is_string(x)) {
            api_invalid(r, "body", field, "every value must be a string", "type_error.str");
            return NULL;
        }
    }
    char *text = json_dumps(v, JSON_COMPACT);
    if (text && strlen(text) > API_METADATA_BYTES_MAX) {
        api_invalid(r, "body", field, "at most " API_STR(API_METADATA_BYTES_MAX) " bytes as compact JSON",
                    "value_error");
        free(text);
        return NULL;
    }
    return text;
}

char *api_str_set_text(struct api_req *r, const json_t *o, const char *field, size_t max_items)
{
    json_t *v;
    if (!present(o, field, &v))
        return NULL;
    size_t i;
    json_t *x;
    char msg[128];
    if (!json_is_array(v)) {
        api_invalid(r, "body", field, "value is not a valid list", "type_error.list");
        return NULL;
    }
    if (json_array_size(v) > max_items) {
        snprintf(msg, sizeof msg, "at most %zu items", max_items);
        api_invalid(r, "body", field, msg, "value_error.list.max_items");
        return NULL;
    }
    json_t *set = json_array();
    json_array_foreach(v, i, x)
    {
        size_t n = json_is_string(x) ? json_string_length(x) : 0;
        if (n == 0 || n > API_NAME_LONG_MAX || strlen(json_string_value(x)) != n) {
            api_invalid(r, "body", field,
                        "every item must be a string of 1 to " API_STR(API_NAME_LONG_MAX) " characters",
                        "type_error.str");
            json_decref(set);
            return NULL;
        }
        size_t k;
        json_t *y;
        bool seen = false;
        json_array_foreach(set, k, y)
        {
            seen = seen || json_equal(x, y);
        }
        if (!seen)
            json_array_append(set, x);
    }
    char *text = json_dumps(set, JSON_COMPACT);
    json_decref(set);
    return text;
}

bool api_check_url(struct api_req *r, const char *field, const char *url)
{
    struct netguard_url u;
    char err[256];
    if (netguard_parse_url(url, &u, err, sizeof err) != 0) {
        api_invalid(r, "body", field, err, "value_error.url");
        return false;
    }
    if (r->cfg->allow_private_networks)
        return true;
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *res = NULL;
    if (getaddrinfo(u.host, NULL, &hints, &res) != 0) {
        api_invalid(r, "body", field, "the host does not resolve", "value_error.url.host");
        return false;
    }
    bool bad = false;
    for (struct addrinfo *ai = res; ai && !bad; ai = ai->ai_next)
        bad = netguard_is_private(ai->ai_addr);
    freeaddrinfo(res);
    if (bad)
        api_invalid(r, "body", field, "the URL resolves to a private, loopback or link-local address",
                    "value_error.url.host");
    return !bad;
}

bool api_check_time(struct api_req *r, const char *where, const char *field, const char *s)
{
    /* YYYY-MM-DDTHH:MM:SS[.fraction](Z|+HH:MM|-HH:MM); Postgres parses it */
    static const char shape[] = "dddd-dd-ddTdd:dd:dd";
    size_t i = 0;
    bool ok = s != NULL;
    for (; ok && shape[i]; i++)
        ok = shape[i] == 'd' ? (s[i] >= '0' && s[i] <= '9') : (s[i] == shape[i] || (shape[i] == 'T' && s[i] == 't'));
    if (ok && s[i] == '.') {
        size_t f = strspn(s + i + 1, "0123456789");
        ok = f >= 1 && f <= 9;
        i += 1 + f;
    }
    if (ok && (s[i] == 'Z' || s[i] == 'z'))
        ok = s[i + 1] == '\0';
    else if (ok && (s[i] == '+' || s[i] == '-'))
        ok = strlen(s + i) == 6 && strspn(s + i + 1, "0123456789") == 2 && s[i + 3] == ':' &&
             strspn(s + i + 4, "0123456789") == 2;
    else
        ok = false;
    if (!ok)
        api_invalid(r, where, field, "invalid datetime format", "value_error.datetime");
    return ok;
}

bool api_check_uid(struct api_req *r, const char *field, const char *uid, const char *id_prefix)
{
    size_t n = strlen(uid), np = strlen(id_prefix);
    bool ok = n >= 1 && n <= 256 &&
              strspn(uid, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.") == n;
    if (!ok) {
        api_invalid(r, "body", field, "must be 1 to 256 characters of a-z, A-Z, 0-9, '-', '_' and '.'",
                    "value_error.str.regex");
        return false;
    }
    if (strncmp(uid, id_prefix, np) == 0 && uid[np] == '_') {
        char msg[128];
        snprintf(msg, sizeof msg,
                 "must not start with '%s_', the prefix of hookd's ids: a uid is never taken for an id", id_prefix);
        api_invalid(r, "body", field, msg, "value_error.str.regex");
        return false;
    }
    return true;
}

char *api_settings_text(struct api_req *r, const json_t *o)
{
    json_t *v;
    char err[256];
    if (!present(o, "settings", &v))
        return NULL;
    if (settings_check(v, true, err, sizeof err) != 0) {
        api_invalid(r, "body", "settings", err, "value_error");
        return NULL;
    }
    return json_dumps(v, JSON_COMPACT);
}

void api_reply_done_task(PGconn *conn, struct api_req *r, int status, const char *task, json_t *fields)
{
    PGresult *res = api_exec(conn, r, Q_API_TASK_ID, NULL);
    if (!res) {
        json_decref(fields);
        return;
    }
    json_t *out = json_pack("{s:s, s:s, s:s, s:s}", "id", PQgetvalue(res, 0, API_TASK_ID_ID), "status", "finished",
                            "task", task, "updatedAt", PQgetvalue(res, 0, API_TASK_ID_AT));
    PQclear(res);
    json_object_update(out, fields);
    json_decref(fields);
    api_reply(r, status, out);
}
