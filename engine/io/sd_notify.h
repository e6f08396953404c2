/* The systemd notification protocol, without libsystemd: one datagram per
 * message to the AF_UNIX socket named by $NOTIFY_SOCKET (a path, or an
 * abstract name when it starts with '@'), as documented in sd_notify(3).
 * The worker says READY=1, STOPPING=1, RELOADING=1, STATUS=… and WATCHDOG=1
 * through it when run under `Type=notify` (packaging/hookd.service). When
 * $NOTIFY_SOCKET is unset every call is a no-op that succeeds. Stateless:
 * each message opens and closes its own socket, which is how libsystemd
 * does it too, and costs nothing at hookd's rate (a few per second at most).
 * Safe from any thread. */
#ifndef HOOKD_SD_NOTIFY_H
#define HOOKD_SD_NOTIFY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Whether $NOTIFY_SOCKET is set (a supervisor listens). */
bool sd_notify_enabled(void);

/* Sends `msg` (newline-separated VAR=value lines). 0 when sent or when
 * $NOTIFY_SOCKET is unset; -1 with a reason in err otherwise. */
int sd_notify_send(const char *msg, char *err, size_t errlen) __attribute__((warn_unused_result));

/* The watchdog interval asked for by the supervisor: $WATCHDOG_USEC, when
 * set, positive and meant for this process ($WATCHDOG_PID unset or equal to
 * getpid()); 0 otherwise. Ping with WATCHDOG=1 at half of it.
 * (RELOADING=1 carries MONOTONIC_USEC=, which is clock_mono_us().) */
uint64_t sd_notify_watchdog_usec(void);

#endif
