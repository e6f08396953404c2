/* The address and event-type policy of a partner; see partner_policy.h.
 * The X-Forwarded-For walk itself is cidr_client_addr() (engine/base/cidr.c);
 * this file only gathers the request's peer and headers for it. */
#include "partner_policy.h"

#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cidr.h"
#include "xmalloc.h"

/* Every X-Forwarded-For header of the request, joined with ", " in
 * arrival order (a proxy may add a second header instead of appending);
 * NULL when there is none. Caller frees. */
static char *forwarded_for(struct evhttp_request *req)
{
    struct evkeyvalq *h = evhttp_request_get_input_headers(req);
    char *all = NULL;
    size_t len = 0;

    for (struct evkeyval *kv = h->tqh_first; kv; kv = kv->next.tqe_next) {
        if (strcasecmp(kv->key, "X-Forwarded-For") != 0)
            continue;
        size_t n = strlen(kv->value);
        all = xrealloc(all, len + n + 3);
        if (len) {
            memcpy(all + len, ", ", 2);
            len += 2;
        }
        memcpy(all + len, kv->value, n + 1);
        len += n;
    }
    return all;
}

int partner_policy_address(struct evhttp_request *req, const struct hookd_config *cfg, const struct partner_config *p,
                           struct partner_refusal *r)
{
    struct cidr_addr peer, client;
    char text[64];

    if (p->allow_ips.n == 0)
        return 0;
    struct evhttp_connection *conn = evhttp_request_get_connection(req);
    if (!conn || cidr_addr_from_sockaddr(evhttp_connection_get_addr(conn), &peer) != 0) {
        r->code = 403;
        r->reason = REJECT_ADDRESS;
        snprintf(r->msg, sizeof r->msg, "the peer's address is unknown; [partner %.50s] has allow_ips", p->name);
        return -1;
    }
    char *xff = forwarded_for(req);
    int rc = cidr_client_addr(&peer, xff, &cfg->trusted, &client);
    free(xff);
    r->code = 403;
    r->reason = REJECT_ADDRESS;
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
