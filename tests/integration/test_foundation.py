"""Foundation: migrations, the worker's lifecycle, readiness against real
Postgres and Redis outages, config reload, and Lua scripts after a flush."""
import hashlib
import os
import signal
import subprocess
import time

import pytest

from hookdtest import migrations
from hookdtest.client import order_event, post_standard
from hookdtest.paths import ROOT
from hookdtest.services import Db
from hookdtest.util import wait_for
from hookdtest.worker import run_hookd

# An earlier hookd, which recorded each migration's raw-bytes checksum: the
# binary built from main before migration checksums left comments out.
BASE_BIN = os.environ.get("HOOKD_BASE_BIN", "/work/base/build/hookd")


def test_migrate_twice_is_a_noop(env, services):
    name = services.new_database(migrated=False)
    cfg = env.config(database=services.db_url(name))
    first = run_hookd(["-c", str(cfg), "migrate"])
    assert first.returncode == 0, first.stderr
    assert "applied 0001_inbox" in first.stdout
    second = run_hookd(["-c", str(cfg), "migrate"])
    assert second.returncode == 0, second.stderr
    assert "up to date" in second.stdout and "applied" not in second.stdout
    from hookdtest.services import Db
    db = Db(services.db_url(name))
    try:
        versions = [r["version"] for r in db.all("SELECT version FROM schema_migrations ORDER BY version")]
        assert versions[0] == "0001_inbox" and len(versions) == len(set(versions))
        tables = {r["t"] for r in db.all("SELECT tablename AS t FROM pg_tables WHERE schemaname = 'public'")}
        for t in ("webhook_inbox", "outbox_events", "webhook_endpoints", "outbox_deliveries", "attempts",
                  "dead_letters", "hookd_entities", "schema_migrations"):
            assert t in tables
        # one hookd_emit since 0026, whose defaults take every form (global, p_tenant, p_payload_retention)
        assert db.value("SELECT count(*) FROM pg_proc WHERE proname = 'hookd_emit'") == 1
    finally:
        db.close()


def test_changed_migration_is_refused(env):
    env.db.all("UPDATE schema_migrations SET checksum = 'deadbeef' WHERE version = '0002_outbox'")
    r = run_hookd(["-c", str(env.config()), "migrate"])
    assert r.returncode != 0
    assert "migration 0002_outbox was changed after it was applied" in r.stderr
    # and a worker refuses to call itself ready on such a schema
    w = env.worker(wait_ready=False)
    wait_for(lambda: w.get("/healthz")[0] == 200, what="healthz")
    time.sleep(0.5)  # give the schema check a chance to (wrongly) pass
    status, _, body = w.get("/readyz")
    assert status == 503 and b'"migrations":false' in body


def migration_files() -> dict:
    return {f.stem: f.read_bytes() for f in sorted((ROOT / "sql").glob("00*.sql"))}


def ledger(db: Db) -> dict:
    return {r["version"]: r["checksum"] for r in db.all("SELECT version, checksum FROM schema_migrations")}


def test_ledger_checksums_leave_comments_out(env):
    files = migration_files()
    got = ledger(env.db)
    assert set(got) == set(files)
    for version, data in files.items():
        # hookdtest.migrations (which builds ledgers by hand) computes what hookd records
        assert got[version] == migrations.checksum(data), version
        assert got[version] != hashlib.sha256(data).hexdigest(), version


