/* The event-type catalog: list, create, get, update (PUT: create when
 * missing), patch, delete (archive; `expunge=true` deletes). Endpoints'
 * filterTypes must name types of the catalog. Tenant-scoped tokens read
 * the catalog but may not change it (403). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_internal.h"

/* An event type's feature flags: a set of names, this many at most. */
#define FEATURE_FLAGS_MAX 32

bool api_event_type_name_ok(struct api_req *r, const char *name)
{
    size_t n = strlen(name);
    bool ok = n >= 1 && n <= 256 &&
              strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.") == n;
    if (!ok)
        api_invalid(r, "body", "name", "must be 1 to 256 characters of a-z, A-Z, 0-9, '-', '_' and '.'",
                    "value_error.str.regex");
    return ok;
}

char *api_event_type_fields(struct api_req *r, const json_t *b, bool description_required)
{
    json_t *c = json_object();
    const char *d = api_str(r, b, "description", false);
    if (description_required && !json_is_string(json_object_get(b, "description")))
        api_invalid(r, "body", "description", "field required", "value_error.missing");
    if (d)
        json_object_set_new(c, "description", json_string(d));
    int archived = api_bool(r, b, "archived"), deprecated = api_bool(r, b, "deprecated");
    if (archived >= 0)
        json_object_set_new(c, "archived", json_boolean(archived));
    if (deprecated >= 0)
        json_object_set_new(c, "deprecated", json_boolean(deprecated));
    json_t *s = json_object_get(b, "schemas");
    if (s && !json_is_null(s) && !json_is_object(s))
        api_invalid(r, "body", "schemas", "value is not a valid dict", "type_error.dict");
    else if (s)
        json_object_set(c, "schemas", s);
    if (json_object_get(b, "groupName")) {
        const char *g = api_str(r, b, "groupName", false);
        json_object_set_new(c, "group_name", g ? json_string(g) : json_null());
    }
    char *ff = api_str_set_text(r, b, "featureFlags", FEATURE_FLAGS_MAX);
    if (ff)
        json_object_set_new(c, "feature_flags", json_loads(ff, 0, NULL));
    free(ff);
    char *text = api_failed(r) ? NULL : json_dumps(c, JSON_COMPACT);
    json_decref(c);
    return text;
}

static void upsert(PGconn *conn, struct api_req *r, const char *name, bool update, bool description_required,
                   bool must_exist)
{
    char *fields = api_event_type_fields(r, r->body, description_required);
    if (!fields)
        return;
    if (must_exist) {
        const char *g[] = {name};
        PGresult *res = api_exec(conn, r, Q_API_EVENT_TYPE_GET, g);
        bool found = res && PQntuples(res) == 1;
        PQclear(res);
        if (!found) {
            if (!api_failed(r))
                api_not_found(r, "Event type");
            free(fields);
            return;
        }
    }
    const char *p[] = {name, fields, update ? "true" : "false"};
    PGresult *res = api_exec(conn, r, Q_API_EVENT_TYPE_UPSERT, p);
    free(fields);
    if (!res)
        return;
    if (PQntuples(res) == 1) {
        bool created = PQgetvalue(res, 0, API_EVENT_TYPE_UPSERT_CREATED)[0] == 't';
        api_reply(r, created && !update ? 201 : created ? 201 : 200, api_row_json(res, 0, API_EVENT_TYPE_UPSERT_BODY));
    } else {
        api_error(r, 409, "conflict", "an event type named %s already exists", name);
    }
    PQclear(res);
}

void api_event_type_list(PGconn *conn, struct api_req *r)
{
    bool arch;
    if (!api_bool_query(r, "include_archived", false, &arch))
        return;
    const char *p[] = {arch ? "true" : "false"};
    api_list(conn, r, Q_API_EVENT_TYPE_LIST, p, 1, API_ORDER_ASC, API_EVENT_TYPE_LIST_BODY, API_EVENT_TYPE_LIST_NAME);
}

void api_event_type_create(PGconn *conn, struct api_req *r)
{
    const char *name = api_str(r, r->body, "name", true);
    if (!name || !api_event_type_name_ok(r, name) || !api_global_token(r))
        return;
    upsert(conn, r, name, false, true, false);
}

void api_event_type_get(PGconn *conn, struct api_req *r)
{
    const char *p[] = {r->params[0]};
    api_reply_one(conn, r, Q_API_EVENT_TYPE_GET, p, API_EVENT_TYPE_GET_BODY, "Event type");
}

void api_event_type_update(PGconn *conn, struct api_req *r)
{
    if (api_global_token(r) && api_event_type_name_ok(r, r->params[0]))
        upsert(conn, r, r->params[0], true, true, false);
}

void api_event_type_patch(PGconn *conn, struct api_req *r)
{
    if (api_global_token(r))
        upsert(conn, r, r->params[0], true, false, true);
}

void api_event_type_delete(PGconn *conn, struct api_req *r)
{
    if (!api_global_token(r))
        return;
    const char *ex = api_query(r, "expunge");
    const char *p[] = {r->params[0], ex && strcmp(ex, "true") == 0 ? "true" : "false"};
    PGresult *res = api_exec(conn, r, Q_API_EVENT_TYPE_ARCHIVE, p);
    if (!res)
        return;
    if (PQntuples(res) == 1)
        api_reply(r, 204, NULL);
    else
        api_not_found(r, "Event type");
    PQclear(res);
}
