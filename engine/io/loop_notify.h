/* One way for a thread to wake the libevent loop: a DB thread that finished
 * a job, the relay's LISTEN thread that saw a NOTIFY. Other threads never
 * touch libevent (hookd does not enable libevent's locking); they call
 * loop_notify_signal(), which writes to an eventfd that the loop watches,
 * and the loop runs the callback. Signals coalesce: any number of them
 * before the callback runs cost one write and one callback, so the callback
 * must drain everything that is ready (a done list, a flag), not one item. */
#ifndef HOOKD_LOOP_NOTIFY_H
#define HOOKD_LOOP_NOTIFY_H

struct event_base;
struct loop_notify;

/* Runs on the loop thread, after one or more signals. */
typedef void (*loop_notify_fn)(void *arg);

/* Watches a new non-blocking, close-on-exec eventfd on base. fn and arg are
 * borrowed until loop_notify_free. NULL if the eventfd or the event cannot
 * be created (errno tells why). */
__attribute__((warn_unused_result)) struct loop_notify *loop_notify_new(struct event_base *base, loop_notify_fn fn,
                                                                        void *arg);
/* Any thread, any time between new and free: the callback runs soon on the
 * loop, once for every burst of signals. Whatever the signalling thread
 * wrote before the call is visible to the callback. Never blocks. */
void loop_notify_signal(struct loop_notify *n);
/* Loop thread, after every signalling thread has stopped. Pending signals
 * are dropped: the owner drains what they announced itself. Accepts NULL. */
void loop_notify_free(struct loop_notify *n);

#endif
