/* Allocation helpers for the daemon: on out-of-memory they log and abort,
 * which is the one place hookd aborts (Redis's zmalloc does the same). Every
 * other failure is returned to the caller. */
#ifndef HOOKD_XMALLOC_H
#define HOOKD_XMALLOC_H

#include <stddef.h>

void *xmalloc(size_t n);
void *xcalloc(size_t count, size_t n);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);
char *xstrndup(const char *s, size_t n);
/* printf into a new string; caller frees. */
char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Invariant check: logs file:line and aborts when cond is false. */
#define HOOKD_ASSERT(cond)                                                                                            \
    do {                                                                                                              \
        if (!(cond))                                                                                                  \
            xassert_fail(#cond, __FILE__, __LINE__);                                                                  \
    } while (0)
void xassert_fail(const char *cond, const char *file, int line) __attribute__((noreturn));

#endif
