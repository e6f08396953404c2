/*
 * test_endpoint_match.c — unit tests for engine/core/endpoint_match.c, on
 * relay_endpoints results built with libpq's own result constructors: one
 * row per endpoint, its event types read from a JSON array (repeats,
 * thousands of them, a list that is not one), its payload filter parsed once
 * whatever the number of types (the heap the matcher holds stays within a
 * bound), tenants found by range, channels.
 */
#include <malloc.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <libpq-fe.h>

#include "endpoint_match.h"
#include "queries.h"

struct ep {
    const char *tenant, *types, *filter, *channels; /* NULL: SQL NULL */
};

/* A relay_endpoints result with one row per ep, in the given order (the
 * statement sorts by tenant, global ones first). */
static PGresult *endpoints(const struct ep *eps, int n)
{
    PGresult *res = PQmakeEmptyPGresult(NULL, PGRES_TUPLES_OK);
    PGresAttDesc attrs[RELAY_ENDPOINTS__NCOLS];
    memset(attrs, 0, sizeof attrs);
    for (int c = 0; c < RELAY_ENDPOINTS__NCOLS; c++) {
        attrs[c].name = (char *)query_defs[Q_RELAY_ENDPOINTS].columns[c];
        attrs[c].typid = 25; /* text */
        attrs[c].typlen = -1;
        attrs[c].atttypmod = -1;
    }
    assert_int_equal(PQsetResultAttrs(res, RELAY_ENDPOINTS__NCOLS, attrs), 1);
    for (int i = 0; i < n; i++) {
        char id[40], name[16];
        snprintf(id, sizeof id, "00000000-0000-4000-8000-%012d", i);
        snprintf(name, sizeof name, "ep%d", i);
        const char *v[RELAY_ENDPOINTS__NCOLS] = {NULL};
        v[RELAY_ENDPOINTS_ID] = id;
        v[RELAY_ENDPOINTS_NAME] = name;
        v[RELAY_ENDPOINTS_URL] = "http://127.0.0.1:9/";
        v[RELAY_ENDPOINTS_SECRET] = "whsec_x";
        v[RELAY_ENDPOINTS_TIMEOUT_MS] = "1000";
        v[RELAY_ENDPOINTS_MAX_INFLIGHT] = "4";
        v[RELAY_ENDPOINTS_EVENT_TYPES] = eps[i].types;
        v[RELAY_ENDPOINTS_TENANT_ID] = eps[i].tenant;
        v[RELAY_ENDPOINTS_PAYLOAD_FILTER] = eps[i].filter;
        v[RELAY_ENDPOINTS_RATE_LIMIT] = "0";
        v[RELAY_ENDPOINTS_ORDERED] = "f";
        v[RELAY_ENDPOINTS_CHANNELS] = eps[i].channels;
        for (int c = 0; c < RELAY_ENDPOINTS__NCOLS; c++)
            assert_int_equal(PQsetvalue(res, i, c, (char *)v[c], v[c] ? (int)strlen(v[c]) : -1), 1);
    }
    return res;
}

/* "[\"*\",\"*\",…]" with n items (caller frees). */
static char *repeated_star(int n)
{
    char *s = malloc((size_t)n * 4 + 3), *o = s;
    *o++ = '[';
    for (int i = 0; i < n; i++)
        o += sprintf(o, "%s\"*\"", i ? "," : "");
    strcpy(o, "]");
    return s;
}

/* {"$or": [{"f0": "xx…"}, …, {"n": {"$exists": true}}]} of about nbytes (caller frees). */
static char *large_filter(size_t nbytes)
{
    char *s = malloc(nbytes + 256), *o = s;
    o += sprintf(o, "{\"$or\":[");
    for (int i = 0; (size_t)(o - s) < nbytes; i++)
        o += sprintf(o, "{\"f%d\":\"%0100d\"},", i, 0);
    strcpy(o, "{\"n\":{\"$exists\":true}}]}");
    return s;
}

