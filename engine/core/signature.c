/*
 * signature.c — verification of inbound webhook signatures, driven by one
 * table of provider presets, and signing of outbound ones.
 *
 * Every scheme reduces to one plan (struct sig_spec, see signature.h): the
 * text that holds the candidate signatures (a header, or a JSON field), a
 * tokenizer that yields each candidate after its prefix, decoded from hex or
 * base64; optionally a timestamp (a header, an element of the signature
 * header, or a JSON field) to hold against the tolerance; and a template
 * that renders the signed bytes from the body, the timestamp, the URL, the
 * method, named headers, JSON fields and Twilio's sorted form fields.
 * sig_verify() refuses a request without a single usable candidate as
 * malformed, renders the signed content once, computes the MAC once per
 * configured key (key rotation) and compares it with every candidate using
 * CRYPTO_memcmp on the raw bytes; a shared token is compared through its
 * SHA-256 (so neither its bytes nor its length leak through timing); a
 * public-key scheme hands the content and each candidate to the algorithm
 * of signature_pk.c. Header text is never copied into error messages; only
 * names, counts and clock differences are.
 */
#include "signature.h"

#include "encoding.h"
#include "errbuf.h"
#include "jsonpath.h"
#include "xmalloc.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <jansson.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>

#define STANDARD_SECRET_PREFIX "whsec_"

/* Timestamps have at most this many digits: enough for any real clock and
 * far from int64 overflow, so arithmetic on them needs no checks. */
#define TIMESTAMP_MAX_DIGITS 18
/* A JSON field read for a template or a signature: longer is refused. */
#define JSON_FIELD_MAX 1024
/* Candidates looked at per request; more is an attack, not key rotation. */
#define MAX_CANDIDATES 16
/* Segments of rendered signed content kept apart (a template has a few). */
#define MAX_SEGS 24

/* ---- the preset table ---------------------------------------------------- */

#define HEX SIG_ENC_HEX
#define B64 SIG_ENC_BASE64
#define JSON_ONLY SIG_BODY_JSON

