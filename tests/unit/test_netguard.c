/* Unit tests for engine/netguard.c: URL parsing (accepted forms and the
 * ways a URL is refused, including the classic SSRF filter bypasses) and
 * the private/public classification of IPv4 and IPv6 addresses, with the
 * edges of every blocked range checked from both sides. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/un.h>

#include "netguard.h"

struct good_url {
    const char *url;
    const char *scheme;
    const char *host;
    int port;
    const char *path;
    int tls;
};

static void test_parse_good(void **state)
{
    static const struct good_url cases[] = {
        {"https://example.com/hooks?a=1&b=2", "https", "example.com", 443, "/hooks?a=1&b=2", 1},
        {"http://Example.COM:8080", "http", "example.com", 8080, "/", 0},
        {"HTTP://example.com?x=1", "http", "example.com", 80, "/?x=1", 0},
        {"HtTpS://api.partner.example:443/v1/events", "https", "api.partner.example", 443, "/v1/events", 1},
        {"https://[2001:db8::1]:8443/p", "https", "2001:db8::1", 8443, "/p", 1},
        {"https://[::FFFF:127.0.0.1]/", "https", "::ffff:127.0.0.1", 443, "/", 1},
        {"http://127.0.0.1:65535/x", "http", "127.0.0.1", 65535, "/x", 0},
        {"http://my_host.internal/", "http", "my_host.internal", 80, "/", 0},
        {"http://a-b.c-d.example/%20x/y;z", "http", "a-b.c-d.example", 80, "/%20x/y;z", 0},
        {"http://host1:1", "http", "host1", 1, "/", 0},
        {"https://[::1]", "https", "::1", 443, "/", 1},
        {"https://example.com/a/{b}|c^?q=[1]&r=%zz", "https", "example.com", 443, "/a/{b}|c^?q=[1]&r=%zz", 1},
        {"https://example.com/p@q:r", "https", "example.com", 443, "/p@q:r", 1},
        {"https://example.com?", "https", "example.com", 443, "/?", 1},
    };
    char err[256];
    (void)state;

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct netguard_url u;
        err[0] = '\0';
        if (netguard_parse_url(cases[i].url, &u, err, sizeof(err)) != 0)
            fail_msg("%s: refused: %s", cases[i].url, err);
        assert_string_equal(u.scheme, cases[i].scheme);
        assert_string_equal(u.host, cases[i].host);
        assert_int_equal(u.port, cases[i].port);
        assert_string_equal(u.path, cases[i].path);
        assert_int_equal(u.tls, cases[i].tls);
    }
}

struct bad_url {
    const char *url;
    const char *why; /* substring of the error */
};

static void test_parse_bad(void **state)
{
    static const struct bad_url cases[] = {
        {"ftp://example.com/", "unsupported URL scheme"},
        {"javascript://example.com/", "unsupported URL scheme"},
        {"example.com/path", "malformed URL"},
        {"://example.com/", "malformed URL"},
        {"https://user:s3cret@example.com/", "credentials"},
        {"https://example.com@evil.example/", "credentials"},
        {"https://example.com/#frag", "fragments"},
        {"https://exa mple.com/", "space, control"},
        {"https://example.com/a\r\nX-Injected: 1", "space, control"},
        {"https://example.com/\x7f", "space, control"},
        {"https://\xc3\xa9xample.com/", "non-ASCII"},
        {"https://example.com\\@evil.example/", "backslash"},
        {"https://example.com:0/", "port out of range"},
        {"https://example.com:65536/", "port out of range"},
        {"https://example.com:99999999999999999999/", "port out of range"},
        {"https://example.com:/", "empty port"},
        {"https://example.com:80a/", "invalid port"},
        {"https://example.com:-1/", "invalid port"},
        {"https://[::1/", "unterminated IPv6"},
        {"https://[::1]x/", "unexpected character after IPv6"},
        {"https://[fe80::1%25eth0]/", "zone identifiers"},
        {"https://[12345::1]/", "invalid IPv6 literal"},
        {"https://[]/", "invalid IPv6 literal"},
        {"https://[127.0.0.1]/", "invalid IPv6 literal"},
        {"https:///path", "no host"},
        {"https://:8080/", "no host"},
        {"https://2130706433/", "ambiguous numeric host"},
        {"https://0x7f000001/", "ambiguous numeric host"},
        {"https://0x7f.1/", "ambiguous numeric host"},
        {"https://127.1/", "ambiguous numeric host"},
        {"https://0177.0.0.1/", "ambiguous numeric host"},
        {"https://127.0.0.01/", "ambiguous numeric host"},
        {"https://exa..mple.com/", "empty label"},
        {"https://.example.com/", "empty label"},
        {"https://example.com./", "empty label"},
        {"https://exa$mple.com/", "invalid character"},
        {"https://exa%2emple.com/", "invalid character"},
        /* one host only: lists are split by the callers that take them */
        {"https://h1:443,h2:443/", "host lists"},
        {"https://h1,h2/", "host lists"},
        {"https://[::1]:443,[::2]:443/", "host lists"},
        {"https://example.com:443:444/", "invalid port"},
        {"https://[::1]:/", "empty port"},
        {"https://[::1]:0/", "port out of range"},
        {"https://ex\tample.com/", "space, control"},
    };
    char err[256];
    (void)state;

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct netguard_url u;
        err[0] = '\0';
        if (netguard_parse_url(cases[i].url, &u, err, sizeof(err)) != -1)
            fail_msg("case %zu accepted: %s", i, cases[i].url);
        if (!strstr(err, cases[i].why))
            fail_msg("case %zu (%s): error \"%s\" lacks \"%s\"", i, cases[i].url, err, cases[i].why);
    }
}

