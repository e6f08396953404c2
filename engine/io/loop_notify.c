/* Thread-to-loop wake-ups over an eventfd; see loop_notify.h.
 *
 * `armed` is what makes signals coalesce: only the signal that turns it on
 * writes to the eventfd. The loop reads the counter, then turns `armed` off
 * (an exchange, so it synchronises with the signallers), then runs the
 * callback: a signal that comes after the callback started draining writes
 * again and is never lost; at worst the callback runs once more and finds
 * nothing. */
#include "loop_notify.h"

#include <errno.h>
#include <event2/event.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "xmalloc.h"

struct loop_notify {
    int fd;
    struct event *ev;
    atomic_bool armed; /* a write is on its way or unread */
    loop_notify_fn fn;
    void *arg;
};

static void on_notify(evutil_socket_t fd, short what, void *arg)
{
    (void)what;
    struct loop_notify *n = arg;
    uint64_t count;
    /* Read, then disarm: a write consumed here came from a signal that armed
     * before this disarm. The other order could consume the write of a
     * signal that armed after the disarm and leave `armed` set with nothing
     * to read: every later signal would be lost. */
    ssize_t r = read(fd, &count, sizeof count); /* EAGAIN: a spurious wake-up */
    (void)r;
    atomic_exchange(&n->armed, false); /* reads the signallers' stores: their writes are visible to fn */
    n->fn(n->arg);
}

struct loop_notify *loop_notify_new(struct event_base *base, loop_notify_fn fn, void *arg)
{
    int fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (fd < 0)
        return NULL;
    struct loop_notify *n = xcalloc(1, sizeof *n);
    n->fd = fd;
    n->fn = fn;
    n->arg = arg;
    atomic_init(&n->armed, false);
    n->ev = event_new(base, fd, EV_READ | EV_PERSIST, on_notify, n);
    if (!n->ev || event_add(n->ev, NULL) != 0) {
        int e = errno;
        loop_notify_free(n);
        errno = e;
        return NULL;
    }
    return n;
}

void loop_notify_signal(struct loop_notify *n)
{
    if (atomic_exchange(&n->armed, true))
        return; /* the loop has not run the callback for the last one yet */
    uint64_t one = 1;
    ssize_t w = write(n->fd, &one, sizeof one); /* EAGAIN only at 2^64-2: unread anyway */
    (void)w;
}

void loop_notify_free(struct loop_notify *n)
{
    if (!n)
        return;
    if (n->ev)
        event_free(n->ev);
    close(n->fd);
    free(n);
}