static const struct sig_preset presets[SIG_SCHEME_COUNT] = {
    [SIG_STANDARD_WEBHOOKS] = {.name = "standard-webhooks",
                               .scheme = SIG_STANDARD_WEBHOOKS,
                               .spec = {.alg = SIG_ALG_HMAC_SHA256,
                                        .key_format = SIG_KEY_WHSEC_BASE64,
                                        .signed_template = "{header:webhook-id}.{timestamp}.{body}",
                                        .signature_header = "webhook-signature",
                                        .signature_prefix = "v1,",
                                        .multiple = true,
                                        .separators = " ",
                                        .encoding = B64,
                                        .timestamp_header = "webhook-timestamp"},
                               .tolerance_s = 300,
                               .event_id = "header:webhook-id",
                               .event_type = "json:type",
                               .bodies = JSON_ONLY,
                               .verified =
                                   "HMAC-SHA256 (base64) of `webhook-id.webhook-timestamp.body`, `v1,` entries in "
                                   "`webhook-signature`, timestamp"},
    [SIG_STRIPE] = {.name = "stripe",
                    .scheme = SIG_STRIPE,
                    .spec = {.alg = SIG_ALG_HMAC_SHA256,
                             .signed_template = "{timestamp}.{body}",
                             .signature_header = "Stripe-Signature",
                             .signature_prefix = "v1=",
                             .multiple = true,
                             .separators = ",",
                             .encoding = HEX,
                             .timestamp_header = "Stripe-Signature",
                             .timestamp_prefix = "t="},
                    .tolerance_s = 300,
                    .event_id = "json:id",
                    .event_type = "json:type",
                    .entity_id = NULL,
                    .bodies = JSON_ONLY,
                    .verified = "HMAC-SHA256 (hex) of `t.body`, `Stripe-Signature: t=…,v1=…[,v1=…]`, timestamp"},
    [SIG_GITHUB] = {.name = "github",
                    .scheme = SIG_GITHUB,
                    .spec = {.alg = SIG_ALG_HMAC_SHA256,
                             .signed_template = "{body}",
                             .signature_header = "X-Hub-Signature-256",
                             .signature_prefix = "sha256=",
                             .encoding = HEX},
                    .event_id = "header:X-GitHub-Delivery",
                    .event_type = "header:X-GitHub-Event",
                    .bodies = JSON_ONLY,
                    .verified = "HMAC-SHA256 (hex) of the body, `X-Hub-Signature-256: sha256=…`"},
    [SIG_HMAC_SHA256] = {.name = "hmac-sha256",
                         .scheme = SIG_HMAC_SHA256,
                         .spec = {.alg = SIG_ALG_HMAC_SHA256,
                                  .signed_template = "{body}",
                                  .signature_header = NULL, /* sig_params.header_name */
                                  .signature_prefix = "sha256=",
                                  .prefix_optional = true,
                                  .encoding = SIG_ENC_HEX_OR_BASE64},
                         .event_type = "json:type",
                         .bodies = JSON_ONLY,
                         .verified = "HMAC-SHA256 (hex or base64, optional `sha256=`) of the body in `header`"},
    [SIG_SHOPIFY] = {.name = "shopify",
                     .scheme = SIG_SHOPIFY,
                     .spec = {.alg = SIG_ALG_HMAC_SHA256,
                              .signed_template = "{body}",
                              .signature_header = "X-Shopify-Hmac-Sha256",
                              .encoding = B64},
                     .event_id = "header:X-Shopify-Webhook-Id",
                     .event_type = "header:X-Shopify-Topic",
                     .entity_id = "json:id",
                     .bodies = JSON_ONLY,
                     .verified = "HMAC-SHA256 (base64) of the body, `X-Shopify-Hmac-Sha256`"},
    [SIG_SLACK] = {.name = "slack",
                   .scheme = SIG_SLACK,
                   .spec = {.alg = SIG_ALG_HMAC_SHA256,
                            .signed_template = "v0:{timestamp}:{body}",
                            .signature_header = "X-Slack-Signature",
                            .signature_prefix = "v0=",
                            .encoding = HEX,
                            .timestamp_header = "X-Slack-Request-Timestamp"},
                   .tolerance_s = 300,
                   .event_id = "json:event_id",
                   .event_type = "json:event.type",
                   .bodies = SIG_BODY_JSON | SIG_BODY_FORM,
                   .handshake = SIG_HANDSHAKE_SLACK,
                   .verified = "HMAC-SHA256 (hex) of `v0:timestamp:body`, `X-Slack-Signature: v0=…`, "
                               "`X-Slack-Request-Timestamp`"},
    [SIG_TWILIO] = {.name = "twilio",
                    .scheme = SIG_TWILIO,
                    .spec = {.alg = SIG_ALG_HMAC_SHA1,
                             .signed_template = "{url}{form}",
                             .signature_header = "X-Twilio-Signature",
                             .encoding = B64,
                             .body_sha256_query = true,
                             .algorithm_header = "X-Twilio-Webhooks-Signature-Settings",
                             .url_port_variants = true},
                    .event_id = "header:I-Twilio-Idempotency-Token",
                    .event_type = NULL,
                    .bodies = SIG_BODY_JSON | SIG_BODY_FORM,
                    .needs_public_url = true,
                    .verified = "HMAC-SHA1 (base64) of the URL and the form fields sorted by name, "
                                "`X-Twilio-Signature`; JSON bodies: of the URL, whose `bodySHA256` must be the "
                                "body's SHA-256"},
    [SIG_SQUARE] = {.name = "square",
                    .scheme = SIG_SQUARE,
                    .spec = {.alg = SIG_ALG_HMAC_SHA256,
                             .signed_template = "{url}{body}",
                             .signature_header = "X-Square-Hmacsha256-Signature",
                             .encoding = B64},
                    .event_id = "json:event_id",
                    .event_type = "json:type",
                    .entity_id = "json:data.id",
                    .bodies = JSON_ONLY,
                    .needs_public_url = true,
                    .verified = "HMAC-SHA256 (base64) of the notification URL and the body, "
                                "`X-Square-Hmacsha256-Signature`"},
    [SIG_PADDLE] = {.name = "paddle",
                    .scheme = SIG_PADDLE,
                    .spec = {.alg = SIG_ALG_HMAC_SHA256,
                             .signed_template = "{timestamp}:{body}",
                             .signature_header = "Paddle-Signature",
                             .signature_prefix = "h1=",
                             .multiple = true,
                             .separators = ";",
                             .encoding = HEX,
                             .timestamp_header = "Paddle-Signature",
                             .timestamp_prefix = "ts="},
                    .tolerance_s = 5,
                    .event_id = "json:event_id",
                    .event_type = "json:event_type",
                    .entity_id = "json:data.id",
                    .bodies = JSON_ONLY,
                    .verified = "HMAC-SHA256 (hex) of `ts:body`, `Paddle-Signature: ts=…;h1=…`, timestamp (5 s, "
                                "as Paddle's SDK)"},
    [SIG_ZOOM] = {.name = "zoom",
                  .scheme = SIG_ZOOM,
                  .spec = {.alg = SIG_ALG_HMAC_SHA256,
                           .signed_template = "v0:{timestamp}:{body}",
                           .signature_header = "x-zm-signature",
                           .signature_prefix = "v0=",
                           .encoding = HEX,
                           .timestamp_header = "x-zm-request-timestamp"},
                  .tolerance_s = 300,
                  .event_id = "digest",
                  .event_type = "json:event",
                  .entity_id = "json:payload.object.id",
                  .bodies = JSON_ONLY,
                  .handshake = SIG_HANDSHAKE_ZOOM,
                  .verified = "HMAC-SHA256 (hex) of `v0:timestamp:body`, `x-zm-signature: v0=…`, "
                              "`x-zm-request-timestamp`"},
    [SIG_LINEAR] = {.name = "linear",
                    .scheme = SIG_LINEAR,
                    .spec = {.alg = SIG_ALG_HMAC_SHA256,
                             .signed_template = "{body}",
                             .signature_header = "Linear-Signature",
                             .encoding = HEX,
                             .timestamp_json = "webhookTimestamp",
                             .timestamp_format = SIG_TS_UNIX_MS},
                    .tolerance_s = 60,
                    .event_id = "header:Linear-Delivery",
                    .event_type = "json:type",
                    .entity_id = "json:data.id",
                    .bodies = JSON_ONLY,
                    .verified = "HMAC-SHA256 (hex) of the body, `Linear-Signature`; `webhookTimestamp` (ms, in the "
                                "signed body) within 60 s"},
    [SIG_INTERCOM] = {.name = "intercom",
                      .scheme = SIG_INTERCOM,
                      .spec = {.alg = SIG_ALG_HMAC_SHA1,
                               .signed_template = "{body}",
                               .signature_header = "X-Hub-Signature",
                               .signature_prefix = "sha1=",
                               .encoding = HEX},
                      .event_id = "json:id",
                      .event_type = "json:topic",
                      .entity_id = "json:data.item.id",
                      .bodies = JSON_ONLY,
                      .verified = "HMAC-SHA1 (hex) of the body with the client secret, `X-Hub-Signature: sha1=…`"},
    [SIG_MAILGUN] = {.name = "mailgun",
                     .scheme = SIG_MAILGUN,
                     .spec = {.alg = SIG_ALG_HMAC_SHA256,
                              .signed_template = "{json:signature.timestamp}{json:signature.token}",
                              .signature_json = "signature.signature",
                              .encoding = HEX,
                              .timestamp_json = "signature.timestamp"},
                     .tolerance_s = 300,
                     .event_id = "json:event-data.id",
                     .event_type = "json:event-data.event",
                     .bodies = JSON_ONLY,
                     .verified = "HMAC-SHA256 (hex) of `timestamp` + `token`, all three in the body's `signature` "
                                 "object; timestamp. The rest of the body is not signed by Mailgun"},
    [SIG_SENDGRID] = {.name = "sendgrid",
                      .scheme = SIG_SENDGRID,
                      .spec = {.alg = SIG_ALG_PUBLIC_KEY,
                               .pk = SIG_PK_ECDSA_P256,
                               .key_format = SIG_KEY_PUBLIC,
                               .signed_template = "{timestamp}{body}",
                               .signature_header = "X-Twilio-Email-Event-Webhook-Signature",
                               .encoding = B64,
                               .timestamp_header = "X-Twilio-Email-Event-Webhook-Timestamp"},
                      .tolerance_s = 300,
                      .event_id = "digest",
                      .event_type = "json:0.event",
                      .bodies = JSON_ONLY,
                      .verified = "ECDSA P-256 (base64 DER) of `timestamp` + body, public key (signature_pk.c)"},
    [SIG_DISCORD] = {.name = "discord",
                     .scheme = SIG_DISCORD,
                     .spec = {.alg = SIG_ALG_PUBLIC_KEY,
                              .pk = SIG_PK_ED25519,
                              .key_format = SIG_KEY_PUBLIC,
                              .signed_template = "{timestamp}{body}",
                              .signature_header = "X-Signature-Ed25519",
                              .encoding = HEX,
                              .timestamp_header = "X-Signature-Timestamp"},
                     .tolerance_s = 300,
                     .event_id = "digest",
                     .event_type = "json:event.type",
                     .bodies = JSON_ONLY,
                     .verified = "Ed25519 (hex) of `timestamp` + body, public key (signature_pk.c)"},
    [SIG_META] = {.name = "meta",
                  .scheme = SIG_META,
                  .spec = {.alg = SIG_ALG_HMAC_SHA256,
                           .signed_template = "{body}",
                           .signature_header = "X-Hub-Signature-256",
                           .signature_prefix = "sha256=",
                           .encoding = HEX},
                  .event_id = "digest",
                  .event_type = "json:object",
                  .entity_id = "json:entry.0.id",
                  .bodies = JSON_ONLY,
                  .handshake = SIG_HANDSHAKE_META,
                  .verified = "HMAC-SHA256 (hex) of the body with the app secret, `X-Hub-Signature-256: sha256=…`"},
    [SIG_TWITCH] = {.name = "twitch",
                    .scheme = SIG_TWITCH,
                    .spec = {.alg = SIG_ALG_HMAC_SHA256,
                             .signed_template = "{header:Twitch-Eventsub-Message-Id}{timestamp}{body}",
                             .signature_header = "Twitch-Eventsub-Message-Signature",
                             .signature_prefix = "sha256=",
                             .encoding = HEX,
                             .timestamp_header = "Twitch-Eventsub-Message-Timestamp",
                             .timestamp_format = SIG_TS_RFC3339},
                    .tolerance_s = 600,
                    .event_id = "header:Twitch-Eventsub-Message-Id",
                    .event_type = "json:subscription.type",
                    .bodies = JSON_ONLY,
                    .handshake = SIG_HANDSHAKE_TWITCH,
                    .verified = "HMAC-SHA256 (hex) of message id + timestamp (RFC 3339) + body, "
                                "`Twitch-Eventsub-Message-Signature: sha256=…`, 10 min"},
    [SIG_TYPEFORM] = {.name = "typeform",
                      .scheme = SIG_TYPEFORM,
                      .spec = {.alg = SIG_ALG_HMAC_SHA256,
                               .signed_template = "{body}",
                               .signature_header = "Typeform-Signature",
                               .signature_prefix = "sha256=",
                               .encoding = B64},
                      .event_id = "json:event_id",
                      .event_type = "json:event_type",
                      .entity_id = "json:form_response.form_id",
                      .bodies = JSON_ONLY,
                      .verified = "HMAC-SHA256 (base64) of the body, `Typeform-Signature: sha256=…`"},
    [SIG_HUBSPOT] = {.name = "hubspot",
                     .scheme = SIG_HUBSPOT,
                     .spec = {.alg = SIG_ALG_HMAC_SHA256,
                              .signed_template = "{method}{url}{body}{timestamp}",
                              .signature_header = "X-HubSpot-Signature-v3",
                              .encoding = B64,
                              .timestamp_header = "X-HubSpot-Request-Timestamp",
                              .timestamp_format = SIG_TS_UNIX_MS,
                              .url_decode_reserved = true},
                     .tolerance_s = 300,
                     .event_id = "digest",
                     .event_type = "json:0.subscriptionType",
                     .entity_id = "json:0.objectId",
                     .bodies = JSON_ONLY,
                     .needs_public_url = true,
                     .verified = "v3: HMAC-SHA256 (base64) of method + URL + body + timestamp (ms), "
                                 "`X-HubSpot-Signature-v3`, 5 min"},
    [SIG_CALENDLY] = {.name = "calendly",
                      .scheme = SIG_CALENDLY,
                      .spec = {.alg = SIG_ALG_HMAC_SHA256,
                               .signed_template = "{timestamp}.{body}",
                               .signature_header = "Calendly-Webhook-Signature",
                               .signature_prefix = "v1=",
                               .multiple = true,
                               .separators = ",",
                               .encoding = HEX,
                               .timestamp_header = "Calendly-Webhook-Signature",
                               .timestamp_prefix = "t="},
                      .tolerance_s = 180,
                      .event_id = "digest",
                      .event_type = "json:event",
                      .entity_id = "json:payload.uri",
                      .bodies = JSON_ONLY,
                      .verified = "HMAC-SHA256 (hex) of `t.body`, `Calendly-Webhook-Signature: t=…,v1=…`, 3 min"},
    [SIG_GITLAB] = {.name = "gitlab",
                    .scheme = SIG_GITLAB,
                    .spec = {.alg = SIG_ALG_TOKEN,
                             .signed_template = "{body}",
                             .signature_header = "X-Gitlab-Token",
                             .encoding = SIG_ENC_RAW},
                    .event_id = "header:X-Gitlab-Event-UUID",
                    .event_type = "json:object_kind",
                    .bodies = JSON_ONLY,
                    .verified = "`X-Gitlab-Token` equals the secret (constant time); nothing is signed"},
    [SIG_BITBUCKET] = {.name = "bitbucket",
                       .scheme = SIG_BITBUCKET,
                       .spec = {.alg = SIG_ALG_HMAC_SHA256,
                                .signed_template = "{body}",
                                .signature_header = "X-Hub-Signature",
                                .signature_prefix = "sha256=",
                                .encoding = HEX},
                       .event_id = "header:X-Request-UUID",
                       .event_type = "header:X-Event-Key",
                       .bodies = JSON_ONLY,
                       .verified = "HMAC-SHA256 (hex) of the body, `X-Hub-Signature: sha256=…`"},
    [SIG_PAGERDUTY] = {.name = "pagerduty",
                       .scheme = SIG_PAGERDUTY,
                       .spec = {.alg = SIG_ALG_HMAC_SHA256,
                                .signed_template = "{body}",
                                .signature_header = "X-PagerDuty-Signature",
                                .signature_prefix = "v1=",
                                .multiple = true,
                                .separators = ",",
                                .encoding = HEX},
                       .event_id = "json:event.id",
                       .event_type = "json:event.event_type",
                       .entity_id = "json:event.data.id",
                       .bodies = JSON_ONLY,
                       .verified = "HMAC-SHA256 (hex) of the body, `X-PagerDuty-Signature: v1=…[,v1=…]`"},
    [SIG_WOOCOMMERCE] = {.name = "woocommerce",
                         .scheme = SIG_WOOCOMMERCE,
                         .spec = {.alg = SIG_ALG_HMAC_SHA256,
                                  .signed_template = "{body}",
                                  .signature_header = "X-WC-Webhook-Signature",
                                  .encoding = B64},
                         .event_id = "header:X-WC-Webhook-Delivery-ID",
                         .event_type = "header:X-WC-Webhook-Topic",
                         .entity_id = "json:id",
                         .bodies = JSON_ONLY,
                         .verified = "HMAC-SHA256 (base64) of the body, `X-WC-Webhook-Signature`"},
    [SIG_X] = {.name = "x",
               .scheme = SIG_X,
               .spec = {.alg = SIG_ALG_HMAC_SHA256,
                        .signed_template = "{body}",
                        .signature_header = "X-Twitter-Webhooks-Signature",
                        .signature_prefix = "sha256=",
                        .encoding = B64},
               .event_id = "digest",
               .event_type = NULL,
               .entity_id = "json:for_user_id",
               .bodies = JSON_ONLY,
               .handshake = SIG_HANDSHAKE_X,
               .verified = "HMAC-SHA256 (base64) of the body with the consumer secret, "
                           "`X-Twitter-Webhooks-Signature: sha256=…`"},
    [SIG_HMAC] = {.name = "hmac",
                  .scheme = SIG_HMAC,
                  .spec = {.alg = SIG_ALG_HMAC_SHA256, .signed_template = "{body}", .encoding = HEX},
                  .event_type = "json:type",
                  .bodies = SIG_BODY_JSON | SIG_BODY_FORM, /* {form} needs form bodies */
                  .verified = "as written in the partner's section: algorithm, signed, signature_header, …"},
};

