/* Provider handshakes on /v1/inbox/{partner}; see handshake.h for the table.
 * Each handshake is one row of a table keyed by the partner's scheme name
 * (sig_scheme_name), so a preset that needs one adds a row and a function;
 * nothing here stores anything, and challenges are echoed only when they
 * are short printable ASCII (a challenge is a token, not a document). */
#include "handshake.h"

#include <event2/buffer.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/queue.h>

#include <openssl/crypto.h>

#include "encoding.h"
#include "http_server.h"
#include "jsonpath.h"
#include "log.h"
#include "signature.h"

/* Longest challenge or token echoed back. */
#define CHALLENGE_MAX 512

static bool echoable(const char *s)
{
    size_t n = 0;

    if (!s || !*s)
        return false;
    for (; s[n]; n++)
        if (n >= CHALLENGE_MAX || s[n] < 0x21 || s[n] > 0x7e)
            return false;
    return true;
}

static void answered(const struct partner_config *p, const char *what, int code)
{
    log_info("ingest.handshake", "partner=%s handshake=%s status=%d", p->name, what, code);
}

/* Fills *r; returns HANDSHAKE_REFUSED, the verdict that goes with it. */
static enum handshake_verdict refuse(struct partner_refusal *r, int code, enum reject_reason reason, const char *msg)
{
    r->code = code;
    r->reason = reason;
    snprintf(r->msg, sizeof r->msg, "%s", msg);
    return HANDSHAKE_REFUSED;
}

/* text/plain, exactly the bytes given (no newline: providers compare). */
static void reply_text(struct evhttp_request *req, int code, const char *text)
{
    struct evbuffer *buf = evbuffer_new();
    struct evkeyvalq *out = evhttp_request_get_output_headers(req);

    evbuffer_add(buf, text, strlen(text));
    evhttp_add_header(out, "Content-Type", "text/plain; charset=utf-8");
    evhttp_add_header(out, "X-Content-Type-Options", "nosniff");
    evhttp_send_reply(req, code, http_reason(code), buf);
    evbuffer_free(buf);
}

/* HMAC-SHA256 of msg with the partner's first secret (the current one,
 * when several are configured for rotation), into mac. */
static int hmac_first_secret(const struct partner_config *p, const char *msg, unsigned char mac[64])
{
    size_t len = 0;

    if (p->nkeys == 0 || sig_hmac(SIG_ALG_HMAC_SHA256, &p->keys[0], msg, strlen(msg), mac, &len) != 0)
        return -1;
    return len == 32 ? 0 : -1;
}

static const char *json_str(json_t *obj, const char *key)
{
    return json_string_value(json_object_get(obj, key));
}

/* ---- signed POST handshakes ---- */

static enum handshake_verdict post_slack(struct evhttp_request *req, const struct partner_config *p, json_t *body,
                                         struct partner_refusal *r)
{
    const char *type = json_str(body, "type"), *challenge = json_str(body, "challenge");

    if (!type || strcmp(type, "url_verification") != 0)
        return HANDSHAKE_NONE;
    if (!echoable(challenge)) {
        return refuse(r, 400, REJECT_BAD_BODY, "url_verification without a usable challenge");
    }
    http_reply_json(req, 200, json_pack("{s:s}", "challenge", challenge));
    answered(p, "url_verification", 200);
    return HANDSHAKE_ANSWERED;
}

static enum handshake_verdict post_zoom(struct evhttp_request *req, const struct partner_config *p, json_t *body,
                                        struct partner_refusal *r)
{
    const char *event = json_str(body, "event");
    const char *plain = json_str(json_object_get(body, "payload"), "plainToken");
    unsigned char mac[64];
    char hex[ENC_HEX_LEN(32) + 1];

    if (!event || strcmp(event, "endpoint.url_validation") != 0)
        return HANDSHAKE_NONE;
    if (!echoable(plain)) {
        return refuse(r, 400, REJECT_BAD_BODY, "endpoint.url_validation without a usable payload.plainToken");
    }
    if (hmac_first_secret(p, plain, mac) != 0 || enc_hex_encode(mac, 32, hex, sizeof hex) != 0) {
        return refuse(r, 503, REJECT_UNAVAILABLE, "the validation token could not be computed");
    }
    OPENSSL_cleanse(mac, sizeof mac);
    http_reply_json(req, 200, json_pack("{s:s, s:s}", "plainToken", plain, "encryptedToken", hex));
    answered(p, "endpoint.url_validation", 200);
    return HANDSHAKE_ANSWERED;
}

