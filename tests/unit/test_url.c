/* Unit tests for engine/base/url.c, the one URL parser, and for the
 * redis:// policy on top of it (redis_url_parse in engine/io/redis_conn.c):
 * credentials and their percent-decoding, database numbers, port bounds,
 * IPv6 literals, and host lists refused with a message that names them. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "redis_conn.h"
#include "url.h"

static void test_url_parts(void **state)
{
    struct url u;
    char err[256];
    (void)state;

    assert_int_equal(url_parse("HTTPS://User:p%40ss%3Aw@Example.COM:8443/a/b?x=1#frag", &u, err, sizeof err), 0);
    assert_string_equal(u.scheme, "https");
    assert_true(u.has_userinfo);
    assert_true(u.has_password);
    assert_string_equal(u.user, "User");
    assert_string_equal(u.password, "p@ss:w");
    assert_string_equal(u.host, "example.com");
    assert_false(u.host_is_ipv6);
    assert_int_equal(u.port, 8443);
    assert_string_equal(u.target, "/a/b?x=1");
    assert_true(u.has_fragment);
    url_wipe(&u);
    assert_string_equal(u.password, "");

    assert_int_equal(url_parse("redis://[2001:DB8::1]", &u, err, sizeof err), 0);
    assert_string_equal(u.host, "2001:db8::1");
    assert_true(u.host_is_ipv6);
    assert_int_equal(u.port, -1);
    assert_string_equal(u.target, "");
    assert_false(u.has_userinfo);
    assert_false(u.has_fragment);

    assert_int_equal(url_parse("x://@h", &u, err, sizeof err), 0);
    assert_true(u.has_userinfo);
    assert_false(u.has_password);
    assert_string_equal(u.user, "");
}

struct bad {
    const char *url;
    const char *why;
};

static void test_url_refused(void **state)
{
    static const struct bad cases[] = {
        {"h1:6379,h2:6379", "malformed URL"},
        {"redis://h1:6379,h2:6379", "host lists (h1:p1,h2:p2) are not supported"},
        {"redis://u:pw@h1:1,h2:2/0", "host lists"},
        {"redis://h1,h2", "host lists"},
        {"redis://:p{w@h", "must be percent-encoded"},
        {"redis://:p@w@h", "must be percent-encoded"},
        {"redis://:p%4@h", "two hex digits"},
        {"redis://:p%00w@h", "%00"},
        {"redis://h:65536", "port out of range"},
        {"redis://h:0", "port out of range"},
        {"redis://h:", "empty port"},
        {"redis://h:6x", "invalid port"},
        {"redis://[::1", "unterminated IPv6"},
        {"redis://[fe80::1%25eth0]:6379", "zone identifiers"},
        {"redis://", "no host"},
        {"redis://:6379", "no host"},
        {"redis://0x7f.1", "ambiguous numeric host"},
        {"1redis://h", "malformed URL"},
    };
    char err[256];
    (void)state;

    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct url u;
        err[0] = '\0';
        if (url_parse(cases[i].url, &u, err, sizeof err) != -1)
            fail_msg("case %zu accepted: %s", i, cases[i].url);
        if (!strstr(err, cases[i].why))
            fail_msg("case %zu (%s): error \"%s\" lacks \"%s\"", i, cases[i].url, err, cases[i].why);
        assert_null(strstr(err, "p{w")); /* never the password */
        assert_string_equal(u.password, "");
    }
}

static void test_url_lengths(void **state)
{
    char url[4096], err[256];
    struct url u;
    (void)state;

    snprintf(url, sizeof url, "redis://:");
    memset(url + strlen(url), 'p', 255);
    snprintf(url + 9 + 255, sizeof url - 9 - 255, "@h");
    assert_int_equal(url_parse(url, &u, err, sizeof err), 0);
    assert_int_equal(strlen(u.password), 255);
    snprintf(url, sizeof url, "redis://:");
    memset(url + strlen(url), 'p', 256);
    snprintf(url + 9 + 256, sizeof url - 9 - 256, "@h");
    assert_int_equal(url_parse(url, &u, err, sizeof err), -1);
    assert_non_null(strstr(err, "password in the URL is longer than 255"));
    assert_int_equal(url_parse(NULL, &u, err, sizeof err), -1);
}

