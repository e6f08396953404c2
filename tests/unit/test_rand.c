/*
 * test_rand.c — unit tests for engine/base/rand.c and the secrets of
 * engine/shared/token.c built on it: the hex and whsec_ forms, their
 * lengths, and refusals of buffers or sizes that do not fit.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "rand.h"
#include "signature.h"
#include "token.h"

static void hex_secrets(void **state)
{
    (void)state;
    char a[65], b[65];
    assert_int_equal(rand_hex(a, 32), 0);
    assert_int_equal(rand_hex(b, 32), 0);
    assert_int_equal(strlen(a), 64);
    assert_int_equal(strspn(a, "0123456789abcdef"), 64);
    assert_string_not_equal(a, b);
    char big[2 * RAND_HEX_MAX + 3];
    assert_int_equal(rand_hex(big, RAND_HEX_MAX + 1), -1);
}

static void api_tokens(void **state)
{
    (void)state;
    char tok[TOKEN_LEN], sha[TOKEN_SHA_HEX], again[TOKEN_SHA_HEX];
    assert_int_equal(token_new("hk_", tok, sha), 0);
    assert_int_equal(strlen(tok), 3 + 64);
    assert_memory_equal(tok, "hk_", 3);
    token_digest(tok, again);
    assert_string_equal(sha, again);
    assert_int_equal(token_new("a-prefix-too-long", tok, sha), -1);
}

static void whsec_secrets(void **state)
{
    (void)state;
    char s[TOKEN_WHSEC_LEN];
    assert_int_equal(token_whsec_new(s, sizeof s), 0);
    assert_int_equal(strlen(s), TOKEN_WHSEC_LEN - 1);
    struct sig_key key;
    char err[128];
    assert_int_equal(sig_key_decode(SIG_STANDARD_WEBHOOKS, s, &key, err, sizeof err), 0);
    sig_key_clear(&key);
    char small[TOKEN_WHSEC_LEN - 1];
    assert_int_equal(token_whsec_new(small, sizeof small), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(hex_secrets),
        cmocka_unit_test(api_tokens),
        cmocka_unit_test(whsec_secrets),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
