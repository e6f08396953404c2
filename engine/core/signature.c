/*
 * signature.c — verification of inbound webhook signatures and signing of
 * outbound ones, all HMAC-SHA256 (OpenSSL EVP_MAC). Every scheme reduces to
 * the same plan: some bytes that were signed (an optional prefix such as
 * "id.timestamp." or "t.", then the raw body), a header text holding one or
 * more candidate MACs, an iterator that decodes the next usable candidate
 * from that text, and optionally a timestamp to hold against the tolerance.
 * sig_verify() builds the plan for the partner's scheme, refuses headers
 * without a single usable candidate as malformed, then computes the MAC once
 * per configured key (key rotation) and compares it with every candidate
 * using CRYPTO_memcmp on the raw 32 bytes. Header text is never copied or
 * echoed into error messages; only names, counts and clock differences are.
 */
#include "signature.h"

#include "encoding.h"
#include "errbuf.h"
#include "xmalloc.h"

#include <inttypes.h>
#include <stdarg.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>

#define STANDARD_SECRET_PREFIX "whsec_"
#define SHA256_PREFIX "sha256="

/* Timestamps have at most this many digits: enough for any real clock and
 * far from int64 overflow, so arithmetic on them needs no checks. */
#define TIMESTAMP_MAX_DIGITS 18

/* A borrowed byte range of a header value or of signed content. */
struct span {
    const char *p;
    size_t n;
};

/* Decodes the next usable candidate MAC from *rest into mac and advances
 * *rest past it; returns 0 when no candidate is left. */
typedef int (*mac_iter_fn)(struct span *rest, unsigned char mac[SIG_MAC_LEN]);

/* What sig_verify() checks for one request, filled in per scheme. */
struct verify_plan {
    const char *sig_header; /* header name that holds the candidates, for messages */
    struct span sigs;       /* its trimmed value */
    mac_iter_fn next_mac;
    struct span signed_parts[3]; /* signed content, the body always last */
    size_t nparts;
    char ts_text[24]; /* "." ts "." or ts ".", sized for any int64 */
    int has_ts;
    int64_t ts;
    const char *ts_label; /* e.g. "webhook-timestamp", for messages */
};

static int is_ows(char c)
{
    return c == ' ' || c == '\t';
}

static struct span span_trim(struct span s)
{
    while (s.n > 0 && is_ows(s.p[0])) {
        s.p++;
        s.n--;
    }
    while (s.n > 0 && is_ows(s.p[s.n - 1]))
        s.n--;
    return s;
}

static int span_eq(struct span s, const char *lit)
{
    return s.n == strlen(lit) && memcmp(s.p, lit, s.n) == 0;
}

/* Strips a case-insensitive literal prefix; returns 1 if it was there. */
static int span_strip_prefix(struct span *s, const char *prefix)
{
    size_t n = strlen(prefix);

    if (s->n < n || strncasecmp(s->p, prefix, n) != 0)
        return 0;
    s->p += n;
    s->n -= n;
    return 1;
}

/* Splits the next sep-separated token off *rest into *tok (trimmed); empty
 * tokens are skipped. Returns 0 when *rest holds no further token. */
static int span_next_token(struct span *rest, char sep, struct span *tok)
{
    while (rest->n > 0) {
        const char *end = memchr(rest->p, sep, rest->n);
        size_t len = end != NULL ? (size_t)(end - rest->p) : rest->n;

        tok->p = rest->p;
        tok->n = len;
        rest->p += len;
        rest->n -= len;
        if (rest->n > 0) { /* step over the separator */
            rest->p++;
            rest->n--;
        }
        *tok = span_trim(*tok);
        if (tok->n > 0)
            return 1;
    }
    return 0;
}

/* Decimal unix seconds, digits only; -1 if s is anything else. */
static int parse_timestamp(struct span s, int64_t *out)
{
    int64_t v = 0;

    if (s.n == 0 || s.n > TIMESTAMP_MAX_DIGITS)
        return -1;
    for (size_t i = 0; i < s.n; i++) {
        if (s.p[i] < '0' || s.p[i] > '9')
            return -1;
        v = v * 10 + (s.p[i] - '0');
    }
    *out = v;
    return 0;
}

/* The HMAC implementation, fetched from the provider once: a fetch per
 * signature was 5% of a relay's CPU at 15,000 deliveries/s. EVP_MAC objects
 * may be shared between threads. */
