"""What packaging/hookd.service's hardening allows, checked against what a
worker really does - without systemd, which is not PID 1 here (so the units
are never started by a real systemd in this suite; `systemd-analyze verify`
runs in test_packaging.py).

A worker runs under strace through its life as the unit drives it: start,
signed webhooks in, an outbox event out (to a receiver that refuses), a
SIGHUP reload (ExecReload), SIGTERM (KillSignal). Then:
- every system call it made is in `@system-service`, the unit's
  SystemCallFilter (expanded by `systemd-analyze syscall-filter`), so none
  would fail with EPERM (SystemCallErrorNumber);
- no mapping is ever both writable and executable (MemoryDenyWriteExecute);
- it opens no file for writing outside /dev and /proc (ProtectSystem=strict
  leaves the whole tree read-only, PrivateTmp gives it a private /tmp);
- its sockets are AF_INET, AF_INET6 and AF_UNIX (RestrictAddressFamilies),
  plus AF_NETLINK/NETLINK_ROUTE address dumps that glibc's getaddrinfo
  makes for AI_ADDRCONFIG: under the unit those fail with EAFNOSUPPORT and
  glibc then assumes both address families.

Then the same life with those filters enforced (hookdtest/sandbox.py loads
them with libseccomp the way systemd does, and execs hookd): the worker
becomes ready, takes and processes webhooks, attempts a delivery (through
getaddrinfo, whose netlink socket now fails), reloads on SIGHUP and exits 0
on SIGTERM, with no "Operation not permitted" in its log."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys

import pytest

from hookdtest.client import order_event, post_standard
from hookdtest.util import wait_for
from hookdtest.worker import Worker, run_hookd

pytestmark = pytest.mark.skipif(not (shutil.which("strace") and shutil.which("systemd-analyze")),
                                reason="needs strace and systemd-analyze")

# An ASan build (make asan) runs here too: LeakSanitizer cannot run under
# ptrace (strace) and its checker thread is not what the unit's filters are
# about, so leak checks are off for these workers (the other tests keep them).
NO_LEAK_CHECK = {"ASAN_OPTIONS": ":".join(filter(None, [os.environ.get("ASAN_OPTIONS"), "detect_leaks=0"]))}

SYSCALL = re.compile(r"^\d+\s+(?:<\.\.\. )?([a-z_0-9]+)[( ]")


def expand(group: str, seen: set | None = None) -> set[str]:
    seen = seen if seen is not None else set()
    out = subprocess.run(["systemd-analyze", "syscall-filter", group], capture_output=True, text=True,
                         check=True).stdout
    names: set[str] = set()
    for line in out.splitlines()[1:]:
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("@"):
            if line not in seen:
                seen.add(line)
                names |= expand(line, seen)
        else:
            names.add(line)
    return names


def unit_value(key: str) -> str:
    from hookdtest.paths import ROOT
    text = (ROOT / "packaging" / "hookd.service").read_text()
    return next(l.split("=", 1)[1].strip() for l in text.splitlines() if l.startswith(key + "="))


def test_a_worker_stays_inside_the_units_sandbox(env, tmp_path):
    assert unit_value("SystemCallFilter") == "@system-service"
    assert unit_value("RestrictAddressFamilies") == "AF_INET AF_INET6 AF_UNIX"
    assert unit_value("MemoryDenyWriteExecute") == "yes" and unit_value("ProtectSystem") == "strict"
    trace = tmp_path / "trace"
    cfg = env.config()
    cfg.write_text(cfg.read_text().replace("[hookd]\n", "[hookd]\nallow_private_networks = true\n", 1))
    port = int(next(l for l in cfg.read_text().splitlines() if l.startswith("listen")).rsplit(":", 1)[1])
    w = Worker(config=cfg, port=port, log_path=tmp_path / "worker.log",
               prefix=["strace", "-f", "-qq", "-s", "256", "-o", str(trace)], env=dict(NO_LEAK_CHECK))
    w.start()
    hookd_pid = None
    try:
        hookd_pid = int(wait_for(lambda: subprocess.run(["pgrep", "-P", str(w.proc.pid)], capture_output=True,
                                                        text=True).stdout.split()[0], 10, what="hookd under strace"))
        for i in range(5):
            status, _, _ = post_standard(w, "shop", f"sb-{i}", order_event("order.started", f"sb{i}"))
            assert status == 200
        r = run_hookd(["-c", str(cfg), "endpoint", "add", "--name", "sb", "--events", "*", "--url",
                       "http://127.0.0.1:1/refused"])
        assert r.returncode == 0, r.stderr
        env.db.value("SELECT hookd_emit('Order', 'sb', 'order.noted', '{}'::jsonb)::text")
        wait_for(lambda: env.db.value("SELECT count(*) FROM attempts WHERE source = 'delivery'") > 0, 20,
                 what="a delivery attempt")
        wait_for(lambda: env.db.value("SELECT count(*) FROM webhook_inbox WHERE status = 'PROCESSED'") == 5, 20,
                 what="the webhooks processed")
        subprocess.run(["kill", "-HUP", str(hookd_pid)], check=True)  # ExecReload=/bin/kill -HUP $MAINPID
        wait_for(lambda: "config.reloaded" in w.output(), 10, what="the reload")
        subprocess.run(["kill", "-TERM", str(hookd_pid)], check=True)
        assert w.proc.wait(30) == 0  # strace exits with its tracee's status
    finally:
        if w.proc.poll() is None:
            if hookd_pid:
                subprocess.run(["kill", "-KILL", str(hookd_pid)], capture_output=True)
            w.proc.kill()
            w.proc.wait()
    lines = trace.read_text(errors="replace").splitlines()
    used = {m.group(1) for line in lines for m in [SYSCALL.match(line)] if m and m.group(1) != "exit"}
    used.discard("resumed")
    allowed = expand("@system-service")
    assert len(used) > 20, sorted(used)
    assert used <= allowed, f"outside SystemCallFilter=@system-service: {sorted(used - allowed)}"
    wx = [l for l in lines if re.search(r"\b(mmap|mprotect)\(.*PROT_WRITE\|PROT_EXEC|PROT_EXEC\|PROT_WRITE", l)]
    assert not wx, wx[:3]
    writes = [l for l in lines if re.search(r"\bopenat\(.*O_(WRONLY|RDWR|CREAT)", l) and "= -1" not in l]
    outside = [l for l in writes if not re.search(r'"/(dev|proc)/', l)]
    assert not outside, outside[:5]
    families = {m.group(1) for l in lines for m in [re.search(r"\bsocket\((AF_[A-Z0-9]+), [^)]*\) = \d", l)] if m}
    assert families <= {"AF_INET", "AF_INET6", "AF_UNIX", "AF_NETLINK"}, families
    netlink = [l for l in lines if "socket(AF_NETLINK" in l]
    assert all("NETLINK_ROUTE" in l for l in netlink), netlink[:3]


def test_a_worker_runs_with_the_units_seccomp_filters_enforced(env, tmp_path):
    from hookdtest import sandbox
    allow = tmp_path / "allow"
    allow.write_text("\n".join(sorted(expand("@system-service"))))
    cfg = env.config()
    cfg.write_text(cfg.read_text().replace("[hookd]\n", "[hookd]\nallow_private_networks = true\n", 1))
    port = int(next(l for l in cfg.read_text().splitlines() if l.startswith("listen")).rsplit(":", 1)[1])
    w = Worker(config=cfg, port=port, log_path=tmp_path / "worker.log",
               prefix=[sys.executable, sandbox.__file__, str(allow), "--"], env=dict(NO_LEAK_CHECK))
    w.start()  # the sandbox execs hookd: w.proc is the worker itself
    try:
        assert open(f"/proc/{w.proc.pid}/status").read().count("Seccomp:\t2") == 1  # filter mode
        for i in range(5):
            status, _, _ = post_standard(w, "shop", f"sx-{i}", order_event("order.started", f"sx{i}"))
            assert status == 200
        r = run_hookd(["-c", str(cfg), "endpoint", "add", "--name", "sx", "--events", "*", "--url",
                       "http://localhost:1/refused"])
        assert r.returncode == 0, r.stderr
        env.db.value("SELECT hookd_emit('Order', 'sx', 'order.noted', '{}'::jsonb)::text")
        wait_for(lambda: env.db.value("SELECT count(*) FROM attempts WHERE source = 'delivery'") > 0, 20,
                 what="a delivery attempt (through getaddrinfo)")
        wait_for(lambda: env.db.value("SELECT count(*) FROM webhook_inbox WHERE status = 'PROCESSED'") == 5, 20,
                 what="the webhooks processed")
        error = env.db.value("SELECT error FROM attempts WHERE source = 'delivery' ORDER BY id DESC LIMIT 1")
        assert "refused" in (error or "").lower() or "connect" in (error or "").lower(), error
        w.signal(1)  # SIGHUP, as ExecReload sends it
        wait_for(lambda: "config.reloaded" in w.output(), 10, what="the reload")
        assert w.stop() == 0
    finally:
        if w.proc.poll() is None:
            w.kill9()
    assert "Operation not permitted" not in w.output() and "not supported" not in w.output(), w.output()[-2000:]
