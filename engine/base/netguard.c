/* netguard.c — the webhook URL policy and the private-address check behind
 * the relay's SSRF guard (see netguard.h). URLs are split and their hosts
 * checked by the one URL parser (url.c), which is deliberately strict: a
 * webhook URL is written once by an operator, so refusing an odd one costs
 * a clear error message, while accepting one that two parsers read
 * differently (ours and a resolver's, or ours and the server's) is how SSRF
 * filters are bypassed. The address ranges follow the IANA IPv4 and IPv6
 * special-purpose address registries. */
#include "netguard.h"

#include "errbuf.h"
#include "url.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

static char lower(char c)
{
    return (c >= 'A' && c <= 'Z') ? (char)(c - 'A' + 'a') : c;
}

/* The scheme, checked before anything else so that the message names what
 * a webhook URL may be. */
static int check_scheme(const char *url, struct netguard_url *out, char *err, size_t errlen)
{
    const char *sep = strstr(url, "://");
    size_t n;

    if (!sep || sep == url)
        return err_set(err, errlen, "malformed URL: expected http://host/... or https://host/...");
    n = (size_t)(sep - url);
    if (n == 4 && strncasecmp(url, "http", 4) == 0)
        out->tls = 0;
    else if (n == 5 && strncasecmp(url, "https", 5) == 0)
        out->tls = 1;
    else
        return err_set(err, errlen, "unsupported URL scheme (only http and https)");
    for (size_t i = 0; i < n; i++)
        out->scheme[i] = lower(url[i]);
    out->scheme[n] = '\0';
    return 0;
}

/* Webhook policy on top of the one URL parser (url.h): http(s) only, no
 * credentials, no fragment, a request target that starts with '/'. */
int netguard_parse_url(const char *url, struct netguard_url *out, char *err, size_t errlen)
{
    struct url u;
    size_t tlen;

    if (!url || !out)
        return err_set(err, errlen, "no URL given");
    memset(out, 0, sizeof(*out));
    if (strchr(url, '#'))
        return err_set(err, errlen, "fragments (#...) are not allowed in webhook URLs");
    if (check_scheme(url, out, err, errlen) < 0)
        return -1;
    if (url_parse(url, &u, err, errlen) < 0)
        return -1;
    url_wipe(&u);
    if (u.has_userinfo)
        return err_set(err, errlen, "credentials (user:password@) in the URL are not allowed");
    snprintf(out->host, sizeof(out->host), "%s", u.host);
    out->port = u.port > 0 ? u.port : out->tls ? 443 : 80;
    tlen = strlen(u.target);
    if (tlen == 0) {
        strcpy(out->path, "/");
    } else if (u.target[0] == '?') {
        if (tlen + 1 >= sizeof(out->path))
            return err_set(err, errlen, "URL path and query are longer than %zu bytes", sizeof(out->path) - 1);
        out->path[0] = '/';
        memcpy(out->path + 1, u.target, tlen + 1);
    } else {
        memcpy(out->path, u.target, tlen + 1);
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
    static const uint8_t translated_prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0, 0};
    static const uint8_t nat64_prefix[12] = {0, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0};

    if (all_zero(b, 12))
        return 1; /* ::, ::1 and the deprecated IPv4-compatible ::a.b.c.d */
    if (memcmp(b, mapped_prefix, 12) == 0)
        return v4_is_private(v4_at(b + 12)); /* ::ffff:a.b.c.d reaches a.b.c.d */
    if (memcmp(b, translated_prefix, 12) == 0)
        return 1; /* ::ffff:0:a.b.c.d IPv4-translated (SIIT): a translator's own pool, never a webhook receiver */
    if (memcmp(b, nat64_prefix, 12) == 0)
        return v4_is_private(v4_at(b + 12)); /* 64:ff9b::/96 NAT64 */
    if (b[0] == 0x00 && b[1] == 0x64 && b[2] == 0xff && b[3] == 0x9b && b[4] == 0x00 && b[5] == 0x01)
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
