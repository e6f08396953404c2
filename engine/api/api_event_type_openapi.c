/* The event-type catalog as an OpenAPI document (Svix's import-openapi and
 * export-openapi). Import reads the webhooks of a document (`webhooks` or
 * `x-webhooks`, each a path item whose `post` operation carries the
 * description, `deprecated`, `x-svix-group-name`, `x-svix-feature-flags`
 * and the request body's JSON schema, its `$ref`s resolved within the
 * document) and creates or updates (unarchives) one event type per webhook;
 * `replaceAll` archives the others; `dryRun` only answers what it would
 * change. Export answers the catalog's live event types as such a document,
 * in a background task finished in the request (its `data.spec`), which
 * import takes back as its `spec`. Organization tokens only. */
#include <stdlib.h>
#include <string.h>

#include "api_internal.h"

/* At most this many webhooks in one document, and $refs this deep. */
#define IMPORT_MAX 1000
#define REF_DEPTH_MAX 32
#define FEATURE_FLAGS_MAX 32 /* as api_event_type.c allows */
#define NAME_CHARS "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_."

/* The value a local JSON pointer ("#/components/schemas/Pet") names in
 * doc (borrowed), or NULL. */
static json_t *pointer(const json_t *doc, const char *ref)
{
    if (strncmp(ref, "#/", 2) != 0)
        return NULL;
    json_t *at = (json_t *)doc;
    const char *p = ref + 2;
    char seg[256];
    while (at && *p) {
        size_t n = 0;
        for (; *p && *p != '/' && n + 1 < sizeof seg; p++) {
            if (p[0] == '~' && (p[1] == '0' || p[1] == '1'))
                seg[n++] = *++p == '0' ? '~' : '/';
            else
                seg[n++] = *p;
        }
        seg[n] = '\0';
        if (*p == '/')
            p++;
        at = json_is_object(at) ? json_object_get(at, seg) : NULL;
    }
    return at;
}

/* A copy of node with every local $ref replaced by what it names (a new
 * reference); NULL after answering 422 (an unknown or too deep $ref: a
 * schema that refers to itself cannot be written out). */
static json_t *resolve_refs(struct api_req *r, const json_t *doc, json_t *node, int depth)
{
    if (depth > REF_DEPTH_MAX) {
        api_invalid(r, "body", "spec", "$ref nesting is deeper than " API_STR(REF_DEPTH_MAX) " (a recursive schema?)",
                    "value_error");
        return NULL;
    }
    if (json_is_object(node) && json_is_string(json_object_get(node, "$ref"))) {
        const char *ref = json_string_value(json_object_get(node, "$ref"));
        json_t *target = pointer(doc, ref);
        if (!target) {
            api_invalid(r, "body", "spec", "a $ref names nothing in the document", "value_error");
            return NULL;
        }
        return resolve_refs(r, doc, target, depth + 1);
    }
    json_t *out = json_is_object(node) ? json_object() : json_is_array(node) ? json_array() : NULL;
    if (!out)
        return json_deep_copy(node);
    const char *key;
    size_t i;
    json_t *v;
    if (json_is_object(node)) {
        json_object_foreach(node, key, v)
        {
            json_t *c = resolve_refs(r, doc, v, depth + 1);
            if (!c)
                goto fail;
            json_object_set_new(out, key, c);
        }
    } else {
        json_array_foreach(node, i, v)
        {
            json_t *c = resolve_refs(r, doc, v, depth + 1);
            if (!c)
                goto fail;
            json_array_append_new(out, c);
        }
    }
    return out;
fail:
    json_decref(out);
    return NULL;
}

/* The operation of a webhook's path item: its `post`, else its first. */
static json_t *webhook_operation(json_t *item)
{
    json_t *op = json_object_get(item, "post");
    if (json_is_object(op))
        return op;
    const char *key;
    json_t *v;
    json_object_foreach(item, key, v)
    {
        if (json_is_object(v))
            return v;
    }
    return NULL;
}

static bool is_name(const char *s)
{
    size_t n = s ? strlen(s) : 0;
    return n >= 1 && n <= API_NAME_LONG_MAX && strspn(s, NAME_CHARS) == n;
}