def test_migration_edits_only_comments_may_change(env):
    data = migration_files()["0002_outbox"]
    commented = b"-- a header line added later\n" + data.replace(b"\n", b"\n  -- and a note\n", 3)
    env.db.all("UPDATE schema_migrations SET checksum = %s WHERE version = '0002_outbox'",
               migrations.checksum(commented))
    r = run_hookd(["-c", str(env.config()), "migrate"])
    assert r.returncode == 0 and "up to date" in r.stdout, r.stderr
    # the ledger's SQL with one statement changed: refused
    changed = data.replace(b"CREATE TABLE", b"CREATE UNLOGGED TABLE", 1)
    assert changed != data
    env.db.all("UPDATE schema_migrations SET checksum = %s WHERE version = '0002_outbox'",
               migrations.checksum(changed))
    r = run_hookd(["-c", str(env.config()), "migrate"])
    assert r.returncode != 0
    assert "migration 0002_outbox was changed after it was applied" in r.stderr
    # an earlier hookd's raw checksum is accepted for its own migration only
    env.db.all("UPDATE schema_migrations SET checksum = %s WHERE version = '0002_outbox'",
               hashlib.sha256(migration_files()["0001_inbox"]).hexdigest())
    r = run_hookd(["-c", str(env.config()), "migrate"])
    assert r.returncode != 0
    assert "migration 0002_outbox was changed after it was applied" in r.stderr


@pytest.mark.skipif(not os.access(BASE_BIN, os.X_OK), reason=f"no earlier hookd at {BASE_BIN} (HOOKD_BASE_BIN)")
def test_an_installation_migrated_by_an_earlier_hookd_upgrades(env, services):
    name = services.new_database(migrated=False)
    cfg = env.config(database=services.db_url(name))
    old = subprocess.run([BASE_BIN, "-c", str(cfg), "migrate"], capture_output=True, text=True, timeout=120)
    assert old.returncode == 0, old.stderr
    db = Db(services.db_url(name))
    try:
        files = migration_files()
        current = {v: migrations.checksum(data) for v, data in files.items()}
        before = ledger(db)
        assert before and set(before) <= set(files)
        assert all(before[v] != current[v] for v in before)  # raw-bytes checksums
        r = run_hookd(["-c", str(cfg), "migrate"])
        assert r.returncode == 0, r.stderr
        assert all(f"recorded {v}'s checksum without comments" in r.stdout for v in before), r.stdout
        assert all(f"applied {v}" in r.stdout for v in set(files) - set(before)), r.stdout
        assert ledger(db) == current
        # every migration applied, the earlier hookd's checksums back in the ledger: a
        # worker of this tree is ready on it before `hookd migrate` runs, and only reads it
        for v, raw in before.items():
            db.all("UPDATE schema_migrations SET checksum = %s WHERE version = %s", raw, v)
        legacy = ledger(db)
        w = env.worker(config=cfg)
        assert w.stop() == 0
        assert ledger(db) == legacy
        r = run_hookd(["-c", str(cfg), "migrate"])
        assert r.returncode == 0, r.stderr
        assert "up to date" in r.stdout and "applied" not in r.stdout
        assert all(f"recorded {v}'s checksum without comments" in r.stdout for v in before), r.stdout
        assert ledger(db) == current
        again = run_hookd(["-c", str(cfg), "migrate"])
        assert again.returncode == 0 and "recorded" not in again.stdout, again.stdout + again.stderr
        w = env.worker(config=cfg)
        status, _, body = w.get("/readyz")
        assert status == 200 and b'"migrations":true' in body, body
    finally:
        db.close()


def test_heartbeat_visible_and_removed_on_sigterm(env):
    w = env.worker()
    workers_key = env.key("workers")
    wid = wait_for(lambda: env.redis.zrange(workers_key, 0, -1), what="worker in the workers zset")[0]
    beat = wait_for(lambda: (b := env.redis.hgetall(env.key(f"worker:{wid}"))).get("ready") == "1" and b,
                    what="a heartbeat that says ready")
    assert beat["pid"] == str(w.proc.pid)
    assert beat["roles"] == "ingest,inbox,relay"
    assert beat["config_generation"] == "1"
    assert 0 < env.redis.pttl(env.key(f"worker:{wid}")) <= 3000
    first = int(beat["last_beat"])
    wait_for(lambda: int(env.redis.hget(env.key(f"worker:{wid}"), "last_beat")) > first, what="a second beat")
    assert w.stop() == 0
    assert not env.redis.exists(env.key(f"worker:{wid}"))
    assert env.redis.zscore(workers_key, wid) is None


