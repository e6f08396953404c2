/* Dead-letter alerts. Every dead-lettered item is published as one JSON
 * message on the `<prefix>:alerts` channel and logged at ERROR, at once.
 * When [hookd] alert_webhook is set, a JSON alert (Slack-compatible `text`,
 * plus a `hookd` object for PagerDuty-style routers) is POSTed too, with its
 * own retry, and coalesced: the first dead letter after a quiet period is
 * sent at once, later ones within alert_interval are counted and sent as one
 * summary at the end of the interval. */
#ifndef HOOKD_ALERT_H
#define HOOKD_ALERT_H

#include <stddef.h>

struct hookd_ctx;
struct alerter;

/* ctx is borrowed and must outlive the alerter. */
struct alerter *alerter_new(struct hookd_ctx *ctx, char *err, size_t errlen);
void alerter_free(struct alerter *a); /* accepts NULL; unsent alerts are dropped (logged) */
/* ctx->cfg changed: applies allow_private_networks and ca_file to the
 * alert webhook's HTTP client. */
void alerter_reload(struct alerter *a);

/* source: "inbox" or "delivery"; all strings borrowed. */
void alert_dead_letter(struct alerter *a, const char *source, const char *id, const char *partner,
                       const char *event_type, const char *entity, int attempts, const char *reason);

#endif
