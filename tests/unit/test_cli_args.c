/*
 * test_cli_args.c — unit tests for engine/cli/cli_args.c, the one parser of
 * every `hookd` command line, against a small command tree shaped like the
 * real one (a leaf at the top, a group with leaves, a group of one): global
 * options before, between and after the command words; `--opt=value`,
 * `-cFILE`; `--`; unknown options and missing values (errors that name
 * them); a repeated option (same value fine, different value an error);
 * aliases; positional counts; and every help form, with its printed usage.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cli_args.h"

static int run_nothing(const struct cli_args *a, const struct hookd_config *cfg)
{
    (void)a, (void)cfg;
    return 0;
}

static const struct cli_args_opt add_opts[] = {
    {"url", "URL", "where deliveries go", NULL},
    {"name", "N", "the endpoint's name", NULL},
    {"dry-run", NULL, "change nothing", NULL},
    {0},
};
static const struct cli_args_cmd add_cmd = {
    .name = "add",
    .synopsis = "--url URL [--name N]",
    .summary = "add one",
    .opts = add_opts,
    .run = run_nothing,
    .config = true,
};
static const struct cli_args_cmd show_cmd = {
    .name = "show",
    .synopsis = "NAME",
    .summary = "show one",
    .run = run_nothing,
    .min_args = 1,
    .max_args = 1,
    .config = true,
};
static const struct cli_args_opt replay_opts[] = {
    {"partner", "P", "only this partner", NULL},
    {"endpoint", "P", NULL, "partner"},
    {0},
};
static const struct cli_args_cmd replay_cmd = {
    .name = "replay",
    .synopsis = "ID...",
    .summary = "replay some",
    .opts = replay_opts,
    .run = run_nothing,
    .max_args = -1,
    .config = true,
};
static const struct cli_args_cmd *const endpoint_subs[] = {&add_cmd, &show_cmd, &replay_cmd, NULL};
static const struct cli_args_cmd endpoint_cmd = {.name = "endpoint", .summary = "endpoints", .subs = endpoint_subs};

static const struct cli_args_opt status_opts[] = {{"watch", NULL, "again and again", NULL}, {0}};
static const struct cli_args_cmd status_cmd = {
    .name = "status",
    .synopsis = "[--json] [--watch]",
    .summary = "the cluster",
    .opts = status_opts,
    .run = run_nothing,
    .config = true,
};
static const struct cli_args_cmd check_cmd = {
    .name = "check",
    .synopsis = "[FILE]",
    .summary = "check a config",
    .run = run_nothing,
    .max_args = 1,
};
static const struct cli_args_cmd *const config_subs[] = {&check_cmd, NULL};
static const struct cli_args_cmd config_cmd = {.name = "config", .summary = "the config", .subs = config_subs};

static const struct cli_args_cmd *const top[] = {&status_cmd, &endpoint_cmd, &config_cmd, NULL};
static const struct cli_args_cmd root = {.name = "hookd", .summary = "the test tree", .subs = top};

static char err[512];

/* Parses a NULL-terminated list of words after "hookd". */
static struct cli_args *parse(const char *first, ...)
{
    char *argv[32] = {"hookd"};
    int argc = 1;
    va_list ap;
    va_start(ap, first);
    for (const char *w = first; w && argc < 31; w = va_arg(ap, const char *))
        argv[argc++] = (char *)w;
    va_end(ap);
    return cli_args_parse(&root, argc, argv, err, sizeof err);
}

/* Expects an error (NULL) whose message contains each of the fragments. */
static void assert_error(struct cli_args *a, const char *frag1, const char *frag2)
{
    assert_null(a);
    assert_non_null(strstr(err, frag1));
    if (frag2)
        assert_non_null(strstr(err, frag2));
    assert_null(strchr(err, '\n')); /* one line */
}

static int setup(void **state)
{
    (void)state;
    unsetenv("HOOKD_CONFIG");
    return 0;
}

static void test_config_before_between_and_after_the_words(void **state)
{
    (void)state;
    const char *forms[][8] = {
        {"-c", "prod.conf", "endpoint", "add", "--url", "http://x", NULL},
        {"endpoint", "-c", "prod.conf", "add", "--url", "http://x", NULL},
        {"endpoint", "add", "-c", "prod.conf", "--url", "http://x", NULL},
        {"endpoint", "add", "--url", "http://x", "-c", "prod.conf", NULL},
        {"endpoint", "add", "--url", "http://x", "--config", "prod.conf", NULL},
        {"endpoint", "add", "--config=prod.conf", "--url", "http://x", NULL},
        {"--config", "prod.conf", "endpoint", "add", "--url=http://x", NULL},
        {"endpoint", "add", "-cprod.conf", "--url", "http://x", NULL},
    };
    for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++) {
        const char **f = forms[i];
        struct cli_args *a = parse(f[0], f[1], f[2], f[3], f[4], f[5], f[6], (const char *)NULL);
        assert_non_null(a);
        assert_string_equal(a->config, "prod.conf");
        assert_true(a->config_given);
        assert_ptr_equal(a->cmd, &add_cmd);
        assert_int_equal(a->depth, 3);
        assert_string_equal(cli_args_value(a, "url"), "http://x");
        assert_null(cli_args_value(a, "name"));
        assert_false(cli_args_flag(a, "dry-run"));
        assert_int_equal(a->nargs, 0);
        cli_args_free(a);
    }
}

