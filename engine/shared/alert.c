/* Dead-letter alerts; see alert.h. Publishing is fire-and-forget: the DLQ
 * row in Postgres is the record, the alert is the page. The webhook alert
 * keeps at most one request in flight; failures are retried after 1 s, 5 s,
 * 30 s, … (capped at alert_interval), folding newer dead letters into the
 * retried alert so an outage of the alert receiver never queues a storm. */
#include "alert.h"

#include <event2/dns.h>
#include <event2/event.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "errbuf.h"
#include "http_client.h"
#include "log.h"
#include "loop_timer.h"
#include "version.h"
#include "ctx.h"
#include "xmalloc.h"

struct alerter {
    struct hookd_ctx *ctx;
    struct evdns_base *dns;
    struct http_client *http;
    struct event *timer;
    bool sending;   /* a POST is in flight */
    bool waiting;   /* the timer runs: coalescing window or retry backoff */
    long pending;   /* dead letters not yet in a delivered alert */
    long in_flight; /* of those, how many the POST in flight carries */
    json_t *latest; /* the newest dead letter */
    int failures;   /* consecutive failed POSTs */
};

static void on_sent(const struct http_client_result *res, void *arg)
{
    struct alerter *a = arg;
    a->sending = false;
    if (res->error || res->status < 200 || res->status >= 300) {
        /* The dead letters stay pending and go out with the retry. */
        a->failures++;
        static const int64_t waits[] = {1000, 5000, 30000};
        int64_t wait = waits[a->failures - 1 < 2 ? a->failures - 1 : 2];
        if (wait > a->ctx->cfg->alert_interval)
            wait = a->ctx->cfg->alert_interval;
        log_warn("alert.webhook_failed", "status=%d error=\"%s\" retry_in_ms=%lld", res->status,
                 res->error ? res->error : "", (long long)wait);
        a->in_flight = 0;
        a->waiting = true;
        loop_timer_arm(a->timer, wait);
        return;
    }
    a->failures = 0;
    a->pending -= a->in_flight;
    a->in_flight = 0;
    a->waiting = true;
    loop_timer_arm(a->timer, a->ctx->cfg->alert_interval); /* coalescing window */
}

/* One POST carrying every pending dead letter (count + the latest). */
static void send_alert(struct alerter *a)
{
    struct hookd_ctx *ctx = a->ctx;
    if (!a->pending || a->sending || a->waiting || !ctx->cfg->alert_webhook.text)
        return;
    char text[768];
    json_t *latest = a->latest;
    snprintf(text, sizeof text, "hookd: %ld event%s dead-lettered (latest: %s %s, %s: %s). Run `hookd dlq list`.",
             a->pending, a->pending == 1 ? "" : "s", json_string_value(json_object_get(latest, "source")),
             json_string_value(json_object_get(latest, "event_type")),
             json_string_value(json_object_get(latest, "id")), json_string_value(json_object_get(latest, "reason")));
    json_t *body = json_pack("{s:s, s:{s:s, s:I, s:O, s:s}}", "text", text, "hookd", "severity", "high", "count",
                             (json_int_t)a->pending, "latest", latest, "version", HOOKD_VERSION);
    char *payload = json_dumps(body, JSON_COMPACT);
    json_decref(body);
    const struct http_header hdrs[] = {{"Content-Type", "application/json"}};
    char err[256];
    if (http_client_post(a->http, "alert", ctx->cfg->alert_webhook.text, hdrs, 1, payload, strlen(payload), 10000, 1,
                         on_sent, a, err, sizeof err) == 0) {
        a->sending = true;
        a->in_flight = a->pending;
    } else {
        log_error("alert.webhook_refused", "error=\"%s\"", err);
    }
    free(payload);
}

static void on_timer(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct alerter *a = arg;
    a->waiting = false;
    send_alert(a);
}

static void client_config(const struct hookd_config *cfg, struct http_client_config *hc)
{
    *hc = (struct http_client_config){.allow_private_networks = cfg->allow_private_networks,
                                      .ca_file = cfg->ca_file,
                                      .max_response_bytes = 256,
                                      .max_inflight_total = 1,
                                      .user_agent = "hookd/" HOOKD_VERSION};
}

struct alerter *alerter_new(struct hookd_ctx *ctx, char *err, size_t errlen)
{
    struct alerter *a = xcalloc(1, sizeof *a);
    a->ctx = ctx;
    a->timer = evtimer_new(ctx->base, on_timer, a);
    a->dns = evdns_base_new(ctx->base, EVDNS_BASE_INITIALIZE_NAMESERVERS);
    if (!a->dns)
        a->dns = evdns_base_new(ctx->base, 0);
    struct http_client_config hc;
    client_config(ctx->cfg, &hc);
    a->http = a->dns ? http_client_new(ctx->base, a->dns, &hc, err, errlen) : NULL;
    if (!a->http) {
        if (!a->dns)
            err_set(err, errlen, "cannot start the DNS resolver");
        alerter_free(a);
        return NULL;
    }
    return a;
}

void alerter_reload(struct alerter *a)
{
    struct http_client_config hc;
    client_config(a->ctx->cfg, &hc);
    char err[256];
    if (http_client_reconfigure(a->http, &hc, err, sizeof err) != 0)
        log_error("alert.reload_failed", "error=\"%s\" note=\"alerts keep the previous ca_file\"", err);
}

void alerter_free(struct alerter *a)
{
    if (!a)
        return;
    if (a->pending)
        log_warn("alert.unsent", "count=%ld note=\"worker stopping; the DLQ rows remain\"", a->pending);
    http_client_free(a->http);
    event_base_loop(a->ctx->base, EVLOOP_NONBLOCK); /* lets evdns release cancelled lookups */
    if (a->dns)
        evdns_base_free(a->dns, 0);
    event_free(a->timer);
    json_decref(a->latest);
    free(a);
}

void alert_dead_letter(struct alerter *a, const char *source, const char *id, const char *partner,
                       const char *event_type, const char *entity, int attempts, const char *reason)
{
    log_error("dlq.dead_letter", "source=%s id=%s partner=%s event=%s entity=%s attempts=%d reason=\"%s\"", source, id,
              partner, event_type, entity, attempts, reason);
    json_t *msg = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:i, s:s, s:I, s:s}", "severity", "high", "source", source,
                            "id", id, "partner", partner, "event_type", event_type, "entity", entity, "attempts",
                            attempts, "reason", reason, "dead_at_ms", (json_int_t)clock_wall_ms(), "worker",
                            a->ctx->id);
    char *text = msg ? json_dumps(msg, JSON_COMPACT) : NULL;
    char channel[160];
    ctx_key(a->ctx, "alerts", channel, sizeof channel);
    if (!text || redis_conn_cmdf(a->ctx->redis, NULL, NULL, "PUBLISH %s %s", channel, text) != 0)
        stats_add(&a->ctx->stats, STAT_REDIS_ERRORS, 1);
    free(text);
    if (!a->ctx->cfg->alert_webhook.text) {
        json_decref(msg);
        return;
    }
    json_decref(a->latest);
    a->latest = msg;
    a->pending++;
    send_alert(a);
}
