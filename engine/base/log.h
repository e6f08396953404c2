/* Structured logging: one line per event, `ts=… level=… event=… key=value`,
 * to stderr. The level check happens before any formatting, so disabled
 * levels cost one comparison. Callers never pass secrets or request bodies. */
#ifndef HOOKD_LOG_H
#define HOOKD_LOG_H

enum log_level { LOG_DEBUG = 0, LOG_INFO, LOG_WARN, LOG_ERROR };

extern enum log_level log_min_level;

int log_level_parse(const char *name, enum log_level *out);
const char *log_level_name(enum log_level);
void log_set_worker(const char *worker_id); /* copied; added to every line */
void log_write(enum log_level, const char *event, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* log_info("inbox.deferred", "id=%s due_in=%s", id, due) */
#define log_at(lvl, event, ...)                                                                                       \
    do {                                                                                                              \
        if ((lvl) >= log_min_level)                                                                                   \
            log_write((lvl), (event), __VA_ARGS__);                                                                   \
    } while (0)
#define log_debug(event, ...) log_at(LOG_DEBUG, event, __VA_ARGS__)
#define log_info(event, ...) log_at(LOG_INFO, event, __VA_ARGS__)
#define log_warn(event, ...) log_at(LOG_WARN, event, __VA_ARGS__)
#define log_error(event, ...) log_at(LOG_ERROR, event, __VA_ARGS__)

#endif
