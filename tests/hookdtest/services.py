"""The throw-away PostgreSQL and Redis of one session (through
scripts/services.sh, on free loopback ports, in a temporary directory), a
database per test cloned from a migrated template, and Db, a small
autocommit client for a test's own database. Services.stop() stops both
servers; callers run it in a `finally`."""
from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path

import psycopg2
import psycopg2.extras
import redis

from hookdtest.paths import SERVICES
from hookdtest.worker import run_hookd, write_config

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
