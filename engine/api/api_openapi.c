/* /api/v1/openapi.json: an OpenAPI 3.0 document of exactly the operations
 * hookd implements, built from the route table (api.c) — an operation
 * answered 501 is not in it — and the schemas below, which follow the
 * shapes of Svix's API (the fields hookd reads and writes). */
#include <stdio.h>
#include <string.h>

#include "api_internal.h"
#include "version.h"

/* An endpoint's event-type filters as a request gives them (api_endpoint.c). */
#define FILTER_TYPES_IN                                                                                               \
    "{\"type\":\"array\",\"nullable\":true,\"maxItems\":256,"                                                         \
    "\"items\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":256},"                                              \
    "\"description\":\"event types of the catalog, or globs matching some; each stored once\"}"

/* An endpoint's custom headers as a request gives them (endpoint_headers.h,
 * api_endpoint.c); in a patch, null removes one. */
#define HEADERS_LIMITS                                                                                                \
    "\"maxProperties\":32,\"description\":\"values of at most 4096 characters, at most 8192 bytes of names and "      \
    "values in all; names differ in more than case\""
#define HEADERS_IN "{\"type\":\"object\"," HEADERS_LIMITS ",\"additionalProperties\":{\"type\":\"string\"}}"
#define HEADERS_PATCH_IN                                                                                              \
    "{\"type\":\"object\"," HEADERS_LIMITS ",\"additionalProperties\":{\"type\":\"string\",\"nullable\":true}}"

/* The fields of an endpoint's PUT (all but url optional) and PATCH (all optional). */
#define ENDPOINT_UPDATE_FIELDS                                                                                        \
    "\"url\":{\"type\":\"string\",\"format\":\"uri\"},\"description\":{\"type\":\"string\"},"                         \
    "\"uid\":{\"type\":\"string\",\"nullable\":true},\"disabled\":{\"type\":\"boolean\"},"                            \
    "\"eventTypes\":" FILTER_TYPES_IN ",\"filterTypes\":" FILTER_TYPES_IN ","                                         \
    "\"channels\":{\"type\":\"array\",\"nullable\":true,\"minItems\":1,\"maxItems\":10,"                              \
    "\"items\":{\"type\":\"string\",\"maxLength\":128,\"pattern\":\"^[a-zA-Z0-9\\\\-_.]+$\"}},"                       \
    "\"throttleRate\":{\"type\":\"integer\",\"nullable\":true},\"rateLimit\":{\"type\":\"integer\",\"nullable\":"     \
    "true},"                                                                                                          \
    "\"metadata\":{\"$ref\":\"#/components/schemas/Metadata\"},"                                                      \
    "\"payloadFilter\":{\"$ref\":\"#/components/schemas/PayloadFilter\"},\"ordered\":{\"type\":\"boolean\"}"

/* A delivery's status as Svix's MessageStatus (0 success, 1 pending, 2
 * fail, 3 sending, 4 canceled) with its text, and when the next attempt is
 * due (sending only). */
#define STATUS_FIELDS                                                                                                 \
    "\"status\":{\"type\":\"integer\",\"enum\":[0,1,2,3,4]},"                                                         \
    "\"statusText\":{\"type\":\"string\",\"enum\":[\"success\",\"pending\",\"fail\",\"sending\",\"canceled\"]},"      \
    "\"nextAttempt\":{\"type\":\"string\",\"format\":\"date-time\",\"nullable\":true}"

/* The time range of a recover or a replay (RecoverIn, ReplayIn). */
#define RANGE_IN                                                                                                      \
    "{\"type\":\"object\",\"required\":[\"since\"],\"properties\":{"                                                  \
    "\"since\":{\"type\":\"string\",\"format\":\"date-time\"},"                                                       \
    "\"until\":{\"type\":\"string\",\"format\":\"date-time\",\"nullable\":true}}}"

/* Svix's BackgroundTaskStatus and BackgroundTaskType. */
#define TASK_STATUS "{\"type\":\"string\",\"enum\":[\"running\",\"finished\",\"failed\"]}"
#define TASK_KIND                                                                                                     \
    "{\"type\":\"string\",\"enum\":[\"endpoint.replay\",\"endpoint.recover\",\"application.stats\","                  \
    "\"message.broadcast\",\"sdk.generate\",\"event-type.aggregate\",\"application.purge_content\","                  \
    "\"endpoint.bulk-replay\"]}"
/* The answer of an operation that starts a background task (RecoverOut,
 * ReplayOut): the task, "running"; background-task.get follows it. */
#define TASK_FIELDS                                                                                                   \
    "\"id\":{\"type\":\"string\",\"pattern\":\"^qtask_\"},\"status\":" TASK_STATUS ",\"task\":" TASK_KIND             \
    ",\"updatedAt\":{\"type\":\"string\",\"format\":\"date-time\"}"
#define TASK_OUT                                                                                                      \
    "{\"type\":\"object\",\"required\":[\"id\",\"status\",\"task\",\"updatedAt\"],\"properties\":{" TASK_FIELDS "}}"