static EVP_MAC *hmac_alg;
static pthread_once_t hmac_once = PTHREAD_ONCE_INIT;

static void hmac_release(void)
{
    EVP_MAC_free(hmac_alg);
    hmac_alg = NULL;
}

static void hmac_fetch(void)
{
    hmac_alg = EVP_MAC_fetch(NULL, "HMAC", NULL);
    if (hmac_alg)
        atexit(hmac_release);
}

/* HMAC-SHA256 over the concatenation of parts. Returns -1 if OpenSSL fails
 * (no HMAC provider, out of memory). */
static int hmac_sha256(const struct sig_key *key, const struct span *parts, size_t nparts,
                       unsigned char mac[SIG_MAC_LEN])
{
    static char digest[] = "SHA256";
    OSSL_PARAM params[] = {
        OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest, 0),
        OSSL_PARAM_construct_end(),
    };
    EVP_MAC_CTX *ctx = NULL;
    size_t maclen = 0;
    int rc = -1;

    if (key == NULL || key->bytes == NULL || key->len == 0)
        return -1;
    pthread_once(&hmac_once, hmac_fetch);
    if (hmac_alg == NULL)
        goto done;
    ctx = EVP_MAC_CTX_new(hmac_alg);
    if (ctx == NULL || !EVP_MAC_init(ctx, key->bytes, key->len, params))
        goto done;
    for (size_t i = 0; i < nparts; i++)
        if (parts[i].n > 0 && !EVP_MAC_update(ctx, (const unsigned char *)parts[i].p, parts[i].n))
            goto done;
    if (!EVP_MAC_final(ctx, mac, &maclen, SIG_MAC_LEN) || maclen != SIG_MAC_LEN)
        goto done;
    rc = 0;
done:
    EVP_MAC_CTX_free(ctx);
    return rc;
}

/* ---- candidate iterators, one per header format ---- */

static int hex_mac(struct span s, unsigned char mac[SIG_MAC_LEN])
{
    size_t n = 0;

    return s.n == ENC_HEX_LEN(SIG_MAC_LEN) && enc_hex_decode(s.p, s.n, mac, SIG_MAC_LEN, &n) == 0 && n == SIG_MAC_LEN;
}

static int base64_mac(struct span s, unsigned char mac[SIG_MAC_LEN])
{
    size_t n = 0;

    return enc_base64_decode(s.p, s.n, mac, SIG_MAC_LEN, &n) == 0 && n == SIG_MAC_LEN;
}

/* webhook-signature: space-separated "v1,<base64>" entries; other versions
 * (v1a, v2, ...) and undecodable entries are skipped. */
static int next_standard_mac(struct span *rest, unsigned char mac[SIG_MAC_LEN])
{
    struct span entry;

    while (span_next_token(rest, ' ', &entry)) {
        const char *comma = memchr(entry.p, ',', entry.n);
        struct span version, value;

        if (comma == NULL)
            continue;
        version = (struct span){entry.p, (size_t)(comma - entry.p)};
        value = (struct span){comma + 1, entry.n - version.n - 1};
        if (span_eq(version, "v1") && base64_mac(value, mac))
            return 1;
    }
    return 0;
}

/* Stripe-Signature: comma-separated k=v elements; each v1= holds hex. */
static int next_stripe_mac(struct span *rest, unsigned char mac[SIG_MAC_LEN])
{
    struct span elem;

    while (span_next_token(rest, ',', &elem)) {
        if (elem.n > 3 && memcmp(elem.p, "v1=", 3) == 0 && hex_mac((struct span){elem.p + 3, elem.n - 3}, mac))
            return 1;
    }
    return 0;
}

/* X-Hub-Signature-256: exactly "sha256=<64 hex>"; a single candidate. */
static int next_github_mac(struct span *rest, unsigned char mac[SIG_MAC_LEN])
{
    struct span s = *rest;

    rest->n = 0;
    return s.n > 0 && span_strip_prefix(&s, SHA256_PREFIX) && hex_mac(s, mac);
}

/* Generic header: optional "sha256=", then 64 hex digits or padded base64
 * of 32 bytes. The two cannot be confused: base64 of 32 bytes is 44
 * characters long. A single candidate. */
static int next_generic_mac(struct span *rest, unsigned char mac[SIG_MAC_LEN])
{
    struct span s = *rest;

    rest->n = 0;
    if (s.n == 0)
        return 0;
    (void)span_strip_prefix(&s, SHA256_PREFIX);
    return hex_mac(s, mac) || base64_mac(s, mac);
}

