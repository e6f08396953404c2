/* The one way hookd's functions fill the caller's error buffer: printf into
 * err (truncated to errlen; nothing when err is NULL or errlen 0). Returns
 * -1, so a failing function can `return err_set(err, errlen, "...")`. */
#ifndef HOOKD_ERRBUF_H
#define HOOKD_ERRBUF_H

#include <stddef.h>

int err_set(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
