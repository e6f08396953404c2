/*
 * machine.c — configured state machines (see machine.h). States are indexed
 * 0..n-1 in the order transitions first name them, and every set of states is
 * a uint64_t bitset, which is why a machine holds at most MACHINE_MAX_STATES
 * states. machine_finalize() precomputes, once per config load, the
 * reflexive-transitive closure of the transition graph ("which states can
 * still be reached from S") and the dominator sets from the initial state
 * ("which states every path from the initial state to S passes through").
 * With both tables in hand machine_classify() is a handful of bit tests, so
 * the inbox role can evaluate an event without walking the graph.
 */
#include "machine.h"

#include <assert.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "errbuf.h"

struct transition {
    char *event;
    uint64_t from_set;
    const char **from_names; /* borrowed from machine.states, configured order */
    size_t nfrom;
    int to;
};

struct machine {
    char *name;
    char *initial_name;
    int initial; /* index into states; -1 until finalized */
    bool finalized;

    char *states[MACHINE_MAX_STATES];
    size_t nstates;

    struct transition *trans;
    size_t ntrans, transcap;

    uint64_t reach[MACHINE_MAX_STATES]; /* reach[s]: states reachable from s, s included */
    uint64_t dom[MACHINE_MAX_STATES];   /* dom[s]: states dominating s, s included */
};

/* Allocation failure aborts, as everywhere in the daemon; these stay static so
 * the module depends on nothing but libc. */
static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) {
        fputs("hookd: out of memory\n", stderr);
        abort();
    }
    return p;
}

static void *xrealloc(void *old, size_t n)
{
    void *p = realloc(old, n ? n : 1);
    if (!p) {
        fputs("hookd: out of memory\n", stderr);
        abort();
    }
    return p;
}

static char *xstrdup(const char *s)
{
    size_t n = strlen(s) + 1;
    return memcpy(xmalloc(n), s, n);
}

static uint64_t bit(int i)
{
    return (uint64_t)1 << i;
}

static uint64_t all_states_mask(size_t n)
{
    return n >= 64 ? ~(uint64_t)0 : bit((int)n) - 1;
}

static bool is_empty(const char *s)
{
    return s == NULL || s[0] == '\0';
}

static int find_state(const struct machine *m, const char *name)
{
    for (size_t i = 0; i < m->nstates; i++)
        if (strcmp(m->states[i], name) == 0)
            return (int)i;
    return -1;
}

static const struct transition *find_transition(const struct machine *m, const char *event)
{
    if (!event)
        return NULL;
    for (size_t i = 0; i < m->ntrans; i++)
        if (strcmp(m->trans[i].event, event) == 0)
            return &m->trans[i];
    return NULL;
}

/* Returns the state's index, creating it if needed; the caller has checked
 * that there is room. */
static int intern_state(struct machine *m, const char *name)
{
    int i = find_state(m, name);

    if (i >= 0)
        return i;
    assert(m->nstates < MACHINE_MAX_STATES);
    m->states[m->nstates] = xstrdup(name);
    return (int)m->nstates++;
}

struct machine *machine_new(const char *name)
{
    struct machine *m = xmalloc(sizeof(*m));

    memset(m, 0, sizeof(*m));
    m->name = xstrdup(name ? name : "");
    m->initial = -1;
    return m;
}

void machine_free(struct machine *m)
{
    if (!m)
        return;
    for (size_t i = 0; i < m->ntrans; i++) {
        free(m->trans[i].event);
        free(m->trans[i].from_names);
    }
    free(m->trans);
    for (size_t i = 0; i < m->nstates; i++)
        free(m->states[i]);
    free(m->initial_name);
    free(m->name);
    free(m);
}

const char *machine_name(const struct machine *m)
{
    return m->name;
}

int machine_set_initial(struct machine *m, const char *state, char *err, size_t errlen)
{
    if (m->finalized) {
        err_set(err, errlen, "machine '%s' is finalized; its initial state cannot change", m->name);
        return -1;
    }
    if (is_empty(state)) {
        err_set(err, errlen, "machine '%s': empty initial state", m->name);
        return -1;
    }
    if (m->initial_name) {
        err_set(err, errlen, "machine '%s': initial state set twice ('%s', then '%s')", m->name, m->initial_name,
                state);
        return -1;
    }
    m->initial_name = xstrdup(state);
    return 0;
}

