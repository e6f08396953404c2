/*
 * signature.c — the table of provider presets: one row per
 * `[partner NAME] scheme =` value, each a struct sig_spec (how the provider
 * signs) plus the provider's defaults (event id, type, entity id, tolerance,
 * accepted bodies, handshake) and the line docs/guides/inbound.md's preset table shows.
 * Also the scheme names and what a spec's signature covers, which the
 * config asks to decide whether a value read from a request is
 * authenticated. Data and lookups only: signature_verify.c verifies,
 * signature_content.c renders the signed bytes, signature_mac.c holds the
 * MAC and the keys (they share signature_internal.h).
 */
#include "signature.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

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
                                        .timestamp_header = "webhook-timestamp",
                                        .alias_of = "webhook-",
                                        .alias = "svix-"},
                               .tolerance_s = 300,
                               .event_id = "header:webhook-id",
                               .event_type = "json:type",
                               .bodies = JSON_ONLY,
                               .verified =
                                   "HMAC-SHA256 (base64) of `webhook-id.webhook-timestamp.body`, `v1,` entries in "
                                   "`webhook-signature`, timestamp; Svix's `svix-id`, `svix-timestamp` and "
                                   "`svix-signature` are read in their place when absent"},
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
               .requires_allow_ips = "its CRC check (GET ?crc_token=T) answers HMAC-SHA256(secret, T), which is the "
                                     "X-Twitter-Webhooks-Signature of a POST of T, to whoever asks: set allow_ips to "
                                     "X's published webhook ranges",
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

/* ---- header names ---------------------------------------------------------- */

const char *sig_spec_header(const struct sig_spec *spec, sig_header_fn header, void *arg, const char *name)
{
    if (header == NULL || name == NULL)
        return NULL;
    const char *v = header(arg, name);
    if (v != NULL || spec == NULL || spec->alias_of == NULL || spec->alias == NULL)
        return v;
    size_t n = strlen(spec->alias_of);
    char other[128];
    if (strncasecmp(name, spec->alias_of, n) != 0 ||
        (size_t)snprintf(other, sizeof other, "%s%s", spec->alias, name + n) >= sizeof other)
        return NULL;
    return header(arg, other);
}
