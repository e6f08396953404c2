/* url.c — the one URL parser (see url.h). The authority is checked on the
 * raw text first, strictly and with a reason for every refusal; then
 * libevent splits the whole URL, and its reading of host and port must agree
 * with ours (two parsers that read one URL differently are how SSRF filters
 * are bypassed, so a disagreement is an error, not a choice). */
#include "url.h"

#include <arpa/inet.h>
#include <event2/http.h>
#include <netinet/in.h>
#include <openssl/crypto.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "errbuf.h"

#define HOST_MAX 253 /* longest DNS name in text form */

static int is_digit(char c)
{
    return c >= '0' && c <= '9';
}

static int is_alpha(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static int is_xdigit(char c)
{
    return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

static int xdigit_value(char c)
{
    return is_digit(c) ? c - '0' : (c | 0x20) - 'a' + 10;
}

static void lower_in_place(char *s)
{
    for (; *s; s++)
        if (*s >= 'A' && *s <= 'Z')
            *s = (char)(*s - 'A' + 'a');
}

/* RFC 3986 userinfo: unreserved / pct-encoded / sub-delims / ":". What
 * libevent accepts, checked here so that the refusal has a reason. The
 * offending character is not named: it is part of a password. */
static int check_userinfo(const char *s, const char *end, char *err, size_t errlen)
{
    for (const char *p = s; p < end; p++) {
        if (*p == '%') {
            if (p + 2 >= end || !is_xdigit(p[1]) || !is_xdigit(p[2]))
                return err_set(err, errlen,
                               "credentials in the URL have a '%%' that is not followed by two hex digits");
            p += 2;
            continue;
        }
        if (!is_alpha(*p) && !is_digit(*p) && !strchr("-._~!$&'()*+,;=:", *p))
            return err_set(err, errlen, "credentials in the URL contain a character that must be percent-encoded");
    }
    return 0;
}

/* A numeric-looking last label makes resolvers (inet_aton, WHATWG URL
 * parsers) treat the whole host as an IPv4 address in decimal, octal or
 * hex shorthand; only the canonical dotted quad is accepted. */
static int looks_numeric(const char *host)
{
    const char *last = strrchr(host, '.');
    last = last ? last + 1 : host;
    if (*last == '\0')
        return 0;
    if (last[0] == '0' && (last[1] == 'x' || last[1] == 'X'))
        return 1;
    for (const char *p = last; *p; p++)
        if (!is_digit(*p))
            return 0;
    return 1;
}

static int check_reg_name(const char *host, char *err, size_t errlen)
{
    size_t label = 0;

    if (strlen(host) > HOST_MAX)
        return err_set(err, errlen, "host name is longer than %d characters", HOST_MAX);
    for (const char *p = host; *p; p++) {
        if (*p == '.') {
            if (label == 0)
                return err_set(err, errlen, "host name has an empty label");
            label = 0;
            continue;
        }
        if (!is_alpha(*p) && !is_digit(*p) && *p != '-' && *p != '_')
            return err_set(err, errlen, "invalid character '%c' in host name", *p);
        if (++label > 63)
            return err_set(err, errlen, "host name label is longer than 63 characters");
    }
    if (label == 0)
        return err_set(err, errlen, "host name has an empty label");
    if (looks_numeric(host)) {
        struct in_addr a;
        if (inet_pton(AF_INET, host, &a) != 1)
            return err_set(err, errlen, "ambiguous numeric host (use a dotted-quad IPv4 address)");
    }
    return 0;
}

/* "[v6]" at [start, end); returns where the port's ':' may be, or NULL. */
static const char *check_ipv6(const char *start, const char *end, struct url *out, char *err, size_t errlen)
{
    struct in6_addr a6;
    const char *close = memchr(start, ']', (size_t)(end - start));
    if (!close) {
        err_set(err, errlen, "unterminated IPv6 literal (missing ']')");
        return NULL;
    }
    if (close + 1 < end && close[1] != ':') {
        err_set(err, errlen, "unexpected character after IPv6 literal");
        return NULL;
    }
    size_t hlen = (size_t)(close - start - 1);
    if (hlen == 0 || hlen >= sizeof out->host) {
        err_set(err, errlen, "invalid IPv6 literal");
        return NULL;
    }
    memcpy(out->host, start + 1, hlen);
    out->host[hlen] = '\0';
    if (strchr(out->host, '%')) {
        err_set(err, errlen, "IPv6 zone identifiers are not allowed");
        return NULL;
    }
    if (inet_pton(AF_INET6, out->host, &a6) != 1) {
        err_set(err, errlen, "invalid IPv6 literal");
        return NULL;
    }
    out->host_is_ipv6 = true;
    return close + 1;
}

static int check_port(const char *colon, const char *end, struct url *out, char *err, size_t errlen)
{
    long port = 0;
    if (colon + 1 == end)
        return err_set(err, errlen, "empty port in URL");
    for (const char *p = colon + 1; p < end; p++) {
        if (!is_digit(*p))
            return err_set(err, errlen, "invalid port in URL");
        port = port * 10 + (*p - '0');
        if (port > 65535)
            return err_set(err, errlen, "port out of range (1-65535)");
    }
    if (port == 0)
        return err_set(err, errlen, "port out of range (1-65535)");
    out->port = (int)port;
    return 0;
}

/* Host and port from the authority [start, end), userinfo already cut off. */
static int check_host_port(const char *start, const char *end, struct url *out, char *err, size_t errlen)
{
    const char *colon;

    if (memchr(start, ',', (size_t)(end - start)))
        return err_set(err, errlen, "host lists (h1:p1,h2:p2) are not supported here: the URL must name one host");
    if (start == end)
        return err_set(err, errlen, "URL has no host");
    if (*start == '[') {
        colon = check_ipv6(start, end, out, err, errlen);
        if (!colon)
            return -1;
        if (colon == end)
            colon = NULL;
    } else {
        colon = memchr(start, ':', (size_t)(end - start));
        size_t hlen = (size_t)((colon ? colon : end) - start);
        if (hlen == 0)
            return err_set(err, errlen, "URL has no host");
        if (hlen > HOST_MAX)
            return err_set(err, errlen, "host name is longer than %d characters", HOST_MAX);
        memcpy(out->host, start, hlen);
        out->host[hlen] = '\0';
        if (check_reg_name(out->host, err, errlen) < 0)
            return -1;
    }
    lower_in_place(out->host);
    out->port = -1;
    return colon ? check_port(colon, end, out, err, errlen) : 0;
}

/* Percent-decodes [s, end) (already checked) into dst; refuses a NUL. */
static int decode(const char *s, const char *end, char *dst, size_t cap, const char *what, char *err, size_t errlen)
{
    size_t n = 0;
    for (const char *p = s; p < end; p++, n++) {
        char c = *p;
        if (c == '%') {
            c = (char)(xdigit_value(p[1]) * 16 + xdigit_value(p[2]));
            p += 2;
        }
        if (c == '\0')
            return err_set(err, errlen, "%s in the URL contains %%00", what);
        if (n + 1 >= cap)
            return err_set(err, errlen, "%s in the URL is longer than %zu bytes", what, cap - 1);
        dst[n] = c;
    }
    dst[n] = '\0';
    return 0;
}

static int take_userinfo(const char *ui, struct url *out, char *err, size_t errlen)
{
    const char *end = ui + strlen(ui), *colon = strchr(ui, ':');
    out->has_userinfo = true;
    out->has_password = colon != NULL;
    if (decode(ui, colon ? colon : end, out->user, sizeof out->user, "user name", err, errlen) < 0)
        return -1;
    if (colon && decode(colon + 1, end, out->password, sizeof out->password, "password", err, errlen) < 0)
        return -1;
    return 0;
}

/* Scheme, userinfo, path, query and fragment from libevent's split; its
 * host and port must be the ones checked on the raw text. */
static int take_parts(struct evhttp_uri *u, struct url *out, char *err, size_t errlen)
{
    const char *scheme = evhttp_uri_get_scheme(u), *host = evhttp_uri_get_host(u);
    const char *path = evhttp_uri_get_path(u), *query = evhttp_uri_get_query(u);
    const char *ui = evhttp_uri_get_userinfo(u);
    size_t hlen = host ? strlen(host) : 0;

    if (out->host_is_ipv6 && hlen >= 2 && host[0] == '[') {
        host++;
        hlen -= 2;
    }
    if (!scheme || strlen(scheme) >= sizeof out->scheme || !host || hlen != strlen(out->host) ||
        strncasecmp(host, out->host, hlen) != 0 || evhttp_uri_get_port(u) != out->port)
        return err_set(err, errlen, "malformed URL");
    snprintf(out->scheme, sizeof out->scheme, "%s", scheme);
    lower_in_place(out->scheme);
    if (ui && take_userinfo(ui, out, err, errlen) < 0)
        return -1;
    int n = snprintf(out->target, sizeof out->target, "%s%s%s", path ? path : "", query ? "?" : "",
                     query ? query : "");
    if (n < 0 || (size_t)n >= sizeof out->target)
        return err_set(err, errlen, "URL path and query are longer than %zu bytes", sizeof out->target - 1);
    out->has_fragment = evhttp_uri_get_fragment(u) != NULL;
    return 0;
}

static int parse(const char *text, struct url *out, char *err, size_t errlen)
{
    for (const unsigned char *p = (const unsigned char *)text; *p; p++)
        if (*p <= 0x20 || *p >= 0x7f)
            return err_set(err, errlen, "URL contains a space, control or non-ASCII character");
    if (strchr(text, '\\'))
        return err_set(err, errlen, "backslashes are not allowed in URLs");
    const char *sep = strstr(text, "://");
    if (!sep || sep == text)
        return err_set(err, errlen, "malformed URL: expected scheme://host/...");
    const char *auth = sep + 3, *auth_end = auth + strcspn(auth, "/?#");
    const char *at = NULL; /* the last '@', as libevent splits */
    for (const char *p = auth; p < auth_end; p++)
        if (*p == '@')
            at = p;
    if (at && check_userinfo(auth, at, err, errlen) < 0)
        return -1;
    if (check_host_port(at ? at + 1 : auth, auth_end, out, err, errlen) < 0)
        return -1;

    struct evhttp_uri *u = evhttp_uri_parse_with_flags(text, EVHTTP_URI_NONCONFORMANT);
    if (!u)
        return err_set(err, errlen, "malformed URL");
    int rc = take_parts(u, out, err, errlen);
    char *ui = (char *)evhttp_uri_get_userinfo(u); /* owned by u: wipe the password in it */
    if (ui)
        OPENSSL_cleanse(ui, strlen(ui));
    evhttp_uri_free(u);
    return rc;
}

int url_parse(const char *text, struct url *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    if (!text)
        return err_set(err, errlen, "no URL given");
    if (parse(text, out, err, errlen) == 0)
        return 0;
    url_wipe(out);
    return -1;
}

void url_wipe(struct url *u)
{
    OPENSSL_cleanse(u->user, sizeof u->user);
    OPENSSL_cleanse(u->password, sizeof u->password);
}