static size_t count_macs(struct span sigs, mac_iter_fn next)
{
    unsigned char mac[SIG_MAC_LEN];
    size_t n = 0;

    while (next(&sigs, mac))
        n++;
    return n;
}

/* ---- what a scheme signs ---- */

bool sig_signs_header(enum sig_scheme scheme, const char *name)
{
    return scheme == SIG_STANDARD_WEBHOOKS && name != NULL &&
           (strcasecmp(name, "webhook-id") == 0 || strcasecmp(name, "webhook-timestamp") == 0);
}

bool sig_signs_timestamp(enum sig_scheme scheme)
{
    return scheme == SIG_STANDARD_WEBHOOKS || scheme == SIG_STRIPE;
}

void sig_content_digest(const unsigned char *body, size_t len, unsigned char out[SIG_DIGEST_LEN])
{
    unsigned int n = 0;
    /* EVP_Digest fails only when OpenSSL cannot allocate (or SHA-256 is
     * missing): an invariant, like allocation. */
    int ok = EVP_Digest(body, len, out, &n, EVP_sha256(), NULL);
    HOOKD_ASSERT(ok == 1 && n == SIG_DIGEST_LEN);
}

/* ---- per-scheme plans ---- */

/* Fetches a required header, trimmed. Absent -> SIG_MISSING_HEADER; present
 * but blank -> SIG_MALFORMED_HEADER. */
static enum sig_result get_header(const struct sig_request *req, const char *name, struct span *out, char *err,
                                  size_t errlen)
{
    const char *v = req->header != NULL ? req->header(req->header_arg, name) : NULL;

    if (v == NULL) {
        err_set(err, errlen, "missing %s header", name);
        return SIG_MISSING_HEADER;
    }
    *out = span_trim((struct span){v, strlen(v)});
    if (out->n == 0) {
        err_set(err, errlen, "%s header is empty", name);
        return SIG_MALFORMED_HEADER;
    }
    return SIG_OK;
}

static enum sig_result plan_standard(const struct sig_request *req, struct verify_plan *plan, char *err, size_t errlen)
{
    struct span id, ts;
    enum sig_result r;

    if ((r = get_header(req, "webhook-id", &id, err, errlen)) != SIG_OK ||
        (r = get_header(req, "webhook-timestamp", &ts, err, errlen)) != SIG_OK ||
        (r = get_header(req, "webhook-signature", &plan->sigs, err, errlen)) != SIG_OK)
        return r;
    if (parse_timestamp(ts, &plan->ts) < 0) {
        err_set(err, errlen, "webhook-timestamp is not a decimal unix time (%zu characters)", ts.n);
        return SIG_MALFORMED_HEADER;
    }
    plan->sig_header = "webhook-signature";
    plan->next_mac = next_standard_mac;
    plan->has_ts = 1;
    plan->ts_label = "webhook-timestamp";
    /* The SDKs sign the timestamp re-formatted from its parsed value. */
    snprintf(plan->ts_text, sizeof plan->ts_text, ".%" PRId64 ".", plan->ts);
    plan->signed_parts[0] = id;
    plan->signed_parts[1] = (struct span){plan->ts_text, strlen(plan->ts_text)};
    plan->nparts = 2;
    if (count_macs(plan->sigs, next_standard_mac) == 0) {
        err_set(err, errlen, "webhook-signature has no v1,<base64 of 32 bytes> entry");
        return SIG_MALFORMED_HEADER;
    }
    return SIG_OK;
}

static enum sig_result plan_stripe(const struct sig_request *req, struct verify_plan *plan, char *err, size_t errlen)
{
    struct span rest, elem;
    size_t nt = 0, nv1 = 0;
    enum sig_result r;

