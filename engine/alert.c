/* Dead-letter alerts; see alert.h. Publishing is fire-and-forget: the DLQ
 * row in Postgres is the record, the alert is the page. */
#include "alert.h"

#include <jansson.h>
#include <stdlib.h>

#include "log.h"
#include "worker.h"

void alert_dead_letter(struct worker *w, const char *source, const char *id, const char *partner,
                       const char *event_type, const char *entity, int attempts, const char *reason)
{
    log_error("dlq.dead_letter", "source=%s id=%s partner=%s event=%s entity=%s attempts=%d reason=\"%s\"", source, id,
              partner, event_type, entity, attempts, reason);
    json_t *msg = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:i, s:s, s:I, s:s}", "severity", "high", "source", source,
                            "id", id, "partner", partner, "event_type", event_type, "entity", entity, "attempts",
                            attempts, "reason", reason, "dead_at_ms", (json_int_t)worker_now_ms(), "worker", w->id);
    char *text = msg ? json_dumps(msg, JSON_COMPACT) : NULL;
    json_decref(msg);
    char channel[160];
    worker_key(w, "alerts", channel, sizeof channel);
    if (!text || redis_conn_cmdf(w->redis, NULL, NULL, "PUBLISH %s %s", channel, text) != 0)
        stats_add(&w->stats, STAT_REDIS_ERRORS, 1);
    free(text);
}