static void test_json_and_config_after_a_one_word_command(void **state)
{
    (void)state;
    struct cli_args *a = parse("status", "--watch", "-c", "other.conf", "--json", (const char *)NULL);
    assert_non_null(a);
    assert_ptr_equal(a->cmd, &status_cmd);
    assert_true(a->json);
    assert_true(cli_args_flag(a, "watch"));
    assert_string_equal(a->config, "other.conf");
    cli_args_free(a);

    a = parse("--json", "endpoint", "show", "shop", (const char *)NULL);
    assert_non_null(a);
    assert_true(a->json);
    assert_int_equal(a->nargs, 1);
    assert_string_equal(a->args[0], "shop");
    cli_args_free(a);
}

static void test_default_config(void **state)
{
    (void)state;
    struct cli_args *a = parse("status", (const char *)NULL);
    assert_non_null(a);
    assert_string_equal(a->config, "hookd.conf");
    assert_false(a->config_given);
    cli_args_free(a);

    setenv("HOOKD_CONFIG", "/etc/hookd/env.conf", 1);
    a = parse("status", (const char *)NULL);
    assert_non_null(a);
    assert_string_equal(a->config, "/etc/hookd/env.conf");
    cli_args_free(a);
    a = parse("status", "-c", "named.conf", (const char *)NULL); /* -c beats the environment */
    assert_non_null(a);
    assert_string_equal(a->config, "named.conf");
    cli_args_free(a);
    unsetenv("HOOKD_CONFIG");
}

static void test_options_among_positional_arguments(void **state)
{
    (void)state;
    struct cli_args *a = parse("endpoint", "replay", "id1", "--partner", "shop", "id2", "-c", "x.conf", "id3",
                               (const char *)NULL);
    assert_non_null(a);
    assert_int_equal(a->nargs, 3);
    assert_string_equal(a->args[0], "id1");
    assert_string_equal(a->args[1], "id2");
    assert_string_equal(a->args[2], "id3");
    assert_string_equal(cli_args_value(a, "partner"), "shop");
    assert_string_equal(a->config, "x.conf");
    cli_args_free(a);
}

static void test_double_dash_ends_options(void **state)
{
    (void)state;
    struct cli_args *a = parse("endpoint", "show", "-c", "x.conf", "--", "--json", (const char *)NULL);
    assert_non_null(a);
    assert_int_equal(a->nargs, 1);
    assert_string_equal(a->args[0], "--json");
    assert_false(a->json);
    assert_string_equal(a->config, "x.conf");
    cli_args_free(a);

    /* after --, even -c is an argument: here one too many */
    assert_error(parse("endpoint", "show", "--", "shop", "-c", "x.conf", (const char *)NULL), "unexpected argument",
                 "'-c'");
    /* and command words may follow -- too */
    a = parse("--", "endpoint", "show", "-", (const char *)NULL);
    assert_non_null(a);
    assert_ptr_equal(a->cmd, &show_cmd);
    assert_string_equal(a->args[0], "-"); /* a lone dash is an argument, not an option */
    cli_args_free(a);
}

static void test_unknown_option_is_named(void **state)
{
    (void)state;
    assert_error(parse("endpoint", "add", "--bogus", (const char *)NULL),
                 "hookd endpoint add: unknown option '--bogus'", "hookd help endpoint add");
    assert_error(parse("endpoint", "add", "--bogus=1", "--url", "u", (const char *)NULL), "unknown option '--bogus'",
                 NULL);
    assert_error(parse("-x", "status", (const char *)NULL), "hookd: unknown option '-x'", NULL);
    assert_error(parse("status", "-cx", "--frob", (const char *)NULL), "hookd status: unknown option '--frob'", NULL);
    /* a leaf's option is not a global one: not before the subcommand, not on another command */
    assert_error(parse("endpoint", "--url", "u", "add", (const char *)NULL), "unknown option '--url'",
                 "subcommand before its options");
    assert_error(parse("status", "--url", "u", (const char *)NULL), "unknown option '--url'", NULL);
    /* no abbreviations: --dry is not --dry-run */
    assert_error(parse("endpoint", "add", "--dry", (const char *)NULL), "unknown option '--dry'", NULL);
}