def test_readyz_follows_redis(env, services):
    w = env.worker()
    services.stop_redis()
    try:
        wait_for(lambda: w.get("/readyz")[0] == 503, what="not ready without Redis")
        _, _, body = w.get("/readyz")
        assert b'"redis":false' in body and b'"postgres":true' in body
        assert w.get("/healthz")[0] == 200
    finally:
        services.start_redis()
    wait_for(w.ready, what="ready again after Redis is back")


def test_readyz_follows_postgres(env, services):
    w = env.worker()
    services.stop_pg()
    try:
        wait_for(lambda: w.get("/readyz")[0] == 503, what="not ready without Postgres")
        _, _, body = w.get("/readyz")
        assert b'"postgres":false' in body
    finally:
        services.start_pg()
    wait_for(w.ready, timeout=30, what="ready again after Postgres is back")


def test_worker_starts_while_redis_is_down(env, services):
    services.stop_redis()
    try:
        w = env.worker(wait_ready=False)
        wait_for(lambda: w.get("/healthz")[0] == 200, what="healthz while Redis is down")
        assert w.get("/readyz")[0] == 503
    finally:
        services.start_redis()
    wait_for(w.ready, what="ready once Redis comes up")


def test_sighup_with_broken_file_keeps_old_config(env):
    cfg = env.config()
    w = env.worker(config=cfg)
    good = cfg.read_text()
    cfg.write_text(good.replace("max_attempts = 4", "max_attempts = 4\nbogus_key = 1"))
    w.signal(signal.SIGHUP)
    wait_for(lambda: "config.reload_failed" in w.output(), what="reload failure logged")
    assert f"{cfg}:" in w.output() and "unknown key 'bogus_key'" in w.output()
    # still serving with the old config
    status, _, _ = post_standard(w, "shop", "m1", order_event("order.started", "o1"))
    assert status == 200
    wid = env.redis.zrange(env.key("workers"), 0, -1)[0]
    assert env.redis.hget(env.key(f"worker:{wid}"), "config_generation") == "1"
    # a good file is taken, and the generation moves on
    cfg.write_text(good)
    w.signal(signal.SIGHUP)
    wait_for(lambda: env.redis.hget(env.key(f"worker:{wid}"), "config_generation") == "2",
             what="generation 2 after a good reload")


def test_evalsha_survives_script_flush(env):
    w = env.worker()
    env.redis.script_flush()
    status, _, _ = post_standard(w, "shop", "m1", order_event("order.started", "o1"))
    assert status == 200
    wait_for(lambda: env.db.value("SELECT status FROM webhook_inbox WHERE partner_event_id = 'm1'") == "PROCESSED",
             what="event processed after SCRIPT FLUSH")
    assert "redis.script_reload" in w.output()


@pytest.mark.valgrind
def test_long_running_paths_exit_clean(env):
    """Ingest, evaluation, deferral, retries, dead letters, reload and a
    graceful stop in one worker: under `make valgrind` this is the leak check
    of the long-running paths (valgrind's exit code 99 fails the test)."""
    w = env.worker(lease="2s")
    for n in range(30):
        for t in ("order.shipped", "order.paid", "order.started"):
            assert post_standard(w, "shop", f"{t}-{n}", order_event(t, f"o{n}"))[0] == 200
    assert post_standard(w, "shop", "poison", order_event("order.bogus", "o1"))[0] == 200
    wait_for(lambda: env.db.value("SELECT count(*) FROM webhook_inbox WHERE status IN ('PROCESSED', 'QUARANTINED')")
             == 91, timeout=90, what="all events terminal")
    w.signal(signal.SIGHUP)
    wait_for(lambda: "config.reloaded" in w.output(), what="reload")
    assert w.stop(timeout=60) == 0
    assert env.db.value("SELECT count(*) FROM hookd_entities WHERE state = 'shipped' AND version = 3") == 30
