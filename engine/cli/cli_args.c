/* The command-line parser of every `hookd` command: global options anywhere,
 * the command words, each command's declared options, positional arguments,
 * `--`, and the usage text that `hookd help` and `--help` print, all from
 * the command tables that main.c and the cli_*.c files declare. The parser
 * only reads argv; loading the config and running the command is main.c's. */
#include "cli_args.h"

#include <jansson.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "version.h"
#include "xmalloc.h"

/* The global options, in the order help lists them. */
enum global_opt { G_CONFIG, G_JSON, G_HELP, G_VERSION, G_COUNT };
static const struct cli_args_opt globals[] = {
    [G_CONFIG] = {"config", "FILE", "config file (default: $HOOKD_CONFIG, else " CLI_ARGS_DEFAULT_CONFIG ")", NULL},
    [G_JSON] = {"json", NULL, "JSON output where a command has it (dlq list, dlq show, status)", NULL},
    [G_HELP] = {"help", NULL, "print the command's usage and exit", NULL},
    [G_VERSION] = {"version", NULL, "print the version and exit", NULL},
};
static const char global_letters[G_COUNT] = {[G_CONFIG] = 'c', [G_HELP] = 'h', [G_VERSION] = 'V'};

#define HELP_COLUMN 28

/* The root's `help` word, listed with the commands. */
static const char help_synopsis[] = "help [COMMAND [SUBCOMMAND]]";
static const char help_summary[] = "print a command's usage and options";
static const char dashdash_help[] = "end of the options: every word after it is an argument";

/* What one parse is doing: the result being filled and the first error. */
struct parse {
    struct cli_args *a;
    const char *config; /* -c as given, NULL if not */
    char *err;
    size_t errlen;
    bool failed;
};

/* An option word, taken apart: `--name=value`, `--name`, `-c`, `-cFILE`. */
struct opt_word {
    const char *word; /* as written */
    char shown[64];   /* the option without its value, for messages */
    const char *inline_value;
    int global; /* enum global_opt, or -1 */
    int index;  /* index in the command's opts after aliases, or -1 */
};

static const char *default_config(void)
{
    const char *env = getenv("HOOKD_CONFIG");
    return env && *env ? env : CLI_ARGS_DEFAULT_CONFIG;
}

static size_t count_opts(const struct cli_args_opt *opts)
{
    size_t n = 0;
    while (opts && opts[n].name)
        n++;
    return n;
}

const char *cli_args_command_name(const struct cli_args *a, char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < a->depth && used < len; i++) {
        int n = snprintf(buf + used, len - used, "%s%s", i ? " " : "", a->path[i]->name);
        used += n > 0 ? (size_t)n : 0;
    }
    return buf;
}

/* Records the first error only: "hookd dlq list: <message>". */
static void set_error(struct parse *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void set_error(struct parse *p, const char *fmt, ...)
{
    if (p->failed)
        return;
    p->failed = true;
    char name[128];
    int n = snprintf(p->err, p->errlen, "%s: ", cli_args_command_name(p->a, name, sizeof name));
    if (n < 0 || (size_t)n >= p->errlen)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->err + n, p->errlen - (size_t)n, fmt, ap);
    va_end(ap);
}

/* The command words after the program's name: " dlq show" (or ""). */
static const char *words(const struct cli_args *a, const char *command_name)
{
    return command_name + strlen(a->path[0]->name);
}

static const char *see_help(const struct cli_args *a, char *buf, size_t len)
{
    char name[128];
    snprintf(buf, len, "see 'hookd help%s'", words(a, cli_args_command_name(a, name, sizeof name)));
    return buf;
}

