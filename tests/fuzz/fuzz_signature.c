/*
 * fuzz_signature.c — libFuzzer target for inbound signature verification
 * (engine/core/signature.h) and the hex/base64 codecs beneath it
 * (engine/base/encoding.h): the code that reads attacker-controlled header text
 * before anything else in hookd looks at a request. Input format, one item
 * per line ('\n'); a line whose first byte is NUL stands for an absent
 * header, and when the input ends early the remaining headers are absent:
 *
 *   line 0   "NOW TOLERANCE" (decimal int64s: the clock and tolerance_s)
 *   line 1   webhook-id
 *   line 2   webhook-timestamp
 *   line 3   webhook-signature
 *   line 4   Stripe-Signature
 *   line 5   X-Hub-Signature-256
 *   line 6   X-Signature        (the hmac-sha256 scheme's configured header)
 *   line 7…  the other presets' headers, in the order of header_names[]
 *   rest     the raw body (any bytes)
 *
 * sig_verify() runs for every shared-secret preset of the table (and for
 * specs written as `scheme = hmac` would build them) with fixed keys (two
 * per scheme, the right one second, so key rotation is walked); the
 * public-key presets need signature_pk.c and are skipped here. The config
 * specs must give the same result as the presets they spell out, byte for
 * byte, on every input. Checked besides memory
 * safety and leaks: the result is a defined sig_result; err is a
 * NUL-terminated string, also with a 9-byte buffer, and never contains a
 * secret or a long signature header value. Two oracles: for the body and
 * clock of each input, a signature made independently (OpenSSL EVP_Q_mac,
 * and sig_sign_standard() for Standard Webhooks) must verify as SIG_OK for
 * every scheme (every HMAC preset: its template rendered here, independently
 * of signature.c), and must fail once a body byte is flipped. The codecs are
 * fed every line and the body, into exactly-sized heap buffers, and
 * round-tripped.
 */
/* fuzz.sh links: engine/core/signature.c engine/core/signature_content.c engine/core/signature_mac.c engine/core/signature_verify.c engine/base/encoding.c engine/base/xmalloc.c engine/base/errbuf.c engine/base/jsonpath.c */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <openssl/evp.h>

#include "encoding.h"
#include "fuzz_check.h"
#include "signature.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

enum { H_ID, H_TS, H_STANDARD, H_STRIPE, H_GITHUB, H_GENERIC, NHEADERS_LEGACY, NHEADERS = 34 };

static const char *const header_names[NHEADERS] = {
    "webhook-id",
    "webhook-timestamp",
    "webhook-signature",
    "Stripe-Signature",
    "X-Hub-Signature-256",
    "X-Signature",
    /* the other presets */
    "X-Shopify-Hmac-Sha256",
    "X-Slack-Signature",
    "X-Slack-Request-Timestamp",
    "X-Twilio-Signature",
    "X-Square-Hmacsha256-Signature",
    "Paddle-Signature",
    "x-zm-signature",
    "x-zm-request-timestamp",
    "Linear-Signature",
    "X-Hub-Signature",
    "Twitch-Eventsub-Message-Id",
    "Twitch-Eventsub-Message-Timestamp",
    "Twitch-Eventsub-Message-Signature",
    "Typeform-Signature",
    "X-HubSpot-Signature-v3",
    "X-HubSpot-Request-Timestamp",
    "Calendly-Webhook-Signature",
    "X-Gitlab-Token",
    "X-PagerDuty-Signature",
    "X-WC-Webhook-Signature",
    "X-Twitter-Webhooks-Signature",
    "X-Twilio-Email-Event-Webhook-Signature",
    "X-Twilio-Email-Event-Webhook-Timestamp",
    "X-Signature-Ed25519",
    "X-Signature-Timestamp",
    "Linear-Delivery",
    "X-GitHub-Delivery",
    "X-Shopify-Webhook-Id",
};

/* The published vectors' secrets (see tests/unit/test_signature.c), and a
 * wrong key tried first for each scheme; the other presets share a pair. */
