"""Running hookd as a systemd service: the Type=notify protocol seen from a
fake NOTIFY_SOCKET the test binds (READY=1, STATUS=, WATCHDOG=1, RELOADING=1
+ MONOTONIC_USEC then READY=1, STOPPING=1), and the Debian package of
`make deb`: its control data and contents, `systemd-analyze verify` on the
units as packaged, and — as root only — `dpkg -i`, `hookd --version` from
/usr/bin, and `dpkg --purge` leaving nothing behind."""
from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
import uuid
from pathlib import Path

import pytest

from hookdtest.paths import ROOT

DEB_UNITS = ("hookd.service", "hookd@.service")


class NotifySocket:
    """The supervisor's end: a datagram socket hookd sends to. Every message
    received is kept in order; expect() waits for the next one that matches."""

    def __init__(self, address: str) -> None:
        self.env_value = address
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind("\0" + address[1:] if address.startswith("@") else address)
        self.seen: list[dict[str, str]] = []

    def close(self) -> None:
        self.sock.close()

    def _recv(self, timeout: float) -> dict[str, str] | None:
        self.sock.settimeout(max(timeout, 0.001))
        try:
            data = self.sock.recv(4096).decode()
        except socket.timeout:
            return None
        msg = dict(line.split("=", 1) for line in data.splitlines() if "=" in line)
        self.seen.append(msg)
        return msg

    def expect(self, cond, what: str, timeout: float = 20.0) -> dict[str, str]:
        deadline = time.monotonic() + timeout
        while (left := deadline - time.monotonic()) > 0:
            msg = self._recv(left)
            if msg is not None and cond(msg):
                return msg
        raise AssertionError(f"no notify message {what} within {timeout}s; received: {self.seen}")


def status_has(*parts: str):
    return lambda m: all(p in m.get("STATUS", "") for p in parts)


def mono_usec() -> int:
    return time.clock_gettime_ns(time.CLOCK_MONOTONIC) // 1000


def test_notify_protocol(env, services, tmp_path):
    n = NotifySocket(str(tmp_path / "notify.sock"))
    try:
        w = env.worker(start=False, env={"NOTIFY_SOCKET": n.env_value, "WATCHDOG_USEC": "400000"})
        w.start(wait_ready=False)

        ready = n.expect(lambda m: m.get("READY") == "1", "READY=1")
        # READY=1 means the listener accepts: a request right now is answered.
        status, _, _ = w.get("/healthz")
        assert status == 200
        assert "STATUS" in ready and "postgres" in ready["STATUS"] and "redis" in ready["STATUS"], ready
        n.expect(status_has("ready;", "postgres up", "redis up", "schema current"), "STATUS: all up")

        for i in range(3):
            n.expect(lambda m: m.get("WATCHDOG") == "1", f"WATCHDOG=1 #{i + 1}")

        # Redis goes away and comes back: STATUS follows /readyz.
        services.stop_redis()
        try:
            n.expect(status_has("listening, not ready", "redis down"), "STATUS: redis down")
        finally:
            services.start_redis()
        n.expect(status_has("ready;", "redis up"), "STATUS: redis up again")

        before = mono_usec()
        w.signal(signal.SIGHUP)
        reloading = n.expect(lambda m: m.get("RELOADING") == "1", "RELOADING=1")
        assert before <= int(reloading["MONOTONIC_USEC"]) <= mono_usec(), reloading
        n.expect(lambda m: m.get("READY") == "1", "READY=1 after the reload")

        w.signal(signal.SIGTERM)
        stopping = n.expect(lambda m: m.get("STOPPING") == "1", "STOPPING=1")
        assert stopping.get("STATUS", "").startswith("draining"), stopping
        assert w.proc.wait(20) == 0
        assert "sd_notify.failed" not in w.output()
    finally:
        n.close()


def test_notify_start_without_redis_abstract_socket_foreign_watchdog(env, services):
    """A worker started while Redis is down is READY (its listener accepts)
    and says so in STATUS; it becomes ready when Redis comes. '@' names an
    abstract socket; WATCHDOG_PID of another process means the watchdog is
    not ours to ping."""
    n = NotifySocket(f"@hookd-test-{os.getpid()}-{uuid.uuid4().hex[:8]}")
    try:
        w = env.worker(start=False, env={"NOTIFY_SOCKET": n.env_value, "WATCHDOG_USEC": "100000",
                                         "WATCHDOG_PID": "1"})
        services.stop_redis()
        try:
            w.start(wait_ready=False)
            ready = n.expect(lambda m: m.get("READY") == "1", "READY=1")
            assert "redis down" in ready["STATUS"] and ready["STATUS"].startswith("listening, not ready"), ready
            assert w.get("/readyz")[0] == 503
        finally:
            services.start_redis()
        # Readiness is probed every second: ten watchdog periods at least.
        n.expect(status_has("ready;", "postgres up", "redis up"), "STATUS: all up")
        w.signal(signal.SIGTERM)
        n.expect(lambda m: m.get("STOPPING") == "1", "STOPPING=1")
        assert w.proc.wait(20) == 0
        assert not any("WATCHDOG" in m for m in n.seen), n.seen
    finally:
        n.close()


