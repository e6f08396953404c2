"""pytest fixtures: real services for the session, a clean database and Redis
key prefix per test, and a factory for hookd workers (always stopped)."""
from __future__ import annotations

import itertools
import os
import signal
from pathlib import Path

import pytest

from hookdtest.services import Db, Services
from hookdtest.worker import VALGRIND_SLOWDOWN, Worker, write_config

_prefixes = itertools.count(1)


def pytest_configure(config):
    config.addinivalue_line("markers", "valgrind: long-running paths also run under valgrind (make valgrind)")
    config.addinivalue_line("markers", "slow: takes more than a few seconds")


@pytest.fixture(scope="session")
def services():
    s = Services()
    try:
        yield s
    finally:
        s.stop()


class Env:
    """What one test works with: its database, Redis prefix and workers."""

    def __init__(self, services: Services, tmp: Path) -> None:
        self.services = services
        self.tmp = tmp
        self.dbname = services.new_database()
        self.db_url = services.db_url(self.dbname)
        self.db = Db(self.db_url)
        self.prefix = f"t{os.getpid()}x{next(_prefixes)}"
        self.redis = services.redis_client()
        self.workers: list[Worker] = []

    def config(self, extra: str = "", port: int | None = None, database: str | None = None, **overrides) -> Path:
        return write_config(self.tmp, database or self.db_url, self.services.redis_url, self.prefix, port=port,
                            extra=extra, **overrides)

    def worker(self, config: Path | None = None, start: bool = True, wait_ready: bool = True,
               env: dict | None = None, **overrides) -> Worker:
        config = config or self.config(**overrides)
        port = int(next(l for l in config.read_text().splitlines() if l.startswith("listen")).rsplit(":", 1)[1])
        w = Worker(config=config, port=port, log_path=self.tmp / f"worker-{len(self.workers)}.log", env=env or {})
        self.workers.append(w)
        if start:
            w.start(wait_ready=wait_ready)
        return w

    def key(self, suffix: str) -> str:
        return f"{self.prefix}:{suffix}"

    def misplaced_ids(self) -> list[str]:
        """sql/0018's invariant, after every test, whatever wrote the rows: a
        version 7 id's clock is its row's part_at (or the row is in _kept),
        else lookups by id, which prune to that partition, miss the row."""
        try:
            if not self.db.value("SELECT to_regproc('hookd_id_part') IS NOT NULL"):
                return []
            bad = []
            for table in ("webhook_inbox", "outbox_events", "outbox_deliveries"):
                n = self.db.value(f"SELECT count(*) FROM {table} WHERE part_at <> '-infinity'"
                                  " AND hookd_id_part(id) IS DISTINCT FROM part_at AND hookd_id_part(id) IS NOT NULL")
                if n:
                    bad.append(f"{n} rows of {table} whose id does not carry their part_at (sql/0018)")
            return bad
        except Exception:  # a test that dropped its schema, or stopped Postgres (autocommit: nothing to undo)
            return []

    def close(self) -> None:
        errors = []
        for w in self.workers:
            try:
                if w.proc and w.proc.poll() is None:
                    w.proc.send_signal(signal.SIGTERM)
                    try:
                        w.proc.wait(20 * VALGRIND_SLOWDOWN)  # valgrind's leak check runs at exit
                    except Exception:
                        w.proc.kill()
                        w.proc.wait()
                w.check_sanitizers()
            except AssertionError as e:
                errors.append(str(e))
        errors += self.misplaced_ids()
        self.db.close()
        if errors:
            raise AssertionError("\n".join(errors))


@pytest.fixture
def env(services, tmp_path):
    e = Env(services, tmp_path)
    try:
        yield e
    finally:
        e.close()
