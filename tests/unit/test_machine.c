/*
 * test_machine.c — unit tests for engine/machine.c: every (state, event)
 * pair of a six-state order machine against a hand-written table, the
 * missing-entity rule, machines with cycles and with a diamond (where
 * "reachable" and "dominates" differ), and every refusal of the builder.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "machine.h"

#define A MACHINE_APPLY
#define N MACHINE_NOOP
#define D MACHINE_DEFER
#define C MACHINE_CONFLICT

static char err[256];

static void add(struct machine *m, const char *event, const char *const *from, size_t nfrom, const char *to)
{
    err[0] = '\0';
    int rc = machine_add_transition(m, event, from, nfrom, to, err, sizeof(err));
    if (rc != 0)
        fail_msg("add_transition %s: %s", event, err);
}

static void add1(struct machine *m, const char *event, const char *from, const char *to)
{
    const char *f[] = {from};
    add(m, event, f, 1, to);
}

static void finalize_ok(struct machine *m)
{
    err[0] = '\0';
    int rc = machine_finalize(m, err, sizeof(err));
    if (rc != 0)
        fail_msg("finalize: %s", err);
}

/* draft -> started -> paid -> shipped -> delivered; draft|started|paid -> cancelled */
static struct machine *order_machine(void)
{
    struct machine *m = machine_new("order");
    const char *cancel_from[] = {"draft", "started", "paid"};

    assert_int_equal(machine_set_initial(m, "draft", err, sizeof(err)), 0);
    add1(m, "order.started", "draft", "started");
    add1(m, "order.paid", "started", "paid");
    add1(m, "order.shipped", "paid", "shipped");
    add1(m, "order.delivered", "shipped", "delivered");
    add(m, "order.cancelled", cancel_from, 3, "cancelled");
    finalize_ok(m);
    return m;
}

static void expect(const struct machine *m, const char *event, const char *state, enum machine_verdict want,
                   const char *want_to)
{
    const char *to = "sentinel";
    enum machine_verdict got = machine_classify(m, event, state, &to);

    if (got != want)
        fail_msg("event %s on state %s: got %s, want %s", event, state ? state : "(missing)",
                 machine_verdict_name(got), machine_verdict_name(want));
    if (want == MACHINE_APPLY)
        assert_string_equal(to, want_to);
    else
        assert_null(to);
}

static void test_order_full_table(void **state)
{
    static const char *const events[] = {"order.started", "order.paid", "order.shipped", "order.delivered",
                                         "order.cancelled"};
    static const char *const targets[] = {"started", "paid", "shipped", "delivered", "cancelled"};
    static const char *const states[] = {"draft", "started", "paid", "shipped", "delivered", "cancelled"};
    /* rows: current state; columns: started, paid, shipped, delivered, cancelled */
    static const enum machine_verdict table[6][5] = {
        /* draft     */ {A, D, D, D, A},
        /* started   */ {N, A, D, D, A},
        /* paid      */ {N, N, A, D, A},
        /* shipped   */ {N, N, N, A, C},
        /* delivered */ {N, N, N, N, C},
        /* cancelled */ {C, C, C, C, N},
    };
    struct machine *m = order_machine();
    (void)state;

    for (size_t s = 0; s < 6; s++)
        for (size_t e = 0; e < 5; e++)
            expect(m, events[e], states[s], table[s][e], targets[e]);

    /* The cases the design calls out by name. */
    expect(m, "order.paid", "cancelled", C, NULL);
    expect(m, "order.paid", "shipped", N, NULL);
    expect(m, "order.shipped", "draft", D, NULL);
    expect(m, "order.cancelled", "shipped", C, NULL);
    machine_free(m);
}

static void test_order_missing_entity(void **state)
{
    struct machine *m = order_machine();
    (void)state;

    expect(m, "order.started", NULL, A, "started");
    expect(m, "order.cancelled", NULL, A, "cancelled");
    /* Not allowed from the initial state: never NOOP/CONFLICT, always wait. */
    expect(m, "order.paid", NULL, D, NULL);
    expect(m, "order.shipped", NULL, D, NULL);
    expect(m, "order.delivered", NULL, D, NULL);
    assert_int_equal(machine_classify(m, "order.refunded", NULL, NULL), MACHINE_UNKNOWN_EVENT);
    machine_free(m);
}