static const char *const legacy_secrets[4][2] = {
    [SIG_STANDARD_WEBHOOKS] = {"whsec_dGhpcyBpcyB0aGUgbmV3IHNlY3JldCBrZXkh", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"},
    [SIG_STRIPE] = {"whsec_old_secret", "whsec_test_secret"},
    [SIG_GITHUB] = {"an older secret", "It's a Secret to Everybody"},
    [SIG_HMAC_SHA256] = {"an older secret", "It's a Secret to Everybody"},
};
static const char *const preset_secrets[2] = {"an older secret", "the presets' secret key"};
/* Text that must never appear in an error message. */
static const char *const secret_texts[] = {
    "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
    "dGhpcyBpcyB0aGUgbmV3IHNlY3JldCBrZXkh",
    "test_secret",
    "old_secret",
    "Secret to Everybody",
    "an older secret",
    "presets' secret",
};

/* The URL {url} renders: fixed, as a configured public_url would be. */
#define FUZZ_URL "https://hookd.example/v1/inbox/p?x=1"

/* Specs as `scheme = hmac` builds them from config keys (config.c,
 * build_hmac_spec), each spelling out a preset: the result must be the
 * preset's on every input. */
static const struct {
    enum sig_scheme preset;
    struct sig_spec spec;
} config_specs[] = {
    {SIG_STRIPE,
     {.alg = SIG_ALG_HMAC_SHA256,
      .signed_template = "{timestamp}.{body}",
      .signature_header = "Stripe-Signature",
      .signature_prefix = "v1=",
      .multiple = true,
      .separators = ",",
      .encoding = SIG_ENC_HEX,
      .timestamp_header = "Stripe-Signature",
      .timestamp_prefix = "t="}},
    {SIG_SLACK,
     {.alg = SIG_ALG_HMAC_SHA256,
      .signed_template = "v0:{timestamp}:{body}",
      .signature_header = "X-Slack-Signature",
      .signature_prefix = "v0=",
      .encoding = SIG_ENC_HEX,
      .timestamp_header = "X-Slack-Request-Timestamp"}},
    {SIG_SHOPIFY,
     {.alg = SIG_ALG_HMAC_SHA256,
      .signed_template = "{body}",
      .signature_header = "X-Shopify-Hmac-Sha256",
      .encoding = SIG_ENC_BASE64}},
    {SIG_INTERCOM,
     {.alg = SIG_ALG_HMAC_SHA1,
      .signed_template = "{body}",
      .signature_header = "X-Hub-Signature",
      .signature_prefix = "sha1=",
      .encoding = SIG_ENC_HEX}},
};

static struct sig_key keys[SIG_SCHEME_COUNT][2];

/* Shared-secret presets (the public-key ones need signature_pk.c). */
static int hmac_family(int s)
{
    const struct sig_preset *p = sig_preset_get((enum sig_scheme)s);

    return s != SIG_HMAC && p != NULL && p->spec.alg != SIG_ALG_PUBLIC_KEY;
}

struct request {
    char *hdr[NHEADERS]; /* NULL = absent */
    const unsigned char *body;
    size_t body_len;
    int64_t now, tolerance;
};

static const char *lookup(void *arg, const char *name)
{
    const struct request *r = arg;

    for (int i = 0; i < NHEADERS; i++)
        if (strcasecmp(header_names[i], name) == 0)
            return r->hdr[i];
    return NULL;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    char err[256];

    (void)argc;
    (void)argv;
    for (int s = 0; s < SIG_SCHEME_COUNT; s++)
        for (int k = 0; k < 2 && hmac_family(s); k++)
            if (sig_key_decode((enum sig_scheme)s, s < 4 ? legacy_secrets[s][k] : preset_secrets[k], &keys[s][k], err,
                               sizeof err) != 0) {
                fprintf(stderr, "fuzz_signature: key %d/%d: %s\n", s, k, err);
                abort();
            }
    return 0;
}

/* ---- codecs ---- */

static void *xalloc(size_t n)
{
    void *p = malloc(n ? n : 1);

    if (p == NULL)
        abort();
    return p;
}

static void fuzz_hex(const char *in, size_t len)
{
    size_t cap = len / 2, out_len = 99;
    unsigned char *out = xalloc(cap);

    if (enc_hex_decode(in, len, out, cap, &out_len) == 0) {
        char *text = xalloc(ENC_HEX_LEN(out_len) + 1);

        CHECK(out_len == len / 2);
        CHECK(enc_hex_encode(out, out_len, text, ENC_HEX_LEN(out_len) + 1) == 0);
        CHECK(strncasecmp(text, in, len) == 0);
        free(text);
        if (cap > 0) /* one byte short must be refused */
            CHECK(enc_hex_decode(in, len, out, cap - 1, &out_len) == -1 && out_len == 0);
    } else {
        CHECK(out_len == 0);
    }
    free(out);
}

static void fuzz_base64(const char *in, size_t len)
{
    size_t cap = ENC_BASE64_DECODED_MAX(len), out_len = 99, exact_len = 99;
    unsigned char *out = xalloc(cap);

    if (enc_base64_decode(in, len, out, cap, &out_len) == 0) {
        unsigned char *exact = xalloc(out_len);
        char *text = xalloc(ENC_BASE64_LEN(out_len) + 1);

        CHECK(out_len <= cap && (len == 0 || out_len + 2 >= cap));
        /* The exact length suffices and gives the same bytes... */
        CHECK(enc_base64_decode(in, len, exact, out_len, &exact_len) == 0);
        CHECK(exact_len == out_len && memcmp(exact, out, out_len) == 0);
        /* ...and one byte less does not. */
        if (out_len > 0)
            CHECK(enc_base64_decode(in, len, exact, out_len - 1, &exact_len) == -1 && exact_len == 0);
        /* Re-encoding gives the input back, except for the unused low bits
         * of the last character, which the decoder does not check. */
        CHECK(enc_base64_encode(out, out_len, text, ENC_BASE64_LEN(out_len) + 1) == 0);
        CHECK(strlen(text) == len);
        if (len > 0) {
            size_t last = len - 1;

            while (last > 0 && in[last] == '=')
                last--;
            CHECK(memcmp(text, in, last) == 0 && memcmp(text + last + 1, in + last + 1, len - last - 1) == 0);
        }
        free(exact);
        free(text);
    } else {
        CHECK(out_len == 0);
    }
    free(out);
}

/* Bytes -> text -> the same bytes, for both encodings. */
static void round_trip(const unsigned char *in, size_t len)
{
    char *hex = xalloc(ENC_HEX_LEN(len) + 1), *b64 = xalloc(ENC_BASE64_LEN(len) + 1);
    unsigned char *back = xalloc(len);
    size_t n = 0;

    CHECK(enc_hex_encode(in, len, hex, ENC_HEX_LEN(len) + 1) == 0);
    CHECK(enc_hex_encode(in, len, hex, ENC_HEX_LEN(len)) == -1);
    CHECK(enc_hex_decode(hex, ENC_HEX_LEN(len), back, len, &n) == 0);
    CHECK(n == len && memcmp(back, in, len) == 0);
    CHECK(enc_base64_encode(in, len, b64, ENC_BASE64_LEN(len) + 1) == 0);
    CHECK(enc_base64_encode(in, len, b64, ENC_BASE64_LEN(len)) == -1);
    CHECK(enc_base64_decode(b64, ENC_BASE64_LEN(len), back, len, &n) == 0);
    CHECK(n == len && memcmp(back, in, len) == 0);
    free(hex);
    free(b64);
    free(back);
}

static void fuzz_codecs(const char *in, size_t len)
{
    fuzz_hex(in, len);
    fuzz_base64(in, len);
}

/* ---- sig_verify ---- */

/* A header value that is itself (part of) a header name may rightly appear
 * in a message that names that header. */
static int names_a_header(const char *v)
{
    for (int i = 0; i < NHEADERS; i++)
        if (strcasestr(header_names[i], v) != NULL)
            return 1;
    return 0;
}

static void check_message(const struct request *r, const char *err, size_t errlen)
{
    CHECK(memchr(err, '\0', errlen) != NULL);
    for (size_t i = 0; i < sizeof secret_texts / sizeof secret_texts[0]; i++)
        CHECK(strstr(err, secret_texts[i]) == NULL);
    for (int h = H_STANDARD; h < NHEADERS; h++)
        if (r->hdr[h] != NULL && strlen(r->hdr[h]) >= 24 && strstr(header_names[h], "Timestamp") == NULL &&
            strstr(header_names[h], "-Id") == NULL && strstr(header_names[h], "Delivery") == NULL &&
            !names_a_header(r->hdr[h]))
            CHECK(strstr(err, r->hdr[h]) == NULL);
}

static enum sig_result verify_spec(enum sig_scheme scheme, const struct sig_spec *spec, const struct request *r,
                                   size_t nkeys, size_t errlen)
{
    struct sig_params params = {scheme, keys[scheme] + 2 - nkeys, nkeys, r->tolerance, "X-Signature", spec};
    struct sig_request req = {r->body, r->body_len, lookup, (void *)r, r->now, "POST", FUZZ_URL, NULL};
    char *err = xalloc(errlen);
    enum sig_result res;

    memset(err, 'x', errlen);
    res = sig_verify(&params, &req, err, errlen);
    CHECK(res >= SIG_OK && res <= SIG_TIMESTAMP_OUT_OF_TOLERANCE);
    CHECK(strcmp(sig_result_name(res), "invalid") != 0);
    check_message(r, err, errlen);
    if (res == SIG_OK)
        CHECK(err[0] == '\0');
    else
        CHECK(err[0] != '\0' || errlen == 1);
    free(err);
    return res;
}

static enum sig_result verify(enum sig_scheme scheme, const struct request *r, size_t nkeys, size_t errlen)
{
    return verify_spec(scheme, NULL, r, nkeys, errlen);
}

/* HMAC-SHA256 of prefix || body with the scheme's right key, via OpenSSL's
 * one-shot API rather than hookd's code. */
static void reference_mac(enum sig_scheme scheme, const char *prefix, const unsigned char *body, size_t len,
                          unsigned char mac[SIG_MAC_LEN])
{
    size_t plen = strlen(prefix), maclen = 0;
    unsigned char *msg = xalloc(plen + len);
    const struct sig_key *k = &keys[scheme][1];

    memcpy(msg, prefix, plen);
    if (len > 0)
        memcpy(msg + plen, body, len);
    CHECK(EVP_Q_mac(NULL, "HMAC", NULL, "SHA256", NULL, k->bytes, k->len, msg, plen + len, mac, SIG_MAC_LEN,
                    &maclen) != NULL);
    CHECK(maclen == SIG_MAC_LEN);
    free(msg);
}

static int ows_at_ends(const char *s)
{
    size_t n = strlen(s);

    return n == 0 || s[0] == ' ' || s[0] == '\t' || s[n - 1] == ' ' || s[n - 1] == '\t';
}

/* Signs the input's body at its clock for every scheme and expects
 * SIG_OK; then flips one body byte and expects a mismatch. */
static void oracle(const struct request *in)
{
    struct request r = *in;
    unsigned char mac[SIG_MAC_LEN];
    char ts[24], id[64], hex[ENC_HEX_LEN(SIG_MAC_LEN) + 1], b64[ENC_BASE64_LEN(SIG_MAC_LEN) + 1];
    char sw[SIG_STANDARD_SIGNATURE_SIZE], stripe[128], gh[128], prefix[128];
    unsigned char *flipped;

    if (r.now < 0 || r.now > INT64_C(999999999999999999) || r.tolerance < 0)
        return;
    snprintf(ts, sizeof ts, "%" PRId64, r.now);
    snprintf(id, sizeof id, "%s", in->hdr[H_ID] != NULL && !ows_at_ends(in->hdr[H_ID]) ? in->hdr[H_ID] : "msg_1");
    if (ows_at_ends(id))
        snprintf(id, sizeof id, "msg_1");

    CHECK(sig_sign_standard(&keys[SIG_STANDARD_WEBHOOKS][1], id, r.now, r.body, r.body_len, sw, sizeof sw) == 0);
    snprintf(prefix, sizeof prefix, "%s.%s.", id, ts);
    reference_mac(SIG_STANDARD_WEBHOOKS, prefix, r.body, r.body_len, mac);
    CHECK(enc_base64_encode(mac, sizeof mac, b64, sizeof b64) == 0);
    CHECK(strncmp(sw, "v1,", 3) == 0 && strcmp(sw + 3, b64) == 0);

    snprintf(prefix, sizeof prefix, "%s.", ts);
    reference_mac(SIG_STRIPE, prefix, r.body, r.body_len, mac);
    CHECK(enc_hex_encode(mac, sizeof mac, hex, sizeof hex) == 0);
    snprintf(stripe, sizeof stripe, "t=%s,v1=%s", ts, hex);

    reference_mac(SIG_GITHUB, "", r.body, r.body_len, mac);
    CHECK(enc_hex_encode(mac, sizeof mac, hex, sizeof hex) == 0);
    CHECK(enc_base64_encode(mac, sizeof mac, b64, sizeof b64) == 0);
    snprintf(gh, sizeof gh, "sha256=%s", hex);

    memset(r.hdr, 0, sizeof r.hdr);
    r.hdr[H_ID] = id;
    r.hdr[H_TS] = ts;
    r.hdr[H_STANDARD] = sw;
    r.hdr[H_STRIPE] = stripe;
    r.hdr[H_GITHUB] = gh;
    r.hdr[H_GENERIC] = in->body_len % 2 ? b64 : hex; /* both forms are accepted */
    for (int s = 0; s < 4; s++)
        CHECK(verify((enum sig_scheme)s, &r, 2, 256) == SIG_OK);

    if (r.body_len == 0)
        return;
    flipped = xalloc(r.body_len);
    memcpy(flipped, r.body, r.body_len);
    flipped[r.body_len / 2] ^= 0x01;
    r.body = flipped;
    for (int s = 0; s < 4; s++)
        CHECK(verify((enum sig_scheme)s, &r, 2, 256) == SIG_MISMATCH);
    free(flipped);
}

/* ---- every other preset: a request signed by an independent renderer ---- */

static int header_index(const char *name)
{
    for (int i = 0; i < NHEADERS; i++)
        if (strcasecmp(header_names[i], name) == 0)
            return i;
    return -1;
}

struct text {
    unsigned char *p;
    size_t n;
};

static void text_add(struct text *t, const void *data, size_t n)
{
    t->p = realloc(t->p, t->n + n + 1);
    if (t->p == NULL)
        abort();
    if (n > 0)
        memcpy(t->p + t->n, data, n);
    t->n += n;
}

/* The template with its placeholders replaced, the plain way. */
static struct text render(const char *tpl, const struct request *r, const char *ts, const char *id)
{
    struct text t = {NULL, 0};

    while (*tpl) {
        if (strncmp(tpl, "{body}", 6) == 0) {
            text_add(&t, r->body, r->body_len);
            tpl += 6;
        } else if (strncmp(tpl, "{timestamp}", 11) == 0) {
            text_add(&t, ts, strlen(ts));
            tpl += 11;
        } else if (strncmp(tpl, "{url}", 5) == 0) {
            text_add(&t, FUZZ_URL, strlen(FUZZ_URL));
            tpl += 5;
        } else if (strncmp(tpl, "{method}", 8) == 0) {
            text_add(&t, "POST", 4);
            tpl += 8;
        } else if (strncmp(tpl, "{form}", 6) == 0) {
            tpl += 6; /* no form body: nothing */
        } else if (strncmp(tpl, "{header:", 8) == 0) {
            text_add(&t, id, strlen(id));
            tpl = strchr(tpl, '}') + 1;
        } else {
            text_add(&t, tpl, 1);
            tpl++;
        }
    }
    return t;
}

static const char *digest_name(enum sig_alg alg)
{
    return alg == SIG_ALG_HMAC_SHA1 ? "SHA1" : alg == SIG_ALG_HMAC_SHA512 ? "SHA512" : "SHA256";
}

/* Fills r (headers only) with a correct request of preset s for in's body
 * and clock; 0 if the preset cannot be signed from outside the body. */
static int sign_preset(int s, const struct request *in, struct request *r, char bufs[4][256])
{
    const struct sig_preset *p = sig_preset_get((enum sig_scheme)s);
    const struct sig_spec *sp = &p->spec;
    const struct sig_key *k = &keys[s][1];
    unsigned char mac[64];
    size_t maclen = 0;
    char *ts = bufs[0], *sig = bufs[1], *enc = bufs[2];
    const char *id = "msg_1";
    int hi;

    if (sp->timestamp_json != NULL || sp->signature_json != NULL)
        return 0; /* Linear, Mailgun: the timestamp or signature is inside the body */
    *r = *in;
    memset(r->hdr, 0, sizeof r->hdr);
    if (sp->timestamp_format == SIG_TS_UNIX_MS)
        snprintf(ts, 256, "%" PRId64, in->now * 1000);
    else if (sp->timestamp_format == SIG_TS_RFC3339) {
        time_t t = (time_t)in->now;
        struct tm tm;

        if (gmtime_r(&t, &tm) == NULL || tm.tm_year + 1900 < 1000 || tm.tm_year + 1900 > 9999)
            return 0;
        strftime(ts, 256, "%Y-%m-%dT%H:%M:%S.5Z", &tm);
    } else
        snprintf(ts, 256, "%" PRId64, in->now);
    if (sp->alg == SIG_ALG_TOKEN) {
        snprintf(sig, 256, "%.*s", (int)k->len, (const char *)k->bytes);
    } else {
        struct text t = render(sp->signed_template, in, ts, id);

        CHECK(EVP_Q_mac(NULL, "HMAC", NULL, digest_name(sp->alg), NULL, k->bytes, k->len, t.p, t.n, mac, sizeof mac,
                        &maclen) != NULL);
        free(t.p);
        if (sp->encoding == SIG_ENC_BASE64)
            CHECK(enc_base64_encode(mac, maclen, enc, 256) == 0);
        else
            CHECK(enc_hex_encode(mac, maclen, enc, 256) == 0);
        if (sp->timestamp_prefix != NULL)
            snprintf(sig, 256, "%s%s%c%s%s", sp->timestamp_prefix, ts, sp->separators ? sp->separators[0] : ',',
                     sp->signature_prefix ? sp->signature_prefix : "", enc);
        else
            snprintf(sig, 256, "%s%s", sp->signature_prefix ? sp->signature_prefix : "", enc);
    }
    if ((hi = header_index(sp->signature_header)) < 0)
        return 0;
    r->hdr[hi] = sig;
    if (sp->timestamp_header != NULL && sp->timestamp_prefix == NULL) {
        if ((hi = header_index(sp->timestamp_header)) < 0)
            return 0;
        r->hdr[hi] = ts;
    }
    for (const char *h = strstr(sp->signed_template, "{header:"); h != NULL; h = strstr(h + 1, "{header:")) {
        char name[128];
        size_t n = (size_t)(strchr(h, '}') - h) - 8;

        snprintf(name, sizeof name, "%.*s", (int)n, h + 8);
        if ((hi = header_index(name)) < 0)
            return 0;
        r->hdr[hi] = (char *)id;
    }
    return 1;
}

/* Each preset's own signature verifies; a flipped body byte does not (when
 * the preset signs the body); the config spelling agrees. */
static void oracle_presets(const struct request *in)
{
    char bufs[4][256];
    struct request r;

    if (in->now < 0 || in->now > INT64_C(99999999999999) || in->tolerance < 0)
        return;
    for (int s = 4; s < SIG_SCHEME_COUNT; s++) {
        unsigned char *flipped;

        if (!hmac_family(s) || !sign_preset(s, in, &r, bufs))
            continue;
        /* Twilio's {form} is empty here (no form Content-Type): a body is
         * signed only through a bodySHA256 in the URL, which FUZZ_URL lacks,
         * so a non-empty body is refused as unsigned. */
        if (sig_preset_get((enum sig_scheme)s)->spec.body_sha256_query && r.body_len > 0) {
            CHECK(verify((enum sig_scheme)s, &r, 2, 256) == SIG_MISMATCH);
            continue;
        }
        if (verify((enum sig_scheme)s, &r, 2, 256) != SIG_OK) {
            struct sig_params params = {(enum sig_scheme)s, keys[s], 2, r.tolerance, "X-Signature", NULL};
            struct sig_request req = {r.body, r.body_len, lookup, (void *)&r, r.now, "POST", FUZZ_URL, NULL};
            char err[256];

            (void)sig_verify(&params, &req, err, sizeof err);
            fprintf(stderr, "fuzz_signature: preset %s refused its own signature: %s\n",
                    sig_scheme_name((enum sig_scheme)s), err);
        }
        CHECK(verify((enum sig_scheme)s, &r, 2, 256) == SIG_OK);
        for (size_t c = 0; c < sizeof config_specs / sizeof config_specs[0]; c++)
            if ((int)config_specs[c].preset == s)
                CHECK(verify_spec((enum sig_scheme)s, &config_specs[c].spec, &r, 2, 256) == SIG_OK);
        if (r.body_len == 0 || !sig_spec_signs_body(&sig_preset_get((enum sig_scheme)s)->spec) ||
            sig_preset_get((enum sig_scheme)s)->spec.body_sha256_query)
            continue;
        flipped = xalloc(r.body_len);
        memcpy(flipped, r.body, r.body_len);
        flipped[r.body_len / 2] ^= 0x01;
        r.body = flipped;
        CHECK(verify((enum sig_scheme)s, &r, 2, 256) == SIG_MISMATCH);
        free(flipped);
    }
}

/* Splits the next line off [*p, end) into a new string (NULL when the
 * line starts with NUL or the input is used up). */
static char *next_line(const uint8_t **p, const uint8_t *end, int *done)
{
    const uint8_t *nl;
    char *line;
    size_t n;

    if (*done || *p >= end) {
        *done = 1;
        return NULL;
    }
    nl = memchr(*p, '\n', (size_t)(end - *p));
    n = nl != NULL ? (size_t)(nl - *p) : (size_t)(end - *p);
    line = xalloc(n + 1);
    memcpy(line, *p, n);
    line[n] = '\0';
    *p += n + (nl != NULL);
    if (nl == NULL)
        *done = 1;
    if (n > 0 && line[0] == '\0') {
        free(line);
        return NULL;
    }
    return line;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *p = data, *end = data + size;
    struct request r;
    int done = 0;
    char *clock;

    memset(&r, 0, sizeof r);
    r.now = INT64_C(1614265330);
    r.tolerance = 300;
    clock = next_line(&p, end, &done);
    if (clock != NULL) {
        char *rest = NULL;

        r.now = strtoll(clock, &rest, 10);
        if (rest != NULL && *rest != '\0')
            r.tolerance = strtoll(rest, NULL, 10);
        free(clock);
    }
    for (int h = 0; h < NHEADERS; h++)
        r.hdr[h] = next_line(&p, end, &done);
    r.body = done ? (const unsigned char *)"" : p;
    r.body_len = done ? 0 : (size_t)(end - p);

    for (int s = 0; s < SIG_SCHEME_COUNT; s++) {
        if (!hmac_family(s))
            continue;
        enum sig_result one = verify((enum sig_scheme)s, &r, 1, 256);
        enum sig_result two = verify((enum sig_scheme)s, &r, 2, 256);

        /* The right key is in both sets: adding a wrong one changes nothing. */
        CHECK(one == two);
        (void)verify((enum sig_scheme)s, &r, 1, 9);
    }
    /* A preset written as `scheme = hmac` is the preset, byte for byte. */
    for (size_t c = 0; c < sizeof config_specs / sizeof config_specs[0]; c++)
        CHECK(verify_spec(config_specs[c].preset, &config_specs[c].spec, &r, 2, 256) ==
              verify(config_specs[c].preset, &r, 2, 256));
    oracle(&r);
    oracle_presets(&r);

    for (int h = 0; h < NHEADERS; h++)
        if (r.hdr[h] != NULL)
            fuzz_codecs(r.hdr[h], strlen(r.hdr[h]));
    fuzz_codecs((const char *)r.body, r.body_len);
    round_trip(r.body, r.body_len);

    for (int h = 0; h < NHEADERS; h++)
        free(r.hdr[h]);
    return 0;
}
