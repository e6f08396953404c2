/*
 * test_sd_notify.c — the systemd notification protocol (engine/io/sd_notify.h):
 * a datagram to a path socket and to an abstract one ('@'), a no-op without
 * NOTIFY_SOCKET, a clear error for an address that is neither, and which
 * WATCHDOG_USEC/WATCHDOG_PID pairs mean "ping".
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cmocka.h>

#include "sd_notify.h"

/* A datagram socket bound to `name` (a path, or '@' + abstract name). */
static int bind_dgram(const char *name)
{
    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    assert_true(fd >= 0);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    size_t len = strlen(name);
    memcpy(sa.sun_path, name, len);
    socklen_t salen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len);
    if (name[0] == '@')
        sa.sun_path[0] = '\0';
    else
        salen++;
    assert_int_equal(bind(fd, (struct sockaddr *)&sa, salen), 0);
    return fd;
}

static void expect_message(int fd, const char *want)
{
    char buf[512];
    ssize_t n = recv(fd, buf, sizeof buf - 1, MSG_DONTWAIT);
    assert_true(n >= 0);
    buf[n] = '\0';
    assert_string_equal(buf, want);
}

static void test_path_socket(void **state)
{
    (void)state;
    char path[64];
    snprintf(path, sizeof path, "/tmp/hookd-sd-notify-%d.sock", (int)getpid());
    unlink(path);
    int fd = bind_dgram(path);
    setenv("NOTIFY_SOCKET", path, 1);
    char err[256];
    assert_true(sd_notify_enabled());
    assert_int_equal(sd_notify_send("READY=1\nSTATUS=ready", err, sizeof err), 0);
    expect_message(fd, "READY=1\nSTATUS=ready");
    close(fd);
    unlink(path);
    /* Nobody listens any more: reported, not fatal. */
    assert_int_equal(sd_notify_send("WATCHDOG=1", err, sizeof err), -1);
    assert_non_null(strstr(err, "sendto"));
    unsetenv("NOTIFY_SOCKET");
}

static void test_abstract_socket(void **state)
{
    (void)state;
    char name[64];
    snprintf(name, sizeof name, "@hookd-sd-notify-%d", (int)getpid());
    int fd = bind_dgram(name);
    setenv("NOTIFY_SOCKET", name, 1);
    char err[256];
    assert_int_equal(sd_notify_send("STOPPING=1", err, sizeof err), 0);
    expect_message(fd, "STOPPING=1");
    close(fd);
    unsetenv("NOTIFY_SOCKET");
}

static void test_unset_and_bad(void **state)
{
    (void)state;
    char err[256];
    unsetenv("NOTIFY_SOCKET");
    assert_false(sd_notify_enabled());
    assert_int_equal(sd_notify_send("READY=1", err, sizeof err), 0);
    setenv("NOTIFY_SOCKET", "vsock:2:123", 1);
    assert_int_equal(sd_notify_send("READY=1", err, sizeof err), -1);
    assert_non_null(strstr(err, "neither a path nor an abstract name"));
    unsetenv("NOTIFY_SOCKET");
}

static void test_watchdog_env(void **state)
{
    (void)state;
    char mine[32];
    snprintf(mine, sizeof mine, "%d", (int)getpid());
    unsetenv("WATCHDOG_USEC");
    unsetenv("WATCHDOG_PID");
    assert_int_equal(sd_notify_watchdog_usec(), 0);
    setenv("WATCHDOG_USEC", "30000000", 1);
    assert_int_equal(sd_notify_watchdog_usec(), 30000000);
    setenv("WATCHDOG_PID", mine, 1);
    assert_int_equal(sd_notify_watchdog_usec(), 30000000);
    setenv("WATCHDOG_PID", "1", 1); /* meant for another process */
    assert_int_equal(sd_notify_watchdog_usec(), 0);
    unsetenv("WATCHDOG_PID");
    setenv("WATCHDOG_USEC", "-5", 1);
    assert_int_equal(sd_notify_watchdog_usec(), 0);
    setenv("WATCHDOG_USEC", "12x", 1);
    assert_int_equal(sd_notify_watchdog_usec(), 0);
    unsetenv("WATCHDOG_USEC");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_path_socket),
        cmocka_unit_test(test_abstract_socket),
        cmocka_unit_test(test_unset_and_bad),
        cmocka_unit_test(test_watchdog_env),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
