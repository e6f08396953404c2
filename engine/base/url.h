/* url — the one URL parser: endpoint URLs (netguard) and redis:// URLs
 * (redis_conn) both come through here.
 *
 * libevent's evhttp_uri_parse_with_flags() splits the URL (scheme,
 * userinfo, host, port, path, query, fragment); hookd's strict checks of
 * the authority run first, so a refused URL gets a precise reason instead
 * of libevent's bare NULL: one host only (a host list such as
 * "h1:p1,h2:p2" is refused, callers that take lists split them first), a
 * host that is a DNS name of letters, digits, '-' and '_' or an IPv6
 * literal without zone id, never a numeric shorthand that resolvers would
 * read as an IPv4 address ("2130706433", "0x7f.1", "127.1"), a port in
 * 1..65535.
 *
 * Why in base: evhttp_uri is a pure string parser in libevent (no event
 * base, no I/O, no allocation that outlives the call here), and base is the
 * layer for pure utilities. Putting it in io would have forced netguard's
 * URL policy out of netguard (base) or an upward include; here netguard
 * (base), redis_conn and http_client (io) and the CLI all reach it. Linking
 * libevent into base costs nothing: every hookd binary and test links it.
 *
 * What a URL may mean (schemes, whether credentials or a path are allowed,
 * default ports) is the caller's policy. Errors never repeat the URL, its
 * credentials or its query (which may hold a token). */
#ifndef HOOKD_URL_H
#define HOOKD_URL_H

#include <stdbool.h>
#include <stddef.h>

#define URL_TARGET_MAX 2048

struct url {
    char scheme[16];             /* lower case */
    bool has_userinfo;           /* "…@" was present, even if empty */
    bool has_password;           /* the userinfo had a ':' */
    char user[128];              /* percent-decoded; the userinfo before ':' */
    char password[256];          /* percent-decoded; wipe it (OPENSSL_cleanse) when done */
    char host[256];              /* lower case; an IPv6 literal without brackets */
    bool host_is_ipv6;           /* the host was written as [IPv6] */
    int port;                    /* -1 when the URL has none */
    char target[URL_TARGET_MAX]; /* path and "?query" as written; "" when neither */
    bool has_fragment;           /* "#…" was present */
};

/* Parses an absolute URL (scheme://authority[/path][?query][#fragment]).
 * 0 on success; -1 with the reason in err (out then holds no credentials).
 * Refuses spaces, control and non-ASCII bytes and backslashes anywhere, an
 * empty host, a host list, characters in the credentials that must be
 * percent-encoded, credentials that decode to a NUL byte or do not fit,
 * and a path with query longer than URL_TARGET_MAX - 1 bytes. */
__attribute__((warn_unused_result)) int url_parse(const char *text, struct url *out, char *err, size_t errlen);

/* Zeroes the credentials of a parsed URL (OPENSSL_cleanse). */
void url_wipe(struct url *u);

#endif