#undef HEX
#undef B64
#undef JSON_ONLY

const struct sig_preset *sig_preset_get(enum sig_scheme scheme)
{
    if ((unsigned)scheme >= SIG_SCHEME_COUNT)
        return NULL;
    return &presets[scheme];
}

int sig_scheme_parse(const char *name, enum sig_scheme *out)
{
    if (name == NULL || out == NULL)
        return -1;
    for (size_t i = 0; i < SIG_SCHEME_COUNT; i++) {
        if (strcasecmp(name, presets[i].name) == 0) {
            *out = (enum sig_scheme)i;
            return 0;
        }
    }
    return -1;
}

const char *sig_scheme_name(enum sig_scheme scheme)
{
    const struct sig_preset *p = sig_preset_get(scheme);
    return p != NULL ? p->name : "invalid";
}

/* No public-key algorithm unless signature_pk.c (linked into hookd) says
 * otherwise: its strong definition replaces this one. */
__attribute__((weak)) const struct sig_pk_ops *sig_pk_ops_for(enum sig_pk_alg alg)
{
    (void)alg;
    return NULL;
}

/* ---- spans ---------------------------------------------------------------- */

/* A borrowed byte range of a header value or of signed content. */
struct span {
    const char *p;
    size_t n;
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

static struct span span_of(const char *s)
{
    return (struct span){s, s != NULL ? strlen(s) : 0};
}

/* Strips a case-insensitive literal prefix; returns 1 if it was there. */
static int span_strip_prefix(struct span *s, const char *prefix)
{
    size_t n = prefix != NULL ? strlen(prefix) : 0;

    if (s->n < n || (n > 0 && strncasecmp(s->p, prefix, n) != 0))
        return 0;
    s->p += n;
    s->n -= n;
    return 1;
}

static int is_sep(const char *seps, char c)
{
    for (; *seps; seps++)
        if (*seps == c)
            return 1;
    return 0;
}

/* Splits the next token off *rest at any character of seps (trimmed);
 * empty tokens are skipped. Returns 0 when *rest holds no further token. */
static int span_next_token(struct span *rest, const char *seps, struct span *tok)
{
    while (rest->n > 0) {
        size_t len = 0;

        if (seps[0] != '\0' && seps[1] == '\0') {
            const char *end = memchr(rest->p, seps[0], rest->n);

            len = end != NULL ? (size_t)(end - rest->p) : rest->n;
        } else {
            while (len < rest->n && !is_sep(seps, rest->p[len]))
                len++;
        }
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

/* A growable byte buffer: the rendered signed content. */
struct buf {
    unsigned char *p;
    size_t n, cap;
};

static void buf_add(struct buf *b, const void *data, size_t n)
{
    if (n == 0)
        return;
    if (b->n + n > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->n + n)
            cap *= 2;
        b->p = xrealloc(b->p, cap);
        b->cap = cap;
    }
    memcpy(b->p + b->n, data, n);
    b->n += n;
}

static void buf_free(struct buf *b)
{
    if (b->p != NULL)
        OPENSSL_cleanse(b->p, b->n);
    free(b->p);
    b->p = NULL;
    b->n = b->cap = 0;
}

/* ---- MACs ------------------------------------------------------------------ */

/* The HMAC implementation, fetched from the provider once: a fetch per
 * signature would search the provider's method store on every delivery.
 * EVP_MAC objects may be shared between threads. */
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

/* Bytes of the MAC of an HMAC algorithm; 0 for the others. */
static size_t alg_mac_len(enum sig_alg alg)
{
    switch (alg) {
    case SIG_ALG_HMAC_SHA1: return 20;
    case SIG_ALG_HMAC_SHA256: return 32;
    case SIG_ALG_HMAC_SHA512: return 64;
    case SIG_ALG_TOKEN:
    case SIG_ALG_PUBLIC_KEY: return 0;
    }
    return 0;
}

static const char *alg_label(enum sig_alg alg)
{
    switch (alg) {
    case SIG_ALG_HMAC_SHA1: return "HMAC-SHA1";
    case SIG_ALG_HMAC_SHA256: return "HMAC-SHA256";
    case SIG_ALG_HMAC_SHA512: return "HMAC-SHA512";
    case SIG_ALG_TOKEN: return "token";
    case SIG_ALG_PUBLIC_KEY: return "public-key signature";
    }
    return "?";
}

/* HMAC over the concatenation of parts. Returns -1 if OpenSSL fails (no
 * HMAC provider, out of memory) or alg is not an HMAC. */
static int hmac_parts(enum sig_alg alg, const struct sig_key *key, const struct span *parts, size_t nparts,
                      unsigned char *mac, size_t *maclen)
{
    char digest[8];
    OSSL_PARAM params[2];
    EVP_MAC_CTX *ctx = NULL;
    size_t want = alg_mac_len(alg), got = 0;
    int rc = -1;

    if (key == NULL || key->bytes == NULL || key->len == 0 || want == 0)
        return -1;
    snprintf(digest, sizeof digest, "%s", alg == SIG_ALG_HMAC_SHA1 ? "SHA1" : want == 32 ? "SHA256" : "SHA512");
    params[0] = OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest, 0);
    params[1] = OSSL_PARAM_construct_end();
    pthread_once(&hmac_once, hmac_fetch);
    if (hmac_alg == NULL)
        goto done;
    ctx = EVP_MAC_CTX_new(hmac_alg);
    if (ctx == NULL || !EVP_MAC_init(ctx, key->bytes, key->len, params))
        goto done;
    for (size_t i = 0; i < nparts; i++)
        if (parts[i].n > 0 && !EVP_MAC_update(ctx, (const unsigned char *)parts[i].p, parts[i].n))
            goto done;
    if (!EVP_MAC_final(ctx, mac, &got, want) || got != want)
        goto done;
    *maclen = got;
    rc = 0;
done:
    EVP_MAC_CTX_free(ctx);
    return rc;
}

int sig_hmac(enum sig_alg alg, const struct sig_key *key, const void *data, size_t len, unsigned char *out,
             size_t *outlen)
{
    struct span part = {data, len};

    if (out == NULL || outlen == NULL || (data == NULL && len > 0))
        return -1;
    return hmac_parts(alg, key, &part, 1, out, outlen);
}

void sig_content_digest(const unsigned char *body, size_t len, unsigned char out[SIG_DIGEST_LEN])
{
    unsigned int n = 0;
    /* EVP_Digest fails only when OpenSSL cannot allocate (or SHA-256 is
     * missing): an invariant, like allocation. */
    int ok = EVP_Digest(body, len, out, &n, EVP_sha256(), NULL);
    HOOKD_ASSERT(ok == 1 && n == SIG_DIGEST_LEN);
}

/* ---- candidates ------------------------------------------------------------ */

/* Separators between candidates of a multiple-signature header: ',', ';'
 * and ' ', less those the prefix contains (Standard Webhooks' "v1,"). */
static void candidate_separators(const struct sig_spec *spec, char seps[4])
{
    size_t n = 0;

    if (spec->separators != NULL) {
        for (; n < 3 && spec->separators[n]; n++)
            seps[n] = spec->separators[n];
        seps[n] = '\0';
        return;
    }
    for (const char *c = ",; "; *c; c++)
        if (spec->signature_prefix == NULL || strchr(spec->signature_prefix, *c) == NULL)
            seps[n++] = *c;
    seps[n] = '\0';
}

/* Decodes one candidate's text per the spec's encoding into out (of
 * SIG_MAX_SIG_LEN bytes); 1 if it is a usable candidate. HMACs must have
 * their exact length; a token is its text; a public-key signature any
 * length that fits. */
static int decode_candidate(const struct sig_spec *spec, struct span s, unsigned char *out, size_t *outlen)
{
    size_t want = alg_mac_len(spec->alg), n = 0;
    enum sig_encoding enc = spec->encoding;

    if (spec->alg == SIG_ALG_TOKEN || enc == SIG_ENC_RAW) {
        /* The token is compared through its digest, whatever its length. */
        sig_content_digest((const unsigned char *)s.p, s.n, out);
        *outlen = SIG_DIGEST_LEN;
        return s.n > 0;
    }
    if (enc == SIG_ENC_HEX_OR_BASE64)
        enc = want > 0 && s.n == ENC_HEX_LEN(want) ? SIG_ENC_HEX : SIG_ENC_BASE64;
    if (enc == SIG_ENC_HEX) {
        if (s.n % 2 != 0 || s.n / 2 > SIG_MAX_SIG_LEN || enc_hex_decode(s.p, s.n, out, SIG_MAX_SIG_LEN, &n) != 0)
            return 0;
    } else if (enc_base64_decode(s.p, s.n, out, SIG_MAX_SIG_LEN, &n) != 0) {
        return 0;
    }
    if (n == 0 || (want > 0 && n != want))
        return 0;
    *outlen = n;
    return 1;
}

/* The next usable candidate of *rest (advanced past it); 0 when none is
 * left. */
static int next_candidate(const struct sig_spec *spec, struct span *rest, unsigned char *out, size_t *outlen)
{
    char seps[4];
    struct span tok;

    if (!spec->multiple) {
        tok = span_trim(*rest);
        rest->n = 0;
        if (tok.n == 0)
            return 0;
        if (!span_strip_prefix(&tok, spec->signature_prefix) && !spec->prefix_optional)
            return 0;
        return decode_candidate(spec, tok, out, outlen);
    }
    candidate_separators(spec, seps);
    while (span_next_token(rest, seps, &tok)) {
        if (!span_strip_prefix(&tok, spec->signature_prefix) && !spec->prefix_optional)
            continue;
        if (decode_candidate(spec, tok, out, outlen))
            return 1;
    }
    return 0;
}

static size_t count_candidates(const struct sig_spec *spec, struct span sigs)
{
    unsigned char scratch[SIG_MAX_SIG_LEN];
    size_t n = 0, len;

    while (n < MAX_CANDIDATES && next_candidate(spec, &sigs, scratch, &len))
        n++;
    OPENSSL_cleanse(scratch, sizeof scratch);
    return n;
}

static int has_candidate(const struct sig_spec *spec, struct span sigs)
{
    unsigned char scratch[SIG_MAX_SIG_LEN];
    size_t len;
    int found = next_candidate(spec, &sigs, scratch, &len);

    OPENSSL_cleanse(scratch, sizeof scratch);
    return found;
}

/* "sha256=<64 hex digits>", "<base64 of 32 bytes>", for messages. */
static void describe_candidate(const struct sig_spec *spec, char *out, size_t outlen)
{
    size_t want = alg_mac_len(spec->alg);
    const char *prefix = spec->signature_prefix != NULL ? spec->signature_prefix : "";
    const char *opt = spec->prefix_optional ? "optional " : "";

    switch (spec->encoding) {
    case SIG_ENC_HEX:
        if (want > 0)
            snprintf(out, outlen, "%s%s<%zu hex digits>", opt, prefix, ENC_HEX_LEN(want));
        else
            snprintf(out, outlen, "%s%s<hex>", opt, prefix);
        return;
    case SIG_ENC_BASE64:
        if (want > 0)
            snprintf(out, outlen, "%s%s<base64 of %zu bytes>", opt, prefix, want);
        else
            snprintf(out, outlen, "%s%s<base64>", opt, prefix);
        return;
    case SIG_ENC_HEX_OR_BASE64:
        snprintf(out, outlen, "%s%s<%zu hex digits or base64 of %zu bytes>", opt, prefix, ENC_HEX_LEN(want), want);
        return;
    case SIG_ENC_RAW: snprintf(out, outlen, "the shared token"); return;
    }
    snprintf(out, outlen, "?");
}

/* ---- timestamps ------------------------------------------------------------ */

/* Decimal digits only; -1 if s is anything else. */
static int parse_decimal(struct span s, int64_t *out)
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

static int digits(const char *p, int n, int *out)
{
    int v = 0;

    for (int i = 0; i < n; i++) {
        if (p[i] < '0' || p[i] > '9')
            return -1;
        v = v * 10 + (p[i] - '0');
    }
    *out = v;
    return 0;
}

/* RFC 3339 ("2019-11-16T09:11:12.634234626Z", "…+01:00") to unix seconds
 * (the fraction is dropped); -1 for anything else. */
static int parse_rfc3339(struct span s, int64_t *out)
{
    char text[64];
    int year, mon, day, hour, min, sec, oh = 0, om = 0, sign = 0;
    size_t i = 19;
    struct tm tm;

    if (s.n < 20 || s.n >= sizeof text)
        return -1;
    memcpy(text, s.p, s.n);
    text[s.n] = '\0';
    if (digits(text, 4, &year) || text[4] != '-' || digits(text + 5, 2, &mon) || text[7] != '-' ||
        digits(text + 8, 2, &day) || (text[10] != 'T' && text[10] != 't' && text[10] != ' ') ||
        digits(text + 11, 2, &hour) || text[13] != ':' || digits(text + 14, 2, &min) || text[16] != ':' ||
        digits(text + 17, 2, &sec))
        return -1;
    if (text[i] == '.') {
        i++;
        if (text[i] < '0' || text[i] > '9')
            return -1;
        while (text[i] >= '0' && text[i] <= '9')
            i++;
    }
    if ((text[i] == 'Z' || text[i] == 'z') && text[i + 1] == '\0') {
        sign = 0;
    } else if ((text[i] == '+' || text[i] == '-') && s.n == i + 6 && !digits(text + i + 1, 2, &oh) &&
               text[i + 3] == ':' && !digits(text + i + 4, 2, &om)) {
        sign = text[i] == '+' ? 1 : -1;
    } else {
        return -1;
    }
    if (mon < 1 || mon > 12 || day < 1 || day > 31 || hour > 23 || min > 59 || sec > 60 || oh > 23 || om > 59)
        return -1;
    memset(&tm, 0, sizeof tm);
    tm.tm_year = year - 1900;
    tm.tm_mon = mon - 1;
    tm.tm_mday = day;
    tm.tm_hour = hour;
    tm.tm_min = min;
    tm.tm_sec = sec;
    *out = (int64_t)timegm(&tm) - sign * (int64_t)(oh * 3600 + om * 60);
    return 0;
}

/* ---- one verification ------------------------------------------------------ */

struct verify_state {
    const struct sig_params *params;
    const struct sig_request *req;
    const struct sig_spec *spec;
    const char *sig_label; /* header name or "json:PATH", for messages */
    char sig_label_buf[96];
    struct span sigs; /* the text holding the candidates */
    json_t *doc;      /* the body, parsed once if the spec reads JSON */
    int doc_loaded;
    char json_sig[JSON_FIELD_MAX + 1]; /* a signature read from the body */
    int has_ts;
    int64_t ts;       /* unix seconds */
    char ts_text[64]; /* {timestamp} */
    /* the timestamp's name in messages, in three pieces so that it is
     * only formatted on an error: "Stripe-Signature" " " "t=" */
    const char *tl[3];
    struct sig_request alt_req; /* Twilio's other URL form; alt_req.url owned */
    /* The rendered signed bytes, as segments: the body (and any other
     * borrowed bytes) by reference, rendered text in `content`, so that
     * the body is never copied for an HMAC. */
    struct buf content;
    struct seg {
        const unsigned char *ext; /* borrowed bytes, or NULL: content.p + off */
        size_t off, n;
    } segs[MAX_SEGS];
    size_t nsegs;
};

/* Appends rendered text to the signed content. */
static void content_add(struct verify_state *st, const void *data, size_t n)
{
    struct seg *last = st->nsegs > 0 ? &st->segs[st->nsegs - 1] : NULL;

    if (n == 0)
        return;
    if (last != NULL && last->ext == NULL && last->off + last->n == st->content.n) {
        last->n += n;
    } else if (st->nsegs < MAX_SEGS) {
        st->segs[st->nsegs++] = (struct seg){NULL, st->content.n, n};
    } else { /* out of segments: extend the last one, copying */
        HOOKD_ASSERT(last != NULL);
        if (last->ext != NULL) {
            size_t off = st->content.n;

            buf_add(&st->content, last->ext, last->n);
            *last = (struct seg){NULL, off, last->n};
        }
        last->n += n;
    }
    buf_add(&st->content, data, n);
}

/* Appends borrowed bytes (valid for the whole verification) by reference. */
static void content_add_ref(struct verify_state *st, const void *data, size_t n)
{
    if (n == 0)
        return;
    if (st->nsegs + 1 >= MAX_SEGS) {
        content_add(st, data, n);
        return;
    }
    st->segs[st->nsegs++] = (struct seg){data, 0, n};
}

static struct span seg_span(const struct verify_state *st, size_t i)
{
    const struct seg *g = &st->segs[i];
    return (struct span){(const char *)(g->ext != NULL ? g->ext : st->content.p + g->off), g->n};
}

/* The signed content in one piece (public-key verifiers take it whole):
 * borrowed when it is one segment, else a copy the caller frees (*owned). */
static const unsigned char *content_whole(const struct verify_state *st, size_t *len, unsigned char **owned)
{
    size_t n = 0;

    *owned = NULL;
    if (st->nsegs == 1) {
        *len = st->segs[0].n;
        return (const unsigned char *)seg_span(st, 0).p;
    }
    for (size_t i = 0; i < st->nsegs; i++)
        n += st->segs[i].n;
    *owned = xmalloc(n + 1);
    n = 0;
    for (size_t i = 0; i < st->nsegs; i++) {
        struct span sp = seg_span(st, i);

        memcpy(*owned + n, sp.p, sp.n);
        n += sp.n;
    }
    *len = n;
    return *owned;
}

/* SHA-256 of the signed content, streamed over its segments. */
static void content_digest(const struct verify_state *st, unsigned char out[SIG_DIGEST_LEN])
{
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    unsigned int n = 0;
    int ok = ctx != NULL && EVP_DigestInit_ex(ctx, EVP_sha256(), NULL);

    for (size_t i = 0; ok && i < st->nsegs; i++) {
        struct span sp = seg_span(st, i);

        ok = EVP_DigestUpdate(ctx, sp.p, sp.n);
    }
    ok = ok && EVP_DigestFinal_ex(ctx, out, &n) && n == SIG_DIGEST_LEN;
    EVP_MD_CTX_free(ctx);
    HOOKD_ASSERT(ok); /* fails only when OpenSSL cannot allocate */
}

#define TS_LABEL(st) (st)->tl[0], (st)->tl[1], (st)->tl[2]

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
    *out = span_trim(span_of(v));
    if (out->n == 0) {
        err_set(err, errlen, "%s header is empty", name);
        return SIG_MALFORMED_HEADER;
    }
    return SIG_OK;
}

