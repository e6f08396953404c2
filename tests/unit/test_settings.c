/*
 * test_settings.c — unit tests for engine/core/settings.c: the delivery
 * settings' names and words, the check the API, the CLI and the portal
 * apply to a settings object, and resolution through the three layers
 * (endpoint, tenant, the [hookd] section of a loaded config), including
 * stored words that are not the setting's.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "config.h"
#include "settings.h"

static char dir[] = "/tmp/hookd-settings-XXXXXX";
static char path[256];

/* A config of two required keys and the given [hookd] lines. */
static struct hookd_config *load(const char *extra, char *err, size_t errlen)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f, "[hookd]\ndatabase = postgresql:///x\nredis = redis://127.0.0.1:1\n%s", extra);
    assert_int_equal(fclose(f), 0);
    return config_load(path, err, errlen);
}

static int check(const char *text, bool nulls_ok, char *err, size_t errlen)
{
    json_t *obj = json_loads(text, JSON_DECODE_ANY, NULL);
    assert_non_null(obj);
    err[0] = '\0';
    int rc = settings_check(obj, nulls_ok, err, errlen);
    json_decref(obj);
    return rc;
}

static void test_words(void **state)
{
    (void)state;
    char err[256];
    assert_string_equal(settings_name(SETTINGS_SIGNATURE_HEADERS), "signature_headers");
    assert_int_equal(settings_parse(SETTINGS_SIGNATURE_HEADERS, "both", err, sizeof err), SETTINGS_SIG_BOTH);
    assert_int_equal(settings_parse(SETTINGS_SIGNATURE_HEADERS, "Svix", err, sizeof err), SETTINGS_SIG_SVIX);
    assert_int_equal(settings_parse(SETTINGS_SIGNATURE_HEADERS, "webhook", err, sizeof err), SETTINGS_SIG_WEBHOOK);
    assert_int_equal(settings_parse(SETTINGS_SIGNATURE_HEADERS, "standard", err, sizeof err), -1);
    assert_non_null(strstr(err, "signature_headers must be both, svix or webhook, not 'standard'"));
    assert_string_equal(settings_word(SETTINGS_SIGNATURE_HEADERS, SETTINGS_SIG_WEBHOOK), "webhook");
    assert_null(settings_word(SETTINGS_SIGNATURE_HEADERS, 7));
}

static void test_check(void **state)
{
    (void)state;
    char err[256];
    assert_int_equal(check("{}", false, err, sizeof err), 0);
    assert_int_equal(check("{\"signature_headers\": \"svix\"}", false, err, sizeof err), 0);
    assert_int_equal(check("{\"signature_headers\": null}", true, err, sizeof err), 0); /* a removal */
    assert_int_equal(check("{\"signature_headers\": null}", false, err, sizeof err), -1);
    assert_int_equal(check("{\"signature_headers\": \"both \"}", false, err, sizeof err), -1);
    assert_non_null(strstr(err, "signature_headers must be both, svix or webhook"));
    assert_int_equal(check("{\"signature_headers\": 2}", false, err, sizeof err), -1);
    assert_int_equal(check("{\"signatureHeaders\": \"svix\"}", false, err, sizeof err), -1);
    assert_non_null(strstr(err, "no setting is named 'signatureHeaders' (the settings are: signature_headers)"));
    assert_int_equal(check("[\"svix\"]", false, err, sizeof err), -1);
    assert_non_null(strstr(err, "object"));
}

/* Endpoint beats tenant beats config; an absent key or a bad word falls
 * through to the next layer. */
static void test_resolve_layers(void **state)
{
    (void)state;
    char err[512];
    struct hookd_config *cfg = load("signature_headers = svix\n", err, sizeof err);
    if (!cfg)
        fail_msg("refused: %s", err);
    const enum settings_id id = SETTINGS_SIGNATURE_HEADERS;
    enum settings_layer from;
    const char *ep = "{\"signature_headers\": \"webhook\"}", *tenant = "{\"signature_headers\": \"both\"}";
    assert_int_equal(settings_resolve(cfg, id, ep, tenant, &from), SETTINGS_SIG_WEBHOOK);
    assert_int_equal(from, SETTINGS_FROM_ENDPOINT);
    assert_int_equal(settings_resolve(cfg, id, NULL, tenant, &from), SETTINGS_SIG_BOTH);
    assert_int_equal(from, SETTINGS_FROM_TENANT);
    assert_int_equal(settings_resolve(cfg, id, "{}", "", &from), SETTINGS_SIG_SVIX);
    assert_int_equal(from, SETTINGS_FROM_CONFIG);
    assert_int_equal(settings_resolve(cfg, id, "{\"other\": 1}", NULL, &from), SETTINGS_SIG_SVIX);
    assert_int_equal(from, SETTINGS_FROM_CONFIG);
    /* stored by hand: passed over */
    assert_int_equal(settings_resolve(cfg, id, "{\"signature_headers\": \"nope\"}", tenant, &from), SETTINGS_SIG_BOTH);
    assert_int_equal(from, SETTINGS_FROM_TENANT);
    assert_int_equal(settings_resolve(cfg, id, "not json", "{\"signature_headers\": 3}", NULL), SETTINGS_SIG_SVIX);
    config_unref(cfg);
}

/* The config's default is both; a bad word is refused with its line. */
static void test_config_key(void **state)
{
    (void)state;
    char err[512];
    struct hookd_config *cfg = load("", err, sizeof err);
    if (!cfg)
        fail_msg("refused: %s", err);
    assert_int_equal(settings_resolve(cfg, SETTINGS_SIGNATURE_HEADERS, NULL, NULL, NULL), SETTINGS_SIG_BOTH);
    config_unref(cfg);
    assert_null(load("signature_headers = standard\n", err, sizeof err));
    assert_non_null(strstr(err, ":4:"));
    assert_non_null(strstr(err, "signature_headers must be both, svix or webhook"));
}

static int setup(void **state)
{
    (void)state;
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/hookd.conf", dir);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    unlink(path);
    rmdir(dir);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_words),
        cmocka_unit_test(test_check),
        cmocka_unit_test(test_resolve_layers),
        cmocka_unit_test(test_config_key),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