/* x-svix-group-name and x-svix-feature-flags (or x-svix-feature-flag) of
 * an operation into et; false after answering 422. */
static bool read_extensions(struct api_req *r, json_t *op, json_t *et)
{
    json_t *group = json_object_get(op, "x-svix-group-name");
    json_t *flags = json_object_get(op, "x-svix-feature-flags");
    json_t *flag = json_object_get(op, "x-svix-feature-flag");
    bool ok = !group || is_name(json_string_value(group));
    if (json_is_string(flag) && !flags)
        flags = json_pack("[O]", flag);
    else
        json_incref(flags);
    ok = ok && (!flags || (json_is_array(flags) && json_array_size(flags) <= FEATURE_FLAGS_MAX));
    size_t i;
    json_t *v;
    json_array_foreach(flags, i, v) ok = ok && is_name(json_string_value(v));
    if (ok && group)
        json_object_set(et, "groupName", group);
    if (ok && flags)
        json_object_set(et, "featureFlags", flags);
    json_decref(flags);
    if (!ok)
        api_invalid(r, "body", "spec",
                    "x-svix-group-name and x-svix-feature-flags are names of a-z, A-Z, 0-9, '-', '_', '.' (at "
                    "most " API_STR(FEATURE_FLAGS_MAX) " flags)",
                    "value_error");
    return ok;
}

static const char *first_string(json_t *a, json_t *b, const char *field, const char *other)
{
    const char *s = json_string_value(json_object_get(a, field));
    if (!s)
        s = json_string_value(json_object_get(a, other));
    if (!s)
        s = json_string_value(json_object_get(b, field));
    return s ? s : "";
}

/* Svix's EventTypeFromOpenApi of one webhook (a new reference), or NULL
 * after answering 422. */
static json_t *from_webhook(struct api_req *r, const json_t *doc, const char *name, json_t *item)
{
    json_t *op = json_is_object(item) ? webhook_operation(item) : NULL;
    if (!is_name(name) || !op) {
        api_invalid(r, "body", "spec",
                    "every webhook needs a name of 1 to 256 characters of a-z, A-Z, 0-9, '-', '_', '.' and an "
                    "operation",
                    "value_error");
        return NULL;
    }
    json_t *schema = json_object_get(json_object_get(json_object_get(json_object_get(op, "requestBody"), "content"),
                                                     "application/json"),
                                     "schema");
    json_t *resolved = schema ? resolve_refs(r, doc, schema, 0) : NULL;
    if (schema && !resolved)
        return NULL;
    json_t *et = json_pack("{s:s, s:s, s:b, s:o}", "name", name, "description",
                           first_string(op, item, "description", "summary"), "deprecated",
                           json_is_true(json_object_get(op, "deprecated")), "schemas",
                           resolved ? json_pack("{s:o}", "1", resolved) : json_null());
    if (!read_extensions(r, op, et)) {
        json_decref(et);
        return NULL;
    }
    return et;
}

/* The document of the request: `spec` or `specRaw` (JSON text), exactly
 * one of them (a new reference); NULL after answering 400. */
static json_t *read_spec(struct api_req *r)
{
    json_t *spec = r->body ? json_object_get(r->body, "spec") : NULL;
    json_t *raw = r->body ? json_object_get(r->body, "specRaw") : NULL;
    bool has_spec = spec && !json_is_null(spec), has_raw = raw && !json_is_null(raw);
    if (has_spec == has_raw) {
        api_error(r, 400, "bad_request", "Exactly one of 'spec' and 'specRaw' must be given.");
        return NULL;
    }
    if (has_spec && json_is_object(spec))
        return json_incref(spec);
    json_error_t err;
    json_t *doc = json_is_string(raw) ? json_loads(json_string_value(raw), 0, &err) : NULL;
    if (!json_is_object(doc)) {
        json_decref(doc);
        api_error(r, 400, "bad_request", "The spec must be a JSON object (specRaw: JSON text; hookd reads no YAML).");
        return NULL;
    }
    return doc;
}

/* The webhooks of doc as EventTypeFromOpenApi items (a new array); NULL
 * after answering. */