static void test_unknown_event_and_state(void **state)
{
    struct machine *m = order_machine();
    const char *to = "sentinel";
    (void)state;

    assert_int_equal(machine_classify(m, "order.refunded", "paid", &to), MACHINE_UNKNOWN_EVENT);
    assert_null(to);
    to = "sentinel";
    assert_int_equal(machine_classify(m, "order.paid", "lost", &to), MACHINE_UNKNOWN_STATE);
    assert_null(to);
    /* Names are case-sensitive: they are compared with the database column. */
    assert_int_equal(machine_classify(m, "order.paid", "Started", NULL), MACHINE_UNKNOWN_STATE);
    assert_int_equal(machine_classify(m, "ORDER.PAID", "started", NULL), MACHINE_UNKNOWN_EVENT);
    /* An unknown event wins over an unknown state. */
    assert_int_equal(machine_classify(m, "nope", "lost", NULL), MACHINE_UNKNOWN_EVENT);
    assert_int_equal(machine_classify(m, NULL, "paid", NULL), MACHINE_UNKNOWN_EVENT);
    /* to == NULL is allowed for APPLY too. */
    assert_int_equal(machine_classify(m, "order.paid", "started", NULL), MACHINE_APPLY);
    machine_free(m);
}

static void test_accessors(void **state)
{
    struct machine *m = order_machine();
    struct machine_transition_info t;
    static const char *const names[] = {"draft", "started", "paid", "shipped", "delivered", "cancelled"};
    (void)state;

    assert_string_equal(machine_name(m), "order");
    assert_string_equal(machine_initial(m), "draft");
    assert_int_equal(machine_nstates(m), 6);
    for (size_t i = 0; i < 6; i++)
        assert_string_equal(machine_state_name(m, i), names[i]);
    assert_int_equal(machine_ntransitions(m), 5);

    machine_transition(m, 1, &t);
    assert_string_equal(t.event, "order.paid");
    assert_int_equal(t.nfrom, 1);
    assert_string_equal(t.from[0], "started");
    assert_string_equal(t.to, "paid");

    machine_transition(m, 4, &t);
    assert_string_equal(t.event, "order.cancelled");
    assert_int_equal(t.nfrom, 3);
    assert_string_equal(t.from[0], "draft");
    assert_string_equal(t.from[1], "started");
    assert_string_equal(t.from[2], "paid");
    assert_string_equal(t.to, "cancelled");

    assert_true(machine_has_event(m, "order.shipped"));
    assert_false(machine_has_event(m, "order.refunded"));
    assert_false(machine_has_event(m, NULL));
    assert_true(machine_has_state(m, "delivered"));
    assert_false(machine_has_state(m, "refunded"));
    assert_false(machine_has_state(m, NULL));
    machine_free(m);
}

static void test_verdict_names(void **state)
{
    (void)state;
    assert_string_equal(machine_verdict_name(MACHINE_APPLY), "apply");
    assert_string_equal(machine_verdict_name(MACHINE_NOOP), "noop");
    assert_string_equal(machine_verdict_name(MACHINE_DEFER), "defer");
    assert_string_equal(machine_verdict_name(MACHINE_CONFLICT), "conflict");
    assert_string_equal(machine_verdict_name(MACHINE_UNKNOWN_EVENT), "unknown_event");
    assert_string_equal(machine_verdict_name(MACHINE_UNKNOWN_STATE), "unknown_state");
    assert_string_equal(machine_verdict_name((enum machine_verdict)42), "invalid");
}

/* new -> active <-> suspended: the cycle must not confuse the dominator
 * iteration (active is dominated by new only; suspended by new and active). */
