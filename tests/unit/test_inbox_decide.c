/*
 * test_inbox_decide.c — the inbox's decision table (engine/inbound/inbox_decide.h),
 * walked exhaustively: every state of the order machine (and a missing
 * entity, and a state the machine does not know) against every event type
 * (and one no machine names), under both conflict policies and both
 * entity-creation settings, within and beyond the defer max age. Each row
 * states the expected outcome, target state, dead-letter reason and attempt
 * count; a second table covers the failure verdicts (retry until the last
 * attempt, then dead-letter) with the partner override's schedule.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "config.h"
#include "inbox_decide.h"

#define CONFIG_HEAD                                                                                                   \
    "[hookd]\n"                                                                                                       \
    "database = postgresql://hookd@127.0.0.1/hookd\n"                                                                 \
    "redis = redis://127.0.0.1:6379/0\n"                                                                              \
    "[retry]\n"                                                                                                       \
    "schedule = 1m, 5m, 15m\n"                                                                                        \
    "max_attempts = 4\n"                                                                                              \
    "jitter = 0%\n"                                                                                                   \
    "[retry partner:fast]\n"                                                                                          \
    "schedule = 1s\n"                                                                                                 \
    "max_attempts = 2\n"                                                                                              \
    "[defer]\n"                                                                                                       \
    "schedule = 5s, 30s\n"                                                                                            \
    "max_age = 1h\n"

#define MACHINE(create, conflict)                                                                                     \
    "[machine order]\n"                                                                                               \
    "create = " create "\n"                                                                                           \
    "on_conflict = " conflict "\n"                                                                                    \
    "initial = draft\n"                                                                                               \
    "transition order.started = draft -> started\n"                                                                   \
    "transition order.paid = started -> paid\n"                                                                       \
    "transition order.shipped = paid -> shipped\n"                                                                    \
    "transition order.cancelled = draft, started, paid -> cancelled\n"

static struct hookd_config *load(const char *text)
{
    char dir[] = "/tmp/hookd-test-decide-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[64];
    snprintf(path, sizeof path, "%s/hookd.conf", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    assert_true(fputs(text, f) >= 0);
    assert_int_equal(fclose(f), 0);
    char err[512] = "";
    struct hookd_config *cfg = config_load(path, err, sizeof err);
    unlink(path);
    rmdir(dir);
    if (!cfg)
        fail_msg("config refused: %s", err);
    return cfg;
}

#define H (3600 * 1000LL)

/* One row of the decision table. state NULL = the entity does not exist. */
struct decide_case {
    const char *state, *event;
    bool create, ignore_conflicts;
    int deferrals;
    int64_t age_ms;
    enum inbox_outcome outcome;
    const char *to;          /* APPLIED: the new state */
    const char *dead_reason; /* DEAD */
    int64_t wait_ms;         /* DEFERRED */
};

