/* Which endpoints an outbox event goes to, for the relay's fan-out: the
 * event's tenant (an event without one goes to the endpoints without one;
 * an event of tenant T only to T's endpoints), the endpoint's event-type
 * filters (globs, config_glob_match) and its payload filter
 * (payload_filter.h), and Svix's channels (an endpoint with channels takes
 * only the messages that carry one of them; a message without channels goes
 * only to endpoints without any). Built once per pass from the relay_endpoints rows,
 * which come sorted by tenant (byte order), so a tenant's rows are one
 * range found by binary search: an event costs its own tenant's endpoints,
 * not every endpoint of every tenant. Payload filters are parsed once per
 * pass; an event's payload is parsed only when one of its candidate
 * endpoints has a filter, and once per event. Runs on the relay's lane
 * thread; one matcher per pass. */
#ifndef HOOKD_ENDPOINT_MATCH_H
#define HOOKD_ENDPOINT_MATCH_H

#include <libpq-fe.h>
#include <stdbool.h>

#include "db.h"

struct endpoint_match;

/* The distinct non-NULL values of column col of the claimed events (their
 * tenants) as a binary text[] parameter for relay_endpoints (out->buf:
 * caller frees). */
void endpoint_match_tenants(const PGresult *evs, int col, struct db_array *out);

/* eps: the relay_endpoints result (borrowed; must outlive the matcher). */
struct endpoint_match *endpoint_match_new(const PGresult *eps);
void endpoint_match_free(struct endpoint_match *m); /* accepts NULL */

/* The rows [*lo, *hi) of the endpoints of tenant (NULL or "": the global
 * endpoints). */
void endpoint_match_range(const struct endpoint_match *m, const char *tenant, int *lo, int *hi);

/* Whether event number ev (any id that changes per event: the parsed
 * payload is kept for the next call with the same ev) of type type,
 * payload text payload and channels (comma-separated; NULL: none) matches
 * row f (an event-type filter of one endpoint), that endpoint's channels
 * and its payload filter. */
bool endpoint_match_row(struct endpoint_match *m, int f, int ev, const char *type, const char *payload,
                        const char *channels);

#endif