static void test_cycle(void **state)
{
    struct machine *m = machine_new("subscription");
    (void)state;

    assert_int_equal(machine_set_initial(m, "new", err, sizeof(err)), 0);
    add1(m, "sub.activated", "new", "active");
    add1(m, "sub.suspended", "active", "suspended");
    add1(m, "sub.resumed", "suspended", "active");
    finalize_ok(m);

    expect(m, "sub.activated", "new", A, "active");
    expect(m, "sub.activated", "active", N, NULL);
    expect(m, "sub.activated", "suspended", N, NULL); /* active dominates suspended */
    expect(m, "sub.suspended", "new", D, NULL);
    expect(m, "sub.suspended", "active", A, "suspended");
    expect(m, "sub.suspended", "suspended", N, NULL);
    expect(m, "sub.resumed", "new", D, NULL);
    expect(m, "sub.resumed", "active", N, NULL); /* already in the target */
    expect(m, "sub.resumed", "suspended", A, "active");
    expect(m, "sub.activated", NULL, A, "active");
    expect(m, "sub.resumed", NULL, D, NULL);
    machine_free(m);
}

/* A cycle through the initial state: active <-> suspended, both -> closed. */
static void test_cycle_through_initial(void **state)
{
    struct machine *m = machine_new("account");
    const char *close_from[] = {"active", "suspended"};
    (void)state;

    assert_int_equal(machine_set_initial(m, "active", err, sizeof(err)), 0);
    add1(m, "acct.suspended", "active", "suspended");
    add1(m, "acct.resumed", "suspended", "active");
    add(m, "acct.closed", close_from, 2, "closed");
    finalize_ok(m);

    expect(m, "acct.suspended", "active", A, "suspended");
    expect(m, "acct.suspended", "suspended", N, NULL);
    expect(m, "acct.suspended", "closed", C, NULL);
    expect(m, "acct.resumed", "active", N, NULL);
    expect(m, "acct.resumed", "suspended", A, "active");
    /* The initial state dominates everything: a late "resumed" is past. */
    expect(m, "acct.resumed", "closed", N, NULL);
    expect(m, "acct.closed", "active", A, "closed");
    expect(m, "acct.closed", "suspended", A, "closed");
    expect(m, "acct.closed", "closed", N, NULL);
    expect(m, "acct.suspended", NULL, A, "suspended");
    expect(m, "acct.resumed", NULL, D, NULL);
    expect(m, "acct.closed", NULL, A, "closed");
    machine_free(m);
}

/* draft -> a -> done, draft -> b -> done: "a" reaches done by one path only,
 * so it does not dominate done and event "to_a" on done is a conflict, not a
 * no-op (the entity went through b). */
static void test_diamond_uses_dominance(void **state)
{
    struct machine *m = machine_new("diamond");
    (void)state;

    assert_int_equal(machine_set_initial(m, "draft", err, sizeof(err)), 0);
    add1(m, "to_a", "draft", "a");
    add1(m, "to_b", "draft", "b");
    add1(m, "a_done", "a", "done");
    add1(m, "b_done", "b", "done");
    finalize_ok(m);

    expect(m, "to_a", "done", C, NULL);
    expect(m, "to_a", "b", C, NULL);
    expect(m, "to_a", "a", N, NULL);
    expect(m, "a_done", "b", C, NULL);
    expect(m, "a_done", "draft", D, NULL);
    expect(m, "a_done", "done", N, NULL);
    expect(m, "b_done", "done", N, NULL);
    machine_free(m);
}

/* A chain of exactly MACHINE_MAX_STATES states works end to end; one more
 * state is refused and leaves the machine untouched. */
static void test_state_limit(void **state)
{
    struct machine *m = machine_new("long");
    char ev[32], from[32], to[32];
    (void)state;

    assert_int_equal(machine_set_initial(m, "s0", err, sizeof(err)), 0);
    for (int i = 0; i < MACHINE_MAX_STATES - 1; i++) {
        snprintf(ev, sizeof(ev), "e%d", i);
        snprintf(from, sizeof(from), "s%d", i);
        snprintf(to, sizeof(to), "s%d", i + 1);
        add1(m, ev, from, to);
    }
    assert_int_equal(machine_nstates(m), MACHINE_MAX_STATES);

    const char *f[] = {"s63"};
    assert_int_equal(machine_add_transition(m, "e63", f, 1, "s64", err, sizeof(err)), -1);
    assert_string_equal(err, "machine 'long': transition 'e63' would exceed 64 states");
    assert_int_equal(machine_nstates(m), MACHINE_MAX_STATES);
    assert_int_equal(machine_ntransitions(m), MACHINE_MAX_STATES - 1);
    /* A transition between existing states still fits. */
    add1(m, "back", "s63", "s0");

    finalize_ok(m);
    expect(m, "e0", "s63", N, NULL); /* s1 dominates s63 */
    expect(m, "e62", "s0", D, NULL);
    expect(m, "e62", "s62", A, "s63");
    expect(m, "e0", NULL, A, "s1");
    expect(m, "e5", NULL, D, NULL);
    machine_free(m);
}

