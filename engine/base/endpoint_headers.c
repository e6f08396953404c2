/*
 * endpoint_headers.c — see endpoint_headers.h.
 */
#include "endpoint_headers.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "errbuf.h"

bool endpoint_headers_reserved(const char *name)
{
    static const char *const names[] = {"host",
                                        "content-length",
                                        "content-type",
                                        "transfer-encoding",
                                        "connection",
                                        "webhook-id",
                                        "webhook-timestamp",
                                        "webhook-signature",
                                        "svix-id",
                                        "svix-timestamp",
                                        "svix-signature",
                                        "user-agent",
                                        "keep-alive",
                                        "te",
                                        "upgrade"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcasecmp(name, names[i]) == 0)
            return true;
    return false;
}

static bool value_ok(const char *s)
{
    if (!s || strlen(s) > 4096)
        return false;
    for (const char *c = s; *c; c++)
        if ((unsigned char)*c < 0x20 || *c == 0x7f)
            return false;
    return true;
}

int endpoint_headers_check(const json_t *headers, bool nulls_ok, char *err, size_t errlen)
{
    if (!json_is_object(headers)) {
        return err_set(err, errlen, "the headers must be an object of names and values");
    }
    if (json_object_size(headers) > ENDPOINT_HEADERS_MAX) {
        return err_set(err, errlen, "at most %d headers", ENDPOINT_HEADERS_MAX);
    }
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)headers, k, v)
    {
        size_t n = strlen(k);
        if (n == 0 || n > 128 || strspn(k, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_") != n) {
            return err_set(err, errlen, "a header name is malformed: '%.128s' (1 to 128 of A-Z a-z 0-9 - _)", k);
        }
        if (endpoint_headers_reserved(k)) {
            return err_set(err, errlen, "%s is a reserved header: hookd or its HTTP client sets it on every delivery",
                           k);
        }
        if (!(json_is_null(v) && nulls_ok) && !value_ok(json_string_value(v))) {
            return err_set(err, errlen, "the value of %s must be a string without control characters", k);
        }
    }
    return 0;
}

bool endpoint_headers_sensitive(const char *name)
{
    return strcasecmp(name, "authorization") == 0 || strcasecmp(name, "cookie") == 0 ||
           strcasecmp(name, "proxy-authorization") == 0 || strcasestr(name, "secret") || strcasestr(name, "token") ||
           strcasestr(name, "key");
}
