/* Svix's statistics operations: the message destinations of each
 * application over a time range (aggregate-app-stats) and the event types
 * each application's endpoints subscribe to (aggregate-event-types). Svix
 * runs both as background tasks; hookd computes them in the request and
 * answers the task finished, with its result in `data` (the shape Svix's
 * finished task carries). Organization tokens only. */
#include <stdlib.h>
#include <string.h>

#include "api_internal.h"

/* appIds: at most this many ids or uids in one request */
#define APP_IDS_MAX 1000

void api_stats_app_usage(PGconn *conn, struct api_req *r)
{
    if (!api_global_token(r))
        return;
    const char *since = api_str(r, r->body, "since", true), *until = api_str(r, r->body, "until", true);
    if (since)
        api_check_time(r, "body", "since", since);
    if (until)
        api_check_time(r, "body", "until", until);
    char *ids = api_str_set_text(r, r->body, "appIds", APP_IDS_MAX);
    if (api_failed(r)) {
        free(ids);
        return;
    }
    const char *p[] = {since, until, ids};
    PGresult *res = api_exec(conn, r, Q_API_STATS_APP_USAGE, p);
    if (!res)
        goto done;
    json_t *body = api_row_json(res, 0, API_STATS_APP_USAGE_BODY);
    if (ids && atoll(PQgetvalue(res, 0, API_STATS_APP_USAGE_RESOLVED)) == 0) {
        api_invalid(r, "body", "appIds", "none of the given ids or uids names an application", "value_error");
        json_decref(body);
    } else {
        json_t *unresolved = json_incref(json_object_get(body, "unresolvedAppIds"));
        json_object_del(body, "unresolvedAppIds");
        api_reply_done_task(conn, r, 202, "application.stats",
                            json_pack("{s:o, s:o}", "unresolvedAppIds", unresolved, "data", body));
    }
    PQclear(res);
done:
    free(ids);
}

void api_stats_event_types(PGconn *conn, struct api_req *r)
{
    if (!api_global_token(r))
        return;
    PGresult *res = api_exec(conn, r, Q_API_STATS_EVENT_TYPES, NULL);
    if (!res)
        return;
    json_t *types = api_row_json(res, 0, API_STATS_EVENT_TYPES_BODY);
    PQclear(res);
    api_reply_done_task(conn, r, 202, "event-type.aggregate", json_pack("{s:{s:o}}", "data", "event_types", types));
}