    if ((r = get_header(req, "Stripe-Signature", &plan->sigs, err, errlen)) != SIG_OK)
        return r;
    rest = plan->sigs;
    while (span_next_token(&rest, ',', &elem)) {
        if (elem.n >= 2 && memcmp(elem.p, "t=", 2) == 0) {
            nt++;
            if (parse_timestamp((struct span){elem.p + 2, elem.n - 2}, &plan->ts) < 0) {
                err_set(err, errlen, "Stripe-Signature t= is not a decimal unix time");
                return SIG_MALFORMED_HEADER;
            }
        } else if (elem.n >= 3 && memcmp(elem.p, "v1=", 3) == 0) {
            nv1++;
        }
    }
    if (nt == 0) {
        err_set(err, errlen, "Stripe-Signature has no t= element");
        return SIG_MALFORMED_HEADER;
    }
    if (nt > 1) {
        err_set(err, errlen, "Stripe-Signature has %zu t= elements, expected one", nt);
        return SIG_MALFORMED_HEADER;
    }
    if (nv1 == 0) {
        err_set(err, errlen, "Stripe-Signature has no v1= element");
        return SIG_MALFORMED_HEADER;
    }
    if (count_macs(plan->sigs, next_stripe_mac) == 0) {
        err_set(err, errlen, "Stripe-Signature has %zu v1= element%s but none is 64 hex digits", nv1,
                nv1 == 1 ? "" : "s");
        return SIG_MALFORMED_HEADER;
    }
    plan->sig_header = "Stripe-Signature";
    plan->next_mac = next_stripe_mac;
    plan->has_ts = 1;
    plan->ts_label = "Stripe-Signature t=";
    snprintf(plan->ts_text, sizeof plan->ts_text, "%" PRId64 ".", plan->ts);
    plan->signed_parts[0] = (struct span){plan->ts_text, strlen(plan->ts_text)};
    plan->nparts = 1;
    return SIG_OK;
}

static enum sig_result plan_github(const struct sig_request *req, struct verify_plan *plan, char *err, size_t errlen)
{
    enum sig_result r;

    plan->sig_header = "X-Hub-Signature-256";
    if ((r = get_header(req, plan->sig_header, &plan->sigs, err, errlen)) != SIG_OK)
        return r;
    plan->next_mac = next_github_mac;
    if (count_macs(plan->sigs, next_github_mac) == 0) {
        err_set(err, errlen, "X-Hub-Signature-256 is not sha256=<64 hex digits> (%zu characters)", plan->sigs.n);
        return SIG_MALFORMED_HEADER;
    }
    return SIG_OK;
}

static enum sig_result plan_generic(const struct sig_params *params, const struct sig_request *req,
                                    struct verify_plan *plan, char *err, size_t errlen)
{
    enum sig_result r;

    if (params->header_name == NULL || params->header_name[0] == '\0') {
        err_set(err, errlen, "hmac-sha256 needs the name of the signature header in the config");
        return SIG_MISSING_HEADER;
    }
    plan->sig_header = params->header_name;
    if ((r = get_header(req, plan->sig_header, &plan->sigs, err, errlen)) != SIG_OK)
        return r;
    plan->next_mac = next_generic_mac;
    if (count_macs(plan->sigs, next_generic_mac) == 0) {
        err_set(err, errlen,
                "%s is neither 64 hex digits nor base64 of 32 bytes, with optional sha256= "
                "(%zu characters)",
                plan->sig_header, plan->sigs.n);
        return SIG_MALFORMED_HEADER;
    }
    return SIG_OK;
}

/* ---- verification ---- */

/* 1 if some key's MAC over the signed content equals some candidate, 0 if
 * none does, -1 if the HMAC could not be computed. */
static int match_any_key(const struct sig_params *params, const struct verify_plan *plan)
{
    unsigned char expected[SIG_MAC_LEN], got[SIG_MAC_LEN];
    int found = 0;

    for (size_t k = 0; k < params->nkeys && !found; k++) {
        struct span rest = plan->sigs;

        if (hmac_sha256(&params->keys[k], plan->signed_parts, plan->nparts, expected) < 0) {
            found = -1;
            break;
        }
        /* Every candidate is compared in constant time; stopping at a match
         * reveals only that the request is authentic. */
        while (!found && plan->next_mac(&rest, got))
            if (CRYPTO_memcmp(expected, got, SIG_MAC_LEN) == 0)
                found = 1;
    }
    OPENSSL_cleanse(expected, sizeof expected);
    OPENSSL_cleanse(got, sizeof got);
    return found;
}