static void test_event_types_of_one_row(void **state)
{
    (void)state;
    const struct ep eps[] = {
        {NULL, "[\"order.*\",\"order.*\",\"user.created\"]", NULL, NULL},
        {NULL, "\"*\"", NULL, NULL},     /* not an array: takes nothing */
        {NULL, "[\"*\",1]", NULL, NULL}, /* not strings: takes nothing */
        {NULL, NULL, NULL, NULL},
        {NULL, "[]", NULL, NULL},
    };
    PGresult *res = endpoints(eps, 5);
    struct endpoint_match *m = endpoint_match_new(res);
    assert_int_equal(endpoint_match_types(m, 0), 3);
    assert_true(endpoint_match_row(m, 0, 0, "order.paid", "{}", NULL));
    assert_true(endpoint_match_row(m, 0, 0, "user.created", "{}", NULL));
    assert_false(endpoint_match_row(m, 0, 0, "user.deleted", "{}", NULL));
    for (int f = 1; f < 5; f++) {
        assert_int_equal(endpoint_match_types(m, f), 0);
        assert_false(endpoint_match_row(m, f, 0, "order.paid", "{}", NULL));
    }
    endpoint_match_free(m);
    PQclear(res);
}

static void test_a_hostile_row_is_parsed_once(void **state)
{
    (void)state;
    char *types = repeated_star(10000), *filter = large_filter(65536);
    const struct ep eps[] = {{"acme", types, filter, NULL}};
    PGresult *res = endpoints(eps, 1);
    struct mallinfo2 before = mallinfo2();
    struct endpoint_match *m = endpoint_match_new(res);
    struct mallinfo2 after = mallinfo2();
    /* one parse of the types and one of the filter: under a MiB here,
     * where a parse per type held gigabytes */
    assert_true(after.uordblks - before.uordblks < 4u << 20);
    assert_int_equal(endpoint_match_types(m, 0), 10000);
    int lo, hi;
    endpoint_match_range(m, "acme", &lo, &hi);
    assert_int_equal(lo, 0);
    assert_int_equal(hi, 1);
    assert_true(endpoint_match_row(m, 0, 0, "any.type", "{\"n\": 1}", NULL));
    assert_false(endpoint_match_row(m, 0, 1, "any.type", "{\"m\": 1}", NULL));
    endpoint_match_free(m);
    PQclear(res);
    free(types);
    free(filter);
}

static void test_tenants_and_channels(void **state)
{
    (void)state;
    const struct ep eps[] = {
        {NULL, "[\"*\"]", NULL, NULL},
        {"acme", "[\"*\"]", NULL, "eu,us"},
        {"acme", "[\"a.*\"]", "{\"n\": {\"$gt\": 1}}", NULL},
        {"beta", "[\"*\"]", NULL, NULL},
    };
    PGresult *res = endpoints(eps, 4);
    struct endpoint_match *m = endpoint_match_new(res);
    int lo, hi;
    endpoint_match_range(m, NULL, &lo, &hi);
    assert_int_equal(lo, 0);
    assert_int_equal(hi, 1);
    endpoint_match_range(m, "acme", &lo, &hi);
    assert_int_equal(lo, 1);
    assert_int_equal(hi, 3);
    endpoint_match_range(m, "nobody", &lo, &hi);
    assert_int_equal(lo, hi);
    assert_true(endpoint_match_row(m, 1, 0, "x.y", "{}", "us"));
    assert_false(endpoint_match_row(m, 1, 0, "x.y", "{}", "asia"));
    assert_false(endpoint_match_row(m, 1, 0, "x.y", "{}", NULL));
    assert_true(endpoint_match_row(m, 2, 1, "a.b", "{\"n\": 2}", "asia"));
    assert_false(endpoint_match_row(m, 2, 2, "a.b", "{\"n\": 1}", NULL));
    assert_false(endpoint_match_row(m, 2, 3, "b.c", "{\"n\": 2}", NULL));
    endpoint_match_free(m);
    PQclear(res);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_event_types_of_one_row),
        cmocka_unit_test(test_a_hostile_row_is_parsed_once),
        cmocka_unit_test(test_tenants_and_channels),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