/* A background task (BackgroundTaskOut): data says what it did so far
 * (recover and replay: messagesSent). */
#define BACKGROUND_TASK_OUT                                                                                           \
    "{\"type\":\"object\",\"required\":[\"data\",\"id\",\"status\",\"task\",\"updatedAt\"],\"properties\":"           \
    "{" TASK_FIELDS ",\"data\":{\"type\":\"object\",\"additionalProperties\":true}}}"

/* An operational-webhook endpoint's fields (api_endpoint.c): no eventTypes
 * means the operational ones hookd sends. */
#define OPERATIONAL_FIELDS                                                                                            \
    "\"url\":{\"type\":\"string\",\"format\":\"uri\"},\"description\":{\"type\":\"string\"},"                         \
    "\"uid\":{\"type\":\"string\",\"nullable\":true},\"disabled\":{\"type\":\"boolean\"},"                            \
    "\"throttleRate\":{\"type\":\"integer\",\"nullable\":true,\"minimum\":1},"                                        \
    "\"eventTypes\":{\"type\":\"array\",\"nullable\":true,\"items\":{\"type\":\"string\"}},"                          \
    "\"metadata\":{\"type\":\"object\",\"additionalProperties\":{\"type\":\"string\"}}"

/* A background task done in the request, with its result in data. */
#define DONE_TASK_FIELDS                                                                                              \
    "\"id\":{\"type\":\"string\"},\"status\":{\"type\":\"string\",\"enum\":[\"finished\"]},"                          \
    "\"task\":{\"type\":\"string\"},\"updatedAt\":{\"type\":\"string\",\"format\":\"date-time\"},"
#define DONE_TASK_REQUIRED "\"id\",\"status\",\"task\",\"updatedAt\""

