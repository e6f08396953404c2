/* The API's route table: every operation of Svix's published API, with its
 * method, path pattern, operation id and hookd's implementation (NULL:
 * answered 501), and the matching of a request's path against it. The
 * router (api.c), the in-process calls (api_call.c), the OpenAPI document
 * (api_openapi.c) and the API reference all read this one table. Patterns
 * are below /api/v1/; one that starts with '/' is absolute (Svix's ingest
 * API, /ingest/api/v1/). */
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
        {"PUT", pattern, ns ".upsert", fn##_update, put_summary, 200, put_schema, out},                               \
        {"PATCH", pattern, ns ".patch", fn##_patch, "Partially update " what, 200, patch_schema, out},                \
    {                                                                                                                 \
        "DELETE", pattern, ns ".delete", fn##_delete, delete_summary, 204, NULL, NULL                                 \
    }
/* An operation of Svix's that hookd does not implement: answered 501. */
#define NOT_IMPLEMENTED(method, pattern, op)                                                                          \
    {                                                                                                                 \
        method, pattern, op, NULL, NULL, 0, NULL, NULL                                                                \
    }

/* Health: answered by the router before authentication (api.c); the table
 * lists it for the OpenAPI document and the reference. */
static void api_health(PGconn *conn, struct api_req *r)
{
    (void)conn;
    r->status = 204;
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
    {"PUT", "app/*/endpoint/*/headers", "v1.endpoint.set-headers", api_endpoint_headers_update,
     "Replace an endpoint's custom headers", 204, "EndpointHeadersIn", NULL},
    {"PATCH", "app/*/endpoint/*/headers", "v1.endpoint.patch-headers", api_endpoint_headers_patch,
     "Set or remove some of an endpoint's custom headers", 204, "EndpointHeadersPatchIn", NULL},
    {"POST", "app/*/endpoint/*/recover", "v1.endpoint.recover", api_endpoint_recover,
     "Resend the failed messages of an endpoint since a time (a background task)", 202, "RecoverIn", "RecoverOut"},
    {"POST", "app/*/endpoint/*/replay-missing", "v1.endpoint.replay-missing", api_endpoint_replay_missing,
     "Send an endpoint the messages since a time that it never got (and that its filters match; a background "
     "task)",
     202, "ReplayIn", "ReplayOut"},
    {"POST", "app/*/endpoint/*/bulk-replay", "v1.endpoint.bulk-replay", api_endpoint_bulk_replay,
     "Send an endpoint again the messages since a time that it was sent or failed (filters: BulkReplayIn; a "
     "background task)",
     202, "BulkReplayIn", "ReplayOut"},
    {"GET", "app/*/endpoint/*/stats", "v1.endpoint.get-stats", api_endpoint_stats,
     "An endpoint's attempts and open deliveries over a time range (default: the last 28 days)", 200, NULL,
     "EndpointStats"},
    {"POST", "app/*/endpoint/*/send-example", "v1.endpoint.send-example", api_endpoint_send_example,
     "Send the event type's example to this endpoint only (api_send_example.c)", 202, "EventExampleIn", "MessageOut"},
    {"GET", "app/*/endpoint/*/msg", "v1.message-attempt.list-attempted-messages", api_attempt_list_messages,
     "List the messages an endpoint was attempted with, with their delivery's status", 200, NULL,
     "ListResponseEndpointMessageOut"},
    {"GET", "app/*/msg", "v1.message.list", api_message_list, "List an application's messages", 200, NULL,
     "ListResponseMessageOut"},
    {"POST", "app/*/msg", "v1.message.create", api_message_create, "Create a message (eventId unique per application)",
     202, "MessageIn", "MessageOut"},
    {"POST", "app/*/msg/precheck/active", "v1.message.precheck", api_message_precheck,
     "Whether an enabled endpoint would be sent a message of this event type and channels", 200, "MessagePrecheckIn",
     "MessagePrecheckOut"},
    {"POST", "app/*/msg/bulk-expunge", "v1.message.bulk-expunge-content", api_content_bulk_expunge,
     "Delete the payloads of some messages of an application (organization tokens only)", 200, "BulkExpungeContentsIn",
     "BulkExpungeContentsOut"},
    {"POST", "app/*/msg/expunge-all-contents", "v1.message.expunge-all-contents", api_content_expunge_all,
     "Delete every message's payload of an application (organization tokens only; a background task)", 202, NULL,
     "ExpungeAllContentsOut"},
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
    {"GET", "app/*/msg/*/attempt/*/headers", "v1.message-attempt.get-headers", api_attempt_headers,
     "The request headers an attempt was sent with (sensitive values withheld)", 200, NULL,
     "MessageAttemptHeadersOut"},
    {"DELETE", "app/*/msg/*/attempt/*/content", "v1.message-attempt.expunge-content", api_content_expunge_attempt,
     "Delete an attempt's response body (organization tokens only)", 204, NULL, NULL},
    {"GET", "app/*/attempt/msg/*", "v1.message-attempt.list-by-msg", api_attempt_list_by_msg,
     "List a message's attempts", 200, NULL, "ListResponseMessageAttemptOut"},
    {"GET", "app/*/attempt/endpoint/*", "v1.message-attempt.list-by-endpoint", api_attempt_list_by_endpoint,
     "List an endpoint's attempts", 200, NULL, "ListResponseMessageAttemptOut"},
    {"GET", "app/*/attempt/endpoint/*/count", "v1.message-attempt.count-by-endpoint", api_attempt_count_by_endpoint,
     "Count an endpoint's attempts (with the list's filters)", 200, NULL, "CountOut"},
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
    {"GET", "background-task", "v1.background-task.list", api_task_list, "List background tasks", 200, NULL,
     "ListResponseBackgroundTaskOut"},
    {"GET", "background-task/*", "v1.background-task.get", api_task_get, "Get a background task", 200, NULL,
     "BackgroundTaskOut"},
    {"POST", "auth/app-portal-access/*", "v1.authentication.app-portal-access", api_app_portal_access,
     "A single-use login link to the application's portal (api_app.c)", 200, NULL, "AppPortalAccessOut"},
    /* the rest of Svix's published API, answered 501 */
    NOT_IMPLEMENTED("GET", "/ingest/api/v1/source", "v1.ingest.source.list"),
    NOT_IMPLEMENTED("POST", "/ingest/api/v1/source", "v1.ingest.source.create"),
    NOT_IMPLEMENTED("DELETE", "/ingest/api/v1/source/*", "v1.ingest.source.delete"),
    NOT_IMPLEMENTED("GET", "/ingest/api/v1/source/*", "v1.ingest.source.get"),
    NOT_IMPLEMENTED("PATCH", "/ingest/api/v1/source/*", "v1.ingest.source.patch"),
    NOT_IMPLEMENTED("PUT", "/ingest/api/v1/source/*", "v1.ingest.source.upsert"),
    NOT_IMPLEMENTED("POST", "/ingest/api/v1/source/*/dashboard", "v1.ingest.authentication.consumer-portal-access"),
    NOT_IMPLEMENTED("GET", "/ingest/api/v1/source/*/endpoint", "v1.ingest.endpoint.list"),
    NOT_IMPLEMENTED("POST", "/ingest/api/v1/source/*/endpoint", "v1.ingest.endpoint.create"),
    NOT_IMPLEMENTED("DELETE", "/ingest/api/v1/source/*/endpoint/*", "v1.ingest.endpoint.delete"),
    NOT_IMPLEMENTED("GET", "/ingest/api/v1/source/*/endpoint/*", "v1.ingest.endpoint.get"),
    NOT_IMPLEMENTED("PUT", "/ingest/api/v1/source/*/endpoint/*", "v1.ingest.endpoint.upsert"),
    NOT_IMPLEMENTED("GET", "/ingest/api/v1/source/*/endpoint/*/headers", "v1.ingest.endpoint.get-headers"),
    NOT_IMPLEMENTED("PUT", "/ingest/api/v1/source/*/endpoint/*/headers", "v1.ingest.endpoint.set-headers"),
    NOT_IMPLEMENTED("GET", "/ingest/api/v1/source/*/endpoint/*/secret", "v1.ingest.endpoint.get-secret"),
    NOT_IMPLEMENTED("POST", "/ingest/api/v1/source/*/endpoint/*/secret/rotate", "v1.ingest.endpoint.rotate-secret"),
    NOT_IMPLEMENTED("GET", "/ingest/api/v1/source/*/endpoint/*/transformation",
                    "v1.ingest.endpoint.transformation.get"),
    NOT_IMPLEMENTED("PATCH", "/ingest/api/v1/source/*/endpoint/*/transformation",
                    "v1.ingest.endpoint.transformation.patch"),
    NOT_IMPLEMENTED("GET", "/ingest/api/v1/source/*/log", "v1.ingest.log.list"),
    NOT_IMPLEMENTED("POST", "/ingest/api/v1/source/*/token/rotate", "v1.ingest.source.rotate-token"),
    NOT_IMPLEMENTED("PATCH", "app/*/alert-email", "v1.application.patch-alert-email"),
    NOT_IMPLEMENTED("POST", "app/*/auto-config", "v1.endpoint.auto-config.create"),
    NOT_IMPLEMENTED("GET", "app/*/destination", "v1.destination.list"),
    NOT_IMPLEMENTED("POST", "app/*/destination", "v1.destination.create"),
    NOT_IMPLEMENTED("DELETE", "app/*/destination/*", "v1.destination.delete"),
    NOT_IMPLEMENTED("GET", "app/*/destination/*", "v1.destination.get"),
    NOT_IMPLEMENTED("PATCH", "app/*/destination/*", "v1.destination.patch"),
    NOT_IMPLEMENTED("PUT", "app/*/destination/*", "v1.destination.upsert"),
    NOT_IMPLEMENTED("GET", "app/*/destination/*/attempt", "v1.destination.attempt.list"),
    NOT_IMPLEMENTED("GET", "app/*/destination/*/attempt/*", "v1.destination.attempt.get"),
    NOT_IMPLEMENTED("POST", "app/*/destination/*/force-retry", "v1.destination.force-retry"),
    NOT_IMPLEMENTED("GET", "app/*/destination/*/headers", "v1.destination.headers-get"),
    NOT_IMPLEMENTED("PATCH", "app/*/destination/*/headers", "v1.destination.headers-patch"),
    NOT_IMPLEMENTED("GET", "app/*/destination/*/last-acked-event", "v1.destination.get-last-acked-event"),
    NOT_IMPLEMENTED("GET", "app/*/destination/*/next-event", "v1.destination.next-event"),
    NOT_IMPLEMENTED("GET", "app/*/destination/*/secret", "v1.destination.get-secret"),
    NOT_IMPLEMENTED("POST", "app/*/destination/*/secret/rotate", "v1.destination.rotate-secret"),
    NOT_IMPLEMENTED("POST", "app/*/destination/*/skip", "v1.destination.skip"),
    NOT_IMPLEMENTED("GET", "app/*/destination/*/transformation", "v1.destination.transformation.get"),
    NOT_IMPLEMENTED("PATCH", "app/*/destination/*/transformation", "v1.destination.transformation.patch"),
    NOT_IMPLEMENTED("GET", "app/*/endpoint/*/auto-config", "v1.endpoint.auto-config.get"),
    NOT_IMPLEMENTED("PUT", "app/*/endpoint/*/auto-config", "v1.endpoint.auto-config.update"),
    NOT_IMPLEMENTED("POST", "app/*/endpoint/*/auto-config/rotate", "v1.endpoint.auto-config.rotate"),
    NOT_IMPLEMENTED("GET", "app/*/endpoint/*/ca", "v1.endpoint.get-server-ca"),
    NOT_IMPLEMENTED("PUT", "app/*/endpoint/*/ca", "v1.endpoint.set-server-ca"),
    NOT_IMPLEMENTED("POST", "app/*/endpoint/*/cancel-msgs", "v1.endpoint.cancel-msgs"),
    NOT_IMPLEMENTED("GET", "app/*/endpoint/*/connector", "v1.endpoint.get_connector"),
    NOT_IMPLEMENTED("PUT", "app/*/endpoint/*/connector/oauth/hubspot", "v1.endpoint.update-hubspot-oauth-config"),
    NOT_IMPLEMENTED("POST", "app/*/endpoint/*/msg/test-attempt", "v1.message.test-attempt"),
    NOT_IMPLEMENTED("DELETE", "app/*/endpoint/*/mtls", "v1.endpoint.delete-mtls-config"),
    NOT_IMPLEMENTED("GET", "app/*/endpoint/*/mtls", "v1.endpoint.get-mtls"),
    NOT_IMPLEMENTED("PUT", "app/*/endpoint/*/mtls", "v1.endpoint.set-mtls-config"),
    NOT_IMPLEMENTED("GET", "app/*/endpoint/*/mtls-config", "v1.endpoint.get-mtls-2"),
    NOT_IMPLEMENTED("DELETE", "app/*/endpoint/*/oauth", "v1.endpoint.delete-oauth-config"),
    NOT_IMPLEMENTED("GET", "app/*/endpoint/*/oauth", "v1.endpoint.get-oauth"),
    NOT_IMPLEMENTED("PUT", "app/*/endpoint/*/oauth", "v1.endpoint.set-oauth-config"),
    NOT_IMPLEMENTED("GET", "app/*/endpoint/*/oauth-config", "v1.endpoint.get-oauth-2"),
    NOT_IMPLEMENTED("GET", "app/*/endpoint/*/rate-limit-status", "v1.endpoint.get-throttling-status"),
    NOT_IMPLEMENTED("GET", "app/*/endpoint/*/transformation", "v1.endpoint.transformation.get"),
    NOT_IMPLEMENTED("PATCH", "app/*/endpoint/*/transformation", "v1.endpoint.transformation.patch"),
    NOT_IMPLEMENTED("POST", "app/*/endpoint/*/transformation/simulate", "v1.endpoint.transformation.simulate"),
    NOT_IMPLEMENTED("GET", "app/*/events", "v1.message.events"),
    NOT_IMPLEMENTED("POST", "app/*/inbound/rotate-url", "v1.inbound.rotate-url"),
    NOT_IMPLEMENTED("GET", "app/*/integration", "v1.integration.list"),
    NOT_IMPLEMENTED("POST", "app/*/integration", "v1.integration.create"),
    NOT_IMPLEMENTED("DELETE", "app/*/integration/*", "v1.integration.delete"),
    NOT_IMPLEMENTED("GET", "app/*/integration/*", "v1.integration.get"),
    NOT_IMPLEMENTED("PUT", "app/*/integration/*", "v1.integration.update"),
    NOT_IMPLEMENTED("POST", "app/*/integration/*/key/rotate", "v1.integration.rotate-key"),
    {"GET", "app/*/msg/*/raw", "v1.message.get-raw-payload", api_message_get_raw,
     "Get a message's payload as it was sent", 200, NULL, "MessageRawPayloadOut"},
    NOT_IMPLEMENTED("POST", "app/*/msg/search", "v1.message.search"),
    NOT_IMPLEMENTED("GET", "app/*/poller/*", "v1.message.poller.poll"),
    NOT_IMPLEMENTED("GET", "app/*/poller/*/consumer/*", "v1.message.poller.consumer-poll"),
    NOT_IMPLEMENTED("POST", "app/*/poller/*/consumer/*/seek", "v1.message.poller.consumer-seek"),
    NOT_IMPLEMENTED("GET", "app/*/polling-endpoint/*/consumer/*", "v1.message.pollerv2.consumer-poll"),
    NOT_IMPLEMENTED("POST", "app/*/polling-endpoint/*/consumer/*/commit", "v1.message.pollerv2.consumer-commit"),
    NOT_IMPLEMENTED("GET", "app/*/stats/attempts", "v1.application.stats.attempts"),
    NOT_IMPLEMENTED("GET", "app/*/stream/sink", "v1.app.stream.sink.list"),
    NOT_IMPLEMENTED("POST", "app/*/stream/sink", "v1.app.stream.sink.create"),
    NOT_IMPLEMENTED("DELETE", "app/*/stream/sink/*", "v1.app.stream.sink.delete"),
    NOT_IMPLEMENTED("GET", "app/*/stream/sink/*", "v1.app.stream.sink.get"),
    NOT_IMPLEMENTED("PATCH", "app/*/stream/sink/*", "v1.app.stream.sink.patch"),
    NOT_IMPLEMENTED("PUT", "app/*/stream/sink/*", "v1.app.stream.sink.upsert"),
    NOT_IMPLEMENTED("POST", "app/*/stream/sink/*/force-retry", "v1.app.stream.sink.force-retry"),
    NOT_IMPLEMENTED("GET", "app/*/stream/sink/*/headers", "v1.app.stream.sink.headers-get"),
    NOT_IMPLEMENTED("PATCH", "app/*/stream/sink/*/headers", "v1.app.stream.sink.headers-patch"),
    NOT_IMPLEMENTED("GET", "app/*/stream/sink/*/last-acked-event", "v1.app.stream.sink.get-last-acked-event"),
    NOT_IMPLEMENTED("GET", "app/*/stream/sink/*/next-event", "v1.app.stream.sink.next-event"),
    NOT_IMPLEMENTED("GET", "app/*/stream/sink/*/secret", "v1.app.stream.sink.get-secret"),
    NOT_IMPLEMENTED("POST", "app/*/stream/sink/*/secret/rotate", "v1.app.stream.sink.rotate-secret"),
    NOT_IMPLEMENTED("POST", "app/*/stream/sink/*/skip", "v1.app.stream.sink.skip"),
    NOT_IMPLEMENTED("GET", "app/*/stream/sink/*/transformation", "v1.app.stream.sink.transformation.get"),
    NOT_IMPLEMENTED("PATCH", "app/*/stream/sink/*/transformation", "v1.app.stream.sink.transformation.patch"),
    NOT_IMPLEMENTED("GET", "app/stats/count-active", "v1.application.count-active"),
    NOT_IMPLEMENTED("POST", "auth/app/*/create-message-token", "v1.authentication.create-message-token"),
    NOT_IMPLEMENTED("GET", "auth/app/*/mcp-token", "v1.authentication.list-mcp-tokens"),
    NOT_IMPLEMENTED("POST", "auth/app/*/mcp-token", "v1.authentication.create-mcp-token"),
    NOT_IMPLEMENTED("DELETE", "auth/app/*/mcp-token/*", "v1.authentication.revoke-mcp-token"),
    NOT_IMPLEMENTED("GET", "auth/app/*/poller/*/token", "v1.authentication.get-poller-token"),
    NOT_IMPLEMENTED("POST", "auth/app/*/poller/*/token/rotate", "v1.authentication.rotate-poller-token"),
    NOT_IMPLEMENTED("GET", "auth/dashboard/mcp-token", "v1.dashboard.list-mcp-tokens"),
    NOT_IMPLEMENTED("POST", "auth/dashboard/mcp-token", "v1.dashboard.create-mcp-token"),
    NOT_IMPLEMENTED("DELETE", "auth/dashboard/mcp-token/*", "v1.dashboard.revoke-mcp-token"),
    NOT_IMPLEMENTED("POST", "auth/one-time-token", "v1.authentication.exchange-one-time-token"),
    NOT_IMPLEMENTED("GET", "auth/org-group-admin-token", "v1.authentication.org-group-admin-token.list"),
    NOT_IMPLEMENTED("POST", "auth/org-group-admin-token", "v1.authentication.org-group-admin-token.create"),
    NOT_IMPLEMENTED("PUT", "auth/org-group-admin-token/*", "v1.authentication.org-group-admin-token.update"),
    NOT_IMPLEMENTED("POST", "auth/org-group-admin-token/*/expire", "v1.authentication.org-group-admin-token.expire"),
    NOT_IMPLEMENTED("POST", "auth/stream-logout", "v1.authentication.stream-logout"),
    NOT_IMPLEMENTED("POST", "auth/stream-portal-access/*", "v1.authentication.stream-portal-access"),
    NOT_IMPLEMENTED("POST", "auth/stream/*/expire-all", "v1.authentication.stream-expire-all"),
    NOT_IMPLEMENTED("GET", "auth/stream/*/sink/*/poller/token", "v1.authentication.get-stream-poller-token"),
    NOT_IMPLEMENTED("POST", "auth/stream/*/sink/*/poller/token/rotate",
                    "v1.authentication.rotate-stream-poller-token"),
    NOT_IMPLEMENTED("GET", "auth/whoami", "v1.authentication.whoami"),
    NOT_IMPLEMENTED("GET", "connector", "v1.connector.list"),
    NOT_IMPLEMENTED("POST", "connector", "v1.connector.create"),
    NOT_IMPLEMENTED("DELETE", "connector/*", "v1.connector.delete"),
    NOT_IMPLEMENTED("GET", "connector/*", "v1.connector.get"),
    NOT_IMPLEMENTED("PATCH", "connector/*", "v1.connector.patch"),
    NOT_IMPLEMENTED("PUT", "connector/*", "v1.connector.upsert"),
    NOT_IMPLEMENTED("GET", "connector/*/options", "v1.connector.options.get"),
    NOT_IMPLEMENTED("PUT", "connector/*/options", "v1.connector.options.set"),
    NOT_IMPLEMENTED("POST", "connector/oauth/discord", "v1.connector.oauth.discord"),
    NOT_IMPLEMENTED("POST", "connector/oauth/hubspot", "v1.connector.oauth.hubspot"),
    NOT_IMPLEMENTED("POST", "connector/oauth/slack", "v1.connector.oauth.slack"),
    NOT_IMPLEMENTED("POST", "connector/simulate", "v1.connector.simulate"),
    NOT_IMPLEMENTED("GET", "environment/settings", "v1.environment.get-settings"),
    NOT_IMPLEMENTED("GET", "event-type/*/retry-schedule", "v1.event-type.get-retry-schedule"),
    NOT_IMPLEMENTED("PUT", "event-type/*/retry-schedule", "v1.event-type.set-retry-schedule"),
    NOT_IMPLEMENTED("GET", "events", "v1.events.stream"),
    {"GET", "health", "v1.health.get", api_health, "Whether the server answers (no token needed)", 204, NULL, NULL},
    NOT_IMPLEMENTED("GET", "management/authentication/*/api-token", "v1.management.authentication.list-api-tokens"),
    NOT_IMPLEMENTED("POST", "management/authentication/*/api-token", "v1.management.authentication.create-api-token"),
    NOT_IMPLEMENTED("GET", "management/authentication/*/api-token/*", "v1.management.authentication.get-api-token"),
    NOT_IMPLEMENTED("PATCH", "management/authentication/*/api-token/*",
                    "v1.management.authentication.patch-api-token"),
    NOT_IMPLEMENTED("PUT", "management/authentication/*/api-token/*", "v1.management.authentication.update-api-token"),
    NOT_IMPLEMENTED("POST", "management/authentication/*/api-token/*/expire",
                    "v1.management.authentication.expire-api-token"),
    NOT_IMPLEMENTED("GET", "management/environment", "v1.management.environment.list"),
    NOT_IMPLEMENTED("POST", "management/environment", "v1.management.environment.create"),
    NOT_IMPLEMENTED("GET", "management/environment-settings", "v1.management.environment-settings.get"),
    NOT_IMPLEMENTED("PATCH", "management/environment-settings", "v1.management.environment-settings.patch"),
    NOT_IMPLEMENTED("PUT", "management/environment-settings", "v1.management.environment-settings.update"),
    NOT_IMPLEMENTED("DELETE", "management/environment-settings/customer-otel",
                    "v1.management.environment-settings.delete-otel-config"),
    NOT_IMPLEMENTED("GET", "management/environment-settings/customer-otel",
                    "v1.management.environment-settings.get-otel-config"),
    NOT_IMPLEMENTED("PUT", "management/environment-settings/customer-otel",
                    "v1.management.environment-settings.update-otel-config"),
    NOT_IMPLEMENTED("POST", "management/environment-settings/customer-otel/test",
                    "v1.management.environment-settings.test-otel-config"),
    NOT_IMPLEMENTED("DELETE", "management/environment/*", "v1.management.environment.delete"),
    NOT_IMPLEMENTED("GET", "management/environment/*", "v1.management.environment.get"),
    NOT_IMPLEMENTED("PUT", "management/environment/*", "v1.management.environment.update"),
    NOT_IMPLEMENTED("GET", "management/organization/member", "v1.management.organization.list-members"),
    NOT_IMPLEMENTED("POST", "msg/broadcast", "v1.message.broadcast"),
    NOT_IMPLEMENTED("GET", "stats/app/*/attempt", "v1.stats.app-attempts"),
    NOT_IMPLEMENTED("GET", "stats/endpoint/count", "v1.statistics.endpoint-count"),
    NOT_IMPLEMENTED("GET", "stream", "v1.streaming.stream.list"),
    NOT_IMPLEMENTED("POST", "stream", "v1.streaming.stream.create"),
    NOT_IMPLEMENTED("DELETE", "stream/*", "v1.streaming.stream.delete"),
    NOT_IMPLEMENTED("GET", "stream/*", "v1.streaming.stream.get"),
    NOT_IMPLEMENTED("PATCH", "stream/*", "v1.streaming.stream.patch"),
    NOT_IMPLEMENTED("PUT", "stream/*", "v1.streaming.stream.upsert"),
    NOT_IMPLEMENTED("PATCH", "stream/*/alert-email", "v1.streaming.stream.patch-alert-email"),
    NOT_IMPLEMENTED("POST", "stream/*/events", "v1.streaming.events.create"),
    NOT_IMPLEMENTED("GET", "stream/*/events/latest", "v1.streaming.events.get-latest"),
    NOT_IMPLEMENTED("GET", "stream/*/sink", "v1.streaming.sink.list"),
    NOT_IMPLEMENTED("POST", "stream/*/sink", "v1.streaming.sink.create"),
    NOT_IMPLEMENTED("DELETE", "stream/*/sink/*", "v1.streaming.sink.delete"),
    NOT_IMPLEMENTED("GET", "stream/*/sink/*", "v1.streaming.sink.get"),
    NOT_IMPLEMENTED("PATCH", "stream/*/sink/*", "v1.streaming.sink.patch"),
    NOT_IMPLEMENTED("PUT", "stream/*/sink/*", "v1.streaming.sink.upsert"),
    NOT_IMPLEMENTED("GET", "stream/*/sink/*/attempt", "v1.streaming.sink.attempt.list"),
    NOT_IMPLEMENTED("GET", "stream/*/sink/*/attempt/*", "v1.streaming.sink.attempt.get"),
    NOT_IMPLEMENTED("GET", "stream/*/sink/*/events", "v1.streaming.events.get"),
    NOT_IMPLEMENTED("POST", "stream/*/sink/*/force-retry", "v1.streaming.sink.force-retry"),
    NOT_IMPLEMENTED("GET", "stream/*/sink/*/headers", "v1.streaming.sink-headers-get"),
    NOT_IMPLEMENTED("PATCH", "stream/*/sink/*/headers", "v1.streaming.sink-headers-patch"),
    NOT_IMPLEMENTED("GET", "stream/*/sink/*/last-acked-event", "v1.streaming.sink.get-last-acked-event"),
    NOT_IMPLEMENTED("GET", "stream/*/sink/*/next-event", "v1.streaming.sink.events.get-next-event"),
    NOT_IMPLEMENTED("GET", "stream/*/sink/*/secret", "v1.streaming.sink.get-secret"),
    NOT_IMPLEMENTED("POST", "stream/*/sink/*/secret/rotate", "v1.streaming.sink.rotate-secret"),
    NOT_IMPLEMENTED("POST", "stream/*/sink/*/skip", "v1.streaming.sink.skip"),
    NOT_IMPLEMENTED("GET", "stream/*/sink/*/transformation", "v1.streaming.sink.transformation.get"),
    NOT_IMPLEMENTED("PATCH", "stream/*/sink/*/transformation", "v1.streaming.sink.transformation.patch"),
    NOT_IMPLEMENTED("GET", "stream/event-type", "v1.streaming.event-type.list"),
    NOT_IMPLEMENTED("POST", "stream/event-type", "v1.streaming.event-type.create"),
    NOT_IMPLEMENTED("DELETE", "stream/event-type/*", "v1.streaming.event-type.delete"),
    NOT_IMPLEMENTED("GET", "stream/event-type/*", "v1.streaming.event-type.get"),
    NOT_IMPLEMENTED("PATCH", "stream/event-type/*", "v1.streaming.event-type.patch"),
    NOT_IMPLEMENTED("PUT", "stream/event-type/*", "v1.streaming.event-type.upsert"),
    NOT_IMPLEMENTED("POST", "stream/transformations/simulate", "v1.streaming.transformation.simulate"),
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

/* Answered after authentication like every operation, so that a client
 * without a token learns nothing of the table. */
static void api_unknown_path(PGconn *conn, struct api_req *r)
{
    (void)conn;
    api_error(r, 404, "not_found", "Entity not found");
}

static void api_wrong_method(PGconn *conn, struct api_req *r)
{
    (void)conn;
    api_error(r, 405, "method_not_allowed", "Method not allowed");
}

static const struct api_route route_not_found = {"*", NULL, "api.not-found", api_unknown_path, NULL, 404, NULL, NULL};
static const struct api_route route_wrong_method = {"*",  NULL, "api.method-not-allowed", api_wrong_method, NULL, 405,
                                                    NULL, NULL};

/* Whether pattern a is more specific than b (both match one path): at the
 * first segment where one is a literal and the other '*', the literal. */
static bool more_specific(const char *a, const char *b)
{
    while (*a && *b) {
        size_t na = strcspn(a, "/"), nb = strcspn(b, "/");
        bool wa = na == 1 && *a == '*', wb = nb == 1 && *b == '*';
        if (wa != wb)
            return wb;
        a += na + (a[na] == '/');
        b += nb + (b[nb] == '/');
    }
    return false;
}

const struct api_route *api_route_find(const char *method, const char *path)
{
    const struct api_route *best = NULL;
    bool path_known = false;
    for (size_t i = 0; i < api_nroutes; i++) {
        const struct api_route *rt = &api_routes[i];
        if (!api_route_match(rt->pattern, path, NULL))
            continue;
        path_known = true;
        if (strcmp(rt->method, method) == 0 && (!best || more_specific(rt->pattern, best->pattern)))
            best = rt;
    }
    if (best)
        return best;
    return path_known ? &route_wrong_method : &route_not_found;
}

void api_route_path(const struct api_route *rt, char *out, size_t outlen)
{
    snprintf(out, outlen, "%s%s", rt->pattern[0] == '/' ? "" : "/api/v1/", rt->pattern);
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
        char path[256];
        api_route_path(rt, path, sizeof path);
        json_array_append_new(out, json_pack("{s:s, s:s, s:s, s:b, s:s?, s:i}", "method", rt->method, "path", path,
                                             "operation", rt->op, "implemented", rt->fn != NULL, "summary",
                                             rt->summary, "status", rt->status));
    }
    return out;
}
