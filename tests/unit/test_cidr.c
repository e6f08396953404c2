/* Unit tests for engine/base/cidr.c: range lists (IPv4, IPv6, mapped
 * addresses, prefix edges from both sides, refused entries) and the client
 * address behind trusted proxies (the right-most untrusted X-Forwarded-For
 * entry, spoofed entries to its left ignored, an untrusted peer's header
 * ignored, garbage failing closed). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <string.h>

#include "cidr.h"

static struct cidr_addr A(const char *text) {
    struct cidr_addr a;
    assert_int_equal(cidr_addr_parse(text, strlen(text), &a), 0);
    return a;
}

static bool
in(const struct cidr_list *l, const char *text)
{
    struct cidr_addr a = A(text);
    return cidr_list_contains(l, &a);
}

static void test_parse_and_contains(void **state)
{
    (void)state;
    struct cidr_list l = {0};
    char err[256];
    assert_int_equal(cidr_list_parse("10.0.0.0/8, 192.0.2.7 2001:db8::/32,::ffff:172.16.0.0/108", &l, err, sizeof err),
                     0);
    assert_int_equal(l.n, 4);
    assert_true(in(&l, "10.0.0.0"));
    assert_true(in(&l, "10.255.255.255"));
    assert_false(in(&l, "11.0.0.0"));
    assert_false(in(&l, "9.255.255.255"));
    assert_true(in(&l, "192.0.2.7"));
    assert_false(in(&l, "192.0.2.8"));
    assert_true(in(&l, "2001:db8:ffff::1"));
    assert_false(in(&l, "2001:db9::1"));
    /* a mapped peer address is the IPv4 address */
    assert_true(in(&l, "::ffff:10.1.2.3"));
    assert_true(in(&l, "172.16.0.1"));
    assert_true(in(&l, "172.31.255.255"));
    assert_false(in(&l, "172.32.0.0"));
    assert_true(in(&l, "[2001:db8::5]"));
    cidr_list_free(&l);
    assert_int_equal(l.n, 0);

    assert_int_equal(cidr_list_parse("0.0.0.0/0", &l, err, sizeof err), 0);
    assert_true(in(&l, "203.0.113.9"));
    assert_false(in(&l, "::1")); /* IPv4's everything is not IPv6's */
    cidr_list_free(&l);
    assert_int_equal(cidr_list_parse("2001:db8::1/127", &l, err, sizeof err), -1); /* host bits */
    assert_non_null(strstr(err, "prefix"));
    assert_int_equal(cidr_list_parse("10.0.0.0/33", &l, err, sizeof err), -1);
    assert_int_equal(cidr_list_parse("10.0.0.0/", &l, err, sizeof err), -1);
    assert_int_equal(cidr_list_parse("10.0.0/8", &l, err, sizeof err), -1);
    assert_int_equal(cidr_list_parse("example.com", &l, err, sizeof err), -1);
    assert_int_equal(cidr_list_parse("fe80::1%eth0", &l, err, sizeof err), -1);
    assert_int_equal(cidr_list_parse(" , ", &l, err, sizeof err), -1);
    assert_int_equal(cidr_list_parse("10.0.0.0/8, bad", &l, err, sizeof err), -1);
    assert_null(l.v);
}

static void test_client_addr(void **state)
{
    (void)state;
    struct cidr_list trusted = {0};
    struct cidr_addr peer, out;
    char err[256], buf[64];
    assert_int_equal(cidr_list_parse("10.0.0.0/8, 2001:db8:1::/48", &trusted, err, sizeof err), 0);

    /* an untrusted peer: its X-Forwarded-For is ignored */
    peer = A("203.0.113.5");
    assert_int_equal(cidr_client_addr(&peer, "198.51.100.1", &trusted, &out), 0);
    cidr_addr_format(&out, buf, sizeof buf);
    assert_string_equal(buf, "203.0.113.5");
    /* no trusted proxies at all */
    peer = A("10.0.0.1");
    assert_int_equal(cidr_client_addr(&peer, "198.51.100.1", NULL, &out), 0);
    cidr_addr_format(&out, buf, sizeof buf);
    assert_string_equal(buf, "10.0.0.1");
    /* a trusted peer: the right-most untrusted entry; the spoofed ones left of it do not count */
    assert_int_equal(cidr_client_addr(&peer, "1.2.3.4, 198.51.100.1, 10.2.2.2", &trusted, &out), 0);
    cidr_addr_format(&out, buf, sizeof buf);
    assert_string_equal(buf, "198.51.100.1");
    /* ports and brackets as load balancers write them, IPv6 */
    assert_int_equal(cidr_client_addr(&peer, "198.51.100.2:4711", &trusted, &out), 0);
    cidr_addr_format(&out, buf, sizeof buf);
    assert_string_equal(buf, "198.51.100.2");
    assert_int_equal(cidr_client_addr(&peer, "[2001:db8:2::9]:443, 2001:db8:1::7", &trusted, &out), 0);
    cidr_addr_format(&out, buf, sizeof buf);
    assert_string_equal(buf, "2001:db8:2::9");
    /* every hop trusted: the left-most */
    assert_int_equal(cidr_client_addr(&peer, "10.9.9.9,,10.8.8.8", &trusted, &out), 0);
    cidr_addr_format(&out, buf, sizeof buf);
    assert_string_equal(buf, "10.9.9.9");
    /* no header: the peer */
    assert_int_equal(cidr_client_addr(&peer, NULL, &trusted, &out), 0);
    cidr_addr_format(&out, buf, sizeof buf);
    assert_string_equal(buf, "10.0.0.1");
    /* garbage where the client should be fails closed; garbage left of it does not matter */
    assert_int_equal(cidr_client_addr(&peer, "198.51.100.1, unknown", &trusted, &out), -1);
    assert_int_equal(cidr_client_addr(&peer, "unknown, 198.51.100.1", &trusted, &out), 0);
    cidr_list_free(&trusted);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_and_contains),
        cmocka_unit_test(test_client_addr),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