static const char schemas[] =
    "{"
    "\"HttpErrorOut\":{\"type\":\"object\",\"required\":[\"code\",\"detail\"],\"properties\":{"
    "\"code\":{\"type\":\"string\"},\"detail\":{\"type\":\"string\"}}},"
    "\"ValidationError\":{\"type\":\"object\",\"required\":[\"loc\",\"msg\",\"type\"],\"properties\":{"
    "\"loc\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}},\"msg\":{\"type\":\"string\"},"
    "\"type\":{\"type\":\"string\"}}},"
    "\"HTTPValidationError\":{\"type\":\"object\",\"required\":[\"detail\"],\"properties\":{"
    "\"detail\":{\"type\":\"array\",\"items\":{\"$ref\":\"#/components/schemas/ValidationError\"}}}},"
    "\"Metadata\":{\"type\":\"object\",\"maxProperties\":64,\"additionalProperties\":{\"type\":\"string\"},"
    "\"description\":\"at most 16384 bytes as compact JSON\"},"
    "\"ApplicationIn\":{\"type\":\"object\",\"required\":[\"name\"],\"properties\":{"
    "\"name\":{\"type\":\"string\",\"minLength\":1},\"uid\":{\"type\":\"string\",\"nullable\":true,"
    "\"pattern\":\"^[a-zA-Z0-9\\\\-_.]+$\",\"maxLength\":256,\"description\":\"not starting with app_\"},"
    "\"throttleRate\":{\"type\":\"integer\",\"nullable\":true,\"minimum\":1},"
    "\"rateLimit\":{\"type\":\"integer\",\"nullable\":true,\"minimum\":1},"
    "\"metadata\":{\"$ref\":\"#/components/schemas/Metadata\"}}},"
    "\"ApplicationPatch\":{\"type\":\"object\",\"properties\":{"
    "\"name\":{\"type\":\"string\"},\"uid\":{\"type\":\"string\",\"nullable\":true},"
    "\"throttleRate\":{\"type\":\"integer\",\"nullable\":true},"
    "\"rateLimit\":{\"type\":\"integer\",\"nullable\":true},"
    "\"metadata\":{\"$ref\":\"#/components/schemas/Metadata\"}}},"
    "\"ApplicationOut\":{\"type\":\"object\",\"required\":[\"id\",\"name\",\"createdAt\",\"updatedAt\","
    "\"metadata\"],\"properties\":{\"id\":{\"type\":\"string\"},\"uid\":{\"type\":\"string\",\"nullable\":true},"
    "\"name\":{\"type\":\"string\"},\"throttleRate\":{\"type\":\"integer\",\"nullable\":true},"
    "\"rateLimit\":{\"type\":\"integer\",\"nullable\":true},"
    "\"metadata\":{\"$ref\":\"#/components/schemas/Metadata\"},"
    "\"createdAt\":{\"type\":\"string\",\"format\":\"date-time\"},"
    "\"updatedAt\":{\"type\":\"string\",\"format\":\"date-time\"}}},"
    "\"PayloadFilter\":{\"type\":\"object\",\"nullable\":true,\"description\":\"hookd: a condition on the "
    "payload ($eq, $neq, $in, $gt, $lt, $exists, $and, $or; dotted paths), at most 16384 bytes as compact "
    "JSON\"},"
    "\"EndpointIn\":{\"type\":\"object\",\"required\":[\"url\"],\"properties\":{"
    "\"url\":{\"type\":\"string\",\"format\":\"uri\"},\"description\":{\"type\":\"string\"},"
    "\"uid\":{\"type\":\"string\",\"nullable\":true},\"disabled\":{\"type\":\"boolean\"},"
    "\"eventTypes\":" FILTER_TYPES_IN ",\"filterTypes\":" FILTER_TYPES_IN ","
    "\"channels\":{\"type\":\"array\",\"nullable\":true,\"minItems\":1,\"maxItems\":10,"
    "\"items\":{\"type\":\"string\",\"maxLength\":128,\"pattern\":\"^[a-zA-Z0-9\\\\-_.]+$\"}},"
    "\"throttleRate\":{\"type\":\"integer\",\"nullable\":true,\"minimum\":1},"
    "\"rateLimit\":{\"type\":\"integer\",\"nullable\":true,\"minimum\":1},"
    "\"secret\":{\"type\":\"string\",\"nullable\":true,\"pattern\":\"^(whsec_)?[a-zA-Z0-9+/=]{32,100}$\"},"
    "\"metadata\":{\"$ref\":\"#/components/schemas/Metadata\"},"
    "\"headers\":{\"type\":\"object\",\"nullable\":true," HEADERS_LIMITS
    ",\"additionalProperties\":{\"type\":\"string\"}},"
    "\"payloadFilter\":{\"$ref\":\"#/components/schemas/PayloadFilter\"},"
    "\"ordered\":{\"type\":\"boolean\"}}},"
    "\"EndpointUpdate\":{\"type\":\"object\",\"required\":[\"url\"],\"properties\":{" ENDPOINT_UPDATE_FIELDS "}},"
    "\"EndpointPatch\":{\"type\":\"object\",\"properties\":{" ENDPOINT_UPDATE_FIELDS "}},"
    "\"EndpointOut\":{\"type\":\"object\",\"required\":[\"id\",\"url\",\"description\",\"metadata\","
    "\"createdAt\",\"updatedAt\"],\"properties\":{\"id\":{\"type\":\"string\"},"
    "\"uid\":{\"type\":\"string\",\"nullable\":true},\"url\":{\"type\":\"string\"},"
    "\"description\":{\"type\":\"string\"},\"version\":{\"type\":\"integer\"},\"disabled\":{\"type\":\"boolean\"},"
    "\"eventTypes\":{\"type\":\"array\",\"nullable\":true,\"items\":{\"type\":\"string\"}},"
    "\"filterTypes\":{\"type\":\"array\",\"nullable\":true,\"items\":{\"type\":\"string\"}},"
    "\"channels\":{\"type\":\"array\",\"nullable\":true,\"items\":{\"type\":\"string\"}},"
    "\"throttleRate\":{\"type\":\"integer\",\"nullable\":true},\"rateLimit\":{\"type\":\"integer\",\"nullable\":true},"
    "\"metadata\":{\"$ref\":\"#/components/schemas/Metadata\"},"
    "\"payloadFilter\":{\"$ref\":\"#/components/schemas/PayloadFilter\"},\"ordered\":{\"type\":\"boolean\"},"
    "\"createdAt\":{\"type\":\"string\",\"format\":\"date-time\"},"
    "\"updatedAt\":{\"type\":\"string\",\"format\":\"date-time\"}}},"
    "\"EndpointSecretOut\":{\"type\":\"object\",\"required\":[\"key\"],\"properties\":{"
    "\"key\":{\"type\":\"string\"}}},"
    "\"EndpointSecretRotateIn\":{\"type\":\"object\",\"properties\":{"
    "\"key\":{\"type\":\"string\",\"nullable\":true}}},"
    "\"EndpointHeadersIn\":{\"type\":\"object\",\"required\":[\"headers\"],\"properties\":{"
    "\"headers\":" HEADERS_IN "}},"
    "\"EndpointHeadersPatchIn\":{\"type\":\"object\",\"required\":[\"headers\"],\"properties\":{"
    "\"headers\":" HEADERS_PATCH_IN ","
    "\"deleteHeaders\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}}}},"
    "\"EndpointHeadersOut\":{\"type\":\"object\",\"required\":[\"headers\",\"sensitive\"],\"properties\":{"
    "\"headers\":{\"type\":\"object\",\"additionalProperties\":{\"type\":\"string\"}},"
    "\"sensitive\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}}}},"
    "\"RecoverIn\":" RANGE_IN ","
    "\"RecoverOut\":" TASK_OUT ","
    "\"ReplayIn\":" RANGE_IN ","
    "\"ReplayOut\":" TASK_OUT ","
    "\"BackgroundTaskOut\":" BACKGROUND_TASK_OUT ","
    "\"ExpungeAllContentsOut\":" TASK_OUT ","
    "\"BulkExpungeContentsIn\":{\"type\":\"object\",\"properties\":{\"ids\":{\"type\":\"array\","
    "\"maxItems\":250,\"items\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":256}}}},"
    "\"BulkExpungeContentsOut\":{\"type\":\"object\",\"required\":[\"results\"],\"properties\":{"
    "\"results\":{\"type\":\"object\",\"additionalProperties\":{\"type\":\"string\","
    "\"enum\":[\"expunged\",\"not-found\"]}}}},"
    "\"BulkReplayIn\":{\"type\":\"object\",\"required\":[\"since\"],\"properties\":{"
    "\"since\":{\"type\":\"string\",\"format\":\"date-time\"},"
    "\"until\":{\"type\":\"string\",\"format\":\"date-time\",\"nullable\":true},"
    "\"eventTypes\":{\"type\":\"array\",\"nullable\":true,\"items\":{\"type\":\"string\"}},"
    "\"channel\":{\"type\":\"string\",\"nullable\":true,\"maxLength\":128},"
    "\"tag\":{\"type\":\"string\",\"nullable\":true,\"maxLength\":128},"
    "\"status\":{\"type\":\"integer\",\"nullable\":true,\"enum\":[0,1,2,3,4]},"
    "\"statusCodeClass\":{\"type\":\"integer\",\"nullable\":true,\"enum\":[0,100,200,300,400,500]}}},"
    "\"EndpointStats\":{\"type\":\"object\",\"required\":[\"success\",\"pending\",\"sending\",\"fail\","
    "\"canceled\"],\"properties\":{\"success\":{\"type\":\"integer\"},\"pending\":{\"type\":\"integer\"},"
    "\"sending\":{\"type\":\"integer\"},\"fail\":{\"type\":\"integer\"},\"canceled\":{\"type\":\"integer\"}}},"
    "\"EndpointMessageOut\":{\"type\":\"object\",\"required\":[\"id\",\"eventType\",\"payload\",\"timestamp\","
    "\"status\",\"statusText\"],\"properties\":{\"id\":{\"type\":\"string\"},"
    "\"eventId\":{\"type\":\"string\",\"nullable\":true},\"eventType\":{\"type\":\"string\"},"
    "\"payload\":{\"type\":\"object\"},\"timestamp\":{\"type\":\"string\",\"format\":\"date-time\"}," STATUS_FIELDS
    "}},"
    "\"MessageEndpointOut\":{\"type\":\"object\",\"required\":[\"id\",\"url\",\"description\",\"createdAt\","
    "\"updatedAt\",\"status\",\"statusText\"],\"properties\":{\"id\":{\"type\":\"string\"},"
    "\"uid\":{\"type\":\"string\",\"nullable\":true},\"url\":{\"type\":\"string\"},"
    "\"description\":{\"type\":\"string\"},\"disabled\":{\"type\":\"boolean\"},"
    "\"eventTypes\":{\"type\":\"array\",\"nullable\":true,\"items\":{\"type\":\"string\"}},"
    "\"throttleRate\":{\"type\":\"integer\",\"nullable\":true},"
    "\"createdAt\":{\"type\":\"string\",\"format\":\"date-time\"},"
    "\"updatedAt\":{\"type\":\"string\",\"format\":\"date-time\"}," STATUS_FIELDS "}},"
    "\"EventExampleIn\":{\"type\":\"object\",\"required\":[\"eventType\"],\"properties\":{"
    "\"eventType\":{\"type\":\"string\",\"maxLength\":256,\"pattern\":\"^[a-zA-Z0-9\\\\-_.]+$\"},"
    "\"exampleIndex\":{\"type\":\"integer\",\"minimum\":0,\"description\":\"which of schemas['1'].examples (default "
    "the first)\"}}},"
    "\"AppPortalAccessOut\":{\"type\":\"object\",\"required\":[\"url\",\"token\"],\"properties\":{"
    "\"url\":{\"type\":\"string\"},\"token\":{\"type\":\"string\"}}},"
    "\"ApplicationTokenExpireIn\":{\"type\":\"object\",\"properties\":{"
    "\"expiry\":{\"type\":\"integer\",\"format\":\"int64\",\"nullable\":true,\"minimum\":0,"
    "\"maximum\":259200,\"description\":\"seconds until the tokens end (default: now)\"},"
    "\"sessionIds\":{\"type\":\"array\",\"maxItems\":1000,\"items\":{\"type\":\"string\","
    "\"minLength\":1,\"maxLength\":64,\"pattern\":\"^[a-zA-Z0-9@_-]+$\"},"
    "\"description\":\"only the portal sessions of these sessionIds (app-portal-access)\"}}},"
    "\"AppUsageStatsIn\":{\"type\":\"object\",\"required\":[\"since\",\"until\"],\"properties\":{"
    "\"since\":{\"type\":\"string\",\"format\":\"date-time\"},\"until\":{\"type\":\"string\",\"format\":\"date-time\"}"
    ","
    "\"appIds\":{\"type\":\"array\",\"nullable\":true,\"maxItems\":1000,\"items\":{\"type\":\"string\"}}}},"
    "\"AppUsageStatsOut\":{\"type\":\"object\",\"required\":[" DONE_TASK_REQUIRED ",\"unresolvedAppIds\"],"
    "\"properties\":{" DONE_TASK_FIELDS "\"unresolvedAppIds\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}},"
    "\"data\":{\"type\":\"object\",\"properties\":{\"appStats\":{\"type\":\"array\",\"items\":{"
    "\"type\":\"object\",\"properties\":{\"messageDestinations\":{\"type\":\"integer\"},"
    "\"appId\":{\"type\":\"string\"},\"appUid\":{\"type\":\"string\",\"nullable\":true}}}}}}}},"
    "\"OperationalWebhookEndpointIn\":{\"type\":\"object\",\"required\":[\"url\"],\"properties\":{" OPERATIONAL_FIELDS
    ",\"secret\":{\"type\":\"string\",\"nullable\":true},\"headers\":" HEADERS_IN "}},"
    "\"OperationalWebhookEndpointUpsertIn\":{\"type\":\"object\",\"required\":[\"url\"],\"properties\":"
    "{" OPERATIONAL_FIELDS "}},"
    "\"OperationalWebhookEndpointOut\":{\"type\":\"object\",\"required\":[\"id\",\"url\",\"description\","
    "\"metadata\",\"createdAt\",\"updatedAt\"],\"properties\":{\"id\":{\"type\":\"string\"}," OPERATIONAL_FIELDS
    ",\"createdAt\":{\"type\":\"string\",\"format\":\"date-time\"},"
    "\"updatedAt\":{\"type\":\"string\",\"format\":\"date-time\"}}},"
    "\"EnvironmentOut\":{\"type\":\"object\",\"required\":[\"createdAt\",\"eventTypes\",\"settings\","
    "\"connectors\"],\"properties\":{\"version\":{\"type\":\"integer\"},"
    "\"createdAt\":{\"type\":\"string\",\"format\":\"date-time\"},"
    "\"eventTypes\":{\"type\":\"array\",\"items\":{\"$ref\":\"#/components/schemas/EventTypeOut\"}},"
    "\"settings\":{\"type\":\"object\",\"nullable\":true},"
    "\"connectors\":{\"type\":\"array\",\"maxItems\":0,\"items\":{\"type\":\"object\"}}}},"
    "\"EnvironmentIn\":{\"type\":\"object\",\"properties\":{"
    "\"eventTypes\":{\"type\":\"array\",\"nullable\":true,\"maxItems\":10000,"
    "\"items\":{\"$ref\":\"#/components/schemas/EventTypeIn\"}},"
    "\"settings\":{\"type\":\"object\",\"nullable\":true,\"description\":\"ignored: hookd has none\"},"
    "\"connectors\":{\"type\":\"array\",\"nullable\":true,\"maxItems\":0,\"items\":{\"type\":\"object\"}}}},"
    "\"EventTypeImportOpenApiIn\":{\"type\":\"object\",\"properties\":{"
    "\"dryRun\":{\"type\":\"boolean\",\"default\":false},\"replaceAll\":{\"type\":\"boolean\",\"default\":false},"
    "\"spec\":{\"type\":\"object\",\"nullable\":true},"
    "\"specRaw\":{\"type\":\"string\",\"nullable\":true,\"description\":\"JSON text (no YAML)\"}}},"
    "\"EventTypeImportOpenApiOut\":{\"type\":\"object\",\"required\":[\"data\"],\"properties\":{"
    "\"data\":{\"type\":\"object\",\"required\":[\"modified\"],\"properties\":{"
    "\"modified\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}},"
    "\"to_modify\":{\"type\":\"array\",\"nullable\":true,\"items\":{\"type\":\"object\"}}}}}},"
    "\"ExportEventTypeOut\":{\"type\":\"object\",\"required\":[" DONE_TASK_REQUIRED "],"
    "\"properties\":{" DONE_TASK_FIELDS "\"data\":{\"type\":\"object\",\"properties\":{"
    "\"spec\":{\"type\":\"object\",\"description\":\"the OpenAPI document; import-openapi takes it as spec\"}}}}},"
    "\"AggregateEventTypesOut\":{\"type\":\"object\",\"required\":[" DONE_TASK_REQUIRED "],"
    "\"properties\":{" DONE_TASK_FIELDS
    "\"data\":{\"type\":\"object\",\"properties\":{\"event_types\":{\"type\":\"array\",\"items\":{"
    "\"type\":\"object\",\"properties\":{\"appId\":{\"type\":\"string\"},"
    "\"explicitlySubscribedEventTypes\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}},"
    "\"hasCatchAllEndpoint\":{\"type\":\"boolean\"}}}}}}}},"
    "\"MessageIn\":{\"type\":\"object\",\"required\":[\"eventType\",\"payload\"],\"properties\":{"
    "\"eventId\":{\"type\":\"string\",\"nullable\":true,\"maxLength\":256},"
    "\"eventType\":{\"type\":\"string\",\"maxLength\":256},\"payload\":{\"type\":\"object\"},"
    "\"channels\":{\"type\":\"array\",\"nullable\":true,\"minItems\":1,\"maxItems\":5,"
    "\"items\":{\"type\":\"string\",\"maxLength\":128,\"pattern\":\"^[a-zA-Z0-9\\\\-_.]+$\"}},"
    "\"tags\":{\"type\":\"array\",\"nullable\":true,\"minItems\":1,\"maxItems\":5,"
    "\"items\":{\"type\":\"string\",\"maxLength\":128,\"pattern\":\"^[a-zA-Z0-9\\\\-_./\\\\\\\\#]+$\"}},"
    "\"deliverAt\":{\"type\":\"string\",\"format\":\"date-time\",\"nullable\":true,"
    "\"description\":\"No attempt before this time; at least one minute and at most 24 hours ahead.\"},"
    "\"payloadRetentionPeriod\":{\"type\":\"integer\",\"format\":\"int64\",\"nullable\":true,\"minimum\":5,"
    "\"maximum\":90,\"default\":90,\"description\":\"Days the payload is kept; not with payloadRetentionHours.\"},"
    "\"payloadRetentionHours\":{\"type\":\"integer\",\"format\":\"int64\",\"nullable\":true,\"minimum\":1,"
    "\"maximum\":2160,\"description\":\"Hours the payload is kept; not with payloadRetentionPeriod.\"},"
    "\"application\":{\"$ref\":\"#/components/schemas/ApplicationIn\"}}},"
    "\"MessageOut\":{\"type\":\"object\",\"required\":[\"id\",\"eventType\",\"payload\",\"timestamp\"],"
    "\"properties\":{\"id\":{\"type\":\"string\"},\"eventId\":{\"type\":\"string\",\"nullable\":true},"
    "\"eventType\":{\"type\":\"string\"},\"payload\":{\"type\":\"object\"},"
    "\"channels\":{\"type\":\"array\",\"nullable\":true,\"items\":{\"type\":\"string\"}},"
    "\"tags\":{\"type\":\"array\",\"nullable\":true,\"items\":{\"type\":\"string\"}},"
    "\"deliverAt\":{\"type\":\"string\",\"format\":\"date-time\",\"nullable\":true},"
    "\"timestamp\":{\"type\":\"string\",\"format\":\"date-time\"}}},"
    "\"MessageRawPayloadOut\":{\"type\":\"object\",\"required\":[\"payload\"],"
    "\"properties\":{\"payload\":{\"type\":\"string\"}}},"
    "\"MessageAttemptOut\":{\"type\":\"object\",\"required\":[\"id\",\"msgId\",\"endpointId\",\"url\","
    "\"response\",\"responseStatusCode\",\"status\",\"triggerType\",\"timestamp\"],\"properties\":{"
    "\"id\":{\"type\":\"string\"},\"msgId\":{\"type\":\"string\"},\"endpointId\":{\"type\":\"string\"},"
    "\"url\":{\"type\":\"string\"},\"response\":{\"type\":\"string\"},"
    "\"responseStatusCode\":{\"type\":\"integer\"},\"responseDurationMs\":{\"type\":\"integer\"},"
    "\"status\":{\"type\":\"integer\",\"enum\":[0,1,2,3]},"
    "\"statusText\":{\"type\":\"string\"},\"triggerType\":{\"type\":\"integer\",\"enum\":[0,1]},"
    "\"timestamp\":{\"type\":\"string\",\"format\":\"date-time\"}}},"
    "\"EventTypeIn\":{\"type\":\"object\",\"required\":[\"name\",\"description\"],\"properties\":{"
    "\"name\":{\"type\":\"string\",\"pattern\":\"^[a-zA-Z0-9\\\\-_.]+$\",\"maxLength\":256},"
    "\"description\":{\"type\":\"string\"},\"archived\":{\"type\":\"boolean\"},"
    "\"deprecated\":{\"type\":\"boolean\"},\"schemas\":{\"type\":\"object\",\"nullable\":true},"
    "\"groupName\":{\"type\":\"string\",\"nullable\":true},"
    "\"featureFlags\":{\"type\":\"array\",\"nullable\":true,\"maxItems\":32,\"items\":{\"type\":\"string\"}}}},"
    "\"EventTypeUpdate\":{\"type\":\"object\",\"required\":[\"description\"],\"properties\":{"
    "\"description\":{\"type\":\"string\"},\"archived\":{\"type\":\"boolean\"},"
    "\"deprecated\":{\"type\":\"boolean\"},\"schemas\":{\"type\":\"object\",\"nullable\":true},"
    "\"groupName\":{\"type\":\"string\",\"nullable\":true},"
    "\"featureFlags\":{\"type\":\"array\",\"nullable\":true,\"maxItems\":32,\"items\":{\"type\":\"string\"}}}},"
    "\"EventTypePatch\":{\"type\":\"object\",\"properties\":{"
    "\"description\":{\"type\":\"string\"},\"archived\":{\"type\":\"boolean\"},"
    "\"deprecated\":{\"type\":\"boolean\"},\"schemas\":{\"type\":\"object\",\"nullable\":true},"
    "\"groupName\":{\"type\":\"string\",\"nullable\":true},"
    "\"featureFlags\":{\"type\":\"array\",\"nullable\":true,\"maxItems\":32,\"items\":{\"type\":\"string\"}}}},"
    "\"EventTypeOut\":{\"type\":\"object\",\"required\":[\"name\",\"description\",\"deprecated\",\"createdAt\","
    "\"updatedAt\"],\"properties\":{\"name\":{\"type\":\"string\"},\"description\":{\"type\":\"string\"},"
    "\"archived\":{\"type\":\"boolean\"},\"deprecated\":{\"type\":\"boolean\"},"
    "\"schemas\":{\"type\":\"object\",\"nullable\":true},\"groupName\":{\"type\":\"string\",\"nullable\":true},"
    "\"featureFlags\":{\"type\":\"array\",\"nullable\":true,\"items\":{\"type\":\"string\"}},"
    "\"createdAt\":{\"type\":\"string\",\"format\":\"date-time\"},"
    "\"updatedAt\":{\"type\":\"string\",\"format\":\"date-time\"}}},"
    "\"MessagePrecheckIn\":{\"type\":\"object\",\"required\":[\"eventType\"],\"properties\":{"
    "\"eventType\":{\"type\":\"string\",\"maxLength\":256,\"pattern\":\"^[a-zA-Z0-9\\\\-_.]+$\"},"
    "\"channels\":{\"type\":\"array\",\"nullable\":true,\"minItems\":1,\"maxItems\":10,"
    "\"items\":{\"type\":\"string\",\"maxLength\":128,\"pattern\":\"^[a-zA-Z0-9\\\\-_.:+]+$\"}}}},"
    "\"MessagePrecheckOut\":{\"type\":\"object\",\"required\":[\"active\"],\"properties\":{"
    "\"active\":{\"type\":\"boolean\"}}},"
    "\"CountOut\":{\"type\":\"object\",\"required\":[\"count\",\"approximated\"],\"properties\":{"
    "\"count\":{\"type\":\"integer\",\"minimum\":0},\"approximated\":{\"type\":\"boolean\"}}},"
    "\"MessageAttemptHeadersOut\":{\"type\":\"object\",\"required\":[\"sentHeaders\",\"sensitive\"],"
    "\"properties\":{\"sentHeaders\":{\"type\":\"object\",\"additionalProperties\":{\"type\":\"string\"}},"
    "\"sensitive\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}},"
    "\"responseHeaders\":{\"type\":\"array\",\"nullable\":true,\"items\":{\"type\":\"array\","
    "\"items\":{\"type\":\"string\"}}}}},"
    "\"EmptyResponse\":{\"type\":\"object\"}"
    "}";