static void test_parse_limits(void **state)
{
    char url[4096], err[256];
    struct netguard_url u;
    (void)state;

    /* the error never echoes a secret from the URL */
    assert_int_equal(netguard_parse_url("https://user:s3cret@example.com/?token=abc", &u, err, sizeof(err)), -1);
    assert_null(strstr(err, "s3cret"));
    assert_null(strstr(err, "abc"));

    assert_int_equal(netguard_parse_url(NULL, &u, err, sizeof(err)), -1);

    /* path + query: 2047 bytes fit, 2048 do not */
    snprintf(url, sizeof(url), "https://example.com/");
    memset(url + strlen(url), 'a', 2046);
    url[20 + 2046] = '\0';
    assert_int_equal(netguard_parse_url(url, &u, err, sizeof(err)), 0);
    assert_int_equal(strlen(u.path), 2047);
    strcat(url, "b");
    assert_int_equal(netguard_parse_url(url, &u, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "longer than 2047"));

    /* a bare query needs the leading "/" too */
    snprintf(url, sizeof(url), "https://example.com?");
    memset(url + strlen(url), 'q', 2046);
    url[20 + 2046] = '\0';
    assert_int_equal(netguard_parse_url(url, &u, err, sizeof(err)), -1);

    /* host names: 253 characters at most, labels of 63 */
    snprintf(url, sizeof(url), "https://");
    for (int i = 0; i < 4; i++)
        strcat(url, "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa."); /* 62+1 */
    strcat(url, "b/");
    assert_int_equal(netguard_parse_url(url, &u, err, sizeof(err)), 0); /* 253 */
    assert_int_equal(strlen(u.host), 253);
    url[strlen(url) - 2] = '\0';
    strcat(url, "bb/");
    assert_int_equal(netguard_parse_url(url, &u, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "longer than 253"));
    assert_int_equal(netguard_parse_url("https://"
                                        "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
                                        ".example/",
                                        &u, err, sizeof(err)),
                     -1);
    assert_non_null(strstr(err, "63"));
}

struct addr_case {
    const char *addr;
    int is_private;
};

static int classify(const char *text)
{
    struct sockaddr_in sin;
    struct sockaddr_in6 sin6;

    memset(&sin, 0, sizeof(sin));
    memset(&sin6, 0, sizeof(sin6));
    if (inet_pton(AF_INET, text, &sin.sin_addr) == 1) {
        sin.sin_family = AF_INET;
        return netguard_is_private((const struct sockaddr *)&sin);
    }
    if (inet_pton(AF_INET6, text, &sin6.sin6_addr) == 1) {
        sin6.sin6_family = AF_INET6;
        return netguard_is_private((const struct sockaddr *)&sin6);
    }
    fail_msg("bad test address %s", text);
    return -1;
}

