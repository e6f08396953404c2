/* Unit tests for engine/io/redis_cluster.c (hash slots with the published
 * values of the Redis Cluster specification and of CLUSTER KEYSLOT, the key
 * of a formatted command, MOVED/ASK parsing) and for the redis+cluster://
 * URLs of redis_url_parse. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "redis_cluster.h"
#include "redis_conn.h"

static unsigned slot(const char *key)
{
    return redis_cluster_slot(key, strlen(key));
}

static void test_slots(void **state)
{
    (void)state;
    assert_int_equal(slot("123456789"), 0x31C3 & 16383); /* the specification's CRC16 check value */
    assert_int_equal(slot("foo"), 12182);                /* CLUSTER KEYSLOT foo */
    assert_int_equal(slot("bar"), 5061);
    assert_int_equal(slot("hello"), 866);
    /* hash tags: the first {…} that is not empty */
    assert_int_equal(slot("{user1000}.following"), slot("user1000"));
    assert_int_equal(slot("hookd:{inbox}:due"), slot("inbox"));
    assert_int_equal(slot("other:{inbox}:inflight"), slot("hookd:{inbox}:woken"));
    assert_int_equal(slot("foo{}{bar}"), slot("foo{}{bar}")); /* empty tag: the whole key */
    assert_int_not_equal(slot("foo{}{bar}"), slot("bar"));
    assert_int_equal(slot("foo{{bar}}zap"), slot("{bar"));
    assert_int_equal(slot("foo{bar}{zap}"), slot("bar"));
    assert_int_equal(slot("{unclosed"), redis_cluster_slot("{unclosed", 9));
}

static void key_of(const char *want, int argc, const char **argv)
{
    char *cmd = NULL;
    long long len = redisFormatCommandArgv(&cmd, argc, argv, NULL);
    const char *key = NULL;
    size_t klen = 0;
    bool has = redis_cluster_cmd_key(cmd, (size_t)len, &key, &klen);
    if (!want) {
        assert_false(has);
    } else {
        assert_true(has);
        assert_int_equal(klen, strlen(want));
        assert_memory_equal(key, want, klen);
    }
    free(cmd);
}

static void test_cmd_key(void **state)
{
    (void)state;
    key_of("k1", 3, (const char *[]){"ZCARD", "k1", "x"});
    key_of("h:{inbox}:due", 6, (const char *[]){"evalsha", "abc", "2", "h:{inbox}:due", "h:{inbox}:inflight", "1"});
    key_of(NULL, 4, (const char *[]){"EVALSHA", "abc", "0", "arg"});
    key_of(NULL, 1, (const char *[]){"MULTI"});
    key_of(NULL, 1, (const char *[]){"EXEC"});
    key_of(NULL, 2, (const char *[]){"SCRIPT", "LOAD"});
    key_of("chan", 3, (const char *[]){"PUBLISH", "chan", "1"});
    char name[16];
    redis_cluster_cmd_name("*1\r\n$4\r\nexec\r\n", 14, name, sizeof name);
    assert_string_equal(name, "EXEC");
    const char *k;
    size_t kl;
    assert_false(redis_cluster_cmd_key("*2\r\n$5\r\nZCARD\r\n$9\r\nshort", 27, &k, &kl)); /* truncated */
}

static void test_redirect(void **state)
{
    (void)state;
    bool ask;
    int s, port;
    char host[64];
    assert_int_equal(redis_cluster_redirect("MOVED 3999 127.0.0.1:6381", &ask, &s, host, sizeof host, &port), 0);
    assert_false(ask);
    assert_int_equal(s, 3999);
    assert_string_equal(host, "127.0.0.1");
    assert_int_equal(port, 6381);
    assert_int_equal(redis_cluster_redirect("ASK 1 [::1]:7000", &ask, &s, host, sizeof host, &port), 0);
    assert_true(ask);
    assert_string_equal(host, "::1");
    assert_int_equal(redis_cluster_redirect("MOVED 12 :7001", &ask, &s, host, sizeof host, &port), 0);
    assert_string_equal(host, "");
    assert_int_equal(port, 7001);
    assert_int_equal(redis_cluster_redirect("MOVED 16384 h:1", &ask, &s, host, sizeof host, &port), -1);
    assert_int_equal(redis_cluster_redirect("MOVED x h:1", &ask, &s, host, sizeof host, &port), -1);
    assert_int_equal(redis_cluster_redirect("MOVED 1 h", &ask, &s, host, sizeof host, &port), -1);
    assert_int_equal(redis_cluster_redirect("ERR wrong", &ask, &s, host, sizeof host, &port), -1);
}