static json_t *list_schema(const char *item)
{
    char ref[128];
    snprintf(ref, sizeof ref, "#/components/schemas/%s", item);
    return json_pack("{s:s, s:[s,s], s:{s:{s:s, s:{s:s}}, s:{s:s, s:b}, s:{s:s, s:b}, s:{s:s}}}", "type", "object",
                     "required", "data", "done", "properties", "data", "type", "array", "items", "$ref", ref,
                     "iterator", "type", "string", "nullable", 1, "prevIterator", "type", "string", "nullable", 1,
                     "done", "type", "boolean");
}

static json_t *ref(const char *name)
{
    char r[128];
    snprintf(r, sizeof r, "#/components/schemas/%s", name);
    return json_pack("{s:s}", "$ref", r);
}

static json_t *content(const char *schema)
{
    return json_pack("{s:{s:o}}", "application/json", "schema", ref(schema));
}

/* "/api/v1/app/{app_id}/endpoint/{endpoint_id}" from "app/ * /endpoint/ *"
 * (an absolute pattern keeps its own prefix). */
static void openapi_path(const char *pattern, char *out, size_t outlen, json_t *params)
{
    static const char *const after[][2] = {{"app", "app_id"},
                                           {"endpoint", "endpoint_id"},
                                           {"msg", "msg_id"},
                                           {"event-type", "event_type_name"},
                                           {"attempt", "attempt_id"},
                                           {"source", "source_id"},
                                           {"stream", "stream_id"},
                                           {"sink", "sink_id"},
                                           {"background-task", "task_id"},
                                           {"connector", "connector_id"},
                                           {"integration", "integ_id"},
                                           {"api-token", "key_id"}};
    size_t o = (size_t)snprintf(out, outlen, "%s", pattern[0] == '/' ? "" : "/api/v1");
    const char *prev = "";
    size_t prevlen = 0;
    for (const char *p = pattern + (pattern[0] == '/'); *p && o < outlen;) {
        size_t n = strcspn(p, "/");
        if (n == 1 && *p == '*') {
            const char *name = "id";
            for (size_t i = 0; i < sizeof after / sizeof after[0]; i++)
                if (strlen(after[i][0]) == prevlen && strncmp(after[i][0], prev, prevlen) == 0)
                    name = after[i][1];
            o += (size_t)snprintf(out + o, outlen - o, "/{%s}", name);
            json_array_append_new(params, json_pack("{s:s, s:s, s:b, s:{s:s}}", "name", name, "in", "path", "required",
                                                    1, "schema", "type", "string"));
        } else {
            o += (size_t)snprintf(out + o, outlen - o, "/%.*s", (int)n, p);
            prev = p;
            prevlen = n;
        }
        p += n;
        if (*p == '/')
            p++;
    }
}