static void test_addresses(void **state)
{
    static const struct addr_case cases[] = {
        /* IPv4: every blocked range, and its neighbours */
        {"0.0.0.0", 1},
        {"0.255.255.255", 1},
        {"1.0.0.0", 0},
        {"9.255.255.255", 0},
        {"10.0.0.0", 1},
        {"10.255.255.255", 1},
        {"11.0.0.0", 0},
        {"100.63.255.255", 0},
        {"100.64.0.0", 1},
        {"100.127.255.255", 1},
        {"100.128.0.0", 0},
        {"126.255.255.255", 0},
        {"127.0.0.1", 1},
        {"127.255.255.254", 1},
        {"128.0.0.0", 0},
        {"169.253.255.255", 0},
        {"169.254.169.254", 1}, /* cloud metadata */
        {"169.255.0.0", 0},
        {"172.15.255.255", 0},
        {"172.16.0.0", 1},
        {"172.31.255.255", 1},
        {"172.32.0.0", 0},
        {"192.0.0.8", 1},
        {"192.0.1.0", 0},
        {"192.0.2.1", 1},
        {"192.88.99.1", 1},
        {"192.167.255.255", 0},
        {"192.168.0.1", 1},
        {"192.168.255.255", 1},
        {"192.169.0.0", 0},
        {"198.17.255.255", 0},
        {"198.18.0.0", 1},
        {"198.19.255.255", 1},
        {"198.20.0.0", 0},
        {"198.51.100.7", 1},
        {"203.0.113.9", 1},
        {"223.255.255.255", 0},
        {"224.0.0.1", 1},
        {"239.255.255.250", 1},
        {"240.0.0.1", 1},
        {"255.255.255.255", 1},
        {"1.1.1.1", 0},
        {"8.8.8.8", 0},
        {"93.184.215.14", 0},
        /* IPv6 */
        {"::", 1},
        {"::1", 1},
        {"::127.0.0.1", 1},      /* IPv4-compatible (deprecated) */
        {"::ffff:127.0.0.1", 1}, /* IPv4-mapped loopback */
        {"::ffff:10.1.2.3", 1},
        {"::ffff:169.254.169.254", 1},
        {"::ffff:8.8.8.8", 0},
        {"64:ff9b::a00:1", 1}, /* NAT64 of 10.0.0.1 */
        {"64:ff9b::808:808", 0},
        {"64:ff9b:1::1", 1},
        /* NAT64 embeddings of every private kind are refused; local-use
         * 64:ff9b:1::/48 whatever it embeds */
        {"64:ff9b::127.0.0.1", 1},
        {"64:ff9b::169.254.169.254", 1},
        {"64:ff9b::192.168.1.1", 1},
        {"64:ff9b::100.64.0.1", 1},
        {"64:ff9b::8.8.8.8", 0},
        {"64:ff9b:1::8.8.8.8", 1},
        {"64:ff9b:1:ffff:ffff:ffff:ffff:ffff", 1},
        {"64:ff9b:2::8.8.8.8", 0},
        /* IPv4-translated ::ffff:0:0:0/96 (SIIT), whatever it embeds */
        {"::ffff:0:127.0.0.1", 1},
        {"::ffff:0:10.0.0.1", 1},
        {"::ffff:0:169.254.169.254", 1},
        {"::ffff:0:8.8.8.8", 1},
        {"::ffff:0:0:0", 1},
        {"::fffe:0:808:808", 0},
        {"::1:ffff:0:808:808", 0},
        {"100::1", 1},
        {"100:0:0:1::1", 0},
        {"2001::1", 1}, /* Teredo */
        {"2001:1ff:ffff::1", 1},
        {"2001:200::1", 0},
        {"2001:db8::1", 1},
        {"2001:db9::1", 0},
        {"2002:7f00:1::1", 1}, /* 6to4 of 127.0.0.1 */
        {"2002:c0a8:101::1", 1},
        {"2002:808:808::1", 0},
        {"3fff::1", 1},
        {"3fff:1000::1", 0},
        {"fbff:ffff::1", 0},
        {"fc00::1", 1},
        {"fd12:3456::1", 1},
        {"fe80::1", 1},
        {"febf:ffff::1", 1},
        {"fec0::1", 1},
        {"ff02::1", 1},
        {"2606:4700:4700::1111", 0},
        {"2001:4860:4860::8888", 0},
        {"2a00:1450:4001::200e", 0},
    };
    (void)state;

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        int got = classify(cases[i].addr);
        if (got != cases[i].is_private)
            fail_msg("%s: expected %s, got %s", cases[i].addr, cases[i].is_private ? "private" : "public",
                     got ? "private" : "public");
    }
}

static void test_other_families_fail_closed(void **state)
{
    struct sockaddr_un sun;
    (void)state;

    memset(&sun, 0, sizeof(sun));
    sun.sun_family = AF_UNIX;
    assert_int_equal(netguard_is_private((const struct sockaddr *)&sun), 1);
    assert_int_equal(netguard_is_private(NULL), 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_good),
        cmocka_unit_test(test_parse_bad),
        cmocka_unit_test(test_parse_limits),
        cmocka_unit_test(test_addresses),
        cmocka_unit_test(test_other_families_fail_closed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