static void test_refuse_duplicate_event(void **state)
{
    struct machine *m = machine_new("order");
    const char *f[] = {"paid"};
    (void)state;

    add1(m, "order.paid", "started", "paid");
    assert_int_equal(machine_add_transition(m, "order.paid", f, 1, "refunded", err, sizeof(err)), -1);
    assert_string_equal(err, "machine 'order': event 'order.paid' is defined twice");
    assert_int_equal(machine_ntransitions(m), 1);
    assert_int_equal(machine_nstates(m), 2); /* "refunded" was not created */
    machine_free(m);
}

static void test_refuse_bad_transitions(void **state)
{
    struct machine *m = machine_new("order");
    const char *ok[] = {"draft"};
    const char *empty_item[] = {"draft", ""};
    const char *null_item[] = {NULL};
    const char *self[] = {"draft", "paid"};
    const char *twice[] = {"draft", "started", "draft"};
    (void)state;

    assert_int_equal(machine_add_transition(m, "", ok, 1, "paid", err, sizeof(err)), -1);
    assert_string_equal(err, "machine 'order': transition with an empty event name");
    assert_int_equal(machine_add_transition(m, NULL, ok, 1, "paid", err, sizeof(err)), -1);
    assert_string_equal(err, "machine 'order': transition with an empty event name");

    assert_int_equal(machine_add_transition(m, "e", ok, 1, "", err, sizeof(err)), -1);
    assert_string_equal(err, "machine 'order': transition 'e' has an empty target state");
    assert_int_equal(machine_add_transition(m, "e", ok, 1, NULL, err, sizeof(err)), -1);
    assert_string_equal(err, "machine 'order': transition 'e' has an empty target state");

    assert_int_equal(machine_add_transition(m, "e", ok, 0, "paid", err, sizeof(err)), -1);
    assert_string_equal(err, "machine 'order': transition 'e' has no from-state");
    assert_int_equal(machine_add_transition(m, "e", NULL, 1, "paid", err, sizeof(err)), -1);
    assert_string_equal(err, "machine 'order': transition 'e' has no from-state");

    assert_int_equal(machine_add_transition(m, "e", empty_item, 2, "paid", err, sizeof(err)), -1);
    assert_string_equal(err, "machine 'order': transition 'e' has an empty from-state");
    assert_int_equal(machine_add_transition(m, "e", null_item, 1, "paid", err, sizeof(err)), -1);
    assert_string_equal(err, "machine 'order': transition 'e' has an empty from-state");

    assert_int_equal(machine_add_transition(m, "e", self, 2, "paid", err, sizeof(err)), -1);
    assert_string_equal(err, "machine 'order': transition 'e' lists its target state 'paid' as a "
                             "from-state");

    assert_int_equal(machine_add_transition(m, "e", twice, 3, "paid", err, sizeof(err)), -1);
    assert_string_equal(err, "machine 'order': transition 'e' lists from-state 'draft' twice");

    /* Nothing of the refused transitions was kept. */
    assert_int_equal(machine_ntransitions(m), 0);
    assert_int_equal(machine_nstates(m), 0);
    assert_false(machine_has_event(m, "e"));

    /* A NULL error buffer is allowed. */
    assert_int_equal(machine_add_transition(m, "", ok, 1, "paid", NULL, 0), -1);
    machine_free(m);
}

static void test_refuse_initial(void **state)
{
    struct machine *m = machine_new("order");
    (void)state;

    assert_int_equal(machine_set_initial(m, "", err, sizeof(err)), -1);
    assert_string_equal(err, "machine 'order': empty initial state");
    assert_int_equal(machine_set_initial(m, NULL, err, sizeof(err)), -1);
    assert_string_equal(err, "machine 'order': empty initial state");
    assert_null(machine_initial(m));

    assert_int_equal(machine_set_initial(m, "draft", err, sizeof(err)), 0);
    assert_int_equal(machine_set_initial(m, "new", err, sizeof(err)), -1);
    assert_string_equal(err, "machine 'order': initial state set twice ('draft', then 'new')");
    assert_string_equal(machine_initial(m), "draft");
    machine_free(m);
}

