/*
 * test_batcher.c — unit tests for engine/io/batcher.c on a real libevent
 * loop: items gathered in one loop turn go as one batch at the turn's end;
 * a full batch (by items or bytes) goes at once, even over max_running;
 * with max_running, items wait while batches are out and go together when
 * one comes back; a batch completed from inside submit; no linger means
 * only an explicit flush submits; take, stop, new limits and free.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <event2/event.h>

#include "batcher.h"

#define MAX_SUBMITS 16

/* What the submit function saw. */
struct seen {
    struct batcher *b;
    int nsubmits;
    size_t n[MAX_SUBMITS], bytes[MAX_SUBMITS];
    int first[MAX_SUBMITS], last[MAX_SUBMITS]; /* first and last item's value */
    int running_at[MAX_SUBMITS];               /* batcher_running() during submit */
    int done_inside;                           /* call batcher_done from submit this many times */
};

static void on_submit(void *arg, void *items, size_t n, size_t bytes)
{
    struct seen *s = arg;
    assert_true(s->nsubmits < MAX_SUBMITS);
    assert_true(n > 0);
    const int *v = items;
    int k = s->nsubmits++;
    s->n[k] = n;
    s->bytes[k] = bytes;
    s->first[k] = v[0];
    s->last[k] = v[n - 1];
    s->running_at[k] = batcher_running(s->b);
    for (size_t i = 1; i < n; i++) /* in the order added */
        assert_int_equal(v[i], v[i - 1] + 1);
    free(items);
    if (s->done_inside > 0) {
        s->done_inside--;
        batcher_done(s->b);
    }
}

struct fixture {
    struct event_base *base;
    struct seen seen;
};

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof *f);
    f->base = event_base_new();
    *state = f;
    return f->base ? 0 : -1;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    event_base_free(f->base);
    free(f);
    return 0;
}

static struct batcher *make(struct fixture *f, size_t max_items, size_t max_bytes, int max_running,
                            enum batcher_linger linger)
{
    struct batcher_config cfg = {sizeof(int), max_items, max_bytes, max_running, linger};
    struct batcher *b = batcher_new(f->base, &cfg, on_submit, &f->seen);
    assert_non_null(b);
    f->seen.b = b;
    return b;
}

static void add_range(struct batcher *b, int from, int to, size_t bytes)
{
    for (int v = from; v < to; v++)
        batcher_add(b, &v, bytes);
}

static void turn(struct fixture *f)
{
    event_base_loop(f->base, EVLOOP_NONBLOCK);
}

static void test_one_batch_per_loop_turn(void **state)
{
    struct fixture *f = *state;
    struct batcher *b = make(f, 0, 0, 0, BATCHER_LINGER_TURN);
    add_range(b, 0, 5, 10);
    assert_int_equal(f->seen.nsubmits, 0); /* not before the turn ends */
    assert_int_equal(batcher_waiting(b), 5);
    turn(f);
    assert_int_equal(f->seen.nsubmits, 1);
    assert_int_equal(f->seen.n[0], 5);
    assert_int_equal(f->seen.bytes[0], 50);
    assert_int_equal(f->seen.first[0], 0);
    assert_int_equal(batcher_waiting(b), 0);
    add_range(b, 5, 7, 1); /* a second turn, a second batch */
    turn(f);
    assert_int_equal(f->seen.nsubmits, 2);
    assert_int_equal(f->seen.n[1], 2);
    assert_int_equal(f->seen.first[1], 5);
    turn(f); /* nothing open: nothing submitted */
    assert_int_equal(f->seen.nsubmits, 2);
    batcher_free(b);
}

static void test_full_batch_goes_at_once_even_over_max_running(void **state)
{
    struct fixture *f = *state;
    struct batcher *b = make(f, 3, 0, 1, BATCHER_LINGER_TURN);
    add_range(b, 0, 7, 0);
    /* two full batches went during the adds, the second over max_running */
    assert_int_equal(f->seen.nsubmits, 2);
    assert_int_equal(f->seen.n[0], 3);
    assert_int_equal(f->seen.n[1], 3);
    assert_int_equal(f->seen.first[1], 3);
    assert_int_equal(batcher_running(b), 2);
    turn(f); /* the seventh waits: two are out, the limit is one */
    assert_int_equal(f->seen.nsubmits, 2);
    assert_int_equal(batcher_waiting(b), 1);
    batcher_done(b); /* still one out */
    assert_int_equal(f->seen.nsubmits, 2);
    batcher_done(b);
    assert_int_equal(f->seen.nsubmits, 3);
    assert_int_equal(f->seen.n[2], 1);
    assert_int_equal(f->seen.first[2], 6);
    batcher_done(b);
    assert_int_equal(batcher_running(b), 0);
    batcher_free(b);
}

static void test_full_by_bytes(void **state)
{
    struct fixture *f = *state;
    struct batcher *b = make(f, 100, 1000, 0, BATCHER_LINGER_TURN);
    add_range(b, 0, 3, 400); /* 1,200 bytes after the third */
    assert_int_equal(f->seen.nsubmits, 1);
    assert_int_equal(f->seen.n[0], 3);
    assert_int_equal(f->seen.bytes[0], 1200);
    add_range(b, 3, 4, 400);
    assert_int_equal(f->seen.nsubmits, 1); /* the count starts again */
    turn(f);
    assert_int_equal(f->seen.nsubmits, 2);
    assert_int_equal(f->seen.bytes[1], 400);
    batcher_free(b);
}