static json_t *read_webhooks(struct api_req *r, const json_t *doc)
{
    json_t *hooks = json_object_get(doc, "webhooks");
    if (!json_is_object(hooks))
        hooks = json_object_get(doc, "x-webhooks");
    if (!json_is_object(hooks) || json_object_size(hooks) > IMPORT_MAX) {
        api_invalid(r, "body", "spec",
                    "the spec needs a 'webhooks' (or 'x-webhooks') object of at most " API_STR(IMPORT_MAX) " webhooks",
                    "value_error");
        return NULL;
    }
    json_t *out = json_array();
    const char *name;
    json_t *item;
    json_object_foreach(hooks, name, item)
    {
        json_t *et = from_webhook(r, doc, name, item);
        if (!et) {
            json_decref(out);
            return NULL;
        }
        json_array_append_new(out, et);
    }
    return out;
}

/* Creates or updates (and unarchives) the event type et; false after
 * answering an error. */
static bool store(PGconn *conn, struct api_req *r, json_t *et)
{
    json_t *f = json_pack("{s:O, s:b, s:O, s:O}", "description", json_object_get(et, "description"), "archived", 0,
                          "deprecated", json_object_get(et, "deprecated"), "schemas", json_object_get(et, "schemas"));
    if (json_object_get(et, "groupName"))
        json_object_set(f, "group_name", json_object_get(et, "groupName"));
    if (json_object_get(et, "featureFlags"))
        json_object_set(f, "feature_flags", json_object_get(et, "featureFlags"));
    char *fields = json_dumps(f, JSON_COMPACT);
    json_decref(f);
    const char *p[] = {json_string_value(json_object_get(et, "name")), fields, "true"};
    PGresult *res = api_exec(conn, r, Q_API_EVENT_TYPE_UPSERT, p);
    free(fields);
    PQclear(res);
    return res != NULL;
}

/* replaceAll: archives the live event types not among names (a JSON array)
 * and adds theirs to modified. */
static bool archive_others(PGconn *conn, struct api_req *r, json_t *names, json_t *modified)
{
    char *text = json_dumps(names, JSON_COMPACT);
    const char *p[] = {text};
    PGresult *res = api_exec(conn, r, Q_API_EVENT_TYPE_ARCHIVE_OTHERS, p);
    free(text);
    if (!res)
        return false;
    for (int i = 0; i < PQntuples(res); i++)
        json_array_append_new(modified, json_string(PQgetvalue(res, i, API_EVENT_TYPE_ARCHIVE_OTHERS_NAME)));
    PQclear(res);
    return true;
}

void api_event_type_import_openapi(PGconn *conn, struct api_req *r)
{
    if (!api_global_token(r))
        return;
    int dry = api_bool(r, r->body, "dryRun"), replace = api_bool(r, r->body, "replaceAll");
    json_t *doc = api_failed(r) ? NULL : read_spec(r);
    json_t *types = doc ? read_webhooks(r, doc) : NULL;
    json_decref(doc);
    if (!types)
        return;
    json_t *names = json_array(), *modified = json_array();
    size_t i;
    json_t *et;
    json_array_foreach(types, i, et)
    {
        json_array_append(names, json_object_get(et, "name"));
        if (dry != 1 && !store(conn, r, et))
            goto done;
    }
    if (dry == 1) {
        api_reply(r, 200, json_pack("{s:{s:o, s:O}}", "data", "modified", json_array(), "to_modify", types));
        goto done;
    }
    json_array_extend(modified, names);
    if (replace == 1 && !archive_others(conn, r, names, modified))
        goto done;
    api_reply(r, 200, json_pack("{s:{s:O}}", "data", "modified", modified));
done:
    json_decref(names);
    json_decref(modified);
    json_decref(types);
}

void api_event_type_export_openapi(PGconn *conn, struct api_req *r)
{
    if (!api_global_token(r))
        return;
    PGresult *res = api_exec(conn, r, Q_API_EVENT_TYPE_OPENAPI, NULL);
    if (!res)
        return;
    json_t *spec = api_row_json(res, 0, API_EVENT_TYPE_OPENAPI_BODY);
    PQclear(res);
    api_reply_done_task(conn, r, 202, "sdk.generate", json_pack("{s:{s:o}}", "data", "spec", spec));
}