static const struct decide_case decide_cases[] = {
    /* from draft */
    {"draft", "order.started", false, false, 0, 0, OUT_APPLIED, "started", NULL, 0},
    {"draft", "order.paid", false, false, 0, 0, OUT_DEFERRED, NULL, NULL, 5000},
    {"draft", "order.shipped", false, false, 1, 0, OUT_DEFERRED, NULL, NULL, 30000},
    {"draft", "order.cancelled", false, false, 0, 0, OUT_APPLIED, "cancelled", NULL, 0},
    /* from started */
    {"started", "order.started", false, false, 0, 0, OUT_NOOP, NULL, NULL, 0},
    {"started", "order.paid", false, false, 0, 0, OUT_APPLIED, "paid", NULL, 0},
    {"started", "order.shipped", false, false, 0, 0, OUT_DEFERRED, NULL, NULL, 5000},
    {"started", "order.cancelled", false, false, 0, 0, OUT_APPLIED, "cancelled", NULL, 0},
    /* from paid */
    {"paid", "order.started", false, false, 0, 0, OUT_NOOP, NULL, NULL, 0},
    {"paid", "order.paid", false, false, 0, 0, OUT_NOOP, NULL, NULL, 0},
    {"paid", "order.shipped", false, false, 0, 0, OUT_APPLIED, "shipped", NULL, 0},
    {"paid", "order.cancelled", false, false, 0, 0, OUT_APPLIED, "cancelled", NULL, 0},
    /* from shipped: past everything but cancelled, which can never apply */
    {"shipped", "order.started", false, false, 0, 0, OUT_NOOP, NULL, NULL, 0},
    {"shipped", "order.paid", false, false, 0, 0, OUT_NOOP, NULL, NULL, 0},
    {"shipped", "order.shipped", false, false, 0, 0, OUT_NOOP, NULL, NULL, 0},
    {"shipped", "order.cancelled", false, false, 0, 0, OUT_DEAD, NULL, "conflict", 0},
    {"shipped", "order.cancelled", false, true, 0, 0, OUT_IGNORED, NULL, NULL, 0},
    /* from cancelled */
    {"cancelled", "order.started", false, false, 0, 0, OUT_DEAD, NULL, "conflict", 0},
    {"cancelled", "order.paid", false, false, 0, 0, OUT_DEAD, NULL, "conflict", 0},
    {"cancelled", "order.shipped", false, true, 0, 0, OUT_IGNORED, NULL, NULL, 0},
    {"cancelled", "order.cancelled", false, false, 0, 0, OUT_NOOP, NULL, NULL, 0},
    /* a missing entity: created in the initial state, or waited for */
    {NULL, "order.started", true, false, 0, 0, OUT_APPLIED, "started", NULL, 0},
    {NULL, "order.cancelled", true, false, 0, 0, OUT_APPLIED, "cancelled", NULL, 0},
    {NULL, "order.paid", true, false, 0, 0, OUT_DEFERRED, NULL, NULL, 5000},
    {NULL, "order.started", false, false, 0, 0, OUT_DEFERRED, NULL, NULL, 5000},
    {NULL, "order.started", false, false, 3, 0, OUT_DEFERRED, NULL, NULL, 30000},
    /* deferral bounded by max_age: the wait would end past it */
    {"draft", "order.paid", false, false, 4, H - 10000, OUT_DEAD, NULL, "precondition never met", 0},
    {NULL, "order.started", false, false, 9, 2 * H, OUT_DEAD, NULL, "precondition never met", 0},
    {"draft", "order.paid", false, false, 4, H - 60000, OUT_DEFERRED, NULL, NULL, 30000},
    /* what the machine cannot judge: a failure, retried */
    {"lost", "order.paid", false, false, 0, 0, OUT_RETRY, NULL, NULL, 0},
};

static void run_decide_case(const struct hookd_config *cfg, const struct decide_case *c, size_t i)
{
    struct inbox_item it;
    memset(&it, 0, sizeof it);
    snprintf(it.id, sizeof it.id, "00000000-0000-0000-0000-%012zu", i);
    snprintf(it.partner, sizeof it.partner, "shop");
    snprintf(it.event_type, sizeof it.event_type, "%s", c->event);
    it.entity_id = strdup("o1");
    char err[256] = "";
    const struct machine_config *m = inbox_machine_for(cfg, &it, err, sizeof err);
    if (!m)
        fail_msg("row %zu: no machine: %s", i, err);
    assert_string_equal(it.entity_type, "order");
    struct inbox_row row = {.attempts = 1, .deferrals = c->deferrals, .age_ms = c->age_ms};
    snprintf(row.status, sizeof row.status, "PENDING");
    struct inbox_decision d;
    inbox_decide(cfg, m, &it, &row, c->state, &d, err, sizeof err);
    if (d.outcome != c->outcome)
        fail_msg("row %zu (%s, %s): outcome %s, expected %s (%s)", i, c->state ? c->state : "(none)", c->event,
                 inbox_outcome_names[d.outcome], inbox_outcome_names[c->outcome], it.error ? it.error : err);
    switch (c->outcome) {
    case OUT_APPLIED:
        assert_non_null(d.to);
        assert_string_equal(d.to, c->to);
        assert_non_null(strstr(it.error, c->to)); /* "from -> to" */
        break;
    case OUT_DEFERRED:
        assert_int_equal(d.wait_ms, c->wait_ms);
        assert_non_null(strstr(it.error, "waiting"));
        break;
    case OUT_DEAD:
        assert_non_null(it.dead_reason);
        assert_string_equal(it.dead_reason, c->dead_reason);
        assert_int_equal(it.attempts, row.attempts + 1); /* this evaluation was the last attempt */
        break;
    case OUT_RETRY:
        assert_non_null(strstr(err, "does not know")); /* the reason goes to the failure path */
        break;
    case OUT_NOOP: assert_non_null(strstr(it.error, "already in")); break;
    case OUT_IGNORED: assert_non_null(strstr(it.error, "conflict")); break;
    default: fail_msg("row %zu: outcome %d is not in the table", i, c->outcome);
    }
    free(it.entity_id);
    free(it.error);
}