static void test_items_wait_for_a_free_slot_and_go_together(void **state)
{
    struct fixture *f = *state;
    struct batcher *b = make(f, 0, 0, 2, BATCHER_LINGER_NONE);
    add_range(b, 0, 1, 0);
    assert_int_equal(f->seen.nsubmits, 0); /* no linger: only a flush submits */
    batcher_flush(b);
    add_range(b, 1, 3, 0);
    batcher_flush(b);
    assert_int_equal(f->seen.nsubmits, 2);
    assert_int_equal(f->seen.running_at[1], 2); /* counted before submit runs */
    add_range(b, 3, 10, 0);
    batcher_flush(b);
    turn(f);
    assert_int_equal(f->seen.nsubmits, 2); /* both slots taken */
    assert_int_equal(batcher_waiting(b), 7);
    batcher_done(b);
    assert_int_equal(f->seen.nsubmits, 3); /* everything that waited, as one batch */
    assert_int_equal(f->seen.n[2], 7);
    assert_int_equal(f->seen.first[2], 3);
    assert_int_equal(f->seen.last[2], 9);
    batcher_done(b);
    batcher_done(b);
    assert_int_equal(batcher_running(b), 0);
    batcher_free(b);
}

static void test_done_from_inside_submit(void **state)
{
    struct fixture *f = *state;
    struct batcher *b = make(f, 2, 0, 1, BATCHER_LINGER_TURN);
    f->seen.done_inside = 3;
    add_range(b, 0, 5, 0); /* 2 full, 2 full, then 1 at the turn's end */
    turn(f);
    assert_int_equal(f->seen.nsubmits, 3);
    assert_int_equal(f->seen.running_at[0], 1);
    assert_int_equal(f->seen.n[2], 1);
    assert_int_equal(batcher_running(b), 0);
    batcher_free(b);
}

static void test_new_limits_apply_from_the_next_add(void **state)
{
    struct fixture *f = *state;
    struct batcher *b = make(f, 10, 0, 0, BATCHER_LINGER_TURN);
    add_range(b, 0, 4, 0);
    assert_int_equal(f->seen.nsubmits, 0);
    batcher_set_limits(b, 5, 0);
    add_range(b, 4, 5, 0);
    assert_int_equal(f->seen.nsubmits, 1);
    assert_int_equal(f->seen.n[0], 5);
    batcher_free(b);
}

static void test_take_and_free(void **state)
{
    struct fixture *f = *state;
    struct batcher *b = make(f, 0, 0, 1, BATCHER_LINGER_TURN);
    size_t n;
    assert_null(batcher_take(b, &n));
    assert_int_equal(n, 0);
    add_range(b, 0, 3, 0);
    int *items = batcher_take(b, &n);
    assert_int_equal(n, 3);
    assert_int_equal(items[2], 2);
    free(items);
    turn(f); /* the flush that was due finds nothing */
    assert_int_equal(f->seen.nsubmits, 0);
    add_range(b, 3, 5, 0); /* freed with items open and a flush due */
    batcher_free(b);
    turn(f);
    assert_int_equal(f->seen.nsubmits, 0);
}

static void test_stopped_submits_nothing(void **state)
{
    struct fixture *f = *state;
    struct batcher *b = make(f, 2, 0, 1, BATCHER_LINGER_TURN);
    add_range(b, 0, 2, 0); /* full: out */
    add_range(b, 2, 3, 0);
    batcher_stop(b);
    add_range(b, 3, 6, 0); /* would be full twice over */
    batcher_flush(b);
    batcher_done(b); /* the batch that was out comes back */
    turn(f);
    assert_int_equal(f->seen.nsubmits, 1);
    size_t n;
    int *items = batcher_take(b, &n);
    assert_int_equal(n, 4);
    assert_int_equal(items[0], 2);
    assert_int_equal(items[3], 5);
    free(items);
    batcher_free(b);
}

struct wide {
    char id[40];
    long due;
};

static int wide_seen;

static void on_wide(void *arg, void *items, size_t n, size_t bytes)
{
    (void)arg;
    (void)bytes;
    struct wide *w = items;
    assert_int_equal(n, 2);
    assert_string_equal(w[0].id, "first");
    assert_int_equal(w[1].due, 7);
    wide_seen++;
    free(items);
}

static void test_items_by_value(void **state)
{
    struct fixture *f = *state;
    struct batcher_config cfg = {sizeof(struct wide), 0, 0, 0, BATCHER_LINGER_NONE};
    struct batcher *b = batcher_new(f->base, &cfg, on_wide, NULL);
    assert_non_null(b);
    struct wide w = {"first", 3};
    batcher_add(b, &w, 0);
    strcpy(w.id, "second"); /* the batcher kept a copy */
    w.due = 7;
    batcher_add(b, &w, 0);
    batcher_flush(b);
    assert_int_equal(wide_seen, 1);
    batcher_free(b);
    batcher_free(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_one_batch_per_loop_turn, setup, teardown),
        cmocka_unit_test_setup_teardown(test_full_batch_goes_at_once_even_over_max_running, setup, teardown),
        cmocka_unit_test_setup_teardown(test_full_by_bytes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_items_wait_for_a_free_slot_and_go_together, setup, teardown),
        cmocka_unit_test_setup_teardown(test_done_from_inside_submit, setup, teardown),
        cmocka_unit_test_setup_teardown(test_new_limits_apply_from_the_next_add, setup, teardown),
        cmocka_unit_test_setup_teardown(test_take_and_free, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stopped_submits_nothing, setup, teardown),
        cmocka_unit_test_setup_teardown(test_items_by_value, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
