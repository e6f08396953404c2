/* Structured log lines on stderr; see log.h. A line is built in one buffer
 * and written with one write() so lines from several threads never mix. */
#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

enum log_level log_min_level = LOG_INFO;
static char log_worker[64];

static const char *const level_names[] = {"debug", "info", "warn", "error"};

int log_level_parse(const char *name, enum log_level *out)
{
    for (int i = 0; i < 4; i++) {
        if (strcmp(name, level_names[i]) == 0) {
            *out = (enum log_level)i;
            return 0;
        }
    }
    return -1;
}

const char *log_level_name(enum log_level l)
{
    return (l >= LOG_DEBUG && l <= LOG_ERROR) ? level_names[l] : "?";
}

void log_set_worker(const char *worker_id)
{
    snprintf(log_worker, sizeof log_worker, "%s", worker_id ? worker_id : "");
}

void log_write(enum log_level lvl, const char *event, const char *fmt, ...)
{
    char line[2048];
    struct timeval tv;
    struct tm tm;
    gettimeofday(&tv, NULL);
    gmtime_r(&tv.tv_sec, &tm);
    size_t n = strftime(line, sizeof line, "ts=%Y-%m-%dT%H:%M:%S", &tm);
    n += (size_t)snprintf(line + n, sizeof line - n, ".%03dZ level=%s event=%s", (int)(tv.tv_usec / 1000),
                          log_level_name(lvl), event);
    if (log_worker[0] && n < sizeof line)
        n += (size_t)snprintf(line + n, sizeof line - n, " worker=%s", log_worker);
    if (fmt && fmt[0] && n < sizeof line - 2) {
        line[n++] = ' ';
        va_list ap;
        va_start(ap, fmt);
        int k = vsnprintf(line + n, sizeof line - n, fmt, ap);
        va_end(ap);
        if (k > 0)
            n += (size_t)k;
    }
    if (n > sizeof line - 2)
        n = sizeof line - 2;
    line[n++] = '\n';
    ssize_t w = write(STDERR_FILENO, line, n);
    (void)w;
}
