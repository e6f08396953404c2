/*
 * signature.h — inbound webhook signatures as a table of provider presets,
 * and the outbound Standard Webhooks signature.
 *
 * Inbound, the ingest role calls sig_verify() on the raw request before it
 * stores anything. What a partner's requests must satisfy is one
 * `struct sig_spec`: which algorithm (HMAC-SHA1/256/512, a plain shared
 * token, or a public-key signature), which bytes are signed (a template such
 * as "{timestamp}.{body}" or "v0:{timestamp}:{body}"), where the signature
 * and the timestamp are (a header, an element of a header, a JSON field),
 * how the signature is encoded, and the timestamp's format. Every provider
 * preset (`[partner NAME] scheme = stripe | slack | twilio | …`) is a row of
 * the preset table in signature.c: a spec plus the provider's defaults for
 * the event id, event type, entity id, tolerance, accepted body types and
 * handshake. `scheme = hmac` builds the same spec from config keys, so a
 * preset and its config spelling verify byte for byte alike.
 *
 * Secrets are decoded once at config load with sig_key_decode(); public keys
 * with sig_public_key_decode(). MACs are decoded from their text and compared
 * as raw bytes in constant time; timestamps are held against a tolerance.
 * Error messages name headers, lengths and clock differences, never secrets
 * or signatures. Pure logic on caller-supplied data (the clock is a
 * parameter): no I/O, no globals beyond the const table and a once-fetched
 * OpenSSL MAC, safe from any thread.
 *
 * Extension points for other modules (see /work/notes/preset-interface.md):
 *   - public-key presets (sendgrid: ECDSA P-256, discord: Ed25519): their
 *     rows here name a `enum sig_pk_alg`; signature_pk.c supplies the
 *     algorithms by defining sig_pk_ops_for(). signature.c has a weak default
 *     returning NULL, so until signature_pk.c is linked such a preset is
 *     refused at config load ("not available in this build").
 *   - handshakes (slack, zoom, meta, twitch, x): a row names an
 *     `enum sig_handshake`; engine/inbound/handshake.c answers them. The core
 *     layer only records which preset has which; sig_hmac() is exported for
 *     the handshakes that must answer with a MAC (zoom, x).
 */
#ifndef HOOKD_SIGNATURE_H
#define HOOKD_SIGNATURE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Bytes of an HMAC-SHA256 MAC. */
#define SIG_MAC_LEN 32
/* The largest MAC or signature any scheme carries (HMAC-SHA512: 64 bytes;
 * an ECDSA P-256 DER signature: at most 72; Ed25519: 64). */
#define SIG_MAX_SIG_LEN 128

/* Buffer size that always holds sig_sign_standard()'s "v1,<base64>" + NUL. */
#define SIG_STANDARD_SIGNATURE_SIZE 48

/* The presets, in the order of the preset table; SIG_HMAC is the scheme
 * written in the config. The config spelling is sig_scheme_name(). */
enum sig_scheme {
    SIG_STANDARD_WEBHOOKS, /* webhook-id / webhook-timestamp / webhook-signature (Svix, Clerk, Resend, …) */
    SIG_STRIPE,            /* Stripe-Signature: t=...,v1=<hex> */
    SIG_GITHUB,            /* X-Hub-Signature-256: sha256=<hex> */
    SIG_HMAC_SHA256,       /* hex or base64 MAC of the body in a configured header */
    SIG_SHOPIFY,
    SIG_SLACK,
    SIG_TWILIO,
    SIG_SQUARE,
    SIG_PADDLE,
    SIG_ZOOM,
    SIG_LINEAR,
    SIG_INTERCOM,
    SIG_MAILGUN,
    SIG_SENDGRID, /* public key: ECDSA P-256 (signature_pk.c) */
    SIG_DISCORD,  /* public key: Ed25519 (signature_pk.c) */
    SIG_META,
    SIG_TWITCH,
    SIG_TYPEFORM,
    SIG_HUBSPOT,
    SIG_CALENDLY,
    SIG_GITLAB,
    SIG_BITBUCKET,
    SIG_PAGERDUTY,
    SIG_WOOCOMMERCE,
    SIG_X,
    SIG_HMAC, /* scheme = hmac: the spec comes from the partner's keys */
    SIG_SCHEME_COUNT
};