static redisReply *parse_resp(const char *resp)
{
    redisReader *r = redisReaderCreate();
    void *reply = NULL;
    assert_int_equal(redisReaderFeed(r, resp, strlen(resp)), REDIS_OK);
    assert_int_equal(redisReaderGetReply(r, &reply), REDIS_OK);
    redisReaderFree(r);
    assert_non_null(reply);
    return reply;
}

static void test_parse_slots(void **state)
{
    (void)state;
    struct redis_cluster_range out[4];
    /* two masters (one with a replica), the second announcing no address */
    redisReply *r = parse_resp("*2\r\n"
                               "*4\r\n:0\r\n:8191\r\n*3\r\n$8\r\n10.0.0.1\r\n:7000\r\n$2\r\nid\r\n"
                               "*3\r\n$8\r\n10.0.0.4\r\n:7003\r\n$2\r\nix\r\n"
                               "*3\r\n:8192\r\n:16383\r\n*3\r\n$0\r\n\r\n:7001\r\n$2\r\niy\r\n");
    assert_int_equal(redis_cluster_parse_slots(r, "seed.example", out, 4), 2);
    assert_int_equal(out[0].from, 0);
    assert_int_equal(out[0].to, 8191);
    assert_string_equal(out[0].host, "10.0.0.1");
    assert_int_equal(out[0].port, 7000);
    assert_string_equal(out[1].host, "seed.example");
    assert_int_equal(out[1].port, 7001);
    freeReplyObject(r);
    r = parse_resp("*0\r\n");
    assert_int_equal(redis_cluster_parse_slots(r, "s", out, 4), 0);
    freeReplyObject(r);
    r = parse_resp("*1\r\n*3\r\n:9\r\n:3\r\n*2\r\n$1\r\nh\r\n:1\r\n"); /* from > to */
    assert_int_equal(redis_cluster_parse_slots(r, "s", out, 4), -1);
    freeReplyObject(r);
    r = parse_resp("-ERR This instance has cluster support disabled\r\n");
    assert_int_equal(redis_cluster_parse_slots(r, "s", out, 4), -1);
    freeReplyObject(r);
}

static void test_cluster_urls(void **state)
{
    (void)state;
    struct redis_url r;
    char err[256];
    assert_int_equal(redis_url_parse("redis+cluster://a:7000,b,[::1]:7002", &r, err, sizeof err), 0);
    assert_true(r.cluster);
    assert_false(r.tls);
    assert_false(r.sentinel);
    assert_int_equal(r.nhosts, 3);
    assert_string_equal(r.hosts[1].host, "b");
    assert_int_equal(r.hosts[1].port, 6379);
    assert_string_equal(r.hosts[2].host, "::1");
    assert_string_equal(r.host, "a");
    assert_int_equal(r.port, 7000);
    assert_int_equal(redis_url_parse("rediss+cluster://hookd:p%40w@c.example:6380/0", &r, err, sizeof err), 0);
    assert_true(r.cluster && r.tls);
    assert_string_equal(r.user, "hookd");
    assert_string_equal(r.password, "p@w");
    static const struct {
        const char *url, *why;
    } bad[] = {
        {"redis+cluster://", "empty host list"},
        {"redis+cluster://a:1,,b:2", "empty host in its host list"},
        {"redis+cluster://a:1/3", "database 0 only"},
        {"redis+cluster://a:1/x", "bad database number"},
        {"redis+cluster://a:99999", "cluster URL, host 1: port out of range"},
        {"rediss+cluster://:pw@a:1?x=1", "unexpected text"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = '\0';
        if (redis_url_parse(bad[i].url, &r, err, sizeof err) != -1)
            fail_msg("accepted: %s", bad[i].url);
        if (!strstr(err, bad[i].why))
            fail_msg("%s: \"%s\" lacks \"%s\"", bad[i].url, err, bad[i].why);
        assert_string_equal(r.password, "");
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_slots),       cmocka_unit_test(test_cmd_key),      cmocka_unit_test(test_redirect),
        cmocka_unit_test(test_parse_slots), cmocka_unit_test(test_cluster_urls),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
