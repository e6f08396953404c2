/* The API's route table: every operation of Svix's API that hookd answers,
 * with its method, path pattern, operation id and implementation (NULL:
 * answered 501), and the matching of a request's path against it. The
 * router (api.c), the in-process calls (api_call.c) and the OpenAPI
 * document (api_openapi.c) all read this one table. */
#include <event2/http.h>
#include <stdlib.h>
#include <string.h>

#include "api_internal.h"
#include "xmalloc.h"

/* The four operations on one item of a resource (pattern "app/ *"): get,
 * update (PUT), patch and delete, Svix's ids "<ns>.get" … "<ns>.delete",
 * implemented by <fn>_get … <fn>_delete. */
#define ITEM_ROUTES(pattern, ns, fn, what, put_summary, put_schema, patch_schema, out, delete_summary)                \
    {"GET", pattern, ns ".get", fn##_get, "Get " what, 200, NULL, out},                                               \
        {"PUT", pattern, ns ".update", fn##_update, put_summary, 200, put_schema, out},                               \
        {"PATCH", pattern, ns ".patch", fn##_patch, "Partially update " what, 200, patch_schema, out},                \
    {                                                                                                                 \
        "DELETE", pattern, ns ".delete", fn##_delete, delete_summary, 204, NULL, NULL                                 \
    }
/* An operation of Svix's that hookd does not implement: answered 501. */
#define NOT_IMPLEMENTED(method, pattern, op)                                                                          \
    {                                                                                                                 \
        method, pattern, op, NULL, NULL, 0, NULL, NULL                                                                \
    }

/* Svix's operations, with hookd's implementation or NULL (answered 501). */
const struct api_route api_routes[] = {
    {"GET", "app", "v1.application.list", api_app_list, "List applications", 200, NULL, "ListResponseApplicationOut"},
    {"POST", "app", "v1.application.create", api_app_create,
     "Create an application (get_if_exists=true: get or create)", 201, "ApplicationIn", "ApplicationOut"},
    ITEM_ROUTES("app/*", "v1.application", api_app, "an application", "Update (or create) an application",
                "ApplicationIn", "ApplicationPatch", "ApplicationOut", "Delete an application and its endpoints"),
    {"GET", "app/*/endpoint", "v1.endpoint.list", api_endpoint_list, "List an application's endpoints", 200, NULL,
     "ListResponseEndpointOut"},
    {"POST", "app/*/endpoint", "v1.endpoint.create", api_endpoint_create, "Create an endpoint", 201, "EndpointIn",
     "EndpointOut"},
    ITEM_ROUTES("app/*/endpoint/*", "v1.endpoint", api_endpoint, "an endpoint", "Update an endpoint", "EndpointUpdate",
                "EndpointPatch", "EndpointOut", "Delete an endpoint"),
    {"GET", "app/*/endpoint/*/secret", "v1.endpoint.get-secret", api_endpoint_secret_get,
     "Get an endpoint's signing secret", 200, NULL, "EndpointSecretOut"},
    {"POST", "app/*/endpoint/*/secret/rotate", "v1.endpoint.rotate-secret", api_endpoint_secret_rotate,
     "Rotate an endpoint's signing secret (the old one signs too for a grace period)", 204, "EndpointSecretRotateIn",
     NULL},
    {"GET", "app/*/endpoint/*/headers", "v1.endpoint.get-headers", api_endpoint_headers_get,
     "Get an endpoint's custom headers", 200, NULL, "EndpointHeadersOut"},
    {"PUT", "app/*/endpoint/*/headers", "v1.endpoint.update-headers", api_endpoint_headers_update,
     "Replace an endpoint's custom headers", 204, "EndpointHeadersIn", NULL},
    {"PATCH", "app/*/endpoint/*/headers", "v1.endpoint.patch-headers", api_endpoint_headers_patch,
     "Set or remove some of an endpoint's custom headers", 204, "EndpointHeadersPatchIn", NULL},
    {"POST", "app/*/endpoint/*/recover", "v1.endpoint.recover", api_endpoint_recover,
     "Resend the failed messages of an endpoint since a time", 202, "RecoverIn", "RecoverOut"},
    {"POST", "app/*/endpoint/*/replay-missing", "v1.endpoint.replay-missing", api_endpoint_replay_missing,
     "Send an endpoint the messages since a time that it never got (and that its filters match)", 202, "ReplayIn",
     "ReplayOut"},
    NOT_IMPLEMENTED("POST", "app/*/endpoint/*/bulk-replay", "v1.endpoint.bulk-replay"),
    {"GET", "app/*/endpoint/*/stats", "v1.endpoint.get-stats", api_endpoint_stats,
     "An endpoint's attempts and open deliveries over a time range (default: the last 28 days)", 200, NULL,
     "EndpointStats"},
    {"POST", "app/*/endpoint/*/send-example", "v1.endpoint.send-example", api_endpoint_send_example,
     "Send the event type's example to this endpoint only (api_send_example.c)", 200, "EventExampleIn", "MessageOut"},
    NOT_IMPLEMENTED("GET", "app/*/endpoint/*/transformation", "v1.endpoint.transformation-get"),
    NOT_IMPLEMENTED("PATCH", "app/*/endpoint/*/transformation", "v1.endpoint.transformation-partial-update"),
    {"GET", "app/*/endpoint/*/msg", "v1.message-attempt.list-attempted-messages", api_attempt_list_messages,
     "List the messages an endpoint was attempted with, with their delivery's status", 200, NULL,
     "ListResponseEndpointMessageOut"},
    {"GET", "app/*/msg", "v1.message.list", api_message_list, "List an application's messages", 200, NULL,
     "ListResponseMessageOut"},
    {"POST", "app/*/msg", "v1.message.create", api_message_create, "Create a message (eventId unique per application)",
     202, "MessageIn", "MessageOut"},
    NOT_IMPLEMENTED("POST", "app/*/msg/precheck/active", "v1.message.precheck"),
    {"GET", "app/*/msg/*", "v1.message.get", api_message_get, "Get a message", 200, NULL, "MessageOut"},
    {"DELETE", "app/*/msg/*/content", "v1.message.expunge-content", api_content_expunge_message,
     "Delete a message's payload; it is never sent again (organization tokens only)", 204, NULL, NULL},
    {"GET", "app/*/msg/*/endpoint", "v1.message-attempt.list-attempted-destinations", api_attempt_list_destinations,
     "List the endpoints a message was attempted to, with their delivery's status", 200, NULL,
     "ListResponseMessageEndpointOut"},
    {"POST", "app/*/msg/*/endpoint/*/resend", "v1.message-attempt.resend", api_attempt_resend,
     "Send a message to an endpoint again", 202, NULL, "EmptyResponse"},
    {"GET", "app/*/msg/*/attempt/*", "v1.message-attempt.get", api_attempt_get, "Get a message's attempt", 200, NULL,
     "MessageAttemptOut"},
    {"DELETE", "app/*/msg/*/attempt/*/content", "v1.message-attempt.expunge-content", api_content_expunge_attempt,
     "Delete an attempt's response body (organization tokens only)", 204, NULL, NULL},
    {"GET", "app/*/attempt/msg/*", "v1.message-attempt.list-by-msg", api_attempt_list_by_msg,
     "List a message's attempts", 200, NULL, "ListResponseMessageAttemptOut"},
    {"GET", "app/*/attempt/endpoint/*", "v1.message-attempt.list-by-endpoint", api_attempt_list_by_endpoint,
     "List an endpoint's attempts", 200, NULL, "ListResponseMessageAttemptOut"},
    {"GET", "event-type", "v1.event-type.list", api_event_type_list, "List event types", 200, NULL,
     "ListResponseEventTypeOut"},
    {"POST", "event-type", "v1.event-type.create", api_event_type_create, "Create an event type", 201, "EventTypeIn",
     "EventTypeOut"},
    {"POST", "event-type/import/openapi", "v1.event-type.import-openapi", api_event_type_import_openapi,
     "Create or update event types from an OpenAPI document's webhooks (api_event_type_openapi.c)", 200,
     "EventTypeImportOpenApiIn", "EventTypeImportOpenApiOut"},
    {"POST", "event-type/export/openapi", "v1.event-type.export-openapi", api_event_type_export_openapi,
     "The live event types as an OpenAPI document (data.spec of a task finished in the request)", 202, NULL,
     "ExportEventTypeOut"},
    ITEM_ROUTES("event-type/*", "v1.event-type", api_event_type, "an event type", "Update (or create) an event type",
                "EventTypeUpdate", "EventTypePatch", "EventTypeOut", "Archive an event type"),
    {"POST", "auth/app-portal-access/*", "v1.authentication.app-portal-access", api_app_portal_access,
     "A single-use login link to the application's portal (api_app.c)", 200, NULL, "AppPortalAccessOut"},
    {"POST", "auth/app/*/expire-all", "v1.authentication.expire-all", api_auth_expire_all,
     "End an application's portal links, portal sessions and tokens, now or after `expiry` seconds (api_auth.c)", 204,
     "ApplicationTokenExpireIn", NULL},
    {"POST", "auth/logout", "v1.authentication.logout", api_auth_logout,
     "Revoke the application token of the request (organization tokens: 403)", 204, NULL, NULL},
    {"POST", "environment/export", "v1.environment.export", api_environment_export,
     "The event types as Svix's EnvironmentOut (no settings or connectors; api_environment.c)", 200, NULL,
     "EnvironmentOut"},
    {"POST", "environment/import", "v1.environment.import", api_environment_import,
     "Create or update the event types of an EnvironmentIn (settings ignored, connectors refused)", 204,
     "EnvironmentIn", NULL},
    {"GET", "operational-webhook/endpoint", "v1.operational-webhook.endpoint.list", api_endpoint_operational_list,
     "List the operational-webhook endpoints: the global ones (organization tokens only; api_endpoint.c)", 200, NULL,
     "ListResponseOperationalWebhookEndpointOut"},
    {"POST", "operational-webhook/endpoint", "v1.operational-webhook.endpoint.create", api_endpoint_operational_create,
     "Create an operational-webhook endpoint", 201, "OperationalWebhookEndpointIn", "OperationalWebhookEndpointOut"},
    {"GET", "operational-webhook/endpoint/*", "v1.operational-webhook.endpoint.get", api_endpoint_get,
     "Get an operational-webhook endpoint", 200, NULL, "OperationalWebhookEndpointOut"},
    {"PUT", "operational-webhook/endpoint/*", "v1.operational-webhook.endpoint.upsert",
     api_endpoint_operational_upsert, "Update an operational-webhook endpoint, or create it with the path's uid", 200,
     "OperationalWebhookEndpointUpsertIn", "OperationalWebhookEndpointOut"},
    {"DELETE", "operational-webhook/endpoint/*", "v1.operational-webhook.endpoint.delete", api_endpoint_delete,
     "Delete an operational-webhook endpoint", 204, NULL, NULL},
    {"GET", "operational-webhook/endpoint/*/secret", "v1.operational-webhook.endpoint.get-secret",
     api_endpoint_secret_get, "Get an operational-webhook endpoint's signing secret", 200, NULL, "EndpointSecretOut"},
    {"POST", "operational-webhook/endpoint/*/secret/rotate", "v1.operational-webhook.endpoint.rotate-secret",
     api_endpoint_secret_rotate, "Rotate an operational-webhook endpoint's signing secret", 204,
     "EndpointSecretRotateIn", NULL},
    {"GET", "operational-webhook/endpoint/*/headers", "v1.operational-webhook.endpoint.get-headers",
     api_endpoint_headers_get, "Get an operational-webhook endpoint's custom headers", 200, NULL,
     "EndpointHeadersOut"},
    {"PUT", "operational-webhook/endpoint/*/headers", "v1.operational-webhook.endpoint.set-headers",
     api_endpoint_headers_update, "Replace an operational-webhook endpoint's custom headers", 204, "EndpointHeadersIn",
     NULL},
    {"POST", "stats/usage/app", "v1.statistics.aggregate-app-stats", api_stats_app_usage,
     "Each application's message destinations over a time range, as a task finished in the request (api_stats.c)", 202,
     "AppUsageStatsIn", "AppUsageStatsOut"},
    {"PUT", "stats/usage/event-types", "v1.statistics.aggregate-event-types", api_stats_event_types,
     "The event types each application's endpoints subscribe to, as a task finished in the request", 202, NULL,
     "AggregateEventTypesOut"},
};
const size_t api_nroutes = sizeof api_routes / sizeof api_routes[0];

/* Matches path (below /api/v1/, no trailing slash) against pattern; fills
 * the '*' segments (decoded copies) into r->params. */
bool api_route_match(const char *pattern, const char *path, struct api_req *r)
{
    int n = 0;
    char *params[API_MAX_PARAMS];
    while (*pattern && *path) {
        size_t plen = strcspn(pattern, "/"), slen = strcspn(path, "/");
        if (plen == 1 && pattern[0] == '*') {
            if (slen == 0 || n == API_MAX_PARAMS)
                goto no;
            char *seg = xstrndup(path, slen);
            params[n] = evhttp_uridecode(seg, 0, NULL);
            free(seg);
            n++;
        } else if (plen != slen || strncmp(pattern, path, plen) != 0) {
            goto no;
        }
        pattern += plen;
        path += slen;
        if (*pattern != *path)
            goto no;
        if (*pattern == '/')
            pattern++, path++;
    }
    if (*pattern || *path)
        goto no;
    for (int i = 0; r && i < n; i++)
        r->params[i] = params[i];
    if (r)
        r->nparams = n;
    else
        for (int i = 0; i < n; i++)
            free(params[i]);
    return true;
no:
    for (int i = 0; i < n; i++)
        free(params[i]);
    return false;
}

/* The route for method and path, or NULL; *path_known when another method
 * would have matched (405). */
const struct api_route *api_route_find(const char *method, const char *path, bool *path_known)
{
    *path_known = false;
    for (size_t i = 0; i < api_nroutes; i++) {
        if (!api_route_match(api_routes[i].pattern, path, NULL))
            continue;
        if (strcmp(api_routes[i].method, method) == 0)
            return &api_routes[i];
        *path_known = true;
    }
    return NULL;
}

const struct api_route *api_route_by_op(const char *op)
{
    for (size_t i = 0; i < api_nroutes; i++)
        if (strcmp(api_routes[i].op, op) == 0)
            return &api_routes[i];
    return NULL;
}

json_t *api_routes_reference(void)
{
    json_t *out = json_array();
    for (size_t i = 0; i < api_nroutes; i++) {
        const struct api_route *rt = &api_routes[i];
        json_array_append_new(out, json_pack("{s:s, s:s+, s:s, s:b, s:s?, s:i}", "method", rt->method, "path",
                                             "/api/v1/", rt->pattern, "operation", rt->op, "implemented",
                                             rt->fn != NULL, "summary", rt->summary, "status", rt->status));
    }
    return out;
}