/* A field of the JSON body as text into buf. Absent -> SIG_MISSING_HEADER;
 * a body that is not JSON -> SIG_MALFORMED_HEADER. */
static enum sig_result get_json(struct verify_state *st, const char *path, char *buf, size_t buflen, char *err,
                                size_t errlen)
{
    if (!st->doc_loaded) {
        json_error_t jerr;

        st->doc_loaded = 1;
        st->doc = st->req->body_len > 0 ? jsonpath_load_body((const char *)st->req->body, st->req->body_len, &jerr)
                                        : NULL;
    }
    if (st->doc == NULL) {
        err_set(err, errlen, "the body is not JSON, so json:%s (signed) cannot be read", path);
        return SIG_MALFORMED_HEADER;
    }
    if (jsonpath_get_text(st->doc, path, buf, buflen) != 0 || buf[0] == '\0') {
        err_set(err, errlen, "missing json:%s (empty, absent or over %zu characters)", path, buflen - 1);
        return SIG_MISSING_HEADER;
    }
    return SIG_OK;
}

/* Why st->sigs holds no usable candidate. */
static void malformed_message(const struct verify_state *st, char *err, size_t errlen)
{
    const struct sig_spec *spec = st->spec;
    const char *prefix = spec->signature_prefix;
    char want[96], seps[4];
    struct span rest = st->sigs, tok;
    size_t with_prefix = 0;

    describe_candidate(spec, want, sizeof want);
    if (!spec->multiple || prefix == NULL || prefix[0] == '\0' || spec->prefix_optional) {
        err_set(err, errlen, "%s is not %s (%zu characters)", st->sig_label, want, st->sigs.n);
        return;
    }
    candidate_separators(spec, seps);
    while (span_next_token(&rest, seps, &tok))
        if (span_strip_prefix(&tok, prefix))
            with_prefix++;
    if (with_prefix == 0)
        err_set(err, errlen, "%s has no %s element", st->sig_label, prefix);
    else {
        struct sig_spec bare = *spec;

        bare.signature_prefix = NULL;
        describe_candidate(&bare, want, sizeof want); /* "<64 hex digits>" */
        want[strlen(want) - 1] = '\0';
        err_set(err, errlen, "%s has %zu %s element%s but none is %s", st->sig_label, with_prefix, prefix,
                with_prefix == 1 ? "" : "s", want + 1);
    }
}

