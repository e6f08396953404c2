"""hookd processes: the generated config every test starts from, `hookd`
commands run to completion, and the Worker (`hookd run`) with its log and
the sanitizer and valgrind checks of its output. /admin and /metrics are
served on the worker's admin_listen port (Worker.admin_url, admin_get), never
on its listen port.

HOOKD_VALGRIND=1 runs every Worker under valgrind (scripts/soak.py sets
VALGRIND here for --valgrind)."""
from __future__ import annotations

import os
import signal
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from hookdtest.client import http
from hookdtest.paths import HOOKD_BIN
from hookdtest.signing import SW_SECRET
from hookdtest.util import free_port, wait_for

VALGRIND = os.environ.get("HOOKD_VALGRIND") == "1"

BASE_CONFIG = """
[hookd]
database = {database}
redis = {redis}
listen = 127.0.0.1:{port}
admin_listen = 127.0.0.1:{admin_port}
key_prefix = {prefix}
log_level = {log_level}
heartbeat_interval = 200ms
reconcile_interval = {reconcile_interval}
lease = {lease}
max_sleep = 200ms
shutdown_timeout = 5s

[retry]
schedule = {retry_schedule}
max_attempts = 4
jitter = 0%
circuit = {circuit}

[defer]
schedule = {defer_schedule}
max_age = {defer_max_age}

[partner shop]
scheme = standard-webhooks
secret = {sw_secret}
event_type = json:type
entity_id = json:data.order_id

[machine order]
initial = draft
transition order.started = draft -> started
transition order.paid = started -> paid
transition order.shipped = paid -> shipped
transition order.cancelled = draft, started, paid -> cancelled
"""

# circuit: off, so that the tests of the retry schedule and the DLQ see every
# attempt of an always-failing endpoint; test_retry_storm turns it on.
DEFAULTS = dict(circuit="off", log_level="info", reconcile_interval="2s", lease="3s", retry_schedule="300ms, 300ms, 300ms",
                defer_schedule="200ms, 400ms", defer_max_age="1h", sw_secret=SW_SECRET)


def write_config(dir: Path, database: str, redis_url: str, prefix: str, port: int | None = None,
                 extra: str = "", **overrides) -> Path:
    values = dict(DEFAULTS, database=database, redis=redis_url, prefix=prefix, port=port or free_port())
    if "admin_port" not in values:  # /admin and /metrics: a port of its own per worker
        admin = free_port()
        while admin == values["port"]:  # a released port can come back at once
            admin = free_port()
        values["admin_port"] = admin
    values.update(overrides)
    path = dir / f"hookd-{prefix}-{values['port']}.conf"
    path.write_text(BASE_CONFIG.format(**values) + extra)
    return path


def config_admin_port(config: Path) -> int | None:
    """The port of `admin_listen = HOST:PORT` in a config file (None: off or absent)."""
    for line in Path(config).read_text().splitlines():
        key, _, value = line.partition("=")
        value = value.split(" ;", 1)[0].split("\t;", 1)[0]  # an inline comment, as inih reads it
        if key.strip() == "admin_listen" and ":" in value:
            return int(value.strip().rsplit(":", 1)[1])
    return None


def hookd_cmd(args: list[str]) -> list[str]:
    cmd = [HOOKD_BIN] + args
    if VALGRIND:
        cmd = ["valgrind", "--quiet", "--leak-check=full", "--errors-for-leak-kinds=definite",
               "--error-exitcode=99"] + cmd
    return cmd


def run_hookd(args: list[str], check: bool = False, env: dict | None = None, timeout: float = 60):
    return subprocess.run([HOOKD_BIN] + args, capture_output=True, text=True, check=check,
                          env=dict(os.environ, **(env or {})), timeout=timeout)


SANITIZER_MARKERS = ("ERROR: AddressSanitizer", "runtime error:", "ERROR: LeakSanitizer")


@dataclass
class Worker:
    """One `hookd run` process."""
    config: Path
    port: int
    log_path: Path
    env: dict = field(default_factory=dict)
    proc: subprocess.Popen | None = None
    prefix: list = field(default_factory=list)  # e.g. ["prlimit", "--nofile=256:256"] (it execs hookd)
    admin_port: int | None = None  # admin_listen's port; read from the config when not given

    def __post_init__(self) -> None:
        if self.admin_port is None:
            self.admin_port = config_admin_port(self.config)

    def start(self, wait_ready: bool = True) -> "Worker":
        self.log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(self.prefix + hookd_cmd(["-c", str(self.config), "run"]), stdout=self.log,
                                     stderr=subprocess.STDOUT, env=dict(os.environ, **self.env))
        if wait_ready:
            self.wait_ready()
        return self

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def admin_url(self) -> str:
        """/admin and /metrics live here (admin_listen)."""
        assert self.admin_port, f"{self.config} has no admin_listen"
        return f"http://127.0.0.1:{self.admin_port}"

    def get(self, path: str, timeout: float = 5):
        return http("GET", self.url + path, timeout=timeout)

    def admin_get(self, path: str, timeout: float = 5, headers: dict | None = None):
        return http("GET", self.admin_url + path, headers=headers, timeout=timeout)

    def metrics(self) -> str:
        status, _, body = self.admin_get("/metrics")
        assert status == 200, (status, body[:200])
        return body.decode()

    def ready(self) -> bool:
        status, _, _ = self.get("/readyz")
        return status == 200

    def wait_ready(self, timeout: float = 30) -> None:
        wait_for(lambda: self.alive() and self.ready(), timeout, what=f"worker on port {self.port} to be ready")

    def alive(self) -> bool:
        if self.proc and self.proc.poll() is not None:
            raise AssertionError(f"hookd exited with {self.proc.returncode}:\n{self.output()[-3000:]}")
        return True

    def signal(self, sig: int) -> None:
        self.proc.send_signal(sig)

    def kill9(self) -> None:
        self.proc.kill()
        self.proc.wait()

    def stop(self, timeout: float = 20) -> int:
        """SIGTERM, wait, return the exit status (kill -9 if it hangs)."""
        if not self.proc or self.proc.poll() is not None:
            return self.proc.returncode if self.proc else 0
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise AssertionError(f"hookd did not stop within {timeout}s after SIGTERM")

    def output(self) -> str:
        self.log.flush()
        return self.log_path.read_text(errors="replace")

    def check_sanitizers(self) -> None:
        out = self.output()
        for marker in SANITIZER_MARKERS:
            assert marker not in out, f"sanitizer report in hookd output:\n{out[-6000:]}"
        if VALGRIND and self.proc and self.proc.returncode == 99:
            raise AssertionError(f"valgrind reported errors:\n{out[-6000:]}")
