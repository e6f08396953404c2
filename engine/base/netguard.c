/* netguard.c — URL parsing and the private-address check behind the relay's
 * SSRF guard (see netguard.h). The parser is deliberately strict: a webhook
 * URL is written once by an operator, so refusing an odd one costs a
 * clear error message, while accepting one that two parsers read differently
 * (ours and a resolver's, or ours and the server's) is how SSRF filters are
 * bypassed. The address ranges follow the IANA IPv4 and IPv6
 * special-purpose address registries. */
#include "netguard.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#define HOST_MAX 253 /* longest DNS name in text form */

static int fail(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int fail(char *err, size_t errlen, const char *fmt, ...)
{
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return -1;
}

static int is_digit(char c)
{
    return c >= '0' && c <= '9';
}
static int is_alpha(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}
static char lower(char c)
{
    return (c >= 'A' && c <= 'Z') ? (char)(c - 'A' + 'a') : c;
}

/* Splits "scheme://" off the front; returns the authority start or NULL. */
static const char *parse_scheme(const char *url, struct netguard_url *out, char *err, size_t errlen)
{
    const char *sep = strstr(url, "://");
    size_t n;

    if (!sep || sep == url) {
        fail(err, errlen, "malformed URL: expected http://host/... or https://host/...");
        return NULL;
    }
    n = (size_t)(sep - url);
    if (n == 4 && strncasecmp(url, "http", 4) == 0) {
        out->tls = 0;
    } else if (n == 5 && strncasecmp(url, "https", 5) == 0) {
        out->tls = 1;
    } else {
        fail(err, errlen, "unsupported URL scheme (only http and https)");
        return NULL;
    }
    for (size_t i = 0; i < n; i++)
        out->scheme[i] = lower(url[i]);
    out->scheme[n] = '\0';
    return sep + 3;
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
        return fail(err, errlen, "host name is longer than %d characters", HOST_MAX);
    for (const char *p = host; *p; p++) {
        if (*p == '.') {
            if (label == 0)
                return fail(err, errlen, "host name has an empty label");
            label = 0;
            continue;
        }
        if (!is_alpha(*p) && !is_digit(*p) && *p != '-' && *p != '_')
            return fail(err, errlen, "invalid character '%c' in host name", *p);
        if (++label > 63)
            return fail(err, errlen, "host name label is longer than 63 characters");
    }
    if (label == 0)
        return fail(err, errlen, "host name has an empty label");
    if (looks_numeric(host)) {
        struct in_addr a;
        if (inet_pton(AF_INET, host, &a) != 1)
            return fail(err, errlen, "ambiguous numeric host (use a dotted-quad IPv4 address)");
    }
    return 0;
}

/* Host (and optional port) from the authority [start, end). */
static int parse_authority(const char *start, const char *end, struct netguard_url *out, char *err,
                           size_t errlen)
{
    const char *host_end, *port_start = NULL;
    size_t hlen;

    if (memchr(start, '@', (size_t)(end - start)))
        return fail(err, errlen, "credentials (user:password@) in the URL are not allowed");
    if (start == end)
        return fail(err, errlen, "URL has no host");

    if (*start == '[') {
        struct in6_addr a6;
        const char *close = memchr(start, ']', (size_t)(end - start));
        if (!close)
            return fail(err, errlen, "unterminated IPv6 literal (missing ']')");
        start++;
        host_end = close;
        if (close + 1 < end) {
            if (close[1] != ':')
                return fail(err, errlen, "unexpected character after IPv6 literal");
            port_start = close + 2;
        }
        hlen = (size_t)(host_end - start);
        if (hlen == 0 || hlen >= sizeof(out->host))
            return fail(err, errlen, "invalid IPv6 literal");
        memcpy(out->host, start, hlen);
        out->host[hlen] = '\0';
        if (strchr(out->host, '%'))
            return fail(err, errlen, "IPv6 zone identifiers are not allowed");
        if (inet_pton(AF_INET6, out->host, &a6) != 1)
            return fail(err, errlen, "invalid IPv6 literal");
    } else {
        const char *colon = memchr(start, ':', (size_t)(end - start));
        host_end = colon ? colon : end;
        if (colon)
            port_start = colon + 1;
        hlen = (size_t)(host_end - start);
        if (hlen == 0)
            return fail(err, errlen, "URL has no host");
        if (hlen > HOST_MAX)
            return fail(err, errlen, "host name is longer than %d characters", HOST_MAX);
        memcpy(out->host, start, hlen);
        out->host[hlen] = '\0';
        if (check_reg_name(out->host, err, errlen) < 0)
            return -1;
    }
    for (char *p = out->host; *p; p++)
        *p = lower(*p);

    out->port = out->tls ? 443 : 80;
    if (port_start) {
        long port = 0;
        if (port_start == end)
            return fail(err, errlen, "empty port in URL");
        for (const char *p = port_start; p < end; p++) {
            if (!is_digit(*p))
                return fail(err, errlen, "invalid port in URL");
            port = port * 10 + (*p - '0');
            if (port > 65535)
                return fail(err, errlen, "port out of range (1-65535)");
        }
        if (port == 0)
            return fail(err, errlen, "port out of range (1-65535)");
        out->port = (int)port;
    }
    return 0;
}

int netguard_parse_url(const char *url, struct netguard_url *out, char *err, size_t errlen)
{
    const char *auth, *auth_end, *rest;
    size_t rlen;

    if (!url || !out)
        return fail(err, errlen, "no URL given");
    memset(out, 0, sizeof(*out));
    for (const unsigned char *p = (const unsigned char *)url; *p; p++) {
        if (*p <= 0x20 || *p >= 0x7f)
            return fail(err, errlen, "URL contains a space, control or non-ASCII character");
    }
    if (strchr(url, '#'))
        return fail(err, errlen, "fragments (#...) are not allowed in webhook URLs");
    if (strchr(url, '\\'))
        return fail(err, errlen, "backslashes are not allowed in URLs");

    auth = parse_scheme(url, out, err, errlen);
    if (!auth)
        return -1;
    auth_end = auth + strcspn(auth, "/?");
    if (parse_authority(auth, auth_end, out, err, errlen) < 0)
        return -1;

    rest = auth_end;
    rlen = strlen(rest);
    if (rlen == 0) {
        strcpy(out->path, "/");
    } else if (*rest == '?') {
        if (rlen + 1 >= sizeof(out->path))
            return fail(err, errlen, "URL path and query are longer than %zu bytes",
                        sizeof(out->path) - 1);
        out->path[0] = '/';
        memcpy(out->path + 1, rest, rlen + 1);
    } else {
        if (rlen >= sizeof(out->path))
            return fail(err, errlen, "URL path and query are longer than %zu bytes",
                        sizeof(out->path) - 1);
        memcpy(out->path, rest, rlen + 1);
    }
    return 0;
}

/* ---- address classification ------------------------------------------- */

struct v4_range {
    uint32_t net;
    int bits;
};

/* IANA IPv4 Special-Purpose Address Registry, plus multicast and 240/4. */
static const struct v4_range v4_blocked[] = {
    {0x00000000u, 8},  /* 0.0.0.0/8      "this network", incl. 0.0.0.0 */
    {0x0a000000u, 8},  /* 10.0.0.0/8     private */
    {0x64400000u, 10}, /* 100.64.0.0/10  CGNAT shared address space */
    {0x7f000000u, 8},  /* 127.0.0.0/8    loopback */
    {0xa9fe0000u, 16}, /* 169.254.0.0/16 link-local, cloud metadata */
    {0xac100000u, 12}, /* 172.16.0.0/12  private */
    {0xc0000000u, 24}, /* 192.0.0.0/24   IETF protocol assignments */
    {0xc0000200u, 24}, /* 192.0.2.0/24   TEST-NET-1 */
    {0xc0586300u, 24}, /* 192.88.99.0/24 6to4 relay anycast (deprecated) */
    {0xc0a80000u, 16}, /* 192.168.0.0/16 private */
    {0xc6120000u, 15}, /* 198.18.0.0/15  benchmarking */
    {0xc6336400u, 24}, /* 198.51.100.0/24 TEST-NET-2 */
    {0xcb007100u, 24}, /* 203.0.113.0/24 TEST-NET-3 */
    {0xe0000000u, 4},  /* 224.0.0.0/4    multicast */
    {0xf0000000u, 4},  /* 240.0.0.0/4    reserved, incl. 255.255.255.255 */
};

static int v4_is_private(uint32_t a) /* host byte order */
{
    for (size_t i = 0; i < sizeof(v4_blocked) / sizeof(v4_blocked[0]); i++) {
        uint32_t mask = 0xffffffffu << (32 - v4_blocked[i].bits);
        if ((a & mask) == v4_blocked[i].net)
            return 1;
    }
    return 0;
}

static uint32_t v4_at(const uint8_t *b)
{
    return ((uint32_t)b[0] << 24) | ((uint32_t)b[1] << 16) | ((uint32_t)b[2] << 8) | b[3];
}

static int all_zero(const uint8_t *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (b[i])
            return 0;
    return 1;
}

static int v6_is_private(const uint8_t *b)
{
    static const uint8_t mapped_prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    static const uint8_t nat64_prefix[12] = {0, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0};

    if (all_zero(b, 12))
        return 1; /* ::, ::1 and the deprecated IPv4-compatible ::a.b.c.d */
    if (memcmp(b, mapped_prefix, 12) == 0)
        return v4_is_private(v4_at(b + 12)); /* ::ffff:a.b.c.d reaches a.b.c.d */
    if (memcmp(b, nat64_prefix, 12) == 0)
        return v4_is_private(v4_at(b + 12)); /* 64:ff9b::/96 NAT64 */
    if (b[0] == 0x00 && b[1] == 0x64 && b[2] == 0xff && b[3] == 0x9b && b[4] == 0x00 &&
        b[5] == 0x01)
        return 1; /* 64:ff9b:1::/48 local-use NAT64 */
    if (b[0] == 0x01 && b[1] == 0x00 && all_zero(b + 2, 6))
        return 1; /* 100::/64 discard-only */
    if (b[0] == 0x20 && b[1] == 0x01 && b[2] < 0x02)
        return 1; /* 2001::/23 IETF protocol assignments, incl. Teredo 2001::/32 */
    if (b[0] == 0x20 && b[1] == 0x01 && b[2] == 0x0d && b[3] == 0xb8)
        return 1; /* 2001:db8::/32 documentation */
    if (b[0] == 0x20 && b[1] == 0x02)
        return v4_is_private(v4_at(b + 2)); /* 2002::/16 6to4 embeds an IPv4 address */
    if (b[0] == 0x3f && b[1] == 0xff && (b[2] & 0xf0) == 0x00)
        return 1; /* 3fff::/20 documentation */
    if ((b[0] & 0xfe) == 0xfc)
        return 1; /* fc00::/7 unique local */
    if (b[0] == 0xfe && (b[1] & 0xc0) == 0x80)
        return 1; /* fe80::/10 link-local */
    if (b[0] == 0xfe && (b[1] & 0xc0) == 0xc0)
        return 1; /* fec0::/10 site-local (deprecated) */
    if (b[0] == 0xff)
        return 1; /* ff00::/8 multicast */
    return 0;
}

int netguard_is_private(const struct sockaddr *sa)
{
    if (!sa)
        return 1;
    if (sa->sa_family == AF_INET) {
        const struct sockaddr_in *sin = (const struct sockaddr_in *)(const void *)sa;
        return v4_is_private(ntohl(sin->sin_addr.s_addr));
    }
    if (sa->sa_family == AF_INET6) {
        const struct sockaddr_in6 *sin6 = (const struct sockaddr_in6 *)(const void *)sa;
        return v6_is_private(sin6->sin6_addr.s6_addr);
    }
    return 1;
}