enum sig_alg {
    SIG_ALG_HMAC_SHA1,
    SIG_ALG_HMAC_SHA256,
    SIG_ALG_HMAC_SHA512,
    SIG_ALG_TOKEN,      /* the header carries the shared secret itself (GitLab) */
    SIG_ALG_PUBLIC_KEY, /* spec.pk names the algorithm; keys are public keys */
};

enum sig_encoding {
    SIG_ENC_HEX,           /* either letter case */
    SIG_ENC_BASE64,        /* standard alphabet, padded */
    SIG_ENC_HEX_OR_BASE64, /* hmac-sha256: whichever the length says */
    SIG_ENC_RAW,           /* SIG_ALG_TOKEN: the text itself */
};

enum sig_ts_format {
    SIG_TS_UNIX,    /* decimal seconds; {timestamp} is the parsed value re-formatted */
    SIG_TS_UNIX_MS, /* decimal milliseconds; {timestamp} is the parsed value re-formatted */
    SIG_TS_RFC3339, /* 2019-11-16T09:11:12.634234626Z; {timestamp} is the text as received */
};

/* How a configured secret becomes key bytes. */
enum sig_key_format {
    SIG_KEY_RAW,          /* the secret's bytes as written */
    SIG_KEY_WHSEC_BASE64, /* "whsec_<base64>" or bare base64, decoded (Standard Webhooks) */
    SIG_KEY_PUBLIC,       /* a public key: decoded by the sig_pk_ops of spec.pk */
};

enum sig_pk_alg { SIG_PK_NONE, SIG_PK_ECDSA_P256, SIG_PK_ED25519 };

/* Handshakes a preset's provider performs before (or besides) sending
 * events; answered by engine/inbound/handshake.c, never stored. */
enum sig_handshake {
    SIG_HANDSHAKE_NONE,
    SIG_HANDSHAKE_SLACK,  /* POST {"type":"url_verification","challenge":…}, signed */
    SIG_HANDSHAKE_ZOOM,   /* POST event endpoint.url_validation, signed; answer HMAC of plainToken */
    SIG_HANDSHAKE_META,   /* GET hub.mode=subscribe&hub.verify_token&hub.challenge */
    SIG_HANDSHAKE_TWITCH, /* POST webhook_callback_verification, signed; answer the challenge */
    SIG_HANDSHAKE_X,      /* GET crc_token; answer sha256=base64 HMAC(consumer secret) */
};

/* Bodies a preset accepts (bit set). Form bodies are stored as a JSON
 * object of their fields. */
#define SIG_BODY_JSON 1u
#define SIG_BODY_FORM 2u

/* How a request is signed. For presets every pointer is static; for
 * `scheme = hmac` (and hmac-sha256's header) they point into the partner's
 * config, which outlives every verification that uses it. */
