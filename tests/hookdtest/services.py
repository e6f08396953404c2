"""The throw-away PostgreSQL and Redis of one session (through
scripts/services.sh, on free loopback ports, in a temporary directory), a
database per test cloned from a migrated template, and Db, a small
autocommit client for a test's own database. Services.stop() stops both
servers; callers run it in a `finally`."""
from __future__ import annotations

import os
import shutil
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

    def __init__(self, fsync: bool = False, prefix: str = "hookd-test-", pg_settings: dict | None = None) -> None:
        """fsync off by default: tests want speed; the bench keeps it on.
        pg_settings: server settings added to services.sh's (HOOKD_PG_OPTS)."""
        self.dir = Path(tempfile.mkdtemp(prefix=prefix))
        env = {k: v for k, v in os.environ.items() if k not in ("HOOKD_PG_FSYNC", "HOOKD_PG_OPTS")}
        if not fsync:
            env["HOOKD_PG_FSYNC"] = "off"
        if pg_settings:
            env["HOOKD_PG_OPTS"] = " ".join(f"-c {k}={v}" for k, v in pg_settings.items())
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


# ---- a dedicated primary and streaming standby, for failover tests ---------

PGBIN = Path(os.environ.get("PGBIN", "/usr/lib/postgresql/15/bin"))


def _as_pg(cmd: list[str]) -> list[str]:
    """initdb and the server refuse root: run them as `postgres` then."""
    return ["runuser", "-u", "postgres", "--"] + cmd if os.getuid() == 0 else cmd


class PgServer:
    """One throw-away PostgreSQL 15 server in DIR/data on a free loopback port:
    made with initdb (a primary) or pg_basebackup -R from a running one (a
    streaming standby). Faults: stop('immediate'), promote()."""

    def __init__(self, dir: Path, name: str) -> None:
        from hookdtest.util import free_port
        self.dir = dir / name
        self.dir.mkdir(parents=True)
        self.data = self.dir / "data"
        self.port = free_port()
        self.log = self.dir / "server.log"
        if os.getuid() == 0:
            subprocess.run(["chown", "postgres:", str(self.dir)], check=True)
        self.options: list[str] = []

    def _run(self, cmd: list[str], **kw) -> subprocess.CompletedProcess:
        return subprocess.run(_as_pg(cmd), check=True, capture_output=True, text=True, **kw)

    def initdb(self) -> "PgServer":
        self._run([str(PGBIN / "initdb"), "-D", str(self.data), "-U", "postgres", "-A", "trust", "-E", "UTF8",
                   "--no-sync"])
        return self

    def basebackup_from(self, primary: "PgServer") -> "PgServer":
        """A streaming standby of primary (standby.signal + primary_conninfo)."""
        self._run([str(PGBIN / "pg_basebackup"), "-h", "127.0.0.1", "-p", str(primary.port), "-U", "postgres",
                   "-D", str(self.data), "-R", "-X", "stream", "-c", "fast", "--no-sync",
                   "-d", f"host=127.0.0.1 port={primary.port} user=postgres application_name={self.dir.name}"])
        return self

    def start(self, *settings: str) -> "PgServer":
        """settings: extra `name=value` server settings (kept for restarts)."""
        self.options += list(settings)
        opts = [f"-p {self.port}", f"-k {self.dir}", "-c listen_addresses=127.0.0.1", "-c max_connections=100",
                "-c fsync=off", "-c shared_buffers=32MB"] + [f"-c {s}" for s in self.options]
        self._run([str(PGBIN / "pg_ctl"), "-D", str(self.data), "-l", str(self.log), "-w", "-t", "60",
                   "-o", " ".join(opts), "start"])
        return self

    def stop(self, mode: str = "fast") -> None:
        if (self.data / "postmaster.pid").exists():
            subprocess.run(_as_pg([str(PGBIN / "pg_ctl"), "-D", str(self.data), "-m", mode, "-w", "-t", "60",
                                   "stop"]), check=False, capture_output=True)

    def promote(self) -> None:
        self._run([str(PGBIN / "pg_ctl"), "-D", str(self.data), "-w", "-t", "60", "promote"])

    def url(self, db: str = "hookd") -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{db}"

    def sql(self, sql: str, db: str = "postgres"):
        """Runs sql in autocommit; returns the first column of the first row."""
        conn = psycopg2.connect(self.url(db))
        conn.autocommit = True
        try:
            with conn.cursor() as cur:
                cur.execute(sql)
                row = cur.fetchone() if cur.description else None
                return row[0] if row else None
        finally:
            conn.close()


class PgPair:
    """A primary and its streaming standby (pg_basebackup -R), dedicated to one
    test: synchronous (synchronous_standby_names = '*', synchronous_commit = on:
    a commit returns once the standby has flushed it) or asynchronous.
    hosts_url() is the two-host URL a failover-aware client uses. stop() stops
    both and removes the directory; callers run it in a `finally`."""

    def __init__(self, sync: bool = True, database: str = "hookd") -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="hookd-pair-"))
        os.chmod(self.dir, 0o755)
        self.database = database
        self.sync = sync
        self.primary = PgServer(self.dir, "primary").initdb().start("wal_level=replica", "max_wal_senders=5",
                                                                     "wal_keep_size=64MB")
        self.primary.sql(f"CREATE DATABASE {database}")
        self.standby = PgServer(self.dir, "standby").basebackup_from(self.primary).start()
        if sync:
            self.primary.sql("ALTER SYSTEM SET synchronous_standby_names = '*'")
            self.primary.sql("SELECT pg_reload_conf()")
        from hookdtest.util import wait_for
        want = "sync" if sync else "async"
        wait_for(lambda: self.primary.sql("SELECT sync_state FROM pg_stat_replication") == want, 30,
                 what=f"the standby to stream ({want})")

    def hosts_url(self, first: PgServer | None = None, attrs: str = "read-write") -> str:
        """Both hosts (first one first), libpq choosing the writable one."""
        a = first or self.primary
        b = self.standby if a is self.primary else self.primary
        return (f"postgresql://postgres@127.0.0.1:{a.port},127.0.0.1:{b.port}/{self.database}"
                f"?target_session_attrs={attrs}&connect_timeout=2")

    def failover(self) -> None:
        """The primary dies (immediate stop: no shutdown checkpoint, like a
        crash), the standby is promoted."""
        self.primary.stop("immediate")
        self.standby.promote()

    def stop(self) -> None:
        for s in (self.primary, self.standby):
            s.stop("immediate")
        shutil.rmtree(self.dir, ignore_errors=True)
