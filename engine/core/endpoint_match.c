/* The relay's fan-out matching; see endpoint_match.h. */
#include "endpoint_match.h"

#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "config.h"
#include "jsonpath.h"
#include "log.h"
#include "payload_filter.h"
#include "queries.h"
#include "xmalloc.h"

struct endpoint_match {
    const PGresult *eps;
    int n;
    json_t **types;   /* per row: the endpoint's event-type filters (an array of strings), or NULL: none */
    json_t **filters; /* per row: the endpoint's payload filter, or NULL */
    int ev;           /* the event whose payload is parsed, -1 none */
    json_t *payload;
};

static const char *tenant_of(const PGresult *eps, int row)
{
    return PQgetisnull(eps, row, RELAY_ENDPOINTS_TENANT_ID) ? "" : PQgetvalue(eps, row, RELAY_ENDPOINTS_TENANT_ID);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

void endpoint_match_tenants(const PGresult *evs, int col, struct db_array *out)
{
    int n = PQntuples(evs);
    const char **v = xcalloc((size_t)n + 1, sizeof *v);
    size_t k = 0;
    for (int i = 0; i < n; i++)
        if (!PQgetisnull(evs, i, col))
            v[k++] = PQgetvalue(evs, i, col);
    qsort(v, k, sizeof *v, cmp_str);
    size_t d = 0;
    for (size_t i = 0; i < k; i++)
        if (d == 0 || strcmp(v[d - 1], v[i]) != 0)
            v[d++] = v[i];
    db_array_init(out, DB_OID_TEXT, d);
    for (size_t i = 0; i < d; i++)
        db_array_text(out, v[i]);
    free(v);
}

/* Row f's event types: a JSON array of strings, or NULL (takes nothing). */
static json_t *load_types(const PGresult *eps, int f)
{
    if (PQgetisnull(eps, f, RELAY_ENDPOINTS_EVENT_TYPES))
        return NULL;
    json_t *types = json_loads(PQgetvalue(eps, f, RELAY_ENDPOINTS_EVENT_TYPES), 0, NULL);
    size_t i;
    json_t *x;
    bool ok = json_is_array(types);
    json_array_foreach(types, i, x)
    {
        ok = ok && json_is_string(x);
    }
    if (!ok) {
        log_warn("relay.bad_event_types", "endpoint=%s", PQgetvalue(eps, f, RELAY_ENDPOINTS_NAME));
        json_decref(types);
        return NULL;
    }
    return types;
}

/* Row f's payload filter, or NULL (none). */
static json_t *load_filter(const PGresult *eps, int f)
{
    if (PQgetisnull(eps, f, RELAY_ENDPOINTS_PAYLOAD_FILTER))
        return NULL;
    char err[256];
    json_t *flt = json_loads(PQgetvalue(eps, f, RELAY_ENDPOINTS_PAYLOAD_FILTER), 0, NULL);
    if (!flt || payload_filter_check(flt, err, sizeof err) != 0) {
        /* the API and the CLI check filters; a bad one written by hand
         * matches nothing rather than everything */
        log_warn("relay.bad_payload_filter", "endpoint=%s", PQgetvalue(eps, f, RELAY_ENDPOINTS_NAME));
        json_decref(flt);
        flt = json_pack("{s:[]}", "$or"); /* never matches */
    }
    return flt;
}

struct endpoint_match *endpoint_match_new(const PGresult *eps)
{
    struct endpoint_match *m = xcalloc(1, sizeof *m);
    m->eps = eps;
    m->n = PQntuples(eps);
    m->types = xcalloc((size_t)m->n + 1, sizeof *m->types);
    m->filters = xcalloc((size_t)m->n + 1, sizeof *m->filters);
    m->ev = -1;
    for (int f = 0; f < m->n; f++) {
        m->types[f] = load_types(eps, f);
        m->filters[f] = load_filter(eps, f);
    }
    return m;
}

void endpoint_match_free(struct endpoint_match *m)
{
    if (!m)
        return;
    for (int f = 0; f < m->n; f++) {
        json_decref(m->types[f]);
        json_decref(m->filters[f]);
    }
    free(m->types);
    free(m->filters);
    json_decref(m->payload);
    free(m);
}

size_t endpoint_match_types(const struct endpoint_match *m, int f)
{
    return json_array_size(m->types[f]);
}

/* The first row whose tenant is >= tenant (byte order, as the rows are). */
static int lower_bound(const struct endpoint_match *m, const char *tenant)
{
    int lo = 0, hi = m->n;
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (strcmp(tenant_of(m->eps, mid), tenant) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

void endpoint_match_range(const struct endpoint_match *m, const char *tenant, int *lo, int *hi)
{
    const char *t = tenant ? tenant : "";
    *lo = lower_bound(m, t);
    int end = *lo;
    while (end < m->n && strcmp(tenant_of(m->eps, end), t) == 0)
        end++;
    *hi = end;
}

/* Whether the comma-separated lists a and b share an item. */
static bool share_one(const char *a, const char *b)
{
    for (const char *x = a; *x;) {
        size_t xn = strcspn(x, ",");
        for (const char *y = b; *y;) {
            size_t yn = strcspn(y, ",");
            if (xn == yn && memcmp(x, y, xn) == 0)
                return true;
            y += yn + (y[yn] == ',');
        }
        x += xn + (x[xn] == ',');
    }
    return false;
}

/* Whether one of the globs types holds matches type. */
static bool type_matches(const json_t *types, const char *type)
{
    size_t i;
    json_t *x;
    json_array_foreach(types, i, x)
    {
        if (config_glob_match(json_string_value(x), type))
            return true;
    }
    return false;
}

bool endpoint_match_row(struct endpoint_match *m, int f, int ev, const char *type, const char *payload,
                        const char *channels)
{
    if (!type_matches(m->types[f], type))
        return false;
    /* Svix's channels: an endpoint without any takes every message; one
     * with some only messages carrying one of them (none without) */
    if (!PQgetisnull(m->eps, f, RELAY_ENDPOINTS_CHANNELS) &&
        !share_one(PQgetvalue(m->eps, f, RELAY_ENDPOINTS_CHANNELS), channels ? channels : ""))
        return false;
    if (!m->filters[f])
        return true;
    if (m->ev != ev) {
        json_decref(m->payload);
        json_error_t jerr;
        m->payload = jsonpath_load_body(payload, strlen(payload), &jerr);
        m->ev = ev;
    }
    return payload_filter_match(m->filters[f], m->payload);
}