/* The candidates' text: the signature header or JSON field. */
static enum sig_result find_signatures(struct verify_state *st, char *err, size_t errlen)
{
    const struct sig_spec *spec = st->spec;
    const char *header = spec->signature_header;
    enum sig_result r;

    if (spec->signature_json != NULL) {
        snprintf(st->sig_label_buf, sizeof st->sig_label_buf, "json:%s", spec->signature_json);
        st->sig_label = st->sig_label_buf;
        if ((r = get_json(st, spec->signature_json, st->json_sig, sizeof st->json_sig, err, errlen)) != SIG_OK)
            return r;
        st->sigs = span_of(st->json_sig);
    } else {
        if (header == NULL)
            header = st->params->header_name;
        if (header == NULL || header[0] == '\0') {
            err_set(err, errlen, "%s needs the name of the signature header in the config",
                    sig_scheme_name(st->params->scheme));
            return SIG_MISSING_HEADER;
        }
        st->sig_label = header;
        if ((r = get_header(st->req, header, &st->sigs, err, errlen)) != SIG_OK)
            return r;
    }
    if (!has_candidate(spec, st->sigs)) {
        malformed_message(st, err, errlen);
        return SIG_MALFORMED_HEADER;
    }
    return SIG_OK;
}

/* The timestamp's text: its own header, an element of the signature
 * header, or a JSON field. */
static enum sig_result find_timestamp_text(struct verify_state *st, struct span *text, char *json_buf, size_t json_len,
                                           char *err, size_t errlen)
{
    const struct sig_spec *spec = st->spec;
    const char *th = spec->timestamp_header;

    if (spec->timestamp_json != NULL) {
        st->tl[0] = "json:", st->tl[1] = spec->timestamp_json, st->tl[2] = "";
        enum sig_result r = get_json(st, spec->timestamp_json, json_buf, json_len, err, errlen);
        if (r == SIG_OK) /* on an error json_buf was never written */
            *text = span_of(json_buf);
        return r;
    }
    if (spec->timestamp_prefix != NULL && spec->timestamp_prefix[0] != '\0') {
        struct span rest, tok, value = {NULL, 0};
        size_t count = 0;
        enum sig_result r = get_header(st->req, th, &rest, err, errlen);

        st->tl[0] = th, st->tl[1] = " ", st->tl[2] = spec->timestamp_prefix;
        if (r != SIG_OK)
            return r;
        char seps[4];

        candidate_separators(spec, seps);
        while (span_next_token(&rest, seps, &tok))
            if (span_strip_prefix(&tok, spec->timestamp_prefix)) {
                value = tok;
                count++;
            }
        if (count != 1) {
            if (count == 0)
                err_set(err, errlen, "%s has no %s element", th, spec->timestamp_prefix);
            else
                err_set(err, errlen, "%s has %zu %s elements, expected one", th, count, spec->timestamp_prefix);
            return SIG_MALFORMED_HEADER;
        }
        *text = value;
        return SIG_OK;
    }
    st->tl[0] = th, st->tl[1] = st->tl[2] = "";
    return get_header(st->req, th, text, err, errlen);
}

static enum sig_result find_timestamp(struct verify_state *st, char *err, size_t errlen)
{
    const struct sig_spec *spec = st->spec;
    char json_buf[64];
    struct span text;
    int64_t v;
    enum sig_result r;

