/* Dead-letter alerts: every dead-lettered item is published as one JSON
 * message on the `<prefix>:alerts` channel and logged at ERROR. Operators
 * subscribe to the channel (or watch hookd_dead_total in /metrics). */
#ifndef HOOKD_ALERT_H
#define HOOKD_ALERT_H

struct worker;

/* source: "inbox" or "delivery"; all strings borrowed. */
void alert_dead_letter(struct worker *w, const char *source, const char *id, const char *partner,
                       const char *event_type, const char *entity, int attempts, const char *reason);

#endif
