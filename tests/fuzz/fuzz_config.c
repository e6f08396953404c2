/*
 * fuzz_config.c — libFuzzer target for the config loader (engine/core/config.h):
 * libinih plus hookd's own line reader, section and key tables, value
 * parsers, state-machine building (engine/base/machine.h), secret decoding
 * (engine/core/signature.h) and whole-file validation. The input is the whole
 * INI file. It is written to a memfd and loaded through its
 * /proc/self/fd/N path, so config_load() runs unchanged, with fopen(). A
 * loaded config has its lookups exercised with names taken from it and is
 * printed with config_print(); when that text loads again it must print
 * the same (the printout is a faithful config file). A refused file must
 * yield NULL and a NUL-terminated "PATH:LINE: message" that never contains
 * the value of an `env:` secret. A few environment variables are set so
 * that the `env:NAME` secrets in the seeds resolve. Leaks on any error path
 * are findings too.
 */
/* The config loader checks the Redis URL with the Redis layer's own
 * parser, which reaches far: so every engine source is linked. */
/* fuzz.sh links: ALL */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "config.h"
#include "fuzz_check.h"
#include "log.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

static int memfd = -1;
static char path[64];

/* Secrets the seeds name as env:NAME; their values must never be echoed. */
static const char *const env_vars[][2] = {
    {"HOOKD_ADMIN_TOKEN", "admintoken-fuzz-7c21"},
    {"STRIPE_WEBHOOK_SECRET", "whsec_stripe-fuzz-0b4e"},
    {"HOOKD_FUZZ_DB", "postgresql://hookd:dbpass-fuzz-91aa@127.0.0.1/hookd"},
    {"HOOKD_FUZZ_SW", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"},
};

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    for (size_t i = 0; i < sizeof env_vars / sizeof env_vars[0]; i++)
        setenv(env_vars[i][0], env_vars[i][1], 1);
    log_min_level = LOG_ERROR; /* the loader does not log today; keep it quiet if it starts */
    memfd = memfd_create("hookd-fuzz-config", MFD_CLOEXEC);
    if (memfd < 0) {
        perror("fuzz_config: memfd_create");
        abort();
    }
    snprintf(path, sizeof path, "/proc/self/fd/%d", memfd);
    return 0;
}

static void write_input(const uint8_t *data, size_t size)
{
    size_t off = 0;

    if (ftruncate(memfd, 0) != 0)
        abort();
    while (off < size) {
        ssize_t n = pwrite(memfd, data + off, size - off, (off_t)off);

        if (n <= 0)
            abort();
        off += (size_t)n;
    }
}

/* config_print()'s text for c; caller frees. */
static char *print_text(const struct hookd_config *c, size_t *len)
{
    char *text = NULL;
    FILE *f = open_memstream(&text, len);

    if (f == NULL)
        abort();
    config_print(c, f);
    if (fclose(f) != 0)
        abort();
    return text;
}

/* The printed config, loaded again, must print the same text: what
 * config_print() writes (`hookd config check`) is a config file that means
 * what was loaded. Reloading may fail for reasons that are not bugs (a
 * literal standard-webhooks secret prints as <redacted>, which is not
 * base64; normalised lines may outgrow the line limit), so only a reload
 * that succeeds is compared. */
static void check_print_fixed_point(const struct hookd_config *c)
{
    size_t len1 = 0, len2 = 0;
    char *one = print_text(c, &len1), *two;
    char err[512];
    struct hookd_config *again;

    write_input((const uint8_t *)one, len1);
    again = config_load(path, err, sizeof err);
    if (again != NULL) {
        two = print_text(again, &len2);
        CHECK(len1 == len2 && memcmp(one, two, len1) == 0);
        free(two);
        config_unref(again);
    }
    free(one);
}

/* Lookups with the names the config itself holds, and some it does not. */
static void exercise(struct hookd_config *c)
{
    CHECK(config_ref(c) == c);
    config_unref(c);
    for (size_t i = 0; i < c->npartners; i++) {
        const struct partner_config *p = &c->partners[i];

        CHECK(config_partner(c, p->name) == p);
        CHECK(p->nsecrets >= 1 && p->nsecrets <= 8);
        for (size_t k = 0; k < p->nsecrets; k++)
            CHECK(p->keys[k].bytes != NULL && p->keys[k].len > 0);
        (void)config_machine_for(c, p->entity_type, "order.paid");
        (void)config_retry_for_inbox(c, p->name, "order.paid");
    }
    for (size_t i = 0; i < c->nmachines; i++) {
        const struct machine_config *m = &c->machines[i];

        CHECK(config_machine(c, m->name) == m);
        CHECK(m->table != NULL && m->id_column != NULL && m->state_column != NULL);
        for (size_t k = 0; k < m->nemits; k++)
            CHECK(config_machine_for(c, NULL, m->emits[k].event) == m);
    }
    for (size_t i = 0; i < c->noverrides; i++) {
        const struct retry_override *o = &c->overrides[i];
        const struct backoff_policy *p = o->scope == RETRY_ENDPOINT
                                             ? config_retry_for_endpoint(c, o->pattern)
                                             : config_retry_for_inbox(c, o->pattern, o->pattern);

        CHECK(p != NULL && p->max_attempts >= 1);
        CHECK(config_glob_match(o->pattern, o->pattern)); /* '*' also matches itself */
    }
    CHECK(config_partner(c, "no-such-partner-\x01") == NULL);
    (void)config_retry_for_endpoint(c, "slow-partner");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[512];
    struct hookd_config *c;

    write_input(data, size);
    memset(err, 'x', sizeof err);
    err[sizeof err - 1] = '\0';
    c = config_load(path, err, sizeof err);
    if (c == NULL) {
        CHECK(memchr(err, '\0', sizeof err) != NULL);
        CHECK(strncmp(err, path, strlen(path)) == 0 && err[strlen(path)] == ':');
        /* Unless the file itself spells the value out (a literal is not a
         * secret), it must not appear in the message. */
        for (size_t i = 0; i < sizeof env_vars / sizeof env_vars[0]; i++)
            if (memmem(data, size, env_vars[i][1], strlen(env_vars[i][1])) == NULL)
                CHECK(strstr(err, env_vars[i][1]) == NULL);
        return 0;
    }
    CHECK(c->refs == 1 && c->database.text != NULL && c->redis.text != NULL);
    exercise(c);
    check_print_fixed_point(c);
    config_unref(c);
    return 0;
}
