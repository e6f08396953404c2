/* Structured log lines on stderr; see log.h. A line is built in one buffer
 * and written with one write() so lines from several threads never mix.
 *
 * Every string a caller logs is escaped here, not at the call sites: the
 * format is walked conversion by conversion, numbers are formatted as
 * printf would, and each `%s` value is written so that it stays one value of
 * one line whatever it holds (a partner name from a URL, an event type from
 * a request body). Inside quotes (`key="%s"`) a value has `"`, `\` and
 * control characters escaped; a bare value (`key=%s`) that holds a blank, `"`, `=`, `\` or a control character is written quoted and
 * escaped. So no logged value can end the line or forge another field. */
#include "log.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"

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

struct log_buf {
    char *p;
    size_t n, cap; /* cap excludes room for the final newline */
};

static void put(struct log_buf *b, const char *s, size_t len)
{
    size_t room = b->cap > b->n ? b->cap - b->n : 0;
    if (len > room)
        len = room;
    memcpy(b->p + b->n, s, len);
    b->n += len;
}

/* An empty bare value stays empty (`key=`): valid logfmt, and what the
 * `"%s", ""` of events without fields relies on. */
static bool needs_quotes(const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c <= ' ' || c == 0x7f || c == '"' || c == '=' || c == '\\')
            return true;
    }
    return false;
}

/* s[0..len) as one escaped value; quoted: the format already has the quotes. */
static void put_value(struct log_buf *b, const char *s, size_t len, bool quoted)
{
    bool wrap = !quoted && needs_quotes(s, len);
    if (!quoted && !wrap) {
        put(b, s, len);
        return;
    }
    if (wrap)
        put(b, "\"", 1);
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        char esc[8];
        if (c == '"' || c == '\\') {
            esc[0] = '\\', esc[1] = (char)c;
            put(b, esc, 2);
        } else if (c == '\n') {
            put(b, "\\n", 2);
        } else if (c == '\r') {
            put(b, "\\r", 2);
        } else if (c == '\t') {
            put(b, "\\t", 2);
        } else if (c < 0x20 || c == 0x7f) {
            snprintf(esc, sizeof esc, "\\x%02x", c);
            put(b, esc, 4);
        } else {
            put(b, (const char *)&s[i], 1);
        }
    }
    if (wrap)
        put(b, "\"", 1);
}

/* printf for log lines: numbers as printf writes them, strings escaped.
 * Each number is formatted with the one conversion spec cut out of the
 * caller's format, which the compiler checked against the arguments at the
 * log call (log_write's format attribute): hence the pragma. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
static void format_line(struct log_buf *b, const char *fmt, va_list ap)
{
    const char *f = fmt;
    while (*f) {
        const char *pct = strchr(f, '%');
        if (!pct) {
            put(b, f, strlen(f));
            return;
        }
        put(b, f, (size_t)(pct - f));
        bool quoted = pct > fmt && pct[-1] == '"';
        /* One conversion: %[flags][width][.precision][length]conv */
        const char *c = pct + 1;
        char spec[32];
        size_t k = 0;
        spec[k++] = '%';
        int width = -1, prec = -1;
        while (*c && strchr("-+ #0", *c) && k < 8)
            spec[k++] = *c++;
        if (*c == '*') {
            width = va_arg(ap, int);
            c++;
        } else {
            while (*c >= '0' && *c <= '9' && k < 16)
                spec[k++] = *c++;
        }
        if (*c == '.') {
            c++;
            if (*c == '*') {
                prec = va_arg(ap, int);
                c++;
            } else {
                prec = 0;
                while (*c >= '0' && *c <= '9')
                    prec = prec * 10 + (*c++ - '0');
            }
        }
        char len[3] = "";
        if ((c[0] == 'h' && c[1] == 'h') || (c[0] == 'l' && c[1] == 'l'))
            len[0] = c[0], len[1] = c[1], c += 2;
        else if (*c && strchr("hlzjtL", *c))
            len[0] = *c++;
        char conv = *c ? *c++ : '\0';
        f = c;
        if (width >= 0)
            k += (size_t)snprintf(spec + k, sizeof spec - k, "%d", width);
        if (prec >= 0 && conv != 's')
            k += (size_t)snprintf(spec + k, sizeof spec - k, ".%d", prec);
        k += (size_t)snprintf(spec + k, sizeof spec - k, "%s%c", len, conv);
        char num[64];
        int w = 0;
        switch (conv) {
        case 's': {
            const char *s = va_arg(ap, const char *);
            if (!s)
                s = "(null)";
            size_t slen = prec >= 0 ? strnlen(s, (size_t)prec) : strlen(s);
            put_value(b, s, slen, quoted);
            continue;
        }
        case '%': put(b, "%", 1); continue;
        case 'd':
        case 'i':
        case 'u':
        case 'x':
        case 'X':
        case 'o':
        case 'c':
            if (strcmp(len, "ll") == 0)
                w = snprintf(num, sizeof num, spec, va_arg(ap, long long));
            else if (strcmp(len, "l") == 0)
                w = snprintf(num, sizeof num, spec, va_arg(ap, long));
            else if (strcmp(len, "z") == 0)
                w = snprintf(num, sizeof num, spec, va_arg(ap, size_t));
            else if (strcmp(len, "j") == 0)
                w = snprintf(num, sizeof num, spec, va_arg(ap, intmax_t));
            else if (strcmp(len, "t") == 0)
                w = snprintf(num, sizeof num, spec, va_arg(ap, ptrdiff_t));
            else
                w = snprintf(num, sizeof num, spec, va_arg(ap, int));
            break;
        case 'f':
        case 'F':
        case 'g':
        case 'G':
        case 'e':
        case 'E':
        case 'a':
        case 'A':
            if (len[0] == 'L')
                w = snprintf(num, sizeof num, spec, va_arg(ap, long double));
            else
                w = snprintf(num, sizeof num, spec, va_arg(ap, double));
            break;
        case 'p': w = snprintf(num, sizeof num, spec, va_arg(ap, void *)); break;
        default: /* not a conversion hookd uses: written as it stands, no argument taken */
            put(b, pct, (size_t)(c - pct));
            continue;
        }
        if (w > 0)
            put(b, num, (size_t)w < sizeof num ? (size_t)w : sizeof num - 1);
    }
}
#pragma GCC diagnostic pop

void log_write(enum log_level lvl, const char *event, const char *fmt, ...)
{
    char line[2048];
    struct tm tm;
    int64_t now_us = clock_local_wall_us();
    time_t now_s = (time_t)(now_us / 1000000);
    gmtime_r(&now_s, &tm);
    size_t n = strftime(line, sizeof line, "ts=%Y-%m-%dT%H:%M:%S", &tm);
    n += (size_t)snprintf(line + n, sizeof line - n, ".%03dZ level=%s event=%s", (int)(now_us % 1000000 / 1000),
                          log_level_name(lvl), event);
    if (log_worker[0] && n < sizeof line)
        n += (size_t)snprintf(line + n, sizeof line - n, " worker=%s", log_worker);
    if (fmt && fmt[0] && n < sizeof line - 2) {
        line[n++] = ' ';
        struct log_buf b = {line, n, sizeof line - 1};
        va_list ap;
        va_start(ap, fmt);
        format_line(&b, fmt, ap);
        va_end(ap);
        n = b.n;
    }
    if (n > sizeof line - 2)
        n = sizeof line - 2;
    line[n++] = '\n';
    ssize_t w = write(STDERR_FILENO, line, n);
    (void)w;
}