    if (spec->timestamp_header == NULL && spec->timestamp_json == NULL)
        return SIG_OK;
    if ((r = find_timestamp_text(st, &text, json_buf, sizeof json_buf, err, errlen)) != SIG_OK)
        return r;
    switch (spec->timestamp_format) {
    case SIG_TS_UNIX:
    case SIG_TS_UNIX_MS:
        if (parse_decimal(text, &v) < 0) {
            err_set(err, errlen, "%s%s%s is not a decimal unix time%s (%zu characters)", TS_LABEL(st),
                    spec->timestamp_format == SIG_TS_UNIX_MS ? " in milliseconds" : "", text.n);
            return SIG_MALFORMED_HEADER;
        }
        /* The SDKs sign the timestamp re-formatted from its parsed value. */
        snprintf(st->ts_text, sizeof st->ts_text, "%" PRId64, v);
        st->ts = spec->timestamp_format == SIG_TS_UNIX_MS ? v / 1000 : v;
        break;
    case SIG_TS_RFC3339:
        if (text.n >= sizeof st->ts_text || parse_rfc3339(text, &st->ts) < 0) {
            err_set(err, errlen, "%s%s%s is not an RFC 3339 time (%zu characters)", TS_LABEL(st), text.n);
            return SIG_MALFORMED_HEADER;
        }
        memcpy(st->ts_text, text.p, text.n);
        st->ts_text[text.n] = '\0';
        break;
    }
    st->has_ts = 1;
    return SIG_OK;
}

/* ---- the signed content ---------------------------------------------------- */

/* application/x-www-form-urlencoded decoding of s ('+' is a space, %XX a
 * byte; a stray '%' stays as it is) into out, which has room for s.n bytes
 * (decoding never lengthens); returns the decoded length. */
static size_t form_decode(struct span s, char *out)
{
    size_t n = 0;

    for (size_t i = 0; i < s.n; i++) {
        if (s.p[i] == '+') {
            out[n++] = ' ';
        } else if (s.p[i] == '%' && i + 2 < s.n && enc_hex_value(s.p[i + 1]) >= 0 && enc_hex_value(s.p[i + 2]) >= 0) {
            out[n++] = (char)(enc_hex_value(s.p[i + 1]) * 16 + enc_hex_value(s.p[i + 2]));
            i += 2;
        } else {
            out[n++] = s.p[i];
        }
    }
    return n;
}

struct form_field {
    const char *name, *value; /* in render_form()'s arena */
    size_t name_len, value_len;
};

static int cmp_bytes(const char *a, size_t an, const char *b, size_t bn)
{
    int c = memcmp(a, b, an < bn ? an : bn);
    return c != 0 ? c : (an > bn) - (an < bn);
}

static int cmp_field(const void *a, const void *b)
{
    const struct form_field *x = a, *y = b;
    int c = cmp_bytes(x->name, x->name_len, y->name, y->name_len);
    return c != 0 ? c : cmp_bytes(x->value, x->value_len, y->value, y->value_len);
}

static bool is_form(const char *content_type)
{
    static const char form[] = "application/x-www-form-urlencoded";
    return content_type != NULL && strncasecmp(content_type, form, sizeof form - 1) == 0 &&
           (content_type[sizeof form - 1] == '\0' || content_type[sizeof form - 1] == ';' ||
            content_type[sizeof form - 1] == ' ');
}

/* Twilio's {form}: every field of a form body, sorted by name (then
 * value), an exact repeat of a name=value pair once, each as name then
 * value. Nothing for a body that is not a form. The fields are decoded into
 * one arena of the body's size (a hostile form of a million one-byte
 * fields costs no million allocations). */
static void render_form(struct verify_state *st, const struct sig_request *req)
{
    struct span rest = {(const char *)req->body, req->body_len}, tok;
    struct form_field *fields = NULL;
    size_t n = 0, cap = 0, used = 0;
    char *arena;

    if (!is_form(req->content_type))
        return;
    arena = xmalloc(req->body_len + 1);
    while (span_next_token(&rest, "&", &tok)) {
        const char *eq = memchr(tok.p, '=', tok.n);
        struct span name = {tok.p, eq != NULL ? (size_t)(eq - tok.p) : tok.n};
        struct span value = eq != NULL ? (struct span){eq + 1, tok.n - name.n - 1} : (struct span){"", 0};

        if (n == cap) {
            cap = cap ? cap * 2 : 16;
            fields = xrealloc(fields, cap * sizeof *fields);
        }
        fields[n].name = arena + used;
        fields[n].name_len = form_decode(name, arena + used);
        used += fields[n].name_len;
        fields[n].value = arena + used;
        fields[n].value_len = form_decode(value, arena + used);
        used += fields[n].value_len;
        n++;
    }
    if (n > 0)
        qsort(fields, n, sizeof *fields, cmp_field);
    for (size_t i = 0; i < n; i++) {
        if (i == 0 || cmp_field(&fields[i - 1], &fields[i]) != 0) {
            content_add(st, fields[i].name, fields[i].name_len);
            content_add(st, fields[i].value, fields[i].value_len);
        }
    }
    free(arena);
    free(fields);
}

/* {url}: as received, or with HubSpot's reserved characters decoded. */
static void render_url(struct verify_state *st, const char *url)
{
    static const char reserved[] = ":/?@!$'()*,;";
    const char *run = url, *p;

    if (!st->spec->url_decode_reserved) {
        content_add_ref(st, url, strlen(url));
        return;
    }
    for (p = url; *p; p++) {
        int hi, lo;
        char c;

        if (p[0] != '%' || (hi = enc_hex_value(p[1])) < 0 || (lo = enc_hex_value(p[2])) < 0)
            continue;
        c = (char)(hi * 16 + lo);
        if (c == '\0' || strchr(reserved, c) == NULL)
            continue;
        content_add(st, run, (size_t)(p - run));
        content_add(st, &c, 1);
        p += 2;
        run = p + 1;
    }
    content_add(st, run, (size_t)(p - run));
}

/* The placeholder starting at tpl ("{...}"): its length including braces,
 * or 0 if there is no closing brace. */
static size_t placeholder_len(const char *tpl)
{
    const char *end = strchr(tpl, '}');
    return end != NULL ? (size_t)(end - tpl) + 1 : 0;
}

static enum sig_result render_one(struct verify_state *st, const char *ph, size_t n, char *err, size_t errlen)
{
    const struct sig_request *req = st->req;
    char name[JSONPATH_MAX_LEN + 1];
    struct span v;
    enum sig_result r;

#define IS(lit) (n == sizeof(lit) - 1 && memcmp(ph, lit, n) == 0)
    if (IS("{body}")) {
        content_add_ref(st, req->body, req->body_len);
    } else if (IS("{timestamp}")) {
        content_add(st, st->ts_text, strlen(st->ts_text));
    } else if (IS("{url}")) {
        render_url(st, req->url != NULL ? req->url : "");
    } else if (IS("{method}")) {
        const char *m = req->method != NULL ? req->method : "POST";
        content_add_ref(st, m, strlen(m));
    } else if (IS("{form}")) {
        render_form(st, req);
    } else if (n > 9 && n - 9 <= JSONPATH_MAX_LEN && memcmp(ph, "{header:", 8) == 0) {
        memcpy(name, ph + 8, n - 9);
        name[n - 9] = '\0';
        if ((r = get_header(req, name, &v, err, errlen)) != SIG_OK)
            return r;
        content_add_ref(st, v.p, v.n);
    } else if (n > 7 && n - 7 <= JSONPATH_MAX_LEN && memcmp(ph, "{json:", 6) == 0) {
        char value[JSON_FIELD_MAX + 1];

        memcpy(name, ph + 6, n - 7);
        name[n - 7] = '\0';
        if ((r = get_json(st, name, value, sizeof value, err, errlen)) != SIG_OK)
            return r;
        content_add(st, value, strlen(value));
    } else {
        err_set(err, errlen, "the signed template has an unknown placeholder");
        return SIG_MISMATCH;
    }
#undef IS
    return SIG_OK;
}

static enum sig_result render_content(struct verify_state *st, char *err, size_t errlen)
{
    const char *tpl = st->spec->signed_template != NULL ? st->spec->signed_template : "{body}";
    enum sig_result r;

    while (*tpl) {
        const char *brace = strchr(tpl, '{');
        size_t lit = brace != NULL ? (size_t)(brace - tpl) : strlen(tpl), n;

        content_add_ref(st, tpl, lit);
        tpl += lit;
        if (*tpl == '\0')
            break;
        if ((n = placeholder_len(tpl)) == 0) {
            content_add_ref(st, tpl, strlen(tpl));
            break;
        }
        if ((r = render_one(st, tpl, n, err, errlen)) != SIG_OK)
            return r;
        tpl += n;
    }
    return SIG_OK;
}