static void test_refuse_finalize_no_initial(void **state)
{
    struct machine *m = machine_new("order");
    (void)state;

    add1(m, "order.paid", "started", "paid");
    assert_int_equal(machine_finalize(m, err, sizeof(err)), -1);
    assert_string_equal(err, "machine 'order' has no initial state");
    machine_free(m);
}

static void test_refuse_finalize_no_transitions(void **state)
{
    struct machine *m = machine_new("order");
    (void)state;

    assert_int_equal(machine_set_initial(m, "draft", err, sizeof(err)), 0);
    assert_int_equal(machine_finalize(m, err, sizeof(err)), -1);
    assert_string_equal(err, "machine 'order' has no transitions");
    machine_free(m);
}

static void test_refuse_unknown_initial(void **state)
{
    struct machine *m = machine_new("order");
    (void)state;

    assert_int_equal(machine_set_initial(m, "drafft", err, sizeof(err)), 0);
    add1(m, "order.started", "draft", "started");
    assert_int_equal(machine_finalize(m, err, sizeof(err)), -1);
    assert_string_equal(err, "machine 'order': initial state 'drafft' is not named by any "
                             "transition");
    machine_free(m);
}

static void test_refuse_unreachable_state(void **state)
{
    struct machine *m = machine_new("order");
    (void)state;

    assert_int_equal(machine_set_initial(m, "draft", err, sizeof(err)), 0);
    add1(m, "order.paid", "draft", "paid");
    add1(m, "order.reopened", "refunded", "draft"); /* nothing leads to refunded */
    assert_int_equal(machine_finalize(m, err, sizeof(err)), -1);
    assert_string_equal(err, "machine 'order': state 'refunded' is unreachable from initial "
                             "state 'draft'");

    /* Fixing the machine makes it finalize (a refused finalize is no
     * half-finalized state). */
    add1(m, "order.refunded", "paid", "refunded");
    finalize_ok(m);
    expect(m, "order.reopened", "refunded", A, "draft");
    expect(m, "order.paid", "refunded", N, NULL);
    machine_free(m);
}

static void test_refuse_after_finalize(void **state)
{
    struct machine *m = order_machine();
    const char *f[] = {"paid"};
    (void)state;

    assert_int_equal(machine_finalize(m, err, sizeof(err)), -1);
    assert_string_equal(err, "machine 'order' is already finalized");
    assert_int_equal(machine_add_transition(m, "order.refunded", f, 1, "refunded", err, sizeof(err)), -1);
    assert_string_equal(err, "machine 'order' is finalized; transitions cannot be added");
    assert_int_equal(machine_set_initial(m, "started", err, sizeof(err)), -1);
    assert_string_equal(err, "machine 'order' is finalized; its initial state cannot change");
    assert_int_equal(machine_ntransitions(m), 5);
    assert_string_equal(machine_initial(m), "draft");
    machine_free(m);
}

static void test_free_null(void **state)
{
    (void)state;
    machine_free(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_order_full_table),
        cmocka_unit_test(test_order_missing_entity),
        cmocka_unit_test(test_unknown_event_and_state),
        cmocka_unit_test(test_accessors),
        cmocka_unit_test(test_verdict_names),
        cmocka_unit_test(test_cycle),
        cmocka_unit_test(test_cycle_through_initial),
        cmocka_unit_test(test_diamond_uses_dominance),
        cmocka_unit_test(test_state_limit),
        cmocka_unit_test(test_refuse_duplicate_event),
        cmocka_unit_test(test_refuse_bad_transitions),
        cmocka_unit_test(test_refuse_initial),
        cmocka_unit_test(test_refuse_finalize_no_initial),
        cmocka_unit_test(test_refuse_finalize_no_transitions),
        cmocka_unit_test(test_refuse_unknown_initial),
        cmocka_unit_test(test_refuse_unreachable_state),
        cmocka_unit_test(test_refuse_after_finalize),
        cmocka_unit_test(test_free_null),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
