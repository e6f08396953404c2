/* partner_policy — the per-partner checks of an inbound request that are
 * not its signature: `allow_ips` (the client address, taken from
 * X-Forwarded-For only when the direct peer is one of `[hookd]
 * trusted_proxies`, must be in one of the partner's ranges) and
 * `event_types` (the event type must match one of the partner's globs).
 * A failed check fills a refusal (status, reason counter, message) that the
 * ingest role answers like any other; nothing is stored. Called from the
 * loop thread; the config snapshot is borrowed for the call. */
#ifndef HOOKD_PARTNER_POLICY_H
#define HOOKD_PARTNER_POLICY_H

#include <stdbool.h>

#include "config.h"
#include "stats.h"

struct evhttp_request;

/* Why a request was refused before it could be stored. */
struct partner_refusal {
    int code;                  /* HTTP status */
    enum reject_reason reason; /* counter and error code */
    char msg[256];             /* one line, no secrets */
};

/* 0 if the request may come from where it comes from (always, for a
 * partner without allow_ips); -1 with *r filled otherwise (403
 * address_not_allowed, naming the address seen). */
__attribute__((warn_unused_result)) int partner_policy_address(struct evhttp_request *req,
                                                               const struct hookd_config *cfg,
                                                               const struct partner_config *p,
                                                               struct partner_refusal *r);

/* 0 if the partner takes event_type; -1 with *r filled otherwise (422
 * event_type_not_allowed). */
__attribute__((warn_unused_result)) int partner_policy_event_type(const struct partner_config *p,
                                                                  const char *event_type, struct partner_refusal *r);

#endif