int sig_template_check(const char *tpl, char *err, size_t errlen)
{
    static const char *const fixed[] = {"{body}", "{timestamp}", "{url}", "{method}", "{form}"};

    if (tpl == NULL || tpl[0] == '\0')
        return err_set(err, errlen, "the signed template is empty");
    for (const char *p = strchr(tpl, '{'); p != NULL; p = strchr(p + 1, '{')) {
        size_t n = placeholder_len(p);
        bool ok = false;

        if (n == 0)
            return err_set(err, errlen, "the signed template has a '{' without '}'");
        for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
            ok = ok || (n == strlen(fixed[i]) && memcmp(p, fixed[i], n) == 0);
        if (!ok && n > 9 && n - 9 <= JSONPATH_MAX_LEN && memcmp(p, "{header:", 8) == 0 &&
            memchr(p + 8, '{', n - 9) == NULL) /* render_one()'s bound */
            ok = true;
        if (!ok && n > 7 && memcmp(p, "{json:", 6) == 0) {
            char path[JSONPATH_MAX_LEN + 1];

            if (n - 7 <= JSONPATH_MAX_LEN) {
                memcpy(path, p + 6, n - 7);
                path[n - 7] = '\0';
                ok = jsonpath_valid(path) != 0;
            }
        }
        if (!ok)
            return err_set(err, errlen,
                           "unknown placeholder '%.*s' in the signed template (use {body}, {timestamp}, {url}, "
                           "{method}, {form}, {header:Name}, {json:path})",
                           (int)(n > 60 ? 60 : n), p);
    }
    return 0;
}

/* ---- verification ---------------------------------------------------------- */

/* 1 if some key's signature over the content equals (or verifies) some
 * candidate, 0 if none does, -1 if it could not be computed. */
static int match_any_key(struct verify_state *st)
{
    const struct sig_spec *spec = st->spec;
    const struct sig_params *params = st->params;
    const struct sig_pk_ops *pk = spec->alg == SIG_ALG_PUBLIC_KEY ? sig_pk_ops_for(spec->pk) : NULL;
    unsigned char expected[SIG_MAX_SIG_LEN], got[SIG_MAX_SIG_LEN];
    size_t elen = 0, glen = 0;
    struct span parts[MAX_SEGS];
    unsigned char *owned = NULL;
    const unsigned char *whole = NULL;
    size_t whole_len = 0;
    int found = 0;

    if (spec->alg == SIG_ALG_PUBLIC_KEY && (pk == NULL || pk->verify == NULL))
        return -1;
    for (size_t i = 0; i < st->nsegs; i++)
        parts[i] = seg_span(st, i);
    if (pk != NULL)
        whole = content_whole(st, &whole_len, &owned);
    for (size_t k = 0; k < params->nkeys && found == 0; k++) {
        struct span rest = st->sigs;
        size_t seen = 0;

        if (spec->alg == SIG_ALG_TOKEN) {
            sig_content_digest(params->keys[k].bytes, params->keys[k].len, expected);
            elen = SIG_DIGEST_LEN;
        } else if (spec->alg != SIG_ALG_PUBLIC_KEY &&
                   hmac_parts(spec->alg, &params->keys[k], parts, st->nsegs, expected, &elen) < 0) {
            found = -1;
            break;
        }
        /* Every candidate is compared in constant time; stopping at a match
         * reveals only that the request is authentic. */
        while (found == 0 && seen++ < MAX_CANDIDATES && next_candidate(spec, &rest, got, &glen)) {
            if (pk != NULL) {
                int v = pk->verify(&params->keys[k], whole, whole_len, got, glen);
                found = v < 0 ? -1 : v;
            } else if (glen == elen && CRYPTO_memcmp(expected, got, elen) == 0) {
                found = 1;
            }
        }
    }
    OPENSSL_cleanse(expected, sizeof expected);
    OPENSSL_cleanse(got, sizeof got);
    free(owned);
    return found;
}

static enum sig_result check_timestamp(const struct verify_state *st, int64_t now, int64_t tolerance, char *err,
                                       size_t errlen)
{
    int64_t age;

    if (tolerance < 0) {
        err_set(err, errlen, "%s%s%s cannot be checked: tolerance is negative (%" PRId64 "s)", TS_LABEL(st),
                tolerance);
        return SIG_TIMESTAMP_OUT_OF_TOLERANCE;
    }
    /* st->ts is below 10^18, so only an absurd `now` can overflow; the
     * INT64_MIN case is excluded so that -age below is defined. */
    if (__builtin_sub_overflow(now, st->ts, &age) || age == INT64_MIN) {
        err_set(err, errlen, "%s%s%s is out of range of the current time", TS_LABEL(st));
        return SIG_TIMESTAMP_OUT_OF_TOLERANCE;
    }
    if (age > tolerance) {
        err_set(err, errlen, "%s%s%s is %" PRId64 "s in the past (tolerance %" PRId64 "s)", TS_LABEL(st), age,
                tolerance);
        return SIG_TIMESTAMP_OUT_OF_TOLERANCE;
    }
    if (age < -tolerance) {
        err_set(err, errlen, "%s%s%s is %" PRId64 "s in the future (tolerance %" PRId64 "s)", TS_LABEL(st), -age,
                tolerance);
        return SIG_TIMESTAMP_OUT_OF_TOLERANCE;
    }
    return SIG_OK;
}

/* Twilio's JSON variant: the signed URL carries bodySHA256=<hex>, which
 * must be the SHA-256 of the body. A form body is signed field by field;
 * any other body needs bodySHA256, else nothing signs it (as twilio-node's
 * validateRequestWithBody). */
static enum sig_result check_body_sha256(const struct sig_request *req, char *err, size_t errlen)
{
    const char *q = req->url != NULL ? strchr(req->url, '?') : NULL;
    unsigned char d[SIG_DIGEST_LEN], want[SIG_DIGEST_LEN];
    struct span rest, tok;
    size_t n = 0;

    if (req->body_len == 0 || is_form(req->content_type))
        return SIG_OK;
    rest = q != NULL ? span_of(q + 1) : span_of(NULL);
    while (span_next_token(&rest, "&#", &tok)) {
        if (!span_strip_prefix(&tok, "bodySHA256="))
            continue;
        sig_content_digest(req->body, req->body_len, d);
        if (tok.n != ENC_HEX_LEN(SIG_DIGEST_LEN) || enc_hex_decode(tok.p, tok.n, want, sizeof want, &n) != 0 ||
            n != SIG_DIGEST_LEN || CRYPTO_memcmp(d, want, SIG_DIGEST_LEN) != 0) {
            err_set(err, errlen, "the body's SHA-256 is not the signed URL's bodySHA256");
            return SIG_MISMATCH;
        }
        return SIG_OK;
    }
    err_set(err, errlen, "the signed URL has no bodySHA256, so the body is not signed");
    return SIG_MISMATCH;
}

/* url with its authority's port removed, or the scheme's default port
 * (https 443, http 80) added; NULL if url is not scheme://authority…
 * Caller frees. */
static char *url_port_variant(const char *url)
{
    const char *sep = strstr(url, "://"), *auth, *end, *colon = NULL, *p;
    bool https;
    char *out;

    if (sep == NULL)
        return NULL;
    https = (size_t)(sep - url) == 5 && strncasecmp(url, "https", 5) == 0;
    if (!https && !((size_t)(sep - url) == 4 && strncasecmp(url, "http", 4) == 0))
        return NULL;
    auth = sep + 3;
    end = auth + strcspn(auth, "/?#");
    for (p = auth; p < end; p++) {
        if (*p == '@')
            colon = NULL, auth = p + 1; /* user info: the port comes after it */
        else if (*p == ']')
            colon = NULL;
        else if (*p == ':')
            colon = p;
    }
    if (colon != NULL) {
        out = xmalloc(strlen(url) + 1);
        memcpy(out, url, (size_t)(colon - url));
        strcpy(out + (colon - url), end);
        return out;
    }
    out = xmalloc(strlen(url) + 5);
    memcpy(out, url, (size_t)(end - url));
    strcpy(out + (end - url), https ? ":443" : ":80");
    strcat(out, end);
    return out;
}

/* Twilio: the signed content again with the URL's other port form; 1 if
 * it matches (st->req then points to *alt, whose url the caller frees). */
static int match_port_variant(struct verify_state *st, struct sig_request *alt, char *err, size_t errlen)
{
    char *url = st->req->url != NULL ? url_port_variant(st->req->url) : NULL;

    if (url == NULL)
        return 0;
    *alt = *st->req;
    alt->url = url;
    st->req = alt;
    buf_free(&st->content);
    st->nsegs = 0;
    if (render_content(st, err, errlen) != SIG_OK)
        return 0;
    return match_any_key(st) == 1;
}

static enum sig_result verify_state_run(struct verify_state *st, char *err, size_t errlen)
{
    enum sig_result r;
    int found;

    if ((r = find_timestamp(st, err, errlen)) != SIG_OK || (r = find_signatures(st, err, errlen)) != SIG_OK ||
        (r = render_content(st, err, errlen)) != SIG_OK)
        return r;
    found = match_any_key(st);
    if (found == 0 && st->spec->url_port_variants)
        found = match_port_variant(st, &st->alt_req, err, errlen);
    if (found < 0) {
        err_set(err, errlen, "%s could not be computed (%s)", alg_label(st->spec->alg),
                st->spec->alg == SIG_ALG_PUBLIC_KEY ? "the algorithm is not available or failed" : "OpenSSL error");
        return SIG_MISMATCH;
    }
    if (!found) {
        size_t ncand = count_candidates(st->spec, st->sigs);

        err_set(err, errlen, "no signature in %s matches the request (%zu candidate%s, %zu key%s)", st->sig_label,
                ncand, ncand == 1 ? "" : "s", st->params->nkeys, st->params->nkeys == 1 ? "" : "s");
        return SIG_MISMATCH;
    }
    if (st->spec->body_sha256_query && (r = check_body_sha256(st->req, err, errlen)) != SIG_OK)
        return r;
    if (st->has_ts)
        return check_timestamp(st, st->req->now, st->params->tolerance_s, err, errlen);
    return SIG_OK;
}

