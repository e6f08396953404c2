/* Background tasks as the API shows them (Svix's background-task
 * operations): the operations that start one (recover, replay-missing)
 * insert its row and answer 202 with its id; the runners of the outbound
 * domain (task_runner.c) do the work and keep its status and data; list and
 * get read them, within the token's scope. */
#include <stdlib.h>
#include <string.h>

#include "api_internal.h"

/* Svix's BackgroundTaskStatus and BackgroundTaskType values. */
static const char *const statuses[] = {"running", "finished", "failed", NULL};
static const char *const kinds[] = {"endpoint.replay",           "endpoint.recover",     "application.stats",
                                    "message.broadcast",         "sdk.generate",         "event-type.aggregate",
                                    "application.purge_content", "endpoint.bulk-replay", NULL};

/* The query parameter name, NULL when absent; 422 answered (false) when it
 * is not one of allowed (permitted: their list). */
static bool read_enum(struct api_req *r, const char *name, const char *const *allowed, const char **out)
{
    *out = api_query(r, name);
    if (!*out)
        return true;
    for (size_t i = 0; allowed[i]; i++)
        if (strcmp(*out, allowed[i]) == 0)
            return true;
    char msg[400] = "value is not a valid enumeration member; permitted: ";
    for (size_t i = 0; allowed[i]; i++) {
        strncat(msg, i ? ", '" : "'", sizeof msg - strlen(msg) - 1);
        strncat(msg, allowed[i], sizeof msg - strlen(msg) - 1);
        strncat(msg, "'", sizeof msg - strlen(msg) - 1);
    }
    api_invalid(r, "query", name, msg, "type_error.enum");
    return false;
}

void api_task_list(PGconn *conn, struct api_req *r)
{
    const char *status, *kind;
    if (!read_enum(r, "status", statuses, &status) || !read_enum(r, "task", kinds, &kind))
        return;
    const char *p[] = {r->tenant, status, kind};
    api_list(conn, r, Q_API_TASK_LIST, p, 3, API_ORDER_DESC, API_TASK_LIST_BODY, API_TASK_LIST_API_ID);
}

void api_task_get(PGconn *conn, struct api_req *r)
{
    const char *p[] = {r->tenant, r->params[0]};
    api_reply_one(conn, r, Q_API_TASK_GET, p, API_TASK_GET_BODY, "Background task");
}

void api_task_start(PGconn *conn, struct api_req *r, const char *kind, json_t *params)
{
    char *text = json_dumps(params, JSON_COMPACT);
    json_decref(params);
    const char *p[] = {r->app, kind, text};
    PGresult *res = api_exec(conn, r, Q_API_TASK_CREATE, p);
    free(text);
    if (!res)
        return;
    api_reply(r, 202, api_row_json(res, 0, API_TASK_CREATE_BODY));
    PQclear(res);
}