/* Finds an option word in the globals, then in the command's table. */
static void look_up(const struct cli_args_cmd *cmd, struct opt_word *o)
{
    const char *w = o->word;
    o->global = o->index = -1;
    o->inline_value = NULL;
    if (w[1] != '-') { /* -c, -cFILE, -h, -V */
        snprintf(o->shown, sizeof o->shown, "-%c", w[1]);
        for (int g = 0; g < G_COUNT; g++)
            if (global_letters[g] && global_letters[g] == w[1])
                o->global = g;
        if (w[2] && o->global == G_CONFIG)
            o->inline_value = w + 2;
        else if (w[2])
            o->global = -1, snprintf(o->shown, sizeof o->shown, "%.60s", w);
        return;
    }
    const char *name = w + 2, *eq = strchr(name, '=');
    size_t len = eq ? (size_t)(eq - name) : strlen(name);
    o->inline_value = eq ? eq + 1 : NULL;
    snprintf(o->shown, sizeof o->shown, "--%.*s", (int)(len < 60 ? len : 60), name);
    for (int g = 0; g < G_COUNT; g++)
        if (strlen(globals[g].name) == len && strncmp(globals[g].name, name, len) == 0)
            o->global = g;
    for (size_t i = 0; o->global < 0 && cmd->opts && cmd->opts[i].name; i++) {
        if (strlen(cmd->opts[i].name) != len || strncmp(cmd->opts[i].name, name, len) != 0)
            continue;
        o->index = (int)i;
        const char *target = cmd->opts[i].alias_of;
        for (size_t j = 0; target && cmd->opts[j].name; j++)
            if (strcmp(cmd->opts[j].name, target) == 0)
                o->index = (int)j;
    }
}

/* Stores a value in its slot; a second, different value is an error. */
static void store(struct parse *p, const struct opt_word *o, const char **slot, const char *value)
{
    if (*slot && strcmp(*slot, value) != 0)
        set_error(p, "option '%s' given twice, as '%s' and '%s'", o->shown, *slot, value);
    else
        *slot = value;
}

/* Handles the option word argv[i]; returns the index of the last word it
 * consumed (i, or i + 1 when the next word was its value). */
static int parse_option(struct parse *p, int argc, char **argv, int i)
{
    struct cli_args *a = p->a;
    struct opt_word o = {.word = argv[i]};
    char see[96];
    look_up(a->cmd, &o);
    if (o.global < 0 && o.index < 0) {
        set_error(p, "unknown option '%s' (%s%s)", o.shown,
                  a->cmd->subs && a->depth > 1 ? "give the subcommand before its options; " : "",
                  see_help(a, see, sizeof see));
        return i;
    }
    const struct cli_args_opt *def = o.global >= 0 ? &globals[o.global] : &a->cmd->opts[o.index];
    if (!def->value) {
        if (o.inline_value)
            set_error(p, "option '%s' takes no value", o.shown);
        else if (o.global == G_JSON)
            a->json = true;
        else if (o.global == G_HELP)
            a->help = true;
        else if (o.global == G_VERSION)
            a->version = true;
        else
            a->values[o.index] = "";
        return i;
    }
    const char *value = o.inline_value;
    if (!value && i + 1 < argc && !(argv[i + 1][0] == '-' && argv[i + 1][1] != '\0'))
        value = argv[++i];
    if (!value || !*value) {
        set_error(p, "option '%s' needs a value (%s)", o.shown, def->value);
        return i;
    }
    store(p, &o, o.global == G_CONFIG ? &p->config : &a->values[o.index], value);
    return i;
}

/* A command word: picks the subcommand `word` of the current group. */
static int choose(struct parse *p, const char *word)
{
    struct cli_args *a = p->a;
    const struct cli_args_cmd *found = NULL;
    for (size_t i = 0; a->cmd->subs[i]; i++)
        if (strcmp(a->cmd->subs[i]->name, word) == 0)
            found = a->cmd->subs[i];
    if (!found) {
        char see[96];
        set_error(p, "unknown %scommand '%s' (%s)", a->depth > 1 ? "sub" : "", word, see_help(a, see, sizeof see));
        return -1;
    }
    HOOKD_ASSERT(!a->cmd->opts); /* a group's options would be lost here */
    HOOKD_ASSERT(a->depth < CLI_ARGS_MAX_DEPTH);
    a->cmd = found;
    a->path[a->depth++] = found;
    free(a->values);
    a->values = xcalloc(count_opts(found->opts) + 1, sizeof *a->values);
    return 0;
}

/* After the words: a leaf with the right number of positional arguments. */
static void check_complete(struct parse *p)
{
    struct cli_args *a = p->a;
    const struct cli_args_cmd *c = a->cmd;
    char name[128], see[96];
    cli_args_command_name(a, name, sizeof name);
    if (c->subs) {
        set_error(p, "missing %scommand (%s)", a->depth > 1 ? "sub" : "", see_help(a, see, sizeof see));
    } else if (a->nargs < c->min_args) {
        /* the synopsis names it: "ID [--json]" -> "missing ID" */
        const char *s = c->synopsis ? c->synopsis : "";
        int n = (int)strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZ_");
        set_error(p, "missing %.*s%s (usage: %s %s)", n, s, n ? "" : "argument", name, s);
    } else if (c->max_args >= 0 && a->nargs > c->max_args) {
        set_error(p, "unexpected argument '%s' (usage: %s%s%s)", a->args[c->max_args], name, c->synopsis ? " " : "",
                  c->synopsis ? c->synopsis : "");
    }
}

