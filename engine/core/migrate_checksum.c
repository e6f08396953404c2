/* Migration checksums over SQL without comments, and the raw-bytes
 * checksums of earlier ledgers; see migrate_checksum.h. */
#include "migrate_checksum.h"

#include <openssl/sha.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "encoding.h"
#include "xmalloc.h"

/* The SHA-256 of every migration's raw bytes as the files stood when the
 * checksum began to leave comments out: what an installation migrated by an
 * earlier hookd holds in schema_migrations. Generated with
 * `sha256sum sql/00*.sql`; never edit an entry, never add one. */
static const struct {
    const char *version;
    const char *sha256;
} legacy[] = {
    {"0001_inbox", "d57b1874b3cf15a416d0548efc1e7b7656b5bef5337f8d9ffdbb0e07202d8b77"},
    {"0002_outbox", "533e11690a350e6c0ad282a0d4b9aa189a974bffddc33a4dc05f452806aceb32"},
    {"0003_attempts_dlq", "85c0f754e8ee152da04bdc71298915911e886955520db9aa85c9e8bd3d92fd67"},
    {"0004_replay", "a7a7c15554379d6230a6f679d49e7f7ad808318771f031024ef1446d6bbb9f29"},
    {"0005_emit_definer", "1d255e6619b15ee25109f25d1809965d91ab705a10fd66115c83401180cd42b4"},
    {"0006_delivery_done_index", "b5d2c6d560fa9f693c2ef18925080749ca6cb5816e79e93c508aaec0a8cb049e"},
    {"0007_lean_outbox", "3281164130d50aba9a7f71b25bacb7cbac229213836f8eaf0054fe1958ba1815"},
    {"0008_relay_listening", "5a2e189ec6f47aeb42eb8a5d260b50682930a7d87b34afcd8de4cbfa159a4cd6"},
    {"0009_first_attempts", "d5892fba19feca71d8237e72b5e622be601323ac82c67cb92b8be2f00883b0f5"},
    {"0010_attempts_key", "d6875b220c6e9eaf4abc2c81c3ee7faf75574d7396d7f028ba0f6da2377f24b9"},
    {"0011_inbox_content_digest", "ee1357e508ab641222c3e0892973cf6ae6c593fa02ddac4de1410fbeb82edcf5"},
    {"0012_retention", "93a3b8eabc03536ecca1ac49116e77b98c8a014d28604869a8ecdbe2b54bf896"},
    {"0013_tenants_api", "c70f5d1181517719ab4d245224d4041dc5fcf3f81aa02964ce3d2dd85f95aaf3"},
    {"0014_endpoint_open_deliveries", "574ca57591b33046848172e1a68e0aadce372d4f30f05b2ba8608bcc6fdb604a"},
    {"0016_portal", "7412428af4ae92090f1244f0d8e8b02920e4295f1594c38e02c7f00389816dc5"},
    {"0017_delivery_policies", "45af54328c1bb2f24cbbd9382008d0820fdb558f925a34ca3e8fd96b67f85009"},
    {"0018_ids_carry_partition", "15710b073f76ea0a0d10a037232cd780c8cc66f9da96ec16ed192aa6f02c3f54"},
    {"0019_message_channels_tags", "b75e8128642a010810f9ac4bf3b180be41fadce3263e0db51789f14373cb546a"},
    {"0020_message_payload_expiry", "5549f886db0c5227008e88048013b2acef21487e8928d0cb138200074734ea2b"},
    {"0021_endpoint_failing_since", "1cbad3d68429ed1e77c0362bc60d219069e4d9ff0a3abe9d0e985ecff4f8488f"},
    {"0022_lookups_prune", "1fdcceb7f11a5c11032b7ec37b53357e0bc19faa5080c67a80827f01eda6132e"},
    {"0024_inbox_isolate", "aa21933c94a5ab158dc5b50f69bd7c1d08b2c09d6c72fe46e3d6f4d9c0b7a154"},
    {"0025_message_ids_no_fk", "7abe275cd8593f5c916e5a979b4850f7e0528b9f57f24dcc8dc690043a0b0513"},
    {"0026_emit_payload_retention", "ae3381d6f1553a7413454109863b181b4ea09619f08e38a401c364425766097c"},
    {"0027_tenant_resolution", "c187355fa6b0b6e9bc796d08e0bbe845d22a6180572bb2948de26bebe7b7d9e3"},
    {"0028_tenant_ordering_filters", "c4f14958aa2aa21e8fef3cd2abb831c59b6d7859ed375a0dfb55feda435f1c08"},
};

const char *migrate_checksum_legacy(const char *version)
{
    for (size_t i = 0; i < sizeof legacy / sizeof legacy[0]; i++)
        if (strcmp(legacy[i].version, version) == 0)
            return legacy[i].sha256;
    return NULL;
}

