/* netguard — URL parsing and the SSRF guard for outbound webhook deliveries.
 *
 * Endpoint URLs come from users (`hookd endpoint add --url ...`), so the
 * relay must not become a way to reach the worker's own network: loopback,
 * RFC 1918, link-local (cloud metadata at 169.254.169.254), CGNAT, unique
 * local IPv6 and the other special-purpose ranges. http_client.c parses every
 * URL here, resolves the host, asks netguard_is_private() about every address
 * and then connects to the checked address itself, so a DNS answer that
 * changes between check and connect cannot slip through. Pure functions, no
 * allocation, no I/O. */
#ifndef HOOKD_NETGUARD_H
#define HOOKD_NETGUARD_H

#include <stddef.h>
#include <sys/socket.h>

struct netguard_url {
    char scheme[8];  /* "http" or "https" (lower case) */
    char host[256];  /* lower case; IPv6 literals without the brackets */
    int port;        /* explicit port, or 80 / 443 */
    char path[2048]; /* path + query as sent on the request line; "/" if empty */
    int tls;         /* 1 for https */
};

/* Parses an absolute http(s) URL. Refuses (-1, reason in err) anything else:
 * other schemes, user:password@, fragments, spaces, control and non-ASCII
 * bytes, bad or empty ports, malformed IPv6 literals or zone ids, and
 * ambiguous numeric hosts such as "2130706433" or "0x7f.1" that resolvers
 * would turn into an IPv4 address. The error never repeats the URL, which
 * may carry a token in its query. */
int netguard_parse_url(const char *url, struct netguard_url *out, char *err, size_t errlen)
    __attribute__((warn_unused_result));

/* 1 if the address must not be contacted when private networks are not
 * allowed: loopback, private, link-local, CGNAT (100.64/10), unspecified,
 * "this network" (0/8), multicast, broadcast and reserved (240/4),
 * documentation and benchmarking ranges, IPv6 unique-local, site-local,
 * discard, IETF-assigned (2001::/23, incl. Teredo), and IPv6 forms that
 * embed an IPv4 address (IPv4-mapped, IPv4-compatible, NAT64 64:ff9b::/96,
 * 6to4 2002::/16) when the embedded address is itself private; the whole of
 * the local-use NAT64 prefix 64:ff9b:1::/48 and of the IPv4-translated
 * ::ffff:0:0:0/96 (RFC 6145's SIIT addresses, reachable only through a
 * translator inside the operator's network). Families
 * other than AF_INET/AF_INET6 count as private (fail closed). */
int netguard_is_private(const struct sockaddr *sa);

#endif