struct sig_spec {
    enum sig_alg alg;
    enum sig_pk_alg pk; /* SIG_ALG_PUBLIC_KEY only */
    enum sig_key_format key_format;
    /* The signed bytes: literal text with placeholders {body} (raw body),
     * {timestamp}, {url} (the URL the provider called: public_url + the
     * query as received), {method}, {header:Name}, {json:dotted.path} (a
     * field of the JSON body, as text), {form} (the form fields sorted by
     * name, each name then value, Twilio's rule). No escapes. */
    const char *signed_template;
    /* Where the signature is: a header (NULL for hmac-sha256 means
     * sig_params.header_name), or a JSON field of the body (Mailgun). */
    const char *signature_header;
    const char *signature_json;
    /* Text before each candidate ("sha256=", "v1=", "v1,"), compared in any
     * letter case; "" or NULL for none. prefix_optional: a candidate may
     * also come without it (hmac-sha256's "sha256="). */
    const char *signature_prefix;
    bool prefix_optional;
    /* Several candidates per header, separated by ',', ';' or ' ' (those of
     * the three that the prefix does not itself contain): key rotation
     * (Standard Webhooks, Stripe, PagerDuty). Elements without the prefix
     * (Stripe's t=) are skipped. false: the whole value is one candidate. */
    bool multiple;
    /* The separators between elements of the signature header (candidates
     * and the timestamp element); NULL = ',', ';' and ' ' less those the
     * prefix contains. Stripe ",", Paddle ";", Standard Webhooks " ". */
    const char *separators;
    enum sig_encoding encoding;
    /* The timestamp, if the scheme has one: a header, an element of the
     * signature header (timestamp_header equal to signature_header and a
     * timestamp_prefix such as "t="), or a JSON field. All NULL: none. */
    const char *timestamp_header;
    const char *timestamp_prefix;
    const char *timestamp_json;
    enum sig_ts_format timestamp_format;
    /* Twilio's JSON variant: when {url} has a bodySHA256 query parameter,
     * it must equal the hex SHA-256 of the body (the URL is what is signed). */
    bool body_sha256_query;
    /* HubSpot v3: {url} with %3A %2F %3F %40 %21 %24 %27 %28 %29 %2A %2C
     * %3B decoded, as HubSpot signs it. */
    bool url_decode_reserved;
    /* Twilio: a header whose `algorithm=HMAC_SHA256` element switches the
     * HMAC to SHA-256 (`HMAC_SHA1` or none: the spec's algorithm). */
    const char *algorithm_header;
    /* Twilio: when {url} does not match, the URL with the scheme's default
     * port added (or, if it has one, removed) is tried too, as Twilio's SDKs
     * do (Twilio signs whichever form it was configured with). */
    bool url_port_variants;
    /* Another name for a set of headers (standard-webhooks: svix-id,
     * svix-timestamp and svix-signature, as Svix sends them, for webhook-id,
     * webhook-timestamp and webhook-signature): a header whose name starts
     * with alias_of that the request does not carry is read under the name
     * with alias instead. NULL: none. */
    const char *alias_of, *alias;
};

/* One provider preset: the value of `[partner NAME] scheme =`. */
struct sig_preset {
    const char *name; /* config spelling */
    enum sig_scheme scheme;
    struct sig_spec spec;
    int64_t tolerance_s; /* default `tolerance` when the spec has a timestamp */
    /* Defaults in the config's syntax: "json:PATH", "header:NAME", or
     * "digest" (the hex SHA-256 of the signed content without its
     * timestamp, for providers that send no id, or only an optional or
     * unsigned one); NULL: none
     * (the partner must configure it). */
    const char *event_id;
    const char *event_type;
    const char *entity_id;
    unsigned bodies;       /* SIG_BODY_* */
    bool needs_public_url; /* {url} is signed: `public_url` should be set (else built from Host) */
    enum sig_handshake handshake;
    /* Non-NULL: the partner must set `allow_ips` (ranges, not every
     * address), and this says why for the config's error: the handshake
     * answers whoever asks with a MAC over bytes the asker chooses, which is
     * also a valid signature of a request carrying those bytes. */
    const char *requires_allow_ips;
    const char *verified; /* one line for the preset table (docs/guides/inbound.md) */
};

/* The preset of a scheme (SIG_HMAC included: its spec is empty and filled
 * from the config), or NULL outside the enum. Static storage. */
const struct sig_preset *sig_preset_get(enum sig_scheme scheme);

/* Parses a config value (a preset's name, or "hmac", in any letter case)
 * into *out. Returns -1 for anything else, leaving *out unchanged. */
__attribute__((warn_unused_result)) int sig_scheme_parse(const char *name, enum sig_scheme *out);

/* The config spelling of a scheme; "invalid" outside the enum. Static
 * storage. */
const char *sig_scheme_name(enum sig_scheme scheme);

/* A decoded secret or public key. Owned by whoever filled it in with
 * sig_key_decode() / sig_public_key_decode(); released with sig_key_clear().
 * `handle` is an optional parsed form a public-key module keeps (e.g. an
 * EVP_PKEY *), released with `release` by sig_key_clear(). */
struct sig_key {
    unsigned char *bytes;
    size_t len;
    void *handle;
    void (*release)(void *handle);
};