static void lower(const char *in, char *out, size_t outlen)
{
    size_t i = 0;
    for (; in[i] && i + 1 < outlen; i++)
        out[i] = (char)(in[i] >= 'A' && in[i] <= 'Z' ? in[i] + 32 : in[i]);
    out[i] = '\0';
}

/* An operation hookd does not implement: listed, answering 501. */
static json_t *operation_501(const struct api_route *rt, json_t *params)
{
    return json_pack("{s:s, s:s, s:O, s:b, s:{s:{s:s, s:o}}}", "operationId", rt->op, "summary",
                     "Not implemented by hookd (answers 501)", "parameters", params, "x-hookd-implemented", 0,
                     "responses", "501", "description", "not implemented", "content", content("HttpErrorOut"));
}

static json_t *operation(const struct api_route *rt, json_t *params)
{
    json_t *responses = json_object();
    char code[8];
    snprintf(code, sizeof code, "%d", rt->status);
    json_t *ok = json_pack("{s:s}", "description", "success");
    if (rt->response_schema) {
        if (strncmp(rt->response_schema, "ListResponse", 12) == 0)
            json_object_set_new(ok, "content",
                                json_pack("{s:{s:o}}", "application/json", "schema",
                                          list_schema(rt->response_schema + 12)));
        else
            json_object_set_new(ok, "content", content(rt->response_schema));
    }
    json_object_set_new(responses, code, ok);
    static const int errors[] = {401, 403, 404, 409, 413, 429};
    for (size_t i = 0; i < sizeof errors / sizeof errors[0]; i++) {
        snprintf(code, sizeof code, "%d", errors[i]);
        json_object_set_new(responses, code,
                            json_pack("{s:s, s:o}", "description", "error", "content", content("HttpErrorOut")));
    }
    json_object_set_new(responses, "422",
                        json_pack("{s:s, s:o}", "description", "validation error", "content",
                                  content("HTTPValidationError")));
    json_t *op = json_pack("{s:s, s:s, s:o, s:o}", "operationId", rt->op, "summary", rt->summary, "parameters",
                           json_deep_copy(params), "responses", responses);
    if (strcmp(rt->method, "POST") == 0)
        json_array_append_new(json_object_get(op, "parameters"),
                              json_pack("{s:s, s:s, s:b, s:{s:s}}", "name", "idempotency-key", "in", "header",
                                        "required", 0, "schema", "type", "string"));
    if (strcmp(rt->method, "GET") == 0 && rt->response_schema &&
        strncmp(rt->response_schema, "ListResponse", 12) == 0) {
        json_array_append_new(json_object_get(op, "parameters"),
                              json_pack("{s:s, s:s, s:{s:s, s:i, s:i}}", "name", "limit", "in", "query", "schema",
                                        "type", "integer", "minimum", 1, "maximum", API_LIMIT_MAX));
        json_array_append_new(json_object_get(op, "parameters"), json_pack("{s:s, s:s, s:{s:s}}", "name", "iterator",
                                                                           "in", "query", "schema", "type", "string"));
    }
    if (strcmp(rt->op, "v1.message.list") == 0) /* Svix's filters of the message list */
        for (size_t i = 0; i < 2; i++)
            json_array_append_new(json_object_get(op, "parameters"),
                                  json_pack("{s:s, s:s, s:{s:s}}", "name", i ? "tag" : "channel", "in", "query",
                                            "schema", "type", "string"));
    if (rt->request_schema)
        json_object_set_new(op, "requestBody",
                            json_pack("{s:b, s:o}", "required", 1, "content", content(rt->request_schema)));
    return op;
}

json_t *api_openapi(void)
{
    json_t *paths = json_object();
    for (size_t i = 0; i < api_nroutes; i++) {
        const struct api_route *rt = &api_routes[i];
        char path[256], method[8];
        json_t *params = json_array();
        openapi_path(rt->pattern, path, sizeof path, params);
        json_t *item = json_object_get(paths, path);
        if (!item) {
            item = json_object();
            json_object_set_new(paths, path, item);
        }
        lower(rt->method, method, sizeof method);
        json_object_set_new(item, method, rt->fn ? operation(rt, params) : operation_501(rt, params));
        json_decref(params);
    }
    json_t *comp = json_loads(schemas, 0, NULL);
    return json_pack("{s:s, s:{s:s, s:s, s:s}, s:[{s:[]}], s:o, s:{s:o, s:{s:{s:s, s:s}}}}", "openapi", "3.0.3",
                     "info", "title", "hookd API (Svix-compatible)", "version", HOOKD_VERSION, "description",
                     "Svix's API as hookd answers it: operations marked x-hookd-implemented: false answer 501.",
                     "security", "HTTPBearer", "paths", paths, "components", "schemas", comp ? comp : json_object(),
                     "securitySchemes", "HTTPBearer", "type", "http", "scheme", "bearer");
}