static enum sig_result check_timestamp(const struct verify_plan *plan, int64_t now, int64_t tolerance, char *err,
                                       size_t errlen)
{
    int64_t age;

    if (tolerance < 0) {
        err_set(err, errlen, "%s cannot be checked: tolerance is negative (%" PRId64 "s)", plan->ts_label, tolerance);
        return SIG_TIMESTAMP_OUT_OF_TOLERANCE;
    }
    /* plan->ts is below 10^18, so only an absurd `now` can overflow; the
     * INT64_MIN case is excluded so that -age below is defined. */
    if (__builtin_sub_overflow(now, plan->ts, &age) || age == INT64_MIN) {
        err_set(err, errlen, "%s is out of range of the current time", plan->ts_label);
        return SIG_TIMESTAMP_OUT_OF_TOLERANCE;
    }
    if (age > tolerance) {
        err_set(err, errlen, "%s is %" PRId64 "s in the past (tolerance %" PRId64 "s)", plan->ts_label, age,
                tolerance);
        return SIG_TIMESTAMP_OUT_OF_TOLERANCE;
    }
    if (age < -tolerance) {
        err_set(err, errlen, "%s is %" PRId64 "s in the future (tolerance %" PRId64 "s)", plan->ts_label, -age,
                tolerance);
        return SIG_TIMESTAMP_OUT_OF_TOLERANCE;
    }
    return SIG_OK;
}

enum sig_result sig_verify(const struct sig_params *params, const struct sig_request *req, char *err, size_t errlen)
{
    struct verify_plan plan;
    enum sig_result r;
    int found;

    err_set(err, errlen, "%s", "");
    if (params == NULL || req == NULL || (req->body == NULL && req->body_len > 0)) {
        err_set(err, errlen, "signature verification called without a request or parameters");
        return SIG_MISMATCH;
    }
    if (params->keys == NULL || params->nkeys == 0) {
        err_set(err, errlen, "no signing secret is configured, so nothing can be verified");
        return SIG_MISMATCH;
    }
    memset(&plan, 0, sizeof plan);
    switch (params->scheme) {
    case SIG_STANDARD_WEBHOOKS: r = plan_standard(req, &plan, err, errlen); break;
    case SIG_STRIPE: r = plan_stripe(req, &plan, err, errlen); break;
    case SIG_GITHUB: r = plan_github(req, &plan, err, errlen); break;
    case SIG_HMAC_SHA256: r = plan_generic(params, req, &plan, err, errlen); break;
    default: err_set(err, errlen, "unknown signature scheme %d", (int)params->scheme); return SIG_MISMATCH;
    }
    if (r != SIG_OK)
        return r;
    plan.signed_parts[plan.nparts++] = (struct span){(const char *)req->body, req->body_len};

    found = match_any_key(params, &plan);
    if (found < 0) {
        err_set(err, errlen, "HMAC-SHA256 could not be computed (OpenSSL error)");
        return SIG_MISMATCH;
    }
    if (!found) {
        size_t ncand = count_macs(plan.sigs, plan.next_mac);

        err_set(err, errlen, "no signature in %s matches the request (%zu candidate%s, %zu key%s)", plan.sig_header,
                ncand, ncand == 1 ? "" : "s", params->nkeys, params->nkeys == 1 ? "" : "s");
        return SIG_MISMATCH;
    }
    if (plan.has_ts)
        return check_timestamp(&plan, req->now, params->tolerance_s, err, errlen);
    return SIG_OK;
}

/* ---- names, keys, signing ---- */

static const char *const scheme_names[] = {
    [SIG_STANDARD_WEBHOOKS] = "standard-webhooks",
    [SIG_STRIPE] = "stripe",
    [SIG_GITHUB] = "github",
    [SIG_HMAC_SHA256] = "hmac-sha256",
};

int sig_scheme_parse(const char *name, enum sig_scheme *out)
{
    if (name == NULL || out == NULL)
        return -1;
    for (size_t i = 0; i < sizeof scheme_names / sizeof scheme_names[0]; i++) {
        if (strcasecmp(name, scheme_names[i]) == 0) {
            *out = (enum sig_scheme)i;
            return 0;
        }
    }
    return -1;
}

const char *sig_scheme_name(enum sig_scheme scheme)
{
    if ((unsigned)scheme >= sizeof scheme_names / sizeof scheme_names[0])
        return "invalid";
    return scheme_names[scheme];
}

const char *sig_result_name(enum sig_result result)
{
    switch (result) {
    case SIG_OK: return "ok";
    case SIG_MISSING_HEADER: return "missing_header";
    case SIG_MALFORMED_HEADER: return "malformed_header";
    case SIG_MISMATCH: return "bad_signature";
    case SIG_TIMESTAMP_OUT_OF_TOLERANCE: return "timestamp_out_of_tolerance";
    }
    return "invalid";
}