static enum handshake_verdict post_twitch(struct evhttp_request *req, const struct partner_config *p, json_t *body,
                                          struct partner_refusal *r)
{
    const char *type = evhttp_find_header(evhttp_request_get_input_headers(req), "Twitch-Eventsub-Message-Type");
    const char *challenge = json_str(body, "challenge");

    if (!type || strcmp(type, "webhook_callback_verification") != 0)
        return HANDSHAKE_NONE;
    if (!echoable(challenge)) {
        return refuse(r, 400, REJECT_BAD_BODY, "webhook_callback_verification without a usable challenge");
    }
    reply_text(req, 200, challenge);
    answered(p, "webhook_callback_verification", 200);
    return HANDSHAKE_ANSWERED;
}

static enum handshake_verdict post_discord(struct evhttp_request *req, const struct partner_config *p, json_t *body,
                                           struct partner_refusal *r)
{
    (void)r;
    json_t *type = json_object_get(body, "type");

    if (!json_is_integer(type))
        return HANDSHAKE_NONE;
    if (json_object_get(body, "event") == NULL && json_integer_value(type) == 1) {
        /* An interaction PING: PONG. */
        http_reply_json(req, 200, json_pack("{s:i}", "type", 1));
        answered(p, "interaction_ping", 200);
        return HANDSHAKE_ANSWERED;
    }
    if (json_integer_value(type) == 0) {
        /* A webhook-event PING: 204 with an empty body, and a Content-Type
         * (Discord's docs ask for one even here). */
        evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type", "application/json");
        evhttp_send_reply(req, 204, http_reason(204), NULL);
        answered(p, "webhook_event_ping", 204);
        return HANDSHAKE_ANSWERED;
    }
    return HANDSHAKE_NONE;
}

static enum handshake_verdict post_github(struct evhttp_request *req, const struct partner_config *p, json_t *body,
                                          struct partner_refusal *r)
{
    (void)body;
    (void)r;
    const char *event = evhttp_find_header(evhttp_request_get_input_headers(req), "X-GitHub-Event");

    if (!event || strcmp(event, "ping") != 0)
        return HANDSHAKE_NONE;
    http_reply_json(req, 200, json_pack("{s:s}", "status", "pong"));
    answered(p, "ping", 200);
    return HANDSHAKE_ANSWERED;
}

/* ---- GET handshakes ---- */

/* Constant time in the configured token's bytes and length: the two are
 * compared through their SHA-256, as signature.c compares a shared token. */
static bool same_token(const char *got, const char *want)
{
    unsigned char a[SIG_DIGEST_LEN], b[SIG_DIGEST_LEN];

    sig_content_digest((const unsigned char *)got, strlen(got), a);
    sig_content_digest((const unsigned char *)want, strlen(want), b);
    bool same = CRYPTO_memcmp(a, b, sizeof a) == 0;

    OPENSSL_cleanse(b, sizeof b);
    return same;
}

static enum handshake_verdict get_meta(struct evhttp_request *req, const struct partner_config *p, struct evkeyvalq *q,
                                       struct partner_refusal *r)
{
    const char *mode = evhttp_find_header(q, "hub.mode"), *token = evhttp_find_header(q, "hub.verify_token");
    const char *challenge = evhttp_find_header(q, "hub.challenge");
    const char *want = p->verify_token.text;

    if (!mode && !token && !challenge)
        return HANDSHAKE_NONE;
    if (!mode || strcmp(mode, "subscribe") != 0 || !echoable(challenge)) {
        return refuse(r, 400, REJECT_BAD_BODY, "a subscription check needs hub.mode=subscribe and a hub.challenge");
    }
    if (!want || !*want) {
        return refuse(r, 403, REJECT_VERIFY_TOKEN, "no verify_token is configured for this partner");
    }
    if (!token || !same_token(token, want)) {
        return refuse(r, 403, REJECT_VERIFY_TOKEN,
                      token ? "hub.verify_token does not match" : "missing hub.verify_token");
    }
    reply_text(req, 200, challenge);
    answered(p, "subscribe", 200);
    return HANDSHAKE_ANSWERED;
}

/* Whether ingest would take text as a JSON body (the same parser). */
static bool json_body(const char *text)
{
    json_error_t jerr;
    json_t *doc = jsonpath_load_body(text, strlen(text), &jerr);
    bool parsed = doc != NULL;

    json_decref(doc);
    return parsed;
}

/* X's answer is, by X's protocol, the signature of a POST whose body is the
 * token. The config demands allow_ips for x, so only X's ranges ask; and a
 * token that would pass as a JSON body is never answered, so no answer can
 * sign an event. */
