/* The endpoints' circuits as the portal shows them, read from Redis on the
 * loop before a page's job runs (the pages are built on DB threads, which
 * have no Redis). Read-only: the keys are circuit.c's (circuit.h), whose
 * format this module only reads: `<prefix>:{delivery}:circuit:open`
 * (endpoint -> open until, ms), `:circuit:failures` (endpoint ->
 * consecutive failures) and `:circuit:probe` (endpoint -> the delivery
 * chosen as its probe). Internal to the portal role. */
#ifndef HOOKD_PORTAL_CIRCUIT_H
#define HOOKD_PORTAL_CIRCUIT_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

struct hookd_ctx;
struct hookd_config;

/* states: {endpoint: {"open_until": ms, "failures": n, "probe": true}}
 * (fields present only when Redis holds them; an endpoint with none is
 * absent), owned by the callee; NULL when Redis could not be asked or did
 * not answer. May be called before portal_circuit_read returns. */
typedef void portal_circuit_fn(void *arg, json_t *states);

/* endpoint: one endpoint's name (all three fields), or NULL for every open
 * circuit (open_until and probe only: the page that lists endpoints). */
void portal_circuit_read(struct hookd_ctx *ctx, const char *endpoint, portal_circuit_fn *fn, void *arg);

/* What a page shows of one endpoint's circuit. */
enum portal_circuit_state {
    PORTAL_CIRCUIT_UNKNOWN, /* Redis did not answer */
    PORTAL_CIRCUIT_OFF,     /* `circuit = off` for this endpoint */
    PORTAL_CIRCUIT_CLOSED,
    PORTAL_CIRCUIT_OPEN,
    PORTAL_CIRCUIT_HALF_OPEN, /* its probe is chosen, or due now */
};

struct portal_circuit_view {
    enum portal_circuit_state state;
    int64_t next_probe_ms; /* open, half-open: when the next probe is due (open until) */
    long long failures;    /* consecutive failures counted (one-endpoint reads only) */
    int threshold;         /* circuit_failures: what opens it */
};

/* The view of endpoint name from states (a portal_circuit_fn's, borrowed;
 * NULL: unknown), the config's policy for it and now_ms. */
struct portal_circuit_view portal_circuit_view(const json_t *states, const struct hookd_config *cfg, const char *name,
                                               int64_t now_ms);
/* "closed", "open", "half-open", "off" or "unknown". */
const char *portal_circuit_state_name(enum portal_circuit_state s);

#endif