/* Decodes the base64 part of a Standard Webhooks secret into *out. The
 * reference SDKs accept secrets whose '=' padding was dropped, so it is
 * restored here before the strict decoder sees the text. */
static int decode_standard_secret(const char *b64, struct sig_key *out, char *err, size_t errlen)
{
    size_t n = strlen(b64), padded_len, cap, len = 0;
    char *padded;
    int rc = -1;

    if (n % 4 == 1) {
        err_set(err, errlen, "standard-webhooks secret is not valid base64 (bad length)");
        return -1;
    }
    padded_len = n + (4 - n % 4) % 4;
    cap = ENC_BASE64_DECODED_MAX(padded_len);
    padded = xmalloc(padded_len + 1);
    memcpy(padded, b64, n);
    memset(padded + n, '=', padded_len - n);
    padded[padded_len] = '\0';
    /* len covers the whole buffer until the decode succeeds, so that a
     * failure cleanses whatever was partly decoded. n >= 2 here, so a
     * successful decode yields at least one byte. */
    out->bytes = xmalloc(cap);
    out->len = cap;
    if (enc_base64_decode(padded, padded_len, out->bytes, cap, &len) < 0) {
        err_set(err, errlen, "standard-webhooks secret is not whsec_<base64> or base64");
        goto done;
    }
    out->len = len;
    rc = 0;
done:
    OPENSSL_cleanse(padded, padded_len);
    free(padded);
    if (rc < 0)
        sig_key_clear(out);
    return rc;
}

int sig_key_decode(enum sig_scheme scheme, const char *secret, struct sig_key *out, char *err, size_t errlen)
{
    size_t n;

    if (out == NULL)
        return -1;
    out->bytes = NULL;
    out->len = 0;
    if (secret == NULL || secret[0] == '\0') {
        err_set(err, errlen, "%s signing secret is empty", sig_scheme_name(scheme));
        return -1;
    }
    switch (scheme) {
    case SIG_STANDARD_WEBHOOKS:
        if (strncmp(secret, STANDARD_SECRET_PREFIX, strlen(STANDARD_SECRET_PREFIX)) == 0)
            secret += strlen(STANDARD_SECRET_PREFIX);
        if (secret[0] == '\0') {
            err_set(err, errlen, "standard-webhooks secret has nothing after the whsec_ prefix");
            return -1;
        }
        return decode_standard_secret(secret, out, err, errlen);
    case SIG_STRIPE:
    case SIG_GITHUB:
    case SIG_HMAC_SHA256:
        n = strlen(secret);
        out->bytes = xmalloc(n);
        memcpy(out->bytes, secret, n);
        out->len = n;
        return 0;
    }
    err_set(err, errlen, "unknown signature scheme %d", (int)scheme);
    return -1;
}

void sig_key_clear(struct sig_key *key)
{
    if (key == NULL)
        return;
    if (key->bytes != NULL) {
        OPENSSL_cleanse(key->bytes, key->len);
        free(key->bytes);
    }
    key->bytes = NULL;
    key->len = 0;
}

int sig_sign_standard(const struct sig_key *key, const char *id, int64_t timestamp, const unsigned char *body,
                      size_t len, char *out, size_t outlen)
{
    char ts_text[24]; /* "." ts ".", sized for any int64 */
    unsigned char mac[SIG_MAC_LEN];
    struct span parts[3];
    int rc = -1;

    if (out == NULL || outlen == 0)
        return -1;
    out[0] = '\0';
    if (key == NULL || key->bytes == NULL || key->len == 0 || id == NULL || id[0] == '\0' || timestamp < 0 ||
        (body == NULL && len > 0) || outlen < 3 + ENC_BASE64_LEN(SIG_MAC_LEN) + 1)
        return -1;
    snprintf(ts_text, sizeof ts_text, ".%" PRId64 ".", timestamp);
    parts[0] = (struct span){id, strlen(id)};
    parts[1] = (struct span){ts_text, strlen(ts_text)};
    parts[2] = (struct span){(const char *)body, len};
    if (hmac_sha256(key, parts, 3, mac) < 0)
        goto done;
    memcpy(out, "v1,", 3);
    if (enc_base64_encode(mac, sizeof mac, out + 3, outlen - 3) < 0) {
        out[0] = '\0';
        goto done;
    }
    rc = 0;
done:
    OPENSSL_cleanse(mac, sizeof mac);
    return rc;
}
