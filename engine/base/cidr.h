/* cidr — address ranges for the inbound address policy: a partner's
 * `allow_ips` and `[hookd] trusted_proxies` are lists of CIDR ranges (IPv4
 * and IPv6; a bare address is a /32 or /128), parsed once at config load.
 * cidr_client_addr() finds the address a request came from: the direct
 * peer, or — only when that peer is a trusted proxy — the right-most
 * address of X-Forwarded-For that is not itself a trusted proxy (the
 * entries further left were written by whoever sent the request and prove
 * nothing). IPv4-mapped IPv6 addresses (::ffff:a.b.c.d, as a dual-stack
 * socket reports IPv4 peers) are compared as IPv4. Pure functions, no I/O;
 * a list owns its array (cidr_list_free). */
#ifndef HOOKD_CIDR_H
#define HOOKD_CIDR_H

#include <stdbool.h>
#include <stddef.h>

/* One address: family AF_INET (4 bytes used) or AF_INET6 (16). */
struct cidr_addr {
    int family;
    unsigned char b[16];
};

struct cidr_range {
    struct cidr_addr net; /* host bits cleared */
    int prefix;           /* 0..32 or 0..128 */
};

struct cidr_list {
    struct cidr_range *v; /* owned */
    size_t n;
};

/* Parses an IPv4 or IPv6 address ("10.0.0.1", "2001:db8::1", "[2001:db8::1]",
 * "::ffff:10.0.0.1" → IPv4). -1 for anything else. */
__attribute__((warn_unused_result)) int cidr_addr_parse(const char *text, size_t len, struct cidr_addr *out);

struct sockaddr;
/* The address of an AF_INET or AF_INET6 socket address (mapped IPv4 as
 * IPv4); -1 for other families or NULL. */
__attribute__((warn_unused_result)) int cidr_addr_from_sockaddr(const struct sockaddr *sa, struct cidr_addr *out);

/* Parses "10.0.0.0/8, 192.0.2.1, 2001:db8::/32" (commas or blanks between
 * entries) into *out, replacing nothing: *out must be empty. Host bits set
 * below the prefix ("10.0.0.1/8") are refused as a likely typo. An empty
 * list is refused. On failure *out stays empty and err names the entry. */
__attribute__((warn_unused_result)) int cidr_list_parse(const char *text, struct cidr_list *out, char *err,
                                                        size_t errlen);
void cidr_list_free(struct cidr_list *l); /* accepts NULL; leaves it empty */

bool cidr_list_contains(const struct cidr_list *l, const struct cidr_addr *a);

/* The client's address (see the header comment). peer is the direct peer;
 * xff the X-Forwarded-For values joined with ", " in arrival order (NULL or
 * "" when there is none); trusted may be NULL or empty (then X-Forwarded-For
 * is ignored). An X-Forwarded-For entry that is not an address ("unknown",
 * garbage) ends the walk: it is returned as unusable (-1), so a policy
 * fails closed. 0 with *out set otherwise. */
__attribute__((warn_unused_result)) int cidr_client_addr(const struct cidr_addr *peer, const char *xff,
                                                         const struct cidr_list *trusted, struct cidr_addr *out);

/* Writes the address as text (inet_ntop form) into buf. */
void cidr_addr_format(const struct cidr_addr *a, char *buf, size_t buflen);

#endif
