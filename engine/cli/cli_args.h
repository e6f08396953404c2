/* The one command-line parser of `hookd` (DESIGN.md §8). Commands form a
 * tree of tables: the root lists the commands, a group (`endpoint`, `dlq`,
 * `config`) lists its subcommands, and a leaf declares its options and how
 * many positional arguments it takes. The parser walks argv once: the first
 * positional words pick the command, every option is looked up in the global
 * options and the chosen command's table, wherever it stands.
 *
 * Global options, accepted anywhere on the line and for every command:
 *   -c FILE, --config FILE, --config=FILE   the config (default $HOOKD_CONFIG,
 *                                           else hookd.conf)
 *   --json                                  machine-readable output
 *   -h, --help                              print the command's usage
 *   -V, --version                           print the version
 * `hookd help [COMMAND [SUBCOMMAND]]` is the same as `--help` on that command.
 * `--` ends the options. A value is taken from the next word or after `=`;
 * a next word that begins with `-` is not taken as a value (write
 * `--opt=-value` for that). Repeating an option with the same value is
 * harmless; with a different value it is an error, so that a command never
 * picks one of two databases the user named. */
#ifndef HOOKD_CLI_ARGS_H
#define HOOKD_CLI_ARGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#define CLI_ARGS_DEFAULT_CONFIG "hookd.conf"
#define CLI_ARGS_MAX_DEPTH 3 /* root, command, subcommand */

struct cli_args;
struct hookd_config;

/* One option of a command. `value` is the placeholder shown in help (URL,
 * 10s); NULL makes the option a flag that takes no value. */
struct cli_args_opt {
    const char *name;     /* long name without the dashes: "url" */
    const char *value;    /* NULL: a flag */
    const char *help;     /* one line */
    const char *alias_of; /* the option this one sets ("endpoint" -> "partner"), or NULL */
};

/* A command's handler. cfg is the config named by -c (or the default),
 * loaded by main when the command's `config` is set, NULL otherwise;
 * both are borrowed for the call. Returns the process exit status. */
typedef int cli_args_run_fn(const struct cli_args *args, const struct hookd_config *cfg);

/* A command: a group (subs set) or a leaf (run set). Arrays end with a
 * zeroed entry (opts) or NULL (subs). */
struct cli_args_cmd {
    const char *name;     /* the word on the command line: "add" */
    const char *synopsis; /* what follows the words in usage: "--url URL [--name N]" */
    const char *summary;  /* one line for command lists */
    const char *help;     /* a paragraph for `hookd help CMD`, or NULL */
    const struct cli_args_opt *opts;
    const struct cli_args_cmd *const *subs;
    cli_args_run_fn *run;
    int min_args, max_args; /* positional arguments; max -1: any number */
    bool config;            /* main loads the config before run */
};

/* A leaf that runs with the config loaded (most commands), as one
 * initializer: CLI_ARGS_CONFIG_LEAF("skip", "ID...", "one line", NULL, NULL,
 * run_skip, 1, -1). help and options may be NULL. */
#define CLI_ARGS_CONFIG_LEAF(word, syn, sum, hlp, options, fn, min, max)                                              \
    {                                                                                                                 \
        .name = (word), .synopsis = (syn), .summary = (sum), .help = (hlp), .opts = (options), .run = (fn),           \
        .min_args = (min), .max_args = (max), .config = true                                                          \
    }

/* The result of a parse; read it through the fields below and the getters. */
struct cli_args {
    const char *config; /* -c FILE, else $HOOKD_CONFIG, else hookd.conf; borrowed */
    bool config_given;  /* -c was on the command line */
    bool json, help, version;
    const struct cli_args_cmd *cmd;                      /* the command chosen: a leaf, or a group/root with help */
    const struct cli_args_cmd *path[CLI_ARGS_MAX_DEPTH]; /* root .. cmd */
    int depth;                                           /* entries in path */
    char **args; /* positional arguments after the command words; borrowed from argv */
    int nargs;
    const char **values; /* per cmd->opts entry: its value ("" for a set flag) or NULL */
};

/* Parses argv (argv[0] is the program) against the root table. Returns a
 * new cli_args (caller frees with cli_args_free) or NULL with a one-line
 * message in err that names the command and the offending word. With
 * --help anywhere, option errors are forgiven and `help` is set; an unknown
 * command word is always an error. */
__attribute__((warn_unused_result)) struct cli_args *cli_args_parse(const struct cli_args_cmd *root, int argc,
                                                                    char **argv, char *err, size_t errlen);
void cli_args_free(struct cli_args *);

/* The value of the chosen command's option `name` (declared in its table;
 * anything else is a programming error and aborts), or NULL if not given. */
const char *cli_args_value(const struct cli_args *, const char *name);
/* The same for a name the command may not declare (one reader shared by
 * subcommands with different options): NULL then. */
const char *cli_args_maybe(const struct cli_args *, const char *name);
/* Whether the flag or option `name` was given. */
bool cli_args_flag(const struct cli_args *, const char *name);

/* "hookd dlq show": the command words of the chosen command, into buf. */
const char *cli_args_command_name(const struct cli_args *, char *buf, size_t len);

/* The usage of the chosen command (the root's lists every command). */
void cli_args_print_help(const struct cli_args *, FILE *out);
/* The same as JSON (`--help --json`): the chosen command with its options
 * and, for a group, every subcommand below it, and the global options;
 * what scripts/gen_reference.py turns into the CLI reference and hookd(1). */
void cli_args_print_json(const struct cli_args *, FILE *out);

#endif