/* Everything machine_add_transition() refuses, checked before anything is
 * changed so a refused transition leaves the machine as it was. */
static int check_transition(const struct machine *m, const char *event, const char *const *from, size_t nfrom,
                            const char *to, char *err, size_t errlen)
{
    size_t fresh = 0;

    if (m->finalized) {
        err_set(err, errlen, "machine '%s' is finalized; transitions cannot be added", m->name);
        return -1;
    }
    if (is_empty(event)) {
        err_set(err, errlen, "machine '%s': transition with an empty event name", m->name);
        return -1;
    }
    if (find_transition(m, event)) {
        err_set(err, errlen, "machine '%s': event '%s' is defined twice", m->name, event);
        return -1;
    }
    if (is_empty(to)) {
        err_set(err, errlen, "machine '%s': transition '%s' has an empty target state", m->name, event);
        return -1;
    }
    if (nfrom == 0 || from == NULL) {
        err_set(err, errlen, "machine '%s': transition '%s' has no from-state", m->name, event);
        return -1;
    }
    for (size_t i = 0; i < nfrom; i++) {
        if (is_empty(from[i])) {
            err_set(err, errlen, "machine '%s': transition '%s' has an empty from-state", m->name, event);
            return -1;
        }
        if (strcmp(from[i], to) == 0) {
            err_set(err, errlen, "machine '%s': transition '%s' lists its target state '%s' as a from-state", m->name,
                    event, to);
            return -1;
        }
        for (size_t j = 0; j < i; j++) {
            if (strcmp(from[i], from[j]) == 0) {
                err_set(err, errlen, "machine '%s': transition '%s' lists from-state '%s' twice", m->name, event,
                        from[i]);
                return -1;
            }
        }
        if (find_state(m, from[i]) < 0)
            fresh++;
    }
    if (find_state(m, to) < 0)
        fresh++;
    if (m->nstates + fresh > MACHINE_MAX_STATES) {
        err_set(err, errlen, "machine '%s': transition '%s' would exceed %d states", m->name, event,
                MACHINE_MAX_STATES);
        return -1;
    }
    return 0;
}

int machine_add_transition(struct machine *m, const char *event, const char *const *from, size_t nfrom, const char *to,
                           char *err, size_t errlen)
{
    struct transition *t;

    if (check_transition(m, event, from, nfrom, to, err, errlen) < 0)
        return -1;

    if (m->ntrans == m->transcap) {
        m->transcap = m->transcap ? m->transcap * 2 : 8;
        m->trans = xrealloc(m->trans, m->transcap * sizeof(*m->trans));
    }
    t = &m->trans[m->ntrans];
    memset(t, 0, sizeof(*t));
    t->event = xstrdup(event);
    t->from_names = xmalloc(nfrom * sizeof(*t->from_names));
    t->nfrom = nfrom;
    for (size_t i = 0; i < nfrom; i++) {
        int s = intern_state(m, from[i]);
        t->from_set |= bit(s);
        t->from_names[i] = m->states[s];
    }
    t->to = intern_state(m, to);
    m->ntrans++;
    return 0;
}

/* reach[s] = every state reachable from s in zero or more transitions:
 * Warshall's transitive closure, one bitset row per state. */
static void compute_reachability(struct machine *m)
{
    size_t n = m->nstates;

    for (size_t s = 0; s < n; s++)
        m->reach[s] = bit((int)s);
    for (size_t i = 0; i < m->ntrans; i++)
        for (size_t s = 0; s < n; s++)
            if (m->trans[i].from_set & bit((int)s))
                m->reach[s] |= bit(m->trans[i].to);
    for (size_t k = 0; k < n; k++)
        for (size_t s = 0; s < n; s++)
            if (m->reach[s] & bit((int)k))
                m->reach[s] |= m->reach[k];
}

/* dom[s] = {s} ∪ ⋂ dom[p] over the predecessors p of s, iterated to the
 * fixed point (the classic data-flow formulation; at 64 states it converges
 * in a few passes). Only called once every state is known to be reachable
 * from the initial state, so every other state has a predecessor. */