static void test_missing_value_is_named(void **state)
{
    (void)state;
    assert_error(parse("endpoint", "add", "--url", (const char *)NULL), "option '--url' needs a value", "URL");
    assert_error(parse("status", "-c", (const char *)NULL), "option '-c' needs a value", NULL);
    assert_error(parse("status", "--config", (const char *)NULL), "option '--config' needs a value", NULL);
    assert_error(parse("status", "--config=", (const char *)NULL), "option '--config' needs a value", NULL);
    /* the next word is an option, not the value: never a config named "--json" */
    assert_error(parse("endpoint", "add", "-c", "--json", "--url", "u", (const char *)NULL),
                 "option '-c' needs a value", NULL);
    assert_error(parse("endpoint", "add", "--url", "--name", "n", (const char *)NULL), "'--url' needs a value", NULL);
    /* a value beginning with a dash is written with = */
    struct cli_args *a = parse("endpoint", "add", "--url=-odd", (const char *)NULL);
    assert_non_null(a);
    assert_string_equal(cli_args_value(a, "url"), "-odd");
    cli_args_free(a);
    /* a flag takes none */
    assert_error(parse("status", "--json=yes", (const char *)NULL), "option '--json' takes no value", NULL);
    assert_error(parse("status", "--watch=1", (const char *)NULL), "option '--watch' takes no value", NULL);
}

static void test_repeated_option(void **state)
{
    (void)state;
    /* flags and equal values: harmless */
    struct cli_args *a = parse("-c", "a.conf", "status", "--json", "--json", "--watch", "--watch", "-c", "a.conf",
                               (const char *)NULL);
    assert_non_null(a);
    assert_string_equal(a->config, "a.conf");
    assert_true(a->json && cli_args_flag(a, "watch"));
    cli_args_free(a);
    /* two different files: the user named two databases; refuse to pick one */
    assert_error(parse("-c", "a.conf", "endpoint", "add", "-c", "b.conf", (const char *)NULL),
                 "option '-c' given twice", "'a.conf' and 'b.conf'");
    assert_error(parse("endpoint", "add", "--url", "u1", "--url=u2", (const char *)NULL), "option '--url' given twice",
                 NULL);
    /* an alias fills the same slot */
    a = parse("endpoint", "replay", "--endpoint", "shop", "--partner", "shop", "id", (const char *)NULL);
    assert_non_null(a);
    assert_string_equal(cli_args_value(a, "partner"), "shop");
    cli_args_free(a);
    assert_error(parse("endpoint", "replay", "--endpoint", "a", "--partner", "b", (const char *)NULL), "given twice",
                 NULL);
}

static void test_command_words_and_positional_counts(void **state)
{
    (void)state;
    assert_error(parse((const char *)NULL), "hookd: missing command", NULL);
    assert_error(parse("-c", "x.conf", (const char *)NULL), "missing command", NULL);
    assert_error(parse("frobnicate", (const char *)NULL), "hookd: unknown command 'frobnicate'", NULL);
    assert_error(parse("endpoint", (const char *)NULL), "hookd endpoint: missing subcommand", NULL);
    assert_error(parse("endpoint", "frob", (const char *)NULL), "hookd endpoint: unknown subcommand 'frob'",
                 "hookd help endpoint");
    assert_error(parse("endpoint", "show", (const char *)NULL), "hookd endpoint show: missing NAME",
                 "usage: hookd endpoint show NAME");
    assert_error(parse("endpoint", "show", "a", "b", (const char *)NULL), "unexpected argument 'b'", NULL);
    assert_error(parse("status", "now", (const char *)NULL), "hookd status: unexpected argument 'now'", NULL);
    /* an unknown option is reported first, even if a bad command word follows */
    assert_error(parse("--frob", "x", "status", (const char *)NULL), "unknown option '--frob'", NULL);

    struct cli_args *a = parse("config", "check", (const char *)NULL);
    assert_non_null(a);
    assert_int_equal(a->nargs, 0);
    cli_args_free(a);
    a = parse("config", "-c", "x.conf", "check", "y.conf", (const char *)NULL);
    assert_non_null(a);
    assert_ptr_equal(a->cmd, &check_cmd);
    assert_string_equal(a->args[0], "y.conf");
    assert_string_equal(a->config, "x.conf");
    char name[64];
    assert_string_equal(cli_args_command_name(a, name, sizeof name), "hookd config check");
    cli_args_free(a);
    /* a positional "help" after the command is an argument, not help */
    a = parse("endpoint", "show", "help", (const char *)NULL);
    assert_non_null(a);
    assert_false(a->help);
    assert_string_equal(a->args[0], "help");
    cli_args_free(a);
}

static void test_version(void **state)
{
    (void)state;
    struct cli_args *a = parse("--version", (const char *)NULL);
    assert_non_null(a);
    assert_true(a->version);
    cli_args_free(a);
    a = parse("-V", (const char *)NULL);
    assert_non_null(a);
    assert_true(a->version);
    cli_args_free(a);
}

