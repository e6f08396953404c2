/*
 * fuzz_url.c — libFuzzer target for engine/base/netguard.h, the SSRF guard in
 * front of every outbound delivery: netguard_parse_url() reads endpoint
 * URLs that users register (`hookd endpoint add --url`, stored in
 * webhook_endpoints) and netguard_is_private() classifies the addresses
 * they resolve to. The whole input is the URL (NUL-terminated; bytes after
 * an embedded NUL are ignored, as a C caller would). An accepted URL must
 * come back in canonical shape — scheme "http"/"https" matching tls, a
 * non-empty lower-case host, a port in 1..65535, a path starting with '/',
 * no space, control or non-ASCII byte anywhere — and must parse again to
 * the same result when rebuilt from its parts. A refused one must leave a
 * NUL-terminated reason that does not repeat the URL's query (which can
 * hold a token). The first 16 input bytes are also read as an IPv4 and an
 * IPv6 address: the IPv4-mapped IPv6 form must be classified exactly like
 * the IPv4 address, and IP-literal hosts are classified too.
 */
/* fuzz.sh links: engine/base/netguard.c engine/base/url.c engine/base/errbuf.c */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_check.h"
#include "netguard.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int clean_text(const char *s)
{
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        if (*p <= 0x20 || *p >= 0x7f)
            return 0;
    return 1;
}

static int classify_v4(const uint8_t b[4])
{
    struct sockaddr_in sin;

    memset(&sin, 0, sizeof sin);
    sin.sin_family = AF_INET;
    memcpy(&sin.sin_addr, b, 4);
    return netguard_is_private((const struct sockaddr *)&sin);
}

static int classify_v6(const uint8_t b[16])
{
    struct sockaddr_in6 sin6;

    memset(&sin6, 0, sizeof sin6);
    sin6.sin6_family = AF_INET6;
    memcpy(&sin6.sin6_addr, b, 16);
    return netguard_is_private((const struct sockaddr *)&sin6);
}

/* Raw addresses from the input bytes: pure classification, and the rule
 * that ::ffff:a.b.c.d reaches (so is judged as) a.b.c.d. */
static void fuzz_addresses(const uint8_t *data, size_t size)
{
    uint8_t raw[16] = {0}, mapped[16] = {0};
    struct sockaddr other;
    int v4, v6;

    memcpy(raw, data, size < 16 ? size : 16);
    v4 = classify_v4(raw);
    v6 = classify_v6(raw);
    CHECK(v4 == 0 || v4 == 1);
    CHECK(v6 == 0 || v6 == 1);
    mapped[10] = mapped[11] = 0xff;
    memcpy(mapped + 12, raw, 4);
    CHECK(classify_v6(mapped) == v4);
    memset(&other, 0, sizeof other);
    other.sa_family = AF_UNIX;
    CHECK(netguard_is_private(&other) == 1); /* fail closed */
    CHECK(netguard_is_private(NULL) == 1);
}

static void check_parsed(const struct netguard_url *u)
{
    uint8_t addr[16];

    CHECK(memchr(u->scheme, '\0', sizeof u->scheme) != NULL);
    CHECK(memchr(u->host, '\0', sizeof u->host) != NULL);
    CHECK(memchr(u->path, '\0', sizeof u->path) != NULL);
    CHECK((strcmp(u->scheme, "http") == 0 && u->tls == 0) || (strcmp(u->scheme, "https") == 0 && u->tls == 1));
    CHECK(u->host[0] != '\0' && clean_text(u->host));
    for (const char *p = u->host; *p; p++)
        CHECK(!(*p >= 'A' && *p <= 'Z') && *p != '@' && *p != '/' && *p != '?' && *p != '#');
    CHECK(u->port >= 1 && u->port <= 65535);
    CHECK(u->path[0] == '/' && clean_text(u->path) && strchr(u->path, '#') == NULL);
    if (inet_pton(AF_INET, u->host, addr) == 1)
        CHECK(classify_v4(addr) == 0 || classify_v4(addr) == 1);
    if (inet_pton(AF_INET6, u->host, addr) == 1)
        CHECK(classify_v6(addr) == 0 || classify_v6(addr) == 1);
}

/* Rebuilds the URL from its parts; it must parse to the same thing. */
static void check_round_trip(const struct netguard_url *u)
{
    size_t cap = sizeof u->host + sizeof u->path + 32;
    char *text = malloc(cap);
    struct netguard_url again;
    char err[256];
    int v6 = strchr(u->host, ':') != NULL;

    if (text == NULL)
        abort();
    snprintf(text, cap, "%s://%s%s%s:%d%s", u->scheme, v6 ? "[" : "", u->host, v6 ? "]" : "", u->port, u->path);
    CHECK(netguard_parse_url(text, &again, err, sizeof err) == 0);
    CHECK(strcmp(again.scheme, u->scheme) == 0 && strcmp(again.host, u->host) == 0);
    CHECK(again.port == u->port && again.tls == u->tls && strcmp(again.path, u->path) == 0);
    free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *url = malloc(size + 1), *err = malloc(64);
    struct netguard_url *u = malloc(sizeof *u);
    const char *query;

    if (url == NULL || err == NULL || u == NULL)
        abort();
    memcpy(url, data, size);
    url[size] = '\0';
    memset(err, 'x', 64);
    if (netguard_parse_url(url, u, err, 64) == 0) {
        check_parsed(u);
        check_round_trip(u);
    } else {
        CHECK(memchr(err, '\0', 64) != NULL && err[0] != '\0');
        query = strchr(url, '?');
        if (query != NULL && strlen(query) >= 8)
            CHECK(strstr(err, query) == NULL);
    }
    CHECK(netguard_parse_url(NULL, u, err, 64) == -1);
    fuzz_addresses(data, size);
    free(url);
    free(err);
    free(u);
    return 0;
}