/* ---- normalisation -------------------------------------------------------- */

/* The text written so far, and whether whitespace (or a comment) is pending
 * before the next character outside a quoted span. */
struct norm {
    char *out;
    size_t n;
    bool space;
};

static void put(struct norm *o, char c)
{
    if (o->space && o->n)
        o->out[o->n++] = ' ';
    o->space = false;
    o->out[o->n++] = c;
}

static bool is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

static bool is_ident(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '$' ||
           (unsigned char)c >= 0x80;
}

/* The index after a nested block comment that opens at s[i]. */
static size_t skip_block_comment(const char *s, size_t i, size_t len)
{
    int depth = 0;
    while (i < len) {
        if (s[i] == '/' && i + 1 < len && s[i + 1] == '*') {
            depth++;
            i += 2;
        } else if (s[i] == '*' && i + 1 < len && s[i + 1] == '/') {
            i += 2;
            if (--depth == 0)
                break;
        } else {
            i++;
        }
    }
    return i;
}

/* Copies the quoted span that opens at s[i] with quote q (a doubled q stays
 * inside; so does a backslash-escaped character when backslash is set) and
 * returns the index after it. */
static size_t copy_quoted(struct norm *o, const char *s, size_t i, size_t len, char q, bool backslash)
{
    put(o, s[i++]);
    while (i < len) {
        char c = s[i++];
        o->out[o->n++] = c;
        if (backslash && c == '\\' && i < len) {
            o->out[o->n++] = s[i++];
        } else if (c == q) {
            if (i < len && s[i] == q)
                o->out[o->n++] = s[i++];
            else
                break;
        }
    }
    return i;
}

/* The length of the dollar-quote tag ($$ or $name$) at s[i], 0 when there
 * is none ($1 is a parameter; a $ inside an identifier is part of it). */
static size_t dollar_tag(const char *s, size_t i, size_t len)
{
    if (i > 0 && is_ident(s[i - 1]))
        return 0;
    size_t j = i + 1;
    if (j < len && s[j] >= '0' && s[j] <= '9')
        return 0;
    while (j < len && s[j] != '$' && is_ident(s[j]))
        j++;
    return j < len && s[j] == '$' ? j - i + 1 : 0;
}

static void normalise(struct norm *o, const char *s, size_t len);

/* A dollar-quoted body at s[i] with a tag of t bytes: the tags kept, the body
 * normalised. Returns the index after it, or 0 when the body never ends. */
static size_t copy_dollar(struct norm *o, const char *s, size_t i, size_t len, size_t t)
{
    const char *end = memmem(s + i + t, len - i - t, s + i, t);
    if (!end)
        return 0;
    for (size_t k = 0; k < t; k++)
        put(o, s[i + k]);
    normalise(o, s + i + t, (size_t)(end - (s + i + t)));
    for (size_t k = 0; k < t; k++)
        put(o, end[k]);
    return (size_t)(end - s) + t;
}

static void normalise(struct norm *o, const char *s, size_t len)
{
    size_t i = 0, t, next;
    while (i < len) {
        char c = s[i], d = i + 1 < len ? s[i + 1] : '\0';
        if (c == '-' && d == '-') {
            while (i < len && s[i] != '\n')
                i++;
            o->space = true;
        } else if (c == '/' && d == '*') {
            i = skip_block_comment(s, i, len);
            o->space = true;
        } else if (c == '\'' || c == '"') {
            bool e = c == '\'' && i > 0 && (s[i - 1] == 'E' || s[i - 1] == 'e') && (i < 2 || !is_ident(s[i - 2]));
            i = copy_quoted(o, s, i, len, c, e);
        } else if (c == '$' && (t = dollar_tag(s, i, len)) && (next = copy_dollar(o, s, i, len, t))) {
            i = next;
        } else if (is_space(c)) {
            o->space = true;
            i++;
        } else {
            put(o, c);
            i++;
        }
    }
}

size_t migrate_checksum_normalise(const char *sql, size_t len, char *out)
{
    struct norm o = {out, 0, false};
    normalise(&o, sql, len);
    out[o.n] = '\0';
    return o.n;
}

void migrate_checksum(const char *sql, size_t len, char out[MIGRATE_CHECKSUM_HEX])
{
    char *text = xmalloc(len + 1);
    size_t n = migrate_checksum_normalise(sql, len, text);
    unsigned char md[SHA256_DIGEST_LENGTH];
    SHA256((const unsigned char *)text, n, md);
    free(text);
    if (enc_hex_encode(md, sizeof md, out, MIGRATE_CHECKSUM_HEX) != 0)
        out[0] = '\0'; /* cannot happen: the buffer fits a SHA-256 */
}
