/* handshake — the challenges some providers send to `/v1/inbox/{partner}`
 * before (or besides) their events, answered by hookd itself and never
 * stored as events:
 *
 * | scheme | request | answer |
 * | --- | --- | --- |
 * | slack | signed POST, `type: url_verification` | `{"challenge": …}` |
 * | zoom | signed POST, `event: endpoint.url_validation` | `{"plainToken", "encryptedToken": hex HMAC-SHA256(secret, plainToken)}` |
 * | twitch | signed POST, `Twitch-Eventsub-Message-Type: webhook_callback_verification` | the challenge, text/plain |
 * | discord | signed POST, interaction PING `type: 1` | `{"type": 1}` |
 * | discord | signed POST, webhook-event PING `type: 0` | 204 |
 * | github | signed POST, `X-GitHub-Event: ping` | `{"status": "pong"}` |
 * | meta | GET `hub.mode=subscribe&hub.verify_token=…&hub.challenge=…` | the challenge, text/plain, if verify_token matches |
 * | x | GET `crc_token=…` | `{"response_token": "sha256=" base64 HMAC-SHA256(consumer secret, crc_token)}` |
 * | woocommerce | unsigned form POST `webhook_id=N` (the ping WooCommerce sends when a webhook is saved) | 200, empty |
 *
 * The signed ones are looked at only after the request's signature was
 * verified (ingest.c calls handshake_post() after sig_verify()); a wrong
 * signature is refused as for any event. Meta's GET is checked against
 * `verify_token` (constant time). X's CRC answer is the signature of a POST
 * of the token, so the config requires allow_ips for x and a token that
 * parses as JSON is refused. Every answer and refusal is logged
 * (`ingest.handshake`). Loop thread only. */
#ifndef HOOKD_HANDSHAKE_H
#define HOOKD_HANDSHAKE_H

#include <jansson.h>
#include <stddef.h>

#include "config.h"
#include "partner_policy.h"

struct evhttp_request;

enum handshake_verdict {
    HANDSHAKE_NONE,     /* not a handshake: carry on */
    HANDSHAKE_ANSWERED, /* answered; nothing more to do */
    HANDSHAKE_REFUSED,  /* a handshake that failed its check: refuse with *r */
};

/* A request that is not a POST (GET for Meta and X): NONE when the partner
 * has no such handshake or the query is not one (the caller answers 405).
 * The partner's allow_ips is checked first. */
__attribute__((warn_unused_result)) enum handshake_verdict handshake_get(struct evhttp_request *req,
                                                                         const struct hookd_config *cfg,
                                                                         const struct partner_config *p,
                                                                         struct partner_refusal *r);

/* A POST before its signature and content type are checked: only the
 * unsigned setup pings that carry nothing (WooCommerce's `webhook_id=N`). */
__attribute__((warn_unused_result)) enum handshake_verdict handshake_unsigned(struct evhttp_request *req,
                                                                              const struct partner_config *p,
                                                                              const unsigned char *raw, size_t len);

/* A POST whose signature verified and whose body parsed as JSON (borrowed). */
__attribute__((warn_unused_result)) enum handshake_verdict handshake_post(struct evhttp_request *req,
                                                                          const struct partner_config *p, json_t *body,
                                                                          struct partner_refusal *r);

/* The status a stored event is acknowledged with: 204 for discord (its
 * Webhook Events must be answered 204 No Content; http_reply_json() sends
 * no body with it), 200 for every other scheme. */
int handshake_ack_status(const struct partner_config *p);

#endif
