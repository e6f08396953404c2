/*
 * machine.h — configured state machines and the classification of an inbound
 * event against an entity's current state. A machine is built from the
 * `[machine NAME]` config section (initial state plus one transition per event
 * type), finalized once (which validates it and precomputes reachability and
 * dominators), and from then on is immutable and may be shared by every
 * thread of a worker. The inbox role calls machine_classify() to decide
 * whether an event applies, is a duplicate/no-op, must be deferred, or can
 * never apply. Pure logic: no I/O, no globals.
 */
#ifndef HOOKD_MACHINE_H
#define HOOKD_MACHINE_H

#include <stddef.h>

/* Upper bound on the number of distinct states in one machine; states are
 * kept as bits of a uint64_t, and business state machines are far smaller. */
#define MACHINE_MAX_STATES 64

struct machine;

/* Returns a new, empty machine named `name` (copied). Never NULL: allocation
 * failure aborts. The caller frees with machine_free(). */
struct machine *machine_new(const char *name);
void machine_free(struct machine *m); /* accepts NULL */

/* Borrowed; valid until machine_free(). */
const char *machine_name(const struct machine *m);

/* Sets the initial state (copied). The state is resolved at finalize time, so
 * it may be set before the transitions that name it. Refuses an empty name, a
 * second initial state, and a finalized machine. */
__attribute__((warn_unused_result)) int machine_set_initial(struct machine *m, const char *state, char *err,
                                                            size_t errlen);

/* Adds the transition `event`: from any of the `nfrom` states in `from` to
 * `to`. All strings are copied. States are created implicitly by naming them.
 * Refuses: a finalized machine, an event defined twice, empty names, no
 * from-state, a from-state listed twice, `to` listed as its own from-state,
 * more than MACHINE_MAX_STATES states. On failure the machine is unchanged. */
__attribute__((warn_unused_result)) int machine_add_transition(struct machine *m, const char *event,
                                                               const char *const *from, size_t nfrom, const char *to,
                                                               char *err, size_t errlen);

/* Validates the machine and computes reachability (from every state) and
 * dominators (from the initial state). Refuses: no initial state, no
 * transitions, an initial state no transition names, a state unreachable from
 * the initial state ("state 'refunded' is unreachable from initial state
 * 'draft'"), and a second finalize. Afterwards the machine is immutable. */
__attribute__((warn_unused_result)) int machine_finalize(struct machine *m, char *err, size_t errlen);

enum machine_verdict {
    MACHINE_APPLY,         /* the transition is allowed from the current state */
    MACHINE_NOOP,          /* already in the target state, or past it */
    MACHINE_DEFER,         /* a state that allows it is still reachable */
    MACHINE_CONFLICT,      /* it can never apply from the current state */
    MACHINE_UNKNOWN_EVENT, /* no transition of this machine is named `event` */
    MACHINE_UNKNOWN_STATE, /* the current state is not a state of this machine */
};

/* "apply", "noop", "defer", "conflict", "unknown_event", "unknown_state";
 * "invalid" for a value outside the enum. Static storage. */
const char *machine_verdict_name(enum machine_verdict v);

/* Classifies event `event` against an entity in state `state` (the machine
 * must be finalized). For transition T with from-set F and target X, in order:
 *   1. state in F                                  -> APPLY (*to = X)
 *   2. state == X, or X dominates state            -> NOOP
 *   3. some state of F is reachable from state     -> DEFER
 *   4. otherwise                                   -> CONFLICT
 * state == NULL means the entity does not exist yet: APPLY (*to = X) if T is
 * allowed from the initial state, DEFER otherwise.
 * `to` may be NULL; when given it is set to the borrowed target name for
 * APPLY and to NULL for every other verdict. */
enum machine_verdict machine_classify(const struct machine *m, const char *event, const char *state, const char **to);

/* 1 if some transition of this machine is named `event`, else 0. */
int machine_has_event(const struct machine *m, const char *event);

/* 1 if `state` is a state of this machine, else 0. */
int machine_has_state(const struct machine *m, const char *state);

/* Borrowed; NULL until machine_set_initial() succeeded. */
const char *machine_initial(const struct machine *m);

/* States in the order they were first named by a transition; i < nstates. */
size_t machine_nstates(const struct machine *m);
const char *machine_state_name(const struct machine *m, size_t i);

/* One transition as configured, for printing the effective config. Every
 * pointer is borrowed and valid until machine_free(). */
struct machine_transition_info {
    const char *event;
    const char *const *from; /* nfrom state names, in configured order */
    size_t nfrom;
    const char *to;
};

/* Transitions in the order they were added; i < ntransitions. */
size_t machine_ntransitions(const struct machine *m);
void machine_transition(const struct machine *m, size_t i, struct machine_transition_info *out);

#endif