/* The usage the parse would print, in a string (freed by the caller). */
static char *help_text(struct cli_args *a)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&buf, &len);
    assert_non_null(out);
    cli_args_print_help(a, out);
    fclose(out);
    return buf;
}

static void assert_help_for(struct cli_args *a, const struct cli_args_cmd *cmd, const char *usage_line)
{
    assert_non_null(a);
    assert_true(a->help);
    assert_ptr_equal(a->cmd, cmd);
    char *text = help_text(a);
    assert_non_null(strstr(text, usage_line));
    assert_non_null(strstr(text, "-c, --config FILE"));
    free(text);
    cli_args_free(a);
}

static void test_help_forms(void **state)
{
    (void)state;
    const char *add = "usage: hookd endpoint add --url URL [--name N]\n";
    assert_help_for(parse("help", "endpoint", "add", (const char *)NULL), &add_cmd, add);
    assert_help_for(parse("endpoint", "add", "--help", (const char *)NULL), &add_cmd, add);
    assert_help_for(parse("endpoint", "add", "-h", (const char *)NULL), &add_cmd, add);
    assert_help_for(parse("endpoint", "--help", "add", (const char *)NULL), &add_cmd, add);
    assert_help_for(parse("-h", "endpoint", "add", (const char *)NULL), &add_cmd, add);
    assert_help_for(parse("-c", "x", "help", "endpoint", "add", (const char *)NULL), &add_cmd, add);
    /* help forgives option errors (the user is asking how to write them) and missing arguments */
    assert_help_for(parse("endpoint", "add", "--bogus", "--url", "--help", (const char *)NULL), &add_cmd, add);
    assert_help_for(parse("endpoint", "show", "--help", (const char *)NULL), &show_cmd,
                    "usage: hookd endpoint show NAME\n");
    assert_help_for(parse("help", "endpoint", (const char *)NULL), &endpoint_cmd,
                    "usage: hookd endpoint [OPTIONS] SUBCOMMAND");
    assert_help_for(parse("endpoint", "--help", (const char *)NULL), &endpoint_cmd, "endpoint show NAME");
    assert_help_for(parse("status", "--help", (const char *)NULL), &status_cmd, "--watch");
    assert_help_for(parse("help", (const char *)NULL), &root, "usage: hookd [OPTIONS] COMMAND");
    assert_help_for(parse("--help", (const char *)NULL), &root, "endpoint add --url URL");
    assert_help_for(parse("help", "help", (const char *)NULL), &root, "help [COMMAND [SUBCOMMAND]]");
    /* but a command word must exist */
    assert_error(parse("help", "frob", (const char *)NULL), "unknown command 'frob'", NULL);
    assert_error(parse("endpoint", "frob", "--help", (const char *)NULL), "unknown subcommand 'frob'", NULL);
}

static void test_help_lists_options_and_aliases(void **state)
{
    (void)state;
    struct cli_args *a = parse("help", "endpoint", "replay", (const char *)NULL);
    assert_non_null(a);
    char *text = help_text(a);
    assert_non_null(strstr(text, "--partner P"));
    assert_non_null(strstr(text, "only this partner"));
    assert_non_null(strstr(text, "--endpoint P"));
    assert_non_null(strstr(text, "the same as --partner"));
    assert_non_null(strstr(text, "--json"));
    assert_non_null(strstr(text, "-h, --help"));
    free(text);
    cli_args_free(a);

    a = parse("help", (const char *)NULL); /* the root lists every leaf with its words */
    assert_non_null(a);
    text = help_text(a);
    for (const char *s = "status [--json] [--watch]\0endpoint add\0endpoint show NAME\0endpoint replay ID...\0"
                         "config check [FILE]\0";
         *s; s += strlen(s) + 1)
        assert_non_null(strstr(text, s));
    free(text);
    cli_args_free(a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_config_before_between_and_after_the_words, setup),
        cmocka_unit_test_setup(test_json_and_config_after_a_one_word_command, setup),
        cmocka_unit_test_setup(test_default_config, setup),
        cmocka_unit_test_setup(test_options_among_positional_arguments, setup),
        cmocka_unit_test_setup(test_double_dash_ends_options, setup),
        cmocka_unit_test_setup(test_unknown_option_is_named, setup),
        cmocka_unit_test_setup(test_missing_value_is_named, setup),
        cmocka_unit_test_setup(test_repeated_option, setup),
        cmocka_unit_test_setup(test_command_words_and_positional_counts, setup),
        cmocka_unit_test_setup(test_version, setup),
        cmocka_unit_test_setup(test_help_forms, setup),
        cmocka_unit_test_setup(test_help_lists_options_and_aliases, setup),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
