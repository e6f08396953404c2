/* Svix's environment export and import: the event-type catalog (and the
 * environment's settings and connectors, which hookd does not have: export
 * answers them empty; import ignores the settings and refuses connectors,
 * which it could not keep). Import only adds and updates, as Svix's does:
 * each event type given is created, or updated with the fields it gives.
 * Organization tokens only. */
#include <stdlib.h>

#include "api_internal.h"

/* At most this many event types in one import. */
#define IMPORT_TYPES_MAX 10000

void api_environment_export(PGconn *conn, struct api_req *r)
{
    if (!api_global_token(r))
        return;
    PGresult *res = api_exec(conn, r, Q_API_ENVIRONMENT_EXPORT, NULL);
    if (res)
        api_reply(r, 200, api_row_json(res, 0, API_ENVIRONMENT_EXPORT_BODY));
    PQclear(res);
}

/* Creates or updates one EventTypeIn; false after answering. */
static bool import_type(PGconn *conn, struct api_req *r, const json_t *et)
{
    const char *name = json_is_object(et) ? api_str(r, et, "name", true) : NULL;
    if (!json_is_object(et))
        api_invalid(r, "body", "eventTypes", "every item must be an EventTypeIn object", "type_error.dict");
    if (!name || !api_event_type_name_ok(r, name))
        return false;
    char *fields = api_event_type_fields(r, et, true);
    if (!fields)
        return false;
    const char *p[] = {name, fields, "true"};
    PGresult *res = api_exec(conn, r, Q_API_EVENT_TYPE_UPSERT, p);
    free(fields);
    PQclear(res);
    return res != NULL;
}

void api_environment_import(PGconn *conn, struct api_req *r)
{
    if (!api_global_token(r))
        return;
    json_t *types = json_object_get(r->body, "eventTypes"), *conns = json_object_get(r->body, "connectors");
    json_t *settings = json_object_get(r->body, "settings");
    if (types && !json_is_null(types) && (!json_is_array(types) || json_array_size(types) > IMPORT_TYPES_MAX))
        api_invalid(r, "body", "eventTypes", "a list of at most " API_STR(IMPORT_TYPES_MAX) " event types",
                    "type_error.list");
    if (settings && !json_is_null(settings) && !json_is_object(settings))
        api_invalid(r, "body", "settings", "value is not a valid dict", "type_error.dict");
    if (conns && !json_is_null(conns) && (!json_is_array(conns) || json_array_size(conns) > 0))
        api_invalid(r, "body", "connectors", "hookd has no connectors: give none", "value_error");
    if (api_failed(r))
        return;
    size_t i;
    json_t *et;
    json_array_foreach(types, i, et)
    {
        if (!import_type(conn, r, et))
            return;
    }
    api_reply(r, 204, NULL);
}
