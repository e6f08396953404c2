/* Internal to the config module (engine/core/config*.c); nothing else
 * includes it. The config is one declarative table (config_keys.c): a row
 * per section, and per section a row per key with its type, its target
 * (an offset into the section's object, or a setter), its default, its
 * bounds, whether a reload may change it and what it means. The parser
 * (config_parse.c) applies a file through it, the loader (config_load.c)
 * validates the result whole, config.c frees and compares snapshots with
 * it, config_print.c prints them, and the reference (`hookd config keys`,
 * docs/reference/configuration.md) is generated from it.
 *
 * The header declares only what the config files share, and includes no
 * other config header, so the public config.h stays at the bottom. */
#ifndef HOOKD_CONFIG_INTERNAL_H
#define HOOKD_CONFIG_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct hookd_config;
struct config_secret;
struct field_source;

/* What a value is, and (for the generic ones) how it is read and where it
 * goes. A key of a type without a generic reader has a setter. */
enum config_type {
    CONFIG_STRING,     /* char *, owned */
    CONFIG_SECRET,     /* struct config_secret: text or env:NAME */
    CONFIG_DURATION,   /* int64_t ms: 250ms, 5s, 1m, 2h, 1d */
    CONFIG_INT,        /* int64_t, a positive whole number */
    CONFIG_COUNT,      /* int, a whole number within the key's bounds */
    CONFIG_BOOL,       /* bool: true/yes/on/1, false/no/off/0 */
    CONFIG_ONOFF,      /* bool: on or off, nothing else */
    CONFIG_SIZE,       /* int64_t bytes: 4096, 512KiB, 1MiB */
    CONFIG_PERCENT,    /* int: 10% */
    CONFIG_ROLES,      /* unsigned, enum config_role bits */
    CONFIG_SOURCE,     /* struct field_source: json:PATH, header:NAME, digest */
    CONFIG_IDENTIFIER, /* char *: an SQL name, schema.table allowed */
    /* read by the key's setter */
    CONFIG_SCHEDULE,   /* durations, comma-separated */
    CONFIG_ENUM,       /* one word of a fixed list */
    CONFIG_LIST,       /* comma-separated items */
    CONFIG_URL,        /* http:// or https:// */
    CONFIG_TEMPLATE,   /* text with {placeholders} */
    CONFIG_TRANSITION, /* FROM[, FROM...] -> TO */
    CONFIG_STATE,      /* a state name */
    CONFIG_TYPE_COUNT
};

/* Flags of a key. */
enum {
    CONFIG_RESTART = 1 << 0,  /* a reload keeps the old value (logged) */
    CONFIG_REPEAT = 1 << 1,   /* may be given more than once (appends) */
    CONFIG_OFF = 1 << 2,      /* `off` is accepted and stored as 0 */
    CONFIG_LATE = 1 << 3,     /* bounds are checked with the whole file */
    CONFIG_HMAC = 1 << 4,     /* [partner] with scheme = hmac only */
    CONFIG_REQUIRED = 1 << 5, /* the reference says "required" */
};

/* Bits of retry_override.set: which keys a `[retry X:Y]` section gave. */
enum {
    CONFIG_SET_SCHEDULE = 1 << 0,
    CONFIG_SET_MAX_ATTEMPTS = 1 << 1,
    CONFIG_SET_JITTER = 1 << 2,
    CONFIG_SET_CIRCUIT = 1 << 3,
    CONFIG_SET_CIRCUIT_FAILURES = 1 << 4,
    CONFIG_SET_CIRCUIT_PROBE = 1 << 5,
    CONFIG_SET_CIRCUIT_DISABLE_AFTER = 1 << 6,
};
#define CONFIG_SET_CIRCUIT_KEYS                                                                                       \
    (CONFIG_SET_CIRCUIT | CONFIG_SET_CIRCUIT_FAILURES | CONFIG_SET_CIRCUIT_PROBE | CONFIG_SET_CIRCUIT_DISABLE_AFTER)

/* Bits of partner_config.hmac_keys: the keys of `scheme = hmac` given. */
enum {
    CONFIG_HMAC_ALGORITHM = 1 << 0,
    CONFIG_HMAC_SIGNED = 1 << 1,
    CONFIG_HMAC_SIGNATURE_HEADER = 1 << 2,
    CONFIG_HMAC_SIGNATURE_PREFIX = 1 << 3,
    CONFIG_HMAC_ENCODING = 1 << 4,
    CONFIG_HMAC_TIMESTAMP_HEADER = 1 << 5,
    CONFIG_HMAC_TIMESTAMP_PREFIX = 1 << 6,
    CONFIG_HMAC_TIMESTAMP_FORMAT = 1 << 7,
    CONFIG_HMAC_SEVERAL = 1 << 8,
    CONFIG_HMAC_SEPARATORS = 1 << 9,
};

struct config_key;

/* Reads v into the section's object obj for key k; arg is the argument of
 * a key that takes one ("paid" of "transition paid"), else NULL. Returns 0,
 * or -1 with a message in err (the caller adds file:line). */
typedef int config_set_fn(void *obj, const struct config_key *k, const char *arg, const char *v, char *err,
                          size_t errlen);

/* A word a CONFIG_ENUM key takes (any letter case), and the value stored
 * into its enum field. */
struct config_word {
    const char *word;
    int value;
};