static void compute_dominators(struct machine *m)
{
    size_t n = m->nstates;
    uint64_t pred[MACHINE_MAX_STATES] = {0};
    uint64_t all = all_states_mask(n);
    bool changed = true;

    for (size_t i = 0; i < m->ntrans; i++)
        pred[m->trans[i].to] |= m->trans[i].from_set;
    for (size_t s = 0; s < n; s++)
        m->dom[s] = all;
    m->dom[m->initial] = bit(m->initial);

    while (changed) {
        changed = false;
        for (size_t s = 0; s < n; s++) {
            uint64_t d = all;
            if ((int)s == m->initial)
                continue;
            for (size_t p = 0; p < n; p++)
                if (pred[s] & bit((int)p))
                    d &= m->dom[p];
            d |= bit((int)s);
            if (d != m->dom[s]) {
                m->dom[s] = d;
                changed = true;
            }
        }
    }
}

int machine_finalize(struct machine *m, char *err, size_t errlen)
{
    if (m->finalized) {
        err_set(err, errlen, "machine '%s' is already finalized", m->name);
        return -1;
    }
    if (!m->initial_name) {
        err_set(err, errlen, "machine '%s' has no initial state", m->name);
        return -1;
    }
    if (m->ntrans == 0) {
        err_set(err, errlen, "machine '%s' has no transitions", m->name);
        return -1;
    }
    m->initial = find_state(m, m->initial_name);
    if (m->initial < 0) {
        err_set(err, errlen, "machine '%s': initial state '%s' is not named by any transition", m->name,
                m->initial_name);
        return -1;
    }

    compute_reachability(m);
    for (size_t s = 0; s < m->nstates; s++) {
        if (!(m->reach[m->initial] & bit((int)s))) {
            err_set(err, errlen, "machine '%s': state '%s' is unreachable from initial state '%s'", m->name,
                    m->states[s], m->initial_name);
            m->initial = -1;
            return -1;
        }
    }
    compute_dominators(m);
    m->finalized = true;
    return 0;
}

const char *machine_verdict_name(enum machine_verdict v)
{
    switch (v) {
    case MACHINE_APPLY: return "apply";
    case MACHINE_NOOP: return "noop";
    case MACHINE_DEFER: return "defer";
    case MACHINE_CONFLICT: return "conflict";
    case MACHINE_UNKNOWN_EVENT: return "unknown_event";
    case MACHINE_UNKNOWN_STATE: return "unknown_state";
    }
    return "invalid";
}

enum machine_verdict machine_classify(const struct machine *m, const char *event, const char *state, const char **to)
{
    const struct transition *t;
    int s;

    assert(m->finalized);
    if (to)
        *to = NULL;

    t = find_transition(m, event);
    if (!t)
        return MACHINE_UNKNOWN_EVENT;

    if (state == NULL) {
        /* A missing entity has applied nothing yet, so nothing can be a
         * no-op or a conflict: either the event creates it, or it waits. */
        if (!(t->from_set & bit(m->initial)))
            return MACHINE_DEFER;
        if (to)
            *to = m->states[t->to];
        return MACHINE_APPLY;
    }

    s = find_state(m, state);
    if (s < 0)
        return MACHINE_UNKNOWN_STATE;

    if (t->from_set & bit(s)) {
        if (to)
            *to = m->states[t->to];
        return MACHINE_APPLY;
    }
    /* dom[s] contains s itself, so this also covers s == target. */
    if (m->dom[s] & bit(t->to))
        return MACHINE_NOOP;
    if (m->reach[s] & t->from_set)
        return MACHINE_DEFER;
    return MACHINE_CONFLICT;
}

int machine_has_event(const struct machine *m, const char *event)
{
    return find_transition(m, event) != NULL;
}

int machine_has_state(const struct machine *m, const char *state)
{
    return state != NULL && find_state(m, state) >= 0;
}

const char *machine_initial(const struct machine *m)
{
    return m->initial_name;
}

size_t machine_nstates(const struct machine *m)
{
    return m->nstates;
}

const char *machine_state_name(const struct machine *m, size_t i)
{
    assert(i < m->nstates);
    return m->states[i];
}

size_t machine_ntransitions(const struct machine *m)
{
    return m->ntrans;
}

void machine_transition(const struct machine *m, size_t i, struct machine_transition_info *out)
{
    const struct transition *t;

    assert(i < m->ntrans);
    t = &m->trans[i];
    out->event = t->event;
    out->from = t->from_names;
    out->nfrom = t->nfrom;
    out->to = m->states[t->to];
}
