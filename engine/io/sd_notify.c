/* The systemd notification protocol; see sd_notify.h. The message goes in
 * one sendto() on a fresh SOCK_DGRAM socket; a full socket buffer on the
 * supervisor's side is reported, not retried: systemd reads promptly, and a
 * lost WATCHDOG=1 is followed by the next one half an interval later. */
#include "sd_notify.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "errbuf.h"

bool sd_notify_enabled(void)
{
    const char *path = getenv("NOTIFY_SOCKET");
    return path && *path;
}

/* $NOTIFY_SOCKET as a socket address: '/' a path, '@' an abstract name
 * (the '@' becomes a NUL byte, and the length excludes any trailing NUL). */
static int notify_address(const char *path, struct sockaddr_un *sa, socklen_t *salen, char *err, size_t errlen)
{
    size_t len = strlen(path);
    if ((path[0] != '/' && path[0] != '@') || len < 2) {
        err_set(err, errlen, "NOTIFY_SOCKET=%s: neither a path nor an abstract name", path);
        return -1;
    }
    if (len >= sizeof sa->sun_path) {
        err_set(err, errlen, "NOTIFY_SOCKET is longer than %zu bytes", sizeof sa->sun_path - 1);
        return -1;
    }
    memset(sa, 0, sizeof *sa);
    sa->sun_family = AF_UNIX;
    memcpy(sa->sun_path, path, len);
    if (path[0] == '@') {
        sa->sun_path[0] = '\0';
        *salen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len);
    } else {
        *salen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len + 1);
    }
    return 0;
}

int sd_notify_send(const char *msg, char *err, size_t errlen)
{
    if (!sd_notify_enabled())
        return 0;
    struct sockaddr_un sa;
    socklen_t salen;
    if (notify_address(getenv("NOTIFY_SOCKET"), &sa, &salen, err, errlen) != 0)
        return -1;
    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        return err_set(err, errlen, "socket: %s", strerror(errno));
    }
    size_t len = strlen(msg);
    ssize_t n = sendto(fd, msg, len, MSG_NOSIGNAL, (const struct sockaddr *)&sa, salen);
    int saved = errno;
    close(fd);
    if (n < 0 || (size_t)n != len) {
        return err_set(err, errlen, "sendto NOTIFY_SOCKET: %s", n < 0 ? strerror(saved) : "short write");
    }
    return 0;
}

uint64_t sd_notify_watchdog_usec(void)
{
    const char *usec = getenv("WATCHDOG_USEC");
    if (!usec || !*usec)
        return 0;
    const char *pid = getenv("WATCHDOG_PID");
    if (pid && *pid) {
        char *end;
        errno = 0;
        long long p = strtoll(pid, &end, 10);
        if (errno || *end || p != (long long)getpid())
            return 0;
    }
    char *end;
    errno = 0;
    unsigned long long v = strtoull(usec, &end, 10);
    if (errno || *end || usec[0] == '-')
        return 0;
    return (uint64_t)v;
}