struct config_key {
    const char *name; /* as written in the file */
    const char *arg;  /* a key that takes an argument ("transition EVENT"): its placeholder */
    enum config_type type;
    size_t offset;                   /* of the field in the section's object */
    config_set_fn *set;              /* NULL: the type's reader into offset */
    const char *def;                 /* default as written in a file, applied by the loader; NULL: unset */
    const char *def_doc;             /* the default as the reference says it, when it is not a literal value */
    const char *min, *max;           /* bounds as written in a file (parsed by the type's reader); NULL: none */
    const char *bound_note;          /* said after a bounds error, e.g. what the value covers */
    const struct config_word *words; /* CONFIG_ENUM without a setter: its words, ending with {NULL} */
    unsigned flags;                  /* CONFIG_RESTART, ... */
    unsigned bit;                    /* set in the section's mask when the key is given */
    const char *meaning;             /* one line for the reference */
};

/* Where a section's keys go: the object, and the mask of given keys. */
struct config_target {
    void *obj;
    unsigned *mask;   /* NULL: none */
    const char *name; /* a named section's name, for messages */
};

/* Creates the object of a named section ([partner NAME]); title is the
 * whole header ("retry partner:x"), arg what follows the section's word. */
typedef int config_open_fn(struct hookd_config *c, const char *title, const char *arg, int line,
                           struct config_target *out, char *err, size_t errlen);

/* How a bounds error reads: "[retention] interval must be at least 1s" or
 * "bad max_attempts '1': expected a whole number from 2 to 100". */
enum config_bound_style { CONFIG_BOUND_MUST, CONFIG_BOUND_EXPECTED };

struct config_section {
    const char *name;  /* the word in the header: "retry" */
    const char *arg;   /* what follows it ("SCOPE:NAME", "NAME"), NULL for a single section */
    const char *where; /* in messages: "[hookd]", "a retry section"; NULL: "[partner NAME]" */
    const struct config_key *keys;
    size_t nkeys;
    bool list_keys; /* an unknown key's message lists the keys */
    enum config_bound_style bound_style;
    size_t offset;        /* single sections: the object's offset in struct hookd_config */
    config_open_fn *open; /* named sections */
    const char *keys_of;  /* the reference: "the keys of [retry]" */
    const char *meaning;  /* one paragraph for the reference */
};

#define CONFIG_NSECTIONS 9
#define CONFIG_SECTION_KEYS_MAX 48

/* config_keys.c: the table, in the order the reference lists it, and the
 * names of the types. */
extern const struct config_section config_sections[CONFIG_NSECTIONS];
struct config_type_doc {
    const char *name;    /* "duration" */
    const char *meaning; /* how a value is written */
};
extern const struct config_type_doc config_types[CONFIG_TYPE_COUNT];
enum { CONFIG_SEC_HOOKD, CONFIG_SEC_RETRY, CONFIG_SEC_DEFER, CONFIG_SEC_PORTAL, CONFIG_SEC_RETENTION };

/* The key `name` of section s (a key with an argument matches "word ARG"),
 * or NULL. */
const struct config_key *config_key_find(const struct config_section *s, const char *name);
/* The key named exactly `name` of the single section sec (enum above). */
const struct config_key *config_key_named(int sec, const char *name);

/* config_value.c: the typed readers. */
char *config_trim(char *s);
int config_read_bool(const char *v, bool *out);
int config_read_int(const char *v, int64_t *out);
int config_read_secret(const char *v, struct config_secret *out, char *err, size_t errlen);
void config_secret_free(struct config_secret *s);
int config_read_source(const char *v, struct field_source *out, char *err, size_t errlen);
void config_set_string(char **dst, const char *v);
/* Reads v into obj as k says (its setter, or its type's reader, then its
 * bounds unless they are checked late). */
int config_apply(const struct config_section *s, const struct config_key *k, void *obj, const char *arg, const char *v,
                 char *err, size_t errlen);
/* Whether the value of k in obj is within k's bounds; if not, the bounds
 * message (CONFIG_BOUND_MUST style) into err. */
bool config_within_bounds(const struct config_section *s, const struct config_key *k, const void *obj, char *err,
                          size_t errlen);
/* k's bounds for the reference: "2 to 100", "at least 1s, or off", the
 * words of an enum ("hex, base64"); "" if none. */
void config_bounds_text(const struct config_key *k, char *buf, size_t buflen);

/* config_parse.c: the file, read into c through the table. */
struct config_parse {
    struct hookd_config *cfg;
    const char *path;
    FILE *fp;
    int line;
    char err[512]; /* the first error: "file:line: message" */
    int err_line;
    const struct config_section *sec; /* the section being read; NULL before the first */
    struct config_target target;
    unsigned scratch_mask; /* the mask of a section without one */
    /* keys seen in the current section, to refuse duplicates */
    char **seen;
    size_t nseen, cap_seen;
    /* where single sections and their keys stand (0: absent), so that
     * whole-file checks can name a line */
    int section_line[CONFIG_NSECTIONS];
    int key_line[CONFIG_NSECTIONS][CONFIG_SECTION_KEYS_MAX];
};

void config_fail(struct config_parse *st, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Applies every single section's defaults to c. */
void config_set_defaults(struct hookd_config *c);
/* Reads st->path into st->cfg. Errors are left in st->err. */
void config_parse_file(struct config_parse *st);
/* The line of key `name` of single section sec, else of the section's
 * header, else 1. */
int config_key_line(const struct config_parse *st, int sec, const char *name);

#endif