# ---- the Debian package ------------------------------------------------------

@pytest.fixture(scope="module")
def deb(tmp_path_factory) -> Path:
    if not shutil.which("dpkg-deb"):
        pytest.skip("dpkg-deb not installed (not a Debian system)")
    # Always the release build in build/ (`make asan` runs this file too: the
    # package must not carry a sanitizer build, nor link one with plain flags).
    # A make of its own: under `make asan` the outer make's flags (BUILD=build-asan, SAN=...) would
    # otherwise reach it through MAKEFLAGS.
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES")}
    out = subprocess.run(["make", "-s", "--no-print-directory", "BUILD=build", "deb"], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stdout + out.stderr
    path = Path(out.stdout.strip().splitlines()[-1])
    assert path.is_file() and path.suffix == ".deb", out.stdout
    return path


def dpkg_deb(*args: str) -> str:
    return subprocess.run(["dpkg-deb", *args], check=True, capture_output=True, text=True).stdout


def test_deb_metadata_and_contents(deb):
    info = dpkg_deb("--info", str(deb))
    assert "Package: hookd" in info
    depends = next(l for l in info.splitlines() if l.strip().startswith("Depends:"))
    for lib in ("libevent-2.1-7", "libevent-openssl-2.1-7", "libhiredis0.14", "libjansson4", "libpq5", "libssl3",
                "libinih1", "adduser"):
        assert lib in depends, depends
    for script in ("postinst", "prerm", "postrm", "conffiles"):
        assert script in info
    assert dpkg_deb("--ctrl-tarfile", str(deb))  # readable control archive
    conffiles = subprocess.run(f"dpkg-deb --ctrl-tarfile {deb} | tar -xO ./conffiles", shell=True, check=True,
                               capture_output=True, text=True).stdout.split()
    assert conffiles == ["/etc/hookd/hookd.conf"]

    contents = {line.split()[-1]: line.split()[0] for line in dpkg_deb("--contents", str(deb)).splitlines()}
    assert contents["./usr/bin/hookd"] == "-rwxr-xr-x"
    assert contents["./etc/hookd/hookd.conf"] == "-rw-r--r--"
    for unit in DEB_UNITS:
        assert f"./lib/systemd/system/{unit}" in contents
    for doc in ("aws.md", "azure.md", "gcp.md", "redis.md", "systemd.md"):
        assert f"./usr/share/doc/hookd/guides/deploy/{doc}" in contents
    for doc in ("CHANGELOG.md", "guides/operations.md", "reference/api.md"):
        assert f"./usr/share/doc/hookd/{doc}" in contents
    assert contents["./usr/share/man/man1/hookd.1.gz"] == "-rw-r--r--"
    for ref in ("configuration.md", "cli.md"):
        assert f"./usr/share/doc/hookd/reference/{ref}" in contents


def test_deb_man_page_is_the_reference(deb, tmp_path):
    """hookd(1) as packaged is docs/reference/hookd.1, and man renders it."""
    subprocess.run(["dpkg-deb", "-x", str(deb), str(tmp_path)], check=True)
    page = tmp_path / "usr/share/man/man1/hookd.1.gz"
    text = subprocess.run(["gzip", "-dc", str(page)], check=True, capture_output=True, text=True).stdout
    assert text == (ROOT / "docs/reference/hookd.1").read_text()
    if shutil.which("man"):
        out = subprocess.run(["man", "-l", str(page)], capture_output=True, text=True,
                             env={"MANWIDTH": "80", "MANPAGER": "cat", "PATH": "/usr/bin:/bin"})
        assert out.returncode == 0 and "hookd - a webhook reliability engine" in out.stdout, out.stderr


def test_deb_units_verify(deb, tmp_path):
    if not shutil.which("systemd-analyze"):
        pytest.skip("systemd-analyze not installed")
    subprocess.run(["dpkg-deb", "-x", str(deb), str(tmp_path)], check=True)
    units = tmp_path / "lib/systemd/system"
    for name in DEB_UNITS:
        text = (units / name).read_text()
        for line in ("Type=notify", "NoNewPrivileges=yes", "ProtectSystem=strict", "ProtectHome=yes",
                     "PrivateTmp=yes", "PrivateDevices=yes", "ProtectKernelTunables=yes",
                     "ProtectControlGroups=yes", "RestrictAddressFamilies=AF_INET AF_INET6 AF_UNIX",
                     "LockPersonality=yes", "MemoryDenyWriteExecute=yes", "SystemCallArchitectures=native",
                     "CapabilityBoundingSet=\n", "LimitNOFILE=65536", "ExecReload=/bin/kill -HUP $MAINPID",
                     "Restart=on-failure", "User=hookd"):
            assert line in text, f"{name}: no {line!r}"
    assert "-c /etc/hookd/%i.conf run" in (units / "hookd@.service").read_text()
    # Any message fails the check: verify warns with status 0 on bad keys.
    out = subprocess.run([str(ROOT / "packaging/verify-units.sh"), str(tmp_path)], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr


def test_deb_conffile_is_a_valid_config(deb, tmp_path):
    from hookdtest.worker import run_hookd
    subprocess.run(["dpkg-deb", "-x", str(deb), str(tmp_path)], check=True)
    out = run_hookd(["config", "check", str(tmp_path / "etc/hookd/hookd.conf")],
                    env={"HOOKD_PG_URL": "postgresql://hookd@127.0.0.1/hookd", "HOOKD_REDIS_URL": "redis://127.0.0.1/0"})
    assert out.returncode == 0, out.stderr


def installed(pkg: str) -> bool:
    out = subprocess.run(["dpkg-query", "-W", "-f=${Status}", pkg], capture_output=True, text=True)
    return "install ok installed" in out.stdout


def test_deb_install_and_purge(deb):
    """dpkg -i on this machine, then dpkg --purge: as root only (CI runs as
    root on a throw-away machine), and never over an existing install."""
    if os.geteuid() != 0:
        pytest.skip("installing a package needs root")
    if installed("hookd") or Path("/usr/bin/hookd").exists() or Path("/etc/hookd").exists():
        pytest.skip("hookd is already installed here; not touching it")
    user_before = subprocess.run(["getent", "passwd", "hookd"], capture_output=True).returncode == 0
    try:
        out = subprocess.run(["dpkg", "-i", str(deb)], capture_output=True, text=True)
        assert out.returncode == 0, out.stdout + out.stderr
        version = subprocess.run(["/usr/bin/hookd", "--version"], capture_output=True, text=True, check=True)
        assert "0." in version.stdout + version.stderr
        pw = subprocess.run(["getent", "passwd", "hookd"], capture_output=True, text=True, check=True).stdout
        assert pw.split(":")[6].strip() in ("/usr/sbin/nologin", "/bin/false"), pw  # a system user, no shell
        assert int(pw.split(":")[2]) < 1000, pw
        conf = os.stat("/etc/hookd/hookd.conf")
        assert conf.st_mode & 0o777 == 0o640
        assert conf.st_uid == 0 and conf.st_gid == int(pw.split(":")[3])
        for unit in DEB_UNITS:
            assert Path(f"/lib/systemd/system/{unit}").is_file()
        if shutil.which("systemd-analyze"):
            v = subprocess.run(["systemd-analyze", "verify", *(f"/lib/systemd/system/{u}" for u in DEB_UNITS)],
                               capture_output=True, text=True)
            assert v.returncode == 0 and not v.stderr.strip(), v.stderr
        # An admin's edit of the conffile survives a reinstall (it is a conffile).
        with open("/etc/hookd/hookd.conf", "a") as f:
            f.write("; edited by the test\n")
        out = subprocess.run(["dpkg", "-i", "--force-confold", str(deb)], capture_output=True, text=True)
        assert out.returncode == 0, out.stdout + out.stderr
        assert "; edited by the test" in Path("/etc/hookd/hookd.conf").read_text()
    finally:
        purge = subprocess.run(["dpkg", "--purge", "hookd"], capture_output=True, text=True)
    assert purge.returncode == 0, purge.stdout + purge.stderr
    assert not installed("hookd")
    for path in ("/usr/bin/hookd", "/etc/hookd/hookd.conf", "/etc/hookd", "/lib/systemd/system/hookd.service",
                 "/lib/systemd/system/hookd@.service", "/usr/share/doc/hookd"):
        assert not Path(path).exists(), f"{path} left after purge"
    if not user_before:
        assert subprocess.run(["getent", "passwd", "hookd"], capture_output=True).returncode != 0
        assert subprocess.run(["getent", "group", "hookd"], capture_output=True).returncode != 0
