"""Test harness for hookd's integration tests.

Starts a real PostgreSQL and a real Redis on free loopback ports (through
scripts/services.sh), gives every test its own database (cloned from a
migrated template) and its own Redis key prefix, starts real `hookd`
processes with generated configs, and signs webhooks the way each partner
scheme does. Everything started here is stopped at the end, also when a
test fails.
"""
from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import signal
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import psycopg2
import psycopg2.extras
import redis

ROOT = Path(__file__).resolve().parents[2]
SERVICES = ROOT / "scripts" / "services.sh"
HOOKD_BIN = os.environ.get("HOOKD_BIN", str(ROOT / "build" / "hookd"))
VALGRIND = os.environ.get("HOOKD_VALGRIND") == "1"

# A Standard Webhooks secret (the reference SDK's test key).
SW_SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(cond: Callable[[], object], timeout: float = 20.0, interval: float = 0.05, what: str = "condition"):
    """Polls cond until it returns a truthy value; returns that value."""
    deadline = time.monotonic() + timeout
    last_exc = None
    while time.monotonic() < deadline:
        try:
            v = cond()
            if v:
                return v
        except Exception as e:  # the thing awaited may not be up yet
            last_exc = e
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}" + (f" (last error: {last_exc})" if last_exc else ""))


class Services:
    """The throw-away PostgreSQL and Redis of one test session."""

    def __init__(self) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="hookd-test-"))
        env = dict(os.environ, HOOKD_PG_FSYNC="off")
        out = subprocess.run([str(SERVICES), "start", str(self.dir)], env=env, check=True,
                             capture_output=True, text=True).stdout
        urls = dict(line.split("=", 1) for line in out.strip().splitlines())
        self.pg_admin_url = urls["HOOKD_PG_URL"].rsplit("/", 1)[0] + "/postgres"
        self.pg_port = int((self.dir / "pg.port").read_text())
        self.redis_url = urls["HOOKD_REDIS_URL"]
        self.redis_port = int((self.dir / "redis.port").read_text())
        self._template_ready = False
        self._n = 0

    def stop(self) -> None:
        subprocess.run([str(SERVICES), "stop", str(self.dir)], check=False, capture_output=True)

    # Service faults, for tests that need them.
    def stop_redis(self) -> None:
        subprocess.run([str(SERVICES), "stop-redis", str(self.dir)], check=True, capture_output=True)

    def start_redis(self) -> None:
        subprocess.run([str(SERVICES), "start-redis", str(self.dir)], check=True, capture_output=True)

    def stop_pg(self) -> None:
        subprocess.run([str(SERVICES), "stop-pg", str(self.dir)], check=True, capture_output=True)

    def start_pg(self) -> None:
        env = dict(os.environ, HOOKD_PG_FSYNC="off")
        subprocess.run([str(SERVICES), "start-pg", str(self.dir)], env=env, check=True, capture_output=True)

    def db_url(self, name: str) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.pg_port}/{name}"

    def redis_client(self) -> redis.Redis:
        return redis.Redis(host="127.0.0.1", port=self.redis_port, decode_responses=True)

    def _admin(self):
        conn = psycopg2.connect(self.pg_admin_url)
        conn.autocommit = True
        return conn

    def new_database(self, migrated: bool = True) -> str:
        """A fresh database: a clone of the migrated template, or empty."""
        self._n += 1
        name = f"t{os.getpid()}_{self._n}"
        conn = self._admin()  # autocommit: CREATE DATABASE refuses transactions
        try:
            with conn.cursor() as cur:
                if migrated and not self._template_ready:
                    cur.execute("CREATE DATABASE hookd_template")
                    cfg = write_config(Path(self.dir), self.db_url("hookd_template"), self.redis_url, "tmpl")
                    run_hookd(["-c", str(cfg), "migrate"], check=True)
                    self._template_ready = True
                cur.execute(f"CREATE DATABASE {name}" + (" TEMPLATE hookd_template" if migrated else ""))
        finally:
            conn.close()
        return name


BASE_CONFIG = """
[hookd]
database = {database}
redis = {redis}
listen = 127.0.0.1:{port}
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

DEFAULTS = dict(log_level="info", reconcile_interval="2s", lease="3s", retry_schedule="300ms, 300ms, 300ms",
                defer_schedule="200ms, 400ms", defer_max_age="1h", sw_secret=SW_SECRET)


def write_config(dir: Path, database: str, redis_url: str, prefix: str, port: int | None = None,
                 extra: str = "", **overrides) -> Path:
    values = dict(DEFAULTS, database=database, redis=redis_url, prefix=prefix, port=port or free_port())
    values.update(overrides)
    path = dir / f"hookd-{prefix}-{values['port']}.conf"
    path.write_text(BASE_CONFIG.format(**values) + extra)
    return path


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

    def get(self, path: str, timeout: float = 5):
        return http("GET", self.url + path, timeout=timeout)

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


def http(method: str, url: str, body: bytes | None = None, headers: dict | None = None, timeout: float = 10):
    """(status, headers, body bytes); never raises for HTTP error statuses."""
    req = urllib.request.Request(url, data=body, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, dict(r.headers), r.read()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read()


# ---- signing, as each partner scheme does it ------------------------------

def sign_standard(secret: str, msg_id: str, ts: int, body: bytes) -> str:
    key = base64.b64decode(secret.removeprefix("whsec_"))
    mac = hmac.new(key, f"{msg_id}.{ts}.".encode() + body, hashlib.sha256).digest()
    return "v1," + base64.b64encode(mac).decode()


def sign_stripe(secret: str, ts: int, body: bytes) -> str:
    mac = hmac.new(secret.encode(), f"{ts}.".encode() + body, hashlib.sha256).hexdigest()
    return f"t={ts},v1={mac}"


def sign_github(secret: str, body: bytes) -> str:
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def sign_hmac_hex(secret: str, body: bytes) -> str:
    return hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def order_event(event_type: str, order_id: str, **extra) -> bytes:
    return json.dumps({"type": event_type, "data": dict(order_id=order_id, **extra)}).encode()


def post_standard(worker: Worker, partner: str, msg_id: str, body: bytes, secret: str = SW_SECRET,
                  ts: int | None = None, headers: dict | None = None):
    ts = int(time.time()) if ts is None else ts
    h = {"content-type": "application/json", "webhook-id": msg_id, "webhook-timestamp": str(ts),
         "webhook-signature": sign_standard(secret, msg_id, ts, body)}
    h.update(headers or {})
    return http("POST", f"{worker.url}/v1/inbox/{partner}", body, h)


class Db:
    """A test's own database, through psycopg2 (autocommit)."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.conn = psycopg2.connect(url)
        self.conn.autocommit = True

    def all(self, sql: str, *params):
        with self.conn.cursor(cursor_factory=psycopg2.extras.RealDictCursor) as cur:
            cur.execute(sql, params)
            return cur.fetchall() if cur.description else []

    def one(self, sql: str, *params):
        rows = self.all(sql, *params)
        return rows[0] if rows else None

    def value(self, sql: str, *params):
        with self.conn.cursor() as cur:
            cur.execute(sql, params)
            row = cur.fetchone()
            return row[0] if row else None

    def close(self) -> None:
        self.conn.close()