static enum handshake_verdict get_x(struct evhttp_request *req, const struct partner_config *p, struct evkeyvalq *q,
                                    struct partner_refusal *r)
{
    const char *token = evhttp_find_header(q, "crc_token");
    unsigned char mac[64];
    char b64[ENC_BASE64_LEN(32) + 1], answer[8 + sizeof b64];

    if (!token)
        return HANDSHAKE_NONE;
    if (!echoable(token)) {
        return refuse(r, 400, REJECT_BAD_BODY, "crc_token is empty, too long or not printable");
    }
    if (json_body(token)) {
        return refuse(r, 400, REJECT_BAD_BODY, "crc_token is a JSON document: its answer would sign a POST of it");
    }
    if (hmac_first_secret(p, token, mac) != 0 || enc_base64_encode(mac, 32, b64, sizeof b64) != 0) {
        return refuse(r, 503, REJECT_UNAVAILABLE, "the CRC response could not be computed");
    }
    OPENSSL_cleanse(mac, sizeof mac);
    snprintf(answer, sizeof answer, "sha256=%s", b64);
    http_reply_json(req, 200, json_pack("{s:s}", "response_token", answer));
    answered(p, "crc", 200);
    return HANDSHAKE_ANSWERED;
}

/* ---- dispatch ---- */

typedef enum handshake_verdict (*post_fn)(struct evhttp_request *, const struct partner_config *, json_t *,
                                          struct partner_refusal *);
typedef enum handshake_verdict (*get_fn)(struct evhttp_request *, const struct partner_config *, struct evkeyvalq *,
                                         struct partner_refusal *);

static const struct {
    const char *scheme;
    post_fn post;
    get_fn get;
} handshakes[] = {
    {"slack", post_slack, NULL},
    {"zoom", post_zoom, NULL},
    {"twitch", post_twitch, NULL},
    {"discord", post_discord, NULL},
    {"github", post_github, NULL},
    {"meta", NULL, get_meta},
    {"x", NULL, get_x},
};

static int find(const struct partner_config *p)
{
    const char *scheme = sig_scheme_name(p->scheme);

    for (size_t i = 0; i < sizeof handshakes / sizeof handshakes[0]; i++)
        if (strcmp(handshakes[i].scheme, scheme) == 0)
            return (int)i;
    return -1;
}

enum handshake_verdict handshake_get(struct evhttp_request *req, const struct hookd_config *cfg,
                                     const struct partner_config *p, struct partner_refusal *r)
{
    int i = find(p);
    enum evhttp_cmd_type cmd = evhttp_request_get_command(req);
    struct evkeyvalq q;
    const char *query;
    enum handshake_verdict v;

    if (i < 0 || !handshakes[i].get || cmd != EVHTTP_REQ_GET)
        return HANDSHAKE_NONE;
    if (partner_policy_address(req, cfg, p, r) != 0)
        return HANDSHAKE_REFUSED;
    query = evhttp_uri_get_query(evhttp_request_get_evhttp_uri(req));
    TAILQ_INIT(&q);
    if (!query || evhttp_parse_query_str(query, &q) != 0) {
        evhttp_clear_headers(&q);
        return HANDSHAKE_NONE;
    }
    v = handshakes[i].get(req, p, &q, r);
    evhttp_clear_headers(&q);
    return v;
}

enum handshake_verdict handshake_unsigned(struct evhttp_request *req, const struct partner_config *p,
                                          const unsigned char *raw, size_t len)
{
    static const char prefix[] = "webhook_id=";
    size_t n = sizeof prefix - 1;
    struct evkeyvalq *h = evhttp_request_get_input_headers(req);

    if (strcmp(sig_scheme_name(p->scheme), "woocommerce") != 0 || evhttp_find_header(h, "X-WC-Webhook-Signature"))
        return HANDSHAKE_NONE;
    if (len <= n || len > n + 20 || memcmp(raw, prefix, n) != 0)
        return HANDSHAKE_NONE;
    for (size_t i = n; i < len; i++)
        if (raw[i] < '0' || raw[i] > '9')
            return HANDSHAKE_NONE;
    reply_text(req, 200, "");
    answered(p, "ping", 200);
    return HANDSHAKE_ANSWERED;
}

int handshake_ack_status(const struct partner_config *p)
{
    return strcmp(sig_scheme_name(p->scheme), "discord") == 0 ? 204 : 200;
}

enum handshake_verdict handshake_post(struct evhttp_request *req, const struct partner_config *p, json_t *body,
                                      struct partner_refusal *r)
{
    int i = find(p);

    if (i < 0 || !handshakes[i].post || !json_is_object(body))
        return HANDSHAKE_NONE;
    return handshakes[i].post(req, p, body, r);
}