/* Twilio's X-Twilio-Webhooks-Signature-Settings: `algorithm=HMAC_SHA256`
 * selects SHA-256 (into *eff, which st->spec then points to). */
static enum sig_result apply_algorithm_header(struct verify_state *st, struct sig_spec *eff, char *err, size_t errlen)
{
    const char *v = st->req->header != NULL ? st->req->header(st->req->header_arg, st->spec->algorithm_header) : NULL;
    struct span rest = span_of(v), tok;

    while (v != NULL && span_next_token(&rest, ",", &tok)) {
        if (!span_strip_prefix(&tok, "algorithm="))
            continue;
        tok = span_trim(tok);
        *eff = *st->spec;
        if (tok.n == 11 && strncasecmp(tok.p, "HMAC_SHA256", 11) == 0)
            eff->alg = SIG_ALG_HMAC_SHA256;
        else if (tok.n == 9 && strncasecmp(tok.p, "HMAC_SHA1", 9) == 0)
            eff->alg = SIG_ALG_HMAC_SHA1;
        else if (tok.n > 0) {
            err_set(err, errlen, "%s names an algorithm hookd does not know", st->spec->algorithm_header);
            return SIG_MALFORMED_HEADER;
        }
        st->spec = eff;
        return SIG_OK;
    }
    return SIG_OK;
}

enum sig_result sig_verify_digest(const struct sig_params *params, const struct sig_request *req,
                                  unsigned char digest[SIG_DIGEST_LEN], char *err, size_t errlen)
{
    struct verify_state st;
    struct sig_spec eff;
    enum sig_result r;

    err_set(err, errlen, "%s", "");
    if (params == NULL || req == NULL || (req->body == NULL && req->body_len > 0)) {
        err_set(err, errlen, "signature verification called without a request or parameters");
        return SIG_MISMATCH;
    }
    if (params->keys == NULL || params->nkeys == 0) {
        err_set(err, errlen, "no signing secret is configured, so nothing can be verified");
        return SIG_MISMATCH;
    }
    memset(&st, 0, sizeof st);
    st.params = params;
    st.req = req;
    st.spec = params->spec;
    if (st.spec == NULL) {
        const struct sig_preset *p = sig_preset_get(params->scheme);

        if (p == NULL || params->scheme == SIG_HMAC) {
            err_set(err, errlen, "unknown signature scheme %d", (int)params->scheme);
            return SIG_MISMATCH;
        }
        st.spec = &p->spec;
    }
    if (st.spec->algorithm_header != NULL && (r = apply_algorithm_header(&st, &eff, err, errlen)) != SIG_OK)
        return r;
    r = verify_state_run(&st, err, errlen);
    if (r == SIG_OK && digest != NULL)
        content_digest(&st, digest);
    json_decref(st.doc);
    buf_free(&st.content);
    free((char *)st.alt_req.url);
    if (st.json_sig[0] != '\0')
        OPENSSL_cleanse(st.json_sig, sizeof st.json_sig);
    return r;
}

enum sig_result sig_verify(const struct sig_params *params, const struct sig_request *req, char *err, size_t errlen)
{
    return sig_verify_digest(params, req, NULL, err, errlen);
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

/* ---- what a spec signs ----------------------------------------------------- */

static bool template_has(const struct sig_spec *spec, const char *placeholder)
{
    return spec != NULL && spec->signed_template != NULL && strstr(spec->signed_template, placeholder) != NULL;
}

/* {json:…} signs a field, not the body: Mailgun's other fields are not
 * covered, so they do not count as signed. */
bool sig_spec_signs_body(const struct sig_spec *spec)
{
    return spec != NULL && spec->alg != SIG_ALG_TOKEN &&
           (template_has(spec, "{body}") || template_has(spec, "{form}"));
}

bool sig_spec_signs_timestamp(const struct sig_spec *spec)
{
    if (spec == NULL || spec->alg == SIG_ALG_TOKEN)
        return false;
    if (spec->timestamp_json != NULL) /* Linear: inside the signed body */
        return template_has(spec, "{body}") || template_has(spec, "{json:");
    return spec->timestamp_header != NULL && template_has(spec, "{timestamp}");
}

bool sig_spec_signs_header(const struct sig_spec *spec, const char *name)
{
    const char *p;
    size_t n;

    if (spec == NULL || name == NULL || spec->alg == SIG_ALG_TOKEN || spec->signed_template == NULL)
        return false;
    if (spec->timestamp_header != NULL && (spec->timestamp_prefix == NULL || spec->timestamp_prefix[0] == '\0') &&
        strcasecmp(spec->timestamp_header, name) == 0 && template_has(spec, "{timestamp}"))
        return true;
    n = strlen(name);
    for (p = strstr(spec->signed_template, "{header:"); p != NULL; p = strstr(p + 1, "{header:"))
        if (strncasecmp(p + 8, name, n) == 0 && p[8 + n] == '}')
            return true;
    return false;
}

bool sig_signs_header(enum sig_scheme scheme, const char *name)
{
    const struct sig_preset *p = sig_preset_get(scheme);
    return p != NULL && sig_spec_signs_header(&p->spec, name);
}

bool sig_signs_timestamp(enum sig_scheme scheme)
{
    const struct sig_preset *p = sig_preset_get(scheme);
    return p != NULL && sig_spec_signs_timestamp(&p->spec);
}

/* ---- keys ------------------------------------------------------------------ */

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
    const struct sig_preset *p = sig_preset_get(scheme);
    size_t n;

    if (out == NULL)
        return -1;
    memset(out, 0, sizeof *out);
    if (p == NULL) {
        err_set(err, errlen, "unknown signature scheme %d", (int)scheme);
        return -1;
    }
    if (secret == NULL || secret[0] == '\0') {
        err_set(err, errlen, "%s signing secret is empty", p->name);
        return -1;
    }
    switch (p->spec.key_format) {
    case SIG_KEY_WHSEC_BASE64:
        if (strncmp(secret, STANDARD_SECRET_PREFIX, strlen(STANDARD_SECRET_PREFIX)) == 0)
            secret += strlen(STANDARD_SECRET_PREFIX);
        if (secret[0] == '\0') {
            err_set(err, errlen, "standard-webhooks secret has nothing after the whsec_ prefix");
            return -1;
        }
        return decode_standard_secret(secret, out, err, errlen);
    case SIG_KEY_RAW:
        n = strlen(secret);
        out->bytes = xmalloc(n);
        memcpy(out->bytes, secret, n);
        out->len = n;
        return 0;
    case SIG_KEY_PUBLIC:
        err_set(err, errlen, "%s verifies with a public key: use public_key, not secret", p->name);
        return -1;
    }
    err_set(err, errlen, "unknown key format for scheme %s", p->name);
    return -1;
}

int sig_public_key_decode(enum sig_scheme scheme, const char *text, struct sig_key *out, char *err, size_t errlen)
{
    const struct sig_preset *p = sig_preset_get(scheme);
    const struct sig_pk_ops *ops;

    if (out == NULL)
        return -1;
    memset(out, 0, sizeof *out);
    if (p == NULL || p->spec.alg != SIG_ALG_PUBLIC_KEY) {
        err_set(err, errlen, "%s verifies with a shared secret: use secret, not public_key",
                p != NULL ? p->name : "this scheme");
        return -1;
    }
    ops = sig_pk_ops_for(p->spec.pk);
    if (ops == NULL || ops->decode == NULL) {
        err_set(err, errlen, "scheme %s is not available in this build (no public-key algorithm)", p->name);
        return -1;
    }
    if (text == NULL || text[0] == '\0') {
        err_set(err, errlen, "%s public key is empty", p->name);
        return -1;
    }
    if (ops->decode(text, out, err, errlen) != 0) {
        sig_key_clear(out);
        return -1;
    }
    return 0;
}

void sig_key_clear(struct sig_key *key)
{
    if (key == NULL)
        return;
    if (key->bytes != NULL) {
        OPENSSL_cleanse(key->bytes, key->len);
        free(key->bytes);
    }
    if (key->handle != NULL && key->release != NULL)
        key->release(key->handle);
    memset(key, 0, sizeof *key);
}

/* ---- outbound -------------------------------------------------------------- */

int sig_sign_standard(const struct sig_key *key, const char *id, int64_t timestamp, const unsigned char *body,
                      size_t len, char *out, size_t outlen)
{
    char ts_text[24]; /* "." ts ".", sized for any int64 */
    unsigned char mac[SIG_MAC_LEN];
    struct span parts[3];
    size_t maclen = 0;
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
    if (hmac_parts(SIG_ALG_HMAC_SHA256, key, parts, 3, mac, &maclen) < 0)
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
