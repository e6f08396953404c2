/* The inbox's decision about one event; see inbox_decide.h. Pure: no I/O,
 * no clock, no hidden randomness. */
#include "inbox_decide.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backoff.h"
#include "errbuf.h"
#include "machine.h"

const char *const inbox_outcome_names[] = {"none",  "applied", "noop", "ignored",  "routed", "deferred",
                                           "retry", "dead",    "busy", "terminal", "gone"};

void inbox_set_error(struct inbox_item *it, const char *fmt, ...)
{
    free(it->error);
    va_list ap;
    va_start(ap, fmt);
    if (vasprintf(&it->error, fmt, ap) < 0)
        it->error = NULL;
    va_end(ap);
}

bool inbox_valid_uuid(const char *s)
{
    static const char shape[] = "hhhhhhhh-hhhh-hhhh-hhhh-hhhhhhhhhhhh"; /* h: a hex digit */
    for (size_t i = 0; i < sizeof shape - 1; i++) {
        if (shape[i] == '-' ? s[i] != '-' : !strchr("0123456789abcdefABCDEF", s[i]) || !s[i])
            return false;
    }
    return s[sizeof shape - 1] == '\0';
}

const struct machine_config *inbox_machine_for(const struct hookd_config *cfg, struct inbox_item *it, char *err,
                                               size_t errlen)
{
    const struct machine_config *m = config_machine_for(cfg, it->entity_type, it->event_type);
    if (!m)
        return err_set(err, errlen, "no machine handles event type '%s'", it->event_type), NULL;
    if (!machine_has_event(m->machine, it->event_type))
        return err_set(err, errlen, "machine '%s' has no transition for event type '%s'", m->name, it->event_type),
               NULL;
    snprintf(it->entity_type, sizeof it->entity_type, "%s", m->name);
    if (!it->entity_id)
        return err_set(err, errlen, "event has no entity id (check the partner's entity_id source)"), NULL;
    return m;
}

void inbox_decide(const struct hookd_config *cfg, const struct machine_config *m, struct inbox_item *it,
                  const struct inbox_row *row, const char *state, struct inbox_decision *d, char *err, size_t errlen)
{
    d->to = NULL;
    d->wait_ms = 0;
    enum machine_verdict v = machine_classify(m->machine, it->event_type, state, &d->to);
    if (!state && !m->create)
        v = MACHINE_DEFER; /* the application has not created the entity yet */
    const char *what = state ? "state '" : "a missing entity";
    const char *quote = state ? "'" : "";
    switch (v) {
    case MACHINE_APPLY:
        d->outcome = OUT_APPLIED;
        inbox_set_error(it, "%s -> %s", state ? state : "(new)", d->to);
        return;
    case MACHINE_NOOP:
        d->outcome = OUT_NOOP;
        inbox_set_error(it, "entity already in '%s' (at or past the event's target)", state);
        return;
    case MACHINE_DEFER:
        d->wait_ms = backoff_defer_delay(&cfg->defer, row->deferrals + 1, row->age_ms);
        if (d->wait_ms < 0) {
            inbox_set_error(it, "precondition never met: '%s' still cannot apply to %s%s%s after %lld s",
                            it->event_type, what, state ? state : "", quote, (long long)(row->age_ms / 1000));
            it->attempts = row->attempts + 1; /* this evaluation was the last attempt */
            it->dead_reason = "precondition never met";
            d->outcome = OUT_DEAD;
            return;
        }
        inbox_set_error(it, "waiting: '%s' does not apply to %s%s%s yet", it->event_type, what, state ? state : "",
                        quote);
        d->outcome = OUT_DEFERRED;
        return;
    case MACHINE_CONFLICT:
        inbox_set_error(it, "conflict: '%s' can never apply to an entity in state '%s'", it->event_type, state);
        if (m->on_conflict == CONFLICT_IGNORE) {
            d->outcome = OUT_IGNORED;
            return;
        }
        it->attempts = row->attempts + 1;
        it->dead_reason = "conflict";
        d->outcome = OUT_DEAD;
        return;
    case MACHINE_UNKNOWN_STATE:
        err_set(err, errlen, "entity is in state '%s', which machine '%s' does not know", state, m->name);
        break;
    case MACHINE_UNKNOWN_EVENT:
        err_set(err, errlen, "machine '%s' has no transition for event type '%s'", m->name, it->event_type);
        break;
    }
    d->outcome = OUT_RETRY;
}

void inbox_fail_verdict(const struct hookd_config *cfg, struct inbox_item *it, int attempts, const char *why,
                        uint64_t rnd, int64_t *wait_ms)
{
    it->attempts = attempts;
    inbox_set_error(it, "%s", why);
    const struct backoff_policy *policy = config_retry_for_inbox(cfg, it->partner, it->event_type);
    *wait_ms = backoff_retry_delay(policy, attempts, rnd);
    if (*wait_ms < 0) {
        it->outcome = OUT_DEAD;
        it->dead_reason = "retries exhausted";
    } else {
        it->outcome = OUT_RETRY;
    }
}
