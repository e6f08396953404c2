/* The address and event-type policy of a partner; see partner_policy.h.
 * The client's address is http_request_client()'s (engine/io/http_server.c,
 * the X-Forwarded-For walk of cidr_client_addr()). */
#include "partner_policy.h"

#include <stdio.h>
#include <string.h>

#include "cidr.h"
#include "http_server.h"

int partner_policy_address(struct evhttp_request *req, const struct hookd_config *cfg, const struct partner_config *p,
                           struct partner_refusal *r)
{
    struct cidr_addr client;
    char text[64];

    if (p->allow_ips.n == 0)
        return 0;
    int rc = http_request_client(req, &cfg->trusted, &client);
    r->code = 403;
    r->reason = REJECT_ADDRESS;
    if (rc == -1) {
        snprintf(r->msg, sizeof r->msg, "the peer's address is unknown; [partner %.50s] has allow_ips", p->name);
        return -1;
    }
    if (rc != 0) {
        snprintf(r->msg, sizeof r->msg, "X-Forwarded-For from a trusted proxy names no usable client address");
        return -1;
    }
    if (cidr_list_contains(&p->allow_ips, &client))
        return 0;
    cidr_addr_format(&client, text, sizeof text);
    snprintf(r->msg, sizeof r->msg, "%s is not in the allow_ips of [partner %.50s]", text, p->name);
    return -1;
}

int partner_policy_event_type(const struct partner_config *p, const char *event_type, struct partner_refusal *r)
{
    char shown[101];
    size_t i = 0;

    if (config_partner_takes_event(p, event_type))
        return 0;
    /* The type is the sender's text: quotes and control bytes would break
     * the key=value log line the refusal is written to. */
    for (; event_type[i] && i < sizeof shown - 1; i++) {
        unsigned char c = (unsigned char)event_type[i];
        shown[i] = c < 0x20 || c > 0x7e || c == '"' || c == '\\' ? '?' : (char)c;
    }
    shown[i] = '\0';
    r->code = 422;
    r->reason = REJECT_EVENT_TYPE;
    snprintf(r->msg, sizeof r->msg, "event type '%s' is not in the event_types of [partner %.50s]", shown, p->name);
    return -1;
}