/* Decodes a configured secret into key bytes for `scheme` (by the preset's
 * key_format; SIG_HMAC is raw):
 *   - standard-webhooks: "whsec_<base64>", or the bare base64 text; the
 *     base64 part is decoded (missing '=' padding is tolerated, as the
 *     reference SDKs do).
 *   - every other shared-secret scheme: the secret's bytes as they are
 *     (Stripe's "whsec_..." included: Stripe signs with the whole string).
 * An empty secret or empty decoded key is refused, since an HMAC with an
 * empty key proves nothing; so is a public-key scheme (use
 * sig_public_key_decode()). On success *out owns a heap copy (free it with
 * sig_key_clear()); on failure *out is zeroed and err says why without
 * quoting the secret. Allocation failure aborts (xmalloc). */
__attribute__((warn_unused_result)) int sig_key_decode(enum sig_scheme scheme, const char *secret, struct sig_key *out,
                                                       char *err, size_t errlen);

/* Zeroes the key bytes (OPENSSL_cleanse), releases the handle, frees them
 * and zeroes *key. Accepts NULL and an already cleared key. */
void sig_key_clear(struct sig_key *key);

/* ---- public-key algorithms (implemented in signature_pk.c) ---- */

struct sig_pk_ops {
    /* `public_key = TEXT` (the form the provider's console shows) into
     * *out; 0, or -1 with err (never quoting the key's text). */
    int (*decode)(const char *text, struct sig_key *out, char *err, size_t errlen);
    /* 1: sig is a valid signature of msg under key; 0: it is not; -1: the
     * key or the library failed. */
    int (*verify)(const struct sig_key *key, const unsigned char *msg, size_t msglen, const unsigned char *sig,
                  size_t siglen);
};

/* The algorithm's operations, or NULL when this build has none. Defined
 * weakly in signature.c (NULL for every algorithm); signature_pk.c defines
 * the real one. */
const struct sig_pk_ops *sig_pk_ops_for(enum sig_pk_alg alg);

/* Decodes `public_key = TEXT` for a public-key scheme into *out; -1 with err
 * for a shared-secret scheme, an algorithm this build lacks, or bad text. */
__attribute__((warn_unused_result)) int sig_public_key_decode(enum sig_scheme scheme, const char *text,
                                                              struct sig_key *out, char *err, size_t errlen);

/* ---- verification ---- */

/* Case-insensitive request header lookup: returns the value (borrowed, valid
 * for the duration of sig_verify()) or NULL when the header is absent. */
typedef const char *(*sig_header_fn)(void *arg, const char *name);

/* The request's header name under spec: header(arg, name), or when that is
 * absent and spec gives name another (alias_of, alias), the header under
 * that name. NULL: neither. What sig_verify() reads headers with, and what
 * a caller reading a `header:NAME` field of a partner uses too. */
const char *sig_spec_header(const struct sig_spec *spec, sig_header_fn header, void *arg, const char *name);

/* The request as received. All pointers are borrowed for the call. */
struct sig_request {
    const unsigned char *body; /* raw body bytes exactly as received */
    size_t body_len;
    sig_header_fn header;
    void *header_arg;
    int64_t now;              /* unix seconds */
    const char *method;       /* {method}; NULL = "POST" */
    const char *url;          /* {url}; NULL = "" */
    const char *content_type; /* {form} reads the body only when this is a form type */
};

/* What a partner's requests must satisfy. All pointers are borrowed. */
struct sig_params {
    enum sig_scheme scheme;
    const struct sig_key *keys; /* key rotation: a match with any key is accepted */
    size_t nkeys;
    /* The largest accepted difference, in either direction, between the
     * signed timestamp and `now`. 0 demands the same second; a negative
     * value rejects every request. */
    int64_t tolerance_s;
    /* hmac-sha256 only: header holding the MAC, e.g. "X-Signature"; its
     * value is 64 hex digits or padded base64, optionally prefixed
     * "sha256=". */
    const char *header_name;
    /* The spec to verify with; NULL = the preset's (required for SIG_HMAC). */
    const struct sig_spec *spec;
};

enum sig_result {
    SIG_OK = 0,
    SIG_MISSING_HEADER,             /* a required header (or JSON field) is absent */
    SIG_MALFORMED_HEADER,           /* present but unparseable, or no usable signature */
    SIG_MISMATCH,                   /* well-formed, but no key produces any given MAC */
    SIG_TIMESTAMP_OUT_OF_TOLERANCE, /* authentic, but signed too long ago or in the future */
};

