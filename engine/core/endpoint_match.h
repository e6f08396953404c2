/* Which endpoints an outbox event goes to, for the relay's fan-out: the
 * event's tenant (an event without one goes to the endpoints without one;
 * an event of tenant T only to T's endpoints), the endpoint's event-type
 * filters (globs, config_glob_match) and its payload filter
 * (payload_filter.h), and Svix's channels (an endpoint with channels takes
 * only the messages that carry one of them; a message without channels goes
 * only to endpoints without any). Built once per pass from the
 * relay_endpoints rows, one per endpoint, which come sorted by tenant (byte
 * order), so a tenant's rows are one range found by binary search: an event
 * costs its own tenant's endpoints, not every endpoint of every tenant.
 * Each endpoint's event types and payload filter are parsed once per pass,
 * however many filters it has, so what a pass holds grows with the
 * endpoints' stored size, never with a product of their lists. An event's
 * payload is parsed only when one of its candidate endpoints has a payload
 * filter, and once per event. Runs on the relay's lane thread; one matcher
 * per pass. */
#ifndef HOOKD_ENDPOINT_MATCH_H
#define HOOKD_ENDPOINT_MATCH_H

#include <libpq-fe.h>
#include <stdbool.h>
#include <stddef.h>

#include "db.h"

struct endpoint_match;

/* The distinct non-NULL values of column col of the claimed events (their
 * tenants) as a binary text[] parameter for relay_endpoints (out->buf:
 * caller frees). */
void endpoint_match_tenants(const PGresult *evs, int col, struct db_array *out);

/* eps: the relay_endpoints result, one row per endpoint (borrowed; must
 * outlive the matcher). */
struct endpoint_match *endpoint_match_new(const PGresult *eps);
void endpoint_match_free(struct endpoint_match *m); /* accepts NULL */

/* The rows [*lo, *hi) of the endpoints of tenant (NULL or "": the global
 * endpoints). */
void endpoint_match_range(const struct endpoint_match *m, const char *tenant, int *lo, int *hi);

/* Whether event number ev (any id that changes per event: the parsed
 * payload is kept for the next call with the same ev) of type type,
 * payload text payload and channels (comma-separated; NULL: none) goes to
 * the endpoint of row f: one of its event-type filters matches type (an
 * endpoint without any takes nothing), its channels and its payload
 * filter. */
bool endpoint_match_row(struct endpoint_match *m, int f, int ev, const char *type, const char *payload,
                        const char *channels);

/* The event-type filters of row f as parsed (0 when they are missing or
 * not a JSON array of strings: the endpoint then takes nothing). */
size_t endpoint_match_types(const struct endpoint_match *m, int f);

#endif