struct redis_good {
    const char *url;
    const char *host;
    int port;
    int db;
    const char *user;
    const char *password;
};

static void test_redis_good(void **state)
{
    static const struct redis_good cases[] = {
        {"redis://127.0.0.1", "127.0.0.1", 6379, 0, "", ""},
        {"redis://127.0.0.1:6379/0", "127.0.0.1", 6379, 0, "", ""},
        {"redis://cache.example:6380/", "cache.example", 6380, 0, "", ""},
        {"redis://r/15", "r", 6379, 15, "", ""},
        {"redis://r:1/1000", "r", 1, 1000, "", ""},
        {"redis://r:65535", "r", 65535, 0, "", ""},
        {"redis://:redis-pw-0b3@cache.example:6379/0", "cache.example", 6379, 0, "", "redis-pw-0b3"},
        {"redis://secret@h", "h", 6379, 0, "", "secret"}, /* no ':': the password (Redis < 6) */
        {"redis://alice:s%2Fcr%40t@h:7000/2", "h", 7000, 2, "alice", "s/cr@t"},
        {"redis://alice:@h", "h", 6379, 0, "alice", ""},
        {"redis://[::1]:6380/3", "::1", 6380, 3, "", ""},
        {"redis://[::1]", "::1", 6379, 0, "", ""},
    };
    char err[256];
    (void)state;

    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct redis_url r;
        err[0] = '\0';
        if (redis_url_parse(cases[i].url, &r, err, sizeof err) != 0)
            fail_msg("%s: refused: %s", cases[i].url, err);
        assert_string_equal(r.host, cases[i].host);
        assert_int_equal(r.port, cases[i].port);
        assert_int_equal(r.db, cases[i].db);
        assert_string_equal(r.user, cases[i].user);
        assert_string_equal(r.password, cases[i].password);
    }
}

static void test_redis_refused(void **state)
{
    static const struct bad cases[] = {
        {"http://h", "redis URL must start with redis://"},
        {"h:6379", "redis URL must start with redis://"},
        {"REDIS://h", "redis URL must start with redis://"}, /* as config.c checks it */
        {"redis://h1:6379,h2:6379", "redis URL: host lists (h1:p1,h2:p2) are not supported"},
        {"redis://h1:26379,h2:26379,h3:26379/0", "host lists"},
        {"redis://h:0", "redis URL: port out of range (1-65535)"},
        {"redis://h:65536", "port out of range"},
        {"redis://h:-1", "invalid port"},
        {"redis://h:", "empty port"},
        {"redis://h/x", "bad database number"},
        {"redis://h/-1", "bad database number"},
        {"redis://h/+1", "bad database number"},
        {"redis://h/1001", "bad database number"},
        {"redis://h/1/2", "bad database number"},
        {"redis://h/0?timeout=1", "unexpected text after the host"},
        {"redis://h/0#x", "unexpected text after the host"},
        {"redis://", "redis URL: URL has no host"},
        {"redis://:pw@", "no host"},
        {"redis://[::1]x", "unexpected character after IPv6"},
        {"redis://ca che", "space, control"},
    };
    char err[256];
    (void)state;

    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct redis_url r;
        err[0] = '\0';
        if (redis_url_parse(cases[i].url, &r, err, sizeof err) != -1)
            fail_msg("case %zu accepted: %s", i, cases[i].url);
        if (!strstr(err, cases[i].why))
            fail_msg("case %zu (%s): error \"%s\" lacks \"%s\"", i, cases[i].url, err, cases[i].why);
        assert_null(strstr(err, "pw"));
        assert_string_equal(r.password, "");
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_url_parts),  cmocka_unit_test(test_url_refused),   cmocka_unit_test(test_url_lengths),
        cmocka_unit_test(test_redis_good), cmocka_unit_test(test_redis_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