struct cli_args *cli_args_parse(const struct cli_args_cmd *root, int argc, char **argv, char *err, size_t errlen)
{
    struct cli_args *a = xcalloc(1, sizeof *a);
    struct parse p = {.a = a, .err = err, .errlen = errlen};
    bool options = true;
    a->config = default_config();
    a->cmd = a->path[0] = root;
    a->depth = 1;
    a->args = xcalloc(argc > 0 ? (size_t)argc : 1, sizeof *a->args);
    a->values = xcalloc(count_opts(root->opts) + 1, sizeof *a->values);
    err[0] = '\0';
    for (int i = 1; i < argc; i++) {
        const char *w = argv[i];
        if (options && strcmp(w, "--") == 0)
            options = false;
        else if (options && w[0] == '-' && w[1] != '\0')
            i = parse_option(&p, argc, argv, i);
        else if (a->cmd == root && strcmp(w, "help") == 0)
            a->help = true; /* `hookd help CMD SUB` is `hookd CMD SUB --help` */
        else if (!a->cmd->subs)
            a->args[a->nargs++] = argv[i];
        else if (choose(&p, w) != 0)
            goto fail;
    }
    if (p.config)
        a->config = p.config, a->config_given = true;
    if (a->help) /* option errors are forgiven: the user asked how to write them */
        return a;
    if (!p.failed && !a->version)
        check_complete(&p);
    if (!p.failed)
        return a;
fail:
    cli_args_free(a);
    return NULL;
}

void cli_args_free(struct cli_args *a)
{
    if (!a)
        return;
    free(a->args);
    free(a->values);
    free(a);
}

/* The index of a declared option (not an alias), or -1. */
static int find_opt(const struct cli_args *a, const char *name)
{
    for (int i = 0; a->cmd->opts && a->cmd->opts[i].name; i++)
        if (strcmp(a->cmd->opts[i].name, name) == 0 && !a->cmd->opts[i].alias_of)
            return i;
    return -1;
}

const char *cli_args_value(const struct cli_args *a, const char *name)
{
    int i = find_opt(a, name);
    if (i < 0) /* a name the command does not declare: a typo in the code */
        xassert_fail(name, __FILE__, __LINE__);
    return a->values[i];
}

const char *cli_args_maybe(const struct cli_args *a, const char *name)
{
    int i = find_opt(a, name);
    return i < 0 ? NULL : a->values[i];
}

bool cli_args_flag(const struct cli_args *a, const char *name)
{
    return cli_args_value(a, name) != NULL;
}

/* ---- usage ------------------------------------------------------------------ */

/* "  left   text", the text on the next line when left is too wide. */
static void print_row(FILE *out, const char *left, const char *text)
{
    int n = fprintf(out, "  %s", left);
    if (!text)
        fputc('\n', out);
    else if (n > HELP_COLUMN)
        fprintf(out, "\n%*s%s\n", HELP_COLUMN + 1, "", text);
    else
        fprintf(out, "%*s%s\n", HELP_COLUMN + 1 - n, "", text);
}

static void print_opt(FILE *out, const struct cli_args_opt *o, char letter)
{
    char left[128], help[160], short_form[8] = "";
    if (letter)
        snprintf(short_form, sizeof short_form, "-%c, ", letter);
    snprintf(left, sizeof left, "%s--%s%s%s", short_form, o->name, o->value ? " " : "", o->value ? o->value : "");
    if (o->alias_of)
        snprintf(help, sizeof help, "the same as --%s", o->alias_of);
    print_row(out, left, o->alias_of ? help : o->help);
}

/* Every leaf under cmd, as "words synopsis" and its summary. */
static void print_commands(FILE *out, const struct cli_args_cmd *cmd, const char *prefix)
{
    char left[512];
    for (size_t i = 0; cmd->subs[i]; i++) {
        const struct cli_args_cmd *c = cmd->subs[i];
        snprintf(left, sizeof left, "%s%s%s", prefix, *prefix ? " " : "", c->name);
        if (c->subs) {
            print_commands(out, c, left);
            continue;
        }
        size_t n = strlen(left);
        snprintf(left + n, sizeof left - n, "%s%s", c->synopsis ? " " : "", c->synopsis ? c->synopsis : "");
        print_row(out, left, c->summary);
    }
}