static void test_decision_table(void **state)
{
    (void)state;
    /* One config per (create, on_conflict) pair. */
    struct hookd_config *cfgs[2][2] = {
        {load(CONFIG_HEAD MACHINE("false", "dlq")), load(CONFIG_HEAD MACHINE("false", "ignore"))},
        {load(CONFIG_HEAD MACHINE("true", "dlq")), load(CONFIG_HEAD MACHINE("true", "ignore"))},
    };
    size_t n = sizeof decide_cases / sizeof decide_cases[0];
    for (size_t i = 0; i < n; i++) {
        const struct decide_case *c = &decide_cases[i];
        run_decide_case(cfgs[c->create][c->ignore_conflicts], c, i);
    }
    for (int a = 0; a < 2; a++)
        for (int b = 0; b < 2; b++)
            config_unref(cfgs[a][b]);
}

/* Every (state, event) pair of the machine appears in the table, so a new
 * transition or state cannot slip past it. */
static void test_table_covers_every_pair(void **state)
{
    (void)state;
    static const char *const states[] = {"draft", "started", "paid", "shipped", "cancelled"};
    static const char *const events[] = {"order.started", "order.paid", "order.shipped", "order.cancelled"};
    size_t n = sizeof decide_cases / sizeof decide_cases[0];
    for (size_t s = 0; s < sizeof states / sizeof states[0]; s++) {
        for (size_t e = 0; e < sizeof events / sizeof events[0]; e++) {
            bool found = false;
            for (size_t i = 0; i < n && !found; i++)
                found = decide_cases[i].state && strcmp(decide_cases[i].state, states[s]) == 0 &&
                        strcmp(decide_cases[i].event, events[e]) == 0;
            if (!found)
                fail_msg("(%s, %s) is missing from the decision table", states[s], events[e]);
        }
    }
}

static void test_event_no_machine_names_fails(void **state)
{
    (void)state;
    struct hookd_config *cfg = load(CONFIG_HEAD MACHINE("true", "dlq"));
    struct inbox_item it;
    memset(&it, 0, sizeof it);
    snprintf(it.event_type, sizeof it.event_type, "invoice.paid");
    it.entity_id = strdup("o1");
    char err[256] = "";
    assert_null(inbox_machine_for(cfg, &it, err, sizeof err));
    assert_non_null(strstr(err, "no machine handles event type 'invoice.paid'"));
    free(it.entity_id);

    memset(&it, 0, sizeof it);
    snprintf(it.event_type, sizeof it.event_type, "order.paid");
    assert_null(inbox_machine_for(cfg, &it, err, sizeof err)); /* no entity id */
    assert_non_null(strstr(err, "no entity id"));
    config_unref(cfg);
}

/* The failure verdicts: attempts 1..max-1 retry on the schedule, the last
 * dead-letters; the partner override applies to its partner only. */
struct fail_case {
    const char *partner;
    int attempts;
    enum inbox_outcome outcome;
    int64_t wait_ms;
};

static const struct fail_case fail_cases[] = {
    {"shop", 1, OUT_RETRY, 60000}, {"shop", 2, OUT_RETRY, 300000}, {"shop", 3, OUT_RETRY, 900000},
    {"shop", 4, OUT_DEAD, -1},     {"shop", 7, OUT_DEAD, -1},      {"fast", 1, OUT_RETRY, 1000},
    {"fast", 2, OUT_DEAD, -1},
};

static void test_failure_verdicts(void **state)
{
    (void)state;
    struct hookd_config *cfg = load(CONFIG_HEAD MACHINE("true", "dlq"));
    for (size_t i = 0; i < sizeof fail_cases / sizeof fail_cases[0]; i++) {
        const struct fail_case *c = &fail_cases[i];
        struct inbox_item it;
        memset(&it, 0, sizeof it);
        snprintf(it.partner, sizeof it.partner, "%s", c->partner);
        snprintf(it.event_type, sizeof it.event_type, "order.paid");
        int64_t wait = 0;
        inbox_fail_verdict(cfg, &it, c->attempts, "boom", 12345, &wait);
        if (it.outcome != c->outcome)
            fail_msg("fail row %zu: %s, expected %s", i, inbox_outcome_names[it.outcome],
                     inbox_outcome_names[c->outcome]);
        assert_int_equal(it.attempts, c->attempts);
        assert_string_equal(it.error, "boom");
        if (c->outcome == OUT_RETRY)
            assert_int_equal(wait, c->wait_ms);
        else
            assert_string_equal(it.dead_reason, "retries exhausted");
        free(it.error);
    }
    config_unref(cfg);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_decision_table),
        cmocka_unit_test(test_table_covers_every_pair),
        cmocka_unit_test(test_event_no_machine_names_fails),
        cmocka_unit_test(test_failure_verdicts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
