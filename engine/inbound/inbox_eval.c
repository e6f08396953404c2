/* What the inbox role's two evaluation paths share; see inbox_eval.h. */
#include "inbox_eval.h"

#include <stdio.h>
#include <string.h>

#include "clock.h"
#include "db.h"
#include "query.h"
#include "rand.h"

/* Set when a statement failed on a lock conflict (lock timeout, deadlock,
 * serialization) or because Postgres is unavailable (the server went away
 * or is no longer a writable primary: db_unavailable): whichever statement
 * of an evaluation hit it, the event is "busy", never charged an attempt.
 * One per DB thread. */
static _Thread_local bool lock_conflict;

void inbox_eval_busy(struct inbox_item *it, int64_t base_ms)
{
    it->outcome = OUT_BUSY;
    it->next_due_ms = clock_wall_ms() + base_ms + (int64_t)(rand_u64() % 50);
}

PGresult *inbox_eval_checked(PGconn *conn, PGresult *r, bool *transient, char *err, size_t errlen)
{
    bool conflict = false;
    PGresult *ok = db_checked(conn, r, &conflict, err, errlen);
    lock_conflict |= conflict;
    if (transient)
        *transient = conflict;
    return ok;
}

bool inbox_eval_take_conflict(void)
{
    bool was = lock_conflict;
    lock_conflict = false;
    return was;
}

int inbox_eval_emit_followups(PGconn *conn, const struct machine_config *m, const struct inbox_item *it,
                              const char *from, const char *to, char *err, size_t errlen)
{
    for (size_t i = 0; i < m->nemits; i++) {
        if (strcmp(m->emits[i].event, it->event_type) != 0)
            continue;
        const char *p[] = {m->name,        it->entity_id, m->emits[i].emit_type, from ? from : "", to,
                           it->event_type, it->id};
        PGresult *r = inbox_eval_checked(conn, query_prepared_raw(conn, Q_INBOX_EMIT_FOLLOWUP, p, NULL, NULL), NULL,
                                         err, errlen);
        if (!r)
            return -1;
        PQclear(r);
    }
    return 0;
}