void cli_args_print_help(const struct cli_args *a, FILE *out)
{
    const struct cli_args_cmd *c = a->cmd;
    char name[128];
    cli_args_command_name(a, name, sizeof name);
    if (c->subs)
        fprintf(out, "usage: %s [OPTIONS] %sCOMMAND [ARGS]\n", name, a->depth > 1 ? "SUB" : "");
    else
        fprintf(out, "usage: %s%s%s\n", name, c->synopsis ? " " : "", c->synopsis ? c->synopsis : "");
    if (c->summary)
        fprintf(out, "\n%s\n", c->summary);
    if (c->help)
        fprintf(out, "\n%s\n", c->help);
    if (c->subs) {
        fprintf(out, "\ncommands:\n");
        print_commands(out, c, words(a, name) + (a->depth > 1));
        if (a->depth == 1)
            print_row(out, help_synopsis, help_summary);
    }
    if (count_opts(c->opts)) {
        fprintf(out, "\noptions:\n");
        for (size_t i = 0; c->opts[i].name; i++)
            print_opt(out, &c->opts[i], 0);
    }
    fprintf(out, "\nglobal options (anywhere on the command line):\n");
    for (int g = 0; g < G_COUNT; g++)
        print_opt(out, &globals[g], global_letters[g]);
    print_row(out, "--", dashdash_help);
    if (c->subs)
        fprintf(out, "\nRun 'hookd help%s %s' for its usage and options.\n", words(a, name),
                a->depth > 1 ? "SUBCOMMAND" : "COMMAND");
}

/* ---- usage as JSON ---------------------------------------------------------- */

static json_t *opt_json(const struct cli_args_opt *o, char letter)
{
    json_t *j = json_pack("{s:s, s:s?, s:s?, s:s?}", "name", o->name, "value", o->value, "help", o->help, "alias_of",
                          o->alias_of);
    if (letter)
        json_object_set_new(j, "short", json_sprintf("%c", letter));
    return j;
}

/* A command and, for a group, its subcommands; words = "dlq replay". */
static json_t *cmd_json(const struct cli_args_cmd *c, const char *words)
{
    json_t *opts = json_array(), *subs = json_array();
    for (size_t i = 0; c->opts && c->opts[i].name; i++)
        json_array_append_new(opts, opt_json(&c->opts[i], 0));
    for (size_t i = 0; c->subs && c->subs[i]; i++) {
        char w[256];
        snprintf(w, sizeof w, "%s%s%s", words, *words ? " " : "", c->subs[i]->name);
        json_array_append_new(subs, cmd_json(c->subs[i], w));
    }
    return json_pack("{s:s, s:s, s:s?, s:s?, s:s?, s:o, s:o, s:b, s:i, s:i}", "name", c->name, "words", words,
                     "synopsis", c->synopsis, "summary", c->summary, "help", c->help, "options", opts, "subcommands",
                     subs, "config", c->config, "min_args", c->min_args, "max_args", c->max_args);
}

void cli_args_print_json(const struct cli_args *a, FILE *out)
{
    char name[128];
    json_t *gl = json_array();
    for (int g = 0; g < G_COUNT; g++)
        json_array_append_new(gl, opt_json(&globals[g], global_letters[g]));
    json_array_append_new(gl, json_pack("{s:s, s:s}", "name", "", "help", dashdash_help));
    json_t *doc = cmd_json(a->cmd, words(a, cli_args_command_name(a, name, sizeof name)) + (a->depth > 1));
    json_object_set_new(doc, "program", json_string(a->path[0]->name));
    json_object_set_new(doc, "version", json_string(HOOKD_VERSION));
    json_object_set_new(doc, "global_options", gl);
    json_object_set_new(doc, "default_config", json_string(CLI_ARGS_DEFAULT_CONFIG));
    json_object_set_new(doc, "config_env", json_string("HOOKD_CONFIG"));
    if (a->depth == 1)
        json_object_set_new(doc, "help_command",
                            json_pack("{s:s, s:s}", "synopsis", help_synopsis, "summary", help_summary));
    json_dumpf(doc, out, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    fputc('\n', out);
    json_decref(doc);
}
