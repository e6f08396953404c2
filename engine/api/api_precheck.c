/* Svix's message precheck (v1.message.precheck): whether any enabled
 * endpoint of the application would be sent a message of an event type and
 * channels, answered {"active": bool} without creating anything. */
#include <stdlib.h>
#include <string.h>

#include "api_internal.h"

#define PRECHECK_CHANNELS_MAX 10 /* Svix's MessagePrecheckIn */

void api_message_precheck(PGconn *conn, struct api_req *r)
{
    char *channels = NULL;
    const char *type = api_str(r, r->body, "eventType", true);
    if (type && (strlen(type) > API_NAME_LONG_MAX || strspn(type, API_NAME_CHARS "-_.") != strlen(type)))
        api_invalid(r, "body", "eventType",
                    "must be at most " API_STR(API_NAME_LONG_MAX) " characters of a-z, A-Z, 0-9, '-', '_' and '.'",
                    "value_error.str.regex");
    if (!api_name_set(r, r->body, "channels", PRECHECK_CHANNELS_MAX, API_CHANNEL_EXTRA, &channels) || api_failed(r) ||
        !api_resolve_app(conn, r, r->params[0]))
        goto done;
    const char *p[] = {r->app, type, channels};
    PGresult *res = api_exec(conn, r, Q_API_MESSAGE_PRECHECK, p);
    if (!res)
        goto done;
    bool active = PQgetvalue(res, 0, API_MESSAGE_PRECHECK_ACTIVE)[0] == 't';
    PQclear(res);
    api_reply(r, 200, json_pack("{s:b}", "active", active));
done:
    free(channels);
}