/* Verifies req against params. The signature is checked before the
 * timestamp, so SIG_TIMESTAMP_OUT_OF_TOLERANCE is only reported for
 * correctly signed requests (a reliable clock-skew or replay signal). A
 * configuration that cannot verify anything (no keys, hmac-sha256 without a
 * header name) fails closed and says so in err. err receives "" on SIG_OK
 * and a one-line reason otherwise. */
__attribute__((warn_unused_result)) enum sig_result sig_verify(const struct sig_params *params,
                                                               const struct sig_request *req, char *err,
                                                               size_t errlen);

/* Bytes of sig_content_digest()'s output. */
#define SIG_DIGEST_LEN 32

/* sig_verify(), and on SIG_OK the SHA-256 of the signed content (the
 * rendered template) without its timestamp into digest: the event id of
 * presets whose provider sends none (`event_id = digest`). It names the
 * event, not the delivery attempt: a retry the provider re-signs with a new
 * timestamp has the same digest (the body, URL, method and signed headers
 * stay in it). digest may be NULL. */
__attribute__((warn_unused_result)) enum sig_result sig_verify_digest(const struct sig_params *params,
                                                                      const struct sig_request *req,
                                                                      unsigned char digest[SIG_DIGEST_LEN], char *err,
                                                                      size_t errlen);

/* "ok", "missing_header", "malformed_header", "bad_signature",
 * "timestamp_out_of_tolerance"; "invalid" outside the enum. Static storage. */
const char *sig_result_name(enum sig_result result);

/* Checks a signed template (placeholders as in struct sig_spec); 0, or -1
 * with err naming the bad placeholder. */
__attribute__((warn_unused_result)) int sig_template_check(const char *tpl, char *err, size_t errlen);

/* What a spec's signature covers, so that a caller can tell whether a value
 * it reads from a request is authenticated: the body (every JSON field; a
 * {json:…} placeholder signs that field only, not the body), a
 * header (named by {header:…} in the template, or the timestamp header when
 * {timestamp} is signed), and a timestamp held against the tolerance (only
 * those refuse a captured request replayed later). Names compare
 * case-insensitively. */
bool sig_spec_signs_body(const struct sig_spec *spec);
bool sig_spec_signs_header(const struct sig_spec *spec, const char *name);
bool sig_spec_signs_timestamp(const struct sig_spec *spec);

/* The same questions for a preset's own spec (kept for callers that only
 * know the scheme; SIG_HMAC and hmac-sha256 answer for the body only). */
bool sig_signs_header(enum sig_scheme scheme, const char *name);
bool sig_signs_timestamp(enum sig_scheme scheme);

/* SHA-256 of bytes, into out: the identity of a request's signed content,
 * for deduplicating replays of schemes whose signature covers neither the
 * event id nor a timestamp. */
void sig_content_digest(const unsigned char *body, size_t len, unsigned char out[SIG_DIGEST_LEN]);

/* HMAC of data with key, for handshakes that answer with a MAC (Zoom's
 * encryptedToken, X's response_token). alg is one of the SIG_ALG_HMAC_*;
 * out must hold 64 bytes; *outlen receives the MAC's length. 0, or -1. */
__attribute__((warn_unused_result)) int sig_hmac(enum sig_alg alg, const struct sig_key *key, const void *data,
                                                 size_t len, unsigned char *out, size_t *outlen);

/* Outbound Standard Webhooks signature: writes "v1,<base64>" (NUL-terminated)
 * of HMAC-SHA256(key, id "." timestamp "." body) into out, ready for the
 * `webhook-signature` header. outlen >= SIG_STANDARD_SIGNATURE_SIZE always
 * suffices. Returns -1 for an empty key or id, a negative timestamp, or a
 * buffer that is too small (out is then "" if outlen > 0). */
__attribute__((warn_unused_result)) int sig_sign_standard(const struct sig_key *key, const char *id, int64_t timestamp,
                                                          const unsigned char *body, size_t len, char *out,
                                                          size_t outlen);

#endif
