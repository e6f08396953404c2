#!/usr/bin/env python3
"""`make bench-scale` (issue 17): hookd's speed with months of history in its
tables, next to the same scenarios on empty tables, in the same run.

1. Two databases with the steady-state layout of a 30-day window (partitions
   of 7.5 days covering the last 30 days, as the retention pass leaves them):
   one empty, one loaded with SCALE_INBOX processed inbox rows (and their
   dedup keys), SCALE_ATTEMPTS attempts and SCALE_EVENTS delivered outbox
   events with one delivery each, generated in SQL (default 2M / 2M / 500k:
   a tenth of the issue's 20M / 20M / 5M, for a shared 2-core machine).
2. On each: ingest (signed POSTs, roles = ingest), processing (100k PENDING
   events over 25k entities, roles = inbox), delivery (20k outbox events to a
   local sink, roles = relay). The loaded figure is reported as a ratio of
   the empty one (the issue's target: >= 90%).
3. `hookd migrate` converting an installation of the previous layout
   (0001-0011) holding SCALE_MIGRATE inbox rows, as many attempts, and a
   quarter as many events and deliveries: its time, what it locked
   (pg_locks sampled while it ran), how long a probe insert waited.
Prints a table; figures are noisy on a shared machine: compare ratios."""
from __future__ import annotations

import hashlib
import json
import os
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from hookdtest.bench.common import (BODY_TEMPLATE, PGBIN, Bench, log, metrics, sh)  # noqa: E402
from hookdtest.bench.delivery import sink_count, start_sink  # noqa: E402
from hookdtest.bench.processing import remaining, seed_processing_rows  # noqa: E402
from hookdtest.paths import ROOT  # noqa: E402
from hookdtest.services import Db  # noqa: E402
from hookdtest.signing import SW_SECRET  # noqa: E402
from hookdtest.worker import HOOKD_BIN  # noqa: E402

N_INBOX = int(os.environ.get("SCALE_INBOX", 2_000_000))
N_ATTEMPTS = int(os.environ.get("SCALE_ATTEMPTS", 2_000_000))
N_EVENTS = int(os.environ.get("SCALE_EVENTS", 500_000))
N_MIGRATE = int(os.environ.get("SCALE_MIGRATE", 1_000_000))
INGEST_N, PROC_ENTITIES, DELIVERY_N = 20000, 25000, 20000
TABLES = ["webhook_inbox", "outbox_events", "outbox_deliveries", "attempts"]
RESULTS: list[tuple[str, str, str]] = []


class Results(list):
    """RESULTS, each row logged as it comes (a later failure keeps the earlier figures)."""

    def append(self, row) -> None:
        log(f"RESULT {row[0]}: {row[1]} {row[2]}")
        super().append(row)


RESULTS = Results()


def layout_30_days(db: Db) -> None:
    """_legacy emptied down to [1970-01-02, now-30d) and four 7.5-day partitions up to its old end."""
    for t in TABLES:
        t0 = db.value("SELECT hi FROM hookd_partitions(%s::regclass) WHERE part = %s::regclass", t, f"{t}_legacy")
        db.all(f"ALTER TABLE {t} DETACH PARTITION {t}_legacy")
        db.all(f"DROP TABLE {t}_legacy")
        db.all("SELECT hookd_partition_create(%s::regclass, %s, '1970-01-02', %s::timestamptz - interval '30 days')",
               t, f"{t}_legacy", t0)
        for k in range(4):
            db.all("WITH x AS (SELECT %s::timestamptz - interval '30 days' + %s * interval '7.5 days' AS lo)"
                   " SELECT hookd_partition_create(%s::regclass, hookd_partition_name(%s::regclass, x.lo), x.lo,"
                   " CASE WHEN %s = 3 THEN %s::timestamptz ELSE x.lo + interval '7.5 days' END) FROM x",
                   t0, k, t, t, k, t0)


def load_history(db: Db) -> float:
    started = time.monotonic()
    log(f"   loading {N_INBOX} inbox rows (+dedup keys), {N_ATTEMPTS} attempts, {N_EVENTS} events + deliveries")
    ts = "now() - interval '30 days' + (g::float8 / %s) * interval '29 days'"
    db.all("INSERT INTO webhook_inbox (id, partner_name, partner_event_id, payload, signature_verified, status,"
           " received_at, processed_at, event_type, entity_type, entity_id, outcome, part_at)"
           " SELECT md5('i' || g)::uuid, 'shop', 'h-' || g, jsonb_build_object('type', 'order.started', 'data',"
           " jsonb_build_object('order_id', 'h' || g)), true, 'PROCESSED', " + ts + ", " + ts + ","
           " 'order.started', 'order', 'h' || g, 'applied', " + ts + " FROM generate_series(1, %s) g",
           N_INBOX, N_INBOX, N_INBOX, N_INBOX)
    db.all("INSERT INTO hookd_dedup (partner_name, partner_event_id, inbox_id, received_at)"
           " SELECT 'shop', 'h-' || g, md5('i' || g)::uuid, " + ts + " FROM generate_series(1, %s) g",
           N_INBOX, N_INBOX)
    db.all("INSERT INTO attempts (source, source_id, attempted_at, outcome, duration_ms, part_at)"
           " SELECT 'inbox', md5('i' || mod(g, %s))::uuid, " + ts + ", 'applied', 1.5, " + ts +
           " FROM generate_series(1, %s) g", max(N_INBOX, 1), N_ATTEMPTS, N_ATTEMPTS, N_ATTEMPTS)
    db.all("INSERT INTO outbox_events (id, aggregate_type, aggregate_id, event_type, payload, created_at,"
           " fanned_out_at, processed_at, part_at) SELECT md5('e' || g)::uuid, 'order', 'h' || g, 'order.paid',"
           " '{\"amount\": 1999}', " + ts + ", " + ts + ", " + ts + ", " + ts + " FROM generate_series(1, %s) g",
           N_EVENTS, N_EVENTS, N_EVENTS, N_EVENTS, N_EVENTS)
    db.all("INSERT INTO outbox_deliveries (id, event_id, endpoint_id, status, attempts, created_at, delivered_at,"
           " last_status_code, part_at) SELECT md5('d' || g)::uuid, md5('e' || g)::uuid,"
           " '00000000-0000-0000-0000-000000000001', 'SUCCEEDED', 1, " + ts + ", " + ts + ", 200, " + ts +
           " FROM generate_series(1, %s) g", N_EVENTS, N_EVENTS, N_EVENTS, N_EVENTS)
    for table in TABLES + ["hookd_dedup"]:
        db.all(f"VACUUM ANALYZE {table}")
    # the load's dirty pages written now, not by a checkpoint in the middle of the measured
    # scenarios (months of history are not all written in the last minutes)
    db.all("CHECKPOINT")
    return time.monotonic() - started


OLD_LOCK = "SELECT id FROM webhook_inbox WHERE id = ANY(%s::uuid[]) FOR UPDATE SKIP LOCKED"


def lock_buffers(db: Db) -> tuple[int, int]:
    """Shared buffers (hit + read) that locking a batch of 250 new inbox rows
    touches: the statement of 0012 (ids alone: every partition's primary
    key probed) and sql/queries/inbox_batch_lock_rows.sql (ids that carry
    their partition, sql/0018). Rolled back."""
    new = (ROOT / "sql" / "queries" / "inbox_batch_lock_rows.sql").read_text()
    new = "\n".join(x for x in new.splitlines() if not x.startswith("--")).replace("$1", "%s")
    out = []
    for sql in (OLD_LOCK, new):
        db.all("BEGIN")
        ids = [r["id"] for r in db.all(
            "INSERT INTO webhook_inbox (partner_name, partner_event_id, payload, event_type)"
            " SELECT 'buf', 'b' || g || '-' || random(), '{}', 'order.started' FROM generate_series(1, 250) g"
            " RETURNING id::text")]
        plan = db.value("EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) " + sql, ids)
        db.all("ROLLBACK")
        top = plan[0]["Plan"]
        out.append(int(top.get("Shared Hit Blocks", 0)) + int(top.get("Shared Read Blocks", 0)))
    return out[0], out[1]


def run_ingest(b: Bench, url: str) -> float:
    cfg, port = b.config(url, b.prefix(), roles="ingest")
    w = b.worker(cfg, port, f"ingest-{port}")
    res = b.loadgen(["--url", f"{w.url}/v1/inbox/shop", "--connections", "32", "--requests", str(INGEST_N),
                     "--secret", SW_SECRET, "--scheme", "standard-webhooks", "--body-template", BODY_TEMPLATE,
                     "--entities", "10000", "--id-prefix", f"s{port}", "--max-seconds", "60"])
    w.stop()
    return float(res["ok_rps"])


def run_processing(b: Bench, url: str, db: Db) -> float:
    db.all("DELETE FROM webhook_inbox WHERE status = 'PENDING'")
    total = seed_processing_rows(db, PROC_ENTITIES) - db.value(
        "SELECT count(*) FROM webhook_inbox WHERE status <> 'PENDING'")
    cfg, port = b.config(url, b.prefix(), roles="inbox")
    t0 = time.monotonic()
    w = b.worker(cfg, port, f"proc-{port}")
    while remaining(db) and time.monotonic() - t0 < 120:
        time.sleep(0.5)
    elapsed = time.monotonic() - t0
    w.stop()
    return total / elapsed


def run_delivery(b: Bench, url: str, db: Db) -> float:
    sink, sport = start_sink(b)
    cfg, port = b.config(url, b.prefix(), roles="relay", hookd_keys={"allow_private_networks": "true"})
    r = sh([HOOKD_BIN, "-c", str(cfg), "endpoint", "add", "--url", f"http://127.0.0.1:{sport}/", "--events", "*",
            "--name", f"sink{port}"], timeout=30)
    assert r.returncode == 0, r.stderr
    w = b.worker(cfg, port, f"relay-{port}")
    t0 = time.monotonic()
    db.all("SELECT count(hookd_emit('order', 'o' || g, 'order.paid', '{\"amount\": 1999}')) "
           "FROM generate_series(1, %s) g", DELIVERY_N)
    while sink_count(sport) < DELIVERY_N and time.monotonic() - t0 < 120:
        time.sleep(0.25)
    elapsed = time.monotonic() - t0
    n = sink_count(sport)
    w.stop()
    sink.terminate()
    return n / elapsed


def scale(b: Bench) -> None:
    figures = {}
    for kind in ("empty", "loaded"):
        url, db = b.new_db()
        layout_30_days(db)
        if kind == "loaded":
            RESULTS.append(("load history (SQL)", f"{load_history(db):.0f} s", f"{N_INBOX}/{N_ATTEMPTS}/{N_EVENTS}"))
            size = db.value("SELECT pg_size_pretty(sum(bytes)) FROM hookd_storage(1, 1, 1, 1, 1)")
            RESULTS.append(("hookd tables loaded", size, ""))
        old_b, new_b = lock_buffers(db)
        RESULTS.append((f"buffers to lock 250 rows, {kind}", f"ids alone {old_b}, with part_at {new_b}",
                        "EXPLAIN (ANALYZE, BUFFERS)"))
        log(f"{kind}: ingest")
        ing = run_ingest(b, url)
        log(f"{kind}: processing")
        proc = run_processing(b, url, db)
        log(f"{kind}: delivery")
        dlv = run_delivery(b, url, db)
        figures[kind] = dict(ingest=ing, processing=proc, delivery=dlv)
        log(f"   {kind}: ingest {ing:.0f}/s, processing {proc:.0f}/s, delivery {dlv:.0f}/s")
        db.close()
    for k in ("ingest", "processing", "delivery"):
        e, l_ = figures["empty"][k], figures["loaded"][k]
        RESULTS.append((f"{k} (events/s)", f"empty {e:.0f}, loaded {l_:.0f}", f"{100 * l_ / e:.0f}% (target >= 90%)"))


def old_schema(b: Bench, name: str) -> str:
    """A database at migration 0011 (the layout before retention), recorded as hookd would."""
    admin = Db(b.services.pg_admin_url)
    admin.all(f"CREATE DATABASE {name}")
    admin.close()
    url = b.services.db_url(name)
    db = Db(url)
    db.all("CREATE TABLE schema_migrations (version text PRIMARY KEY, checksum text NOT NULL,"
           " applied_at timestamptz NOT NULL DEFAULT now())")
    for f in sorted((ROOT / "sql").glob("00*.sql")):
        if f.name >= "0012":
            break
        data = f.read_bytes()
        with db.conn.cursor() as cur:  # no parameters: the file's % signs are its own
            cur.execute(data.decode())
        db.all("INSERT INTO schema_migrations (version, checksum) VALUES (%s, %s)", f.stem,
               hashlib.sha256(data).hexdigest())
    db.close()
    return url


def migration(b: Bench) -> None:
    n, ne = N_MIGRATE, N_MIGRATE // 4
    url = old_schema(b, "convert")
    db = Db(url)
    log(f"migration: {n} inbox rows, {n} attempts, {ne} events and deliveries in the 0011 layout")
    db.all("INSERT INTO webhook_inbox (partner_name, partner_event_id, payload, signature_verified, status,"
           " received_at, processed_at, event_type, entity_type, entity_id) SELECT 'shop', 'm-' || g,"
           " '{\"type\": \"order.started\"}', true, 'PROCESSED', now(), now(), 'order.started', 'order', 'o' || g"
           " FROM generate_series(1, %s) g", n)
    db.all("INSERT INTO attempts (source, source_id, outcome) SELECT 'inbox', gen_random_uuid(), 'applied'"
           " FROM generate_series(1, %s) g", n)
    db.all("INSERT INTO outbox_events (aggregate_type, aggregate_id, event_type, payload, fanned_out_at,"
           " processed_at) SELECT 'order', 'o' || g, 'order.paid', '{}', now(), now() FROM generate_series(1, %s) g",
           ne)
    db.all("INSERT INTO outbox_deliveries (event_id, endpoint_id, status) SELECT id, gen_random_uuid(), 'SUCCEEDED'"
           " FROM outbox_events")
    db.all("VACUUM ANALYZE")
    cfg, _ = b.config(url, b.prefix(), roles="ingest")
    locks: set[tuple[str, str]] = set()
    probe: dict = {}
    done = threading.Event()

    def sample() -> None:
        s = Db(url)
        while not done.is_set():
            for r in s.all("SELECT c.relname, l.mode FROM pg_locks l JOIN pg_class c ON c.oid = l.relation"
                           " WHERE l.granted AND l.mode = 'AccessExclusiveLock' AND l.pid <> pg_backend_pid()"
                           " AND c.relkind IN ('r', 'p')"):
                locks.add((r["relname"], r["mode"]))
            time.sleep(0.1)
        s.close()

    def probe_insert() -> None:
        time.sleep(1.0)
        p = Db(url)
        t = time.monotonic()
        p.all("SELECT count(*) FROM webhook_inbox WHERE false")
        probe["wait_s"] = time.monotonic() - t
        p.close()

    threads = [threading.Thread(target=sample), threading.Thread(target=probe_insert)]
    for t in threads:
        t.start()
    t0 = time.monotonic()
    r = sh([HOOKD_BIN, "-c", str(cfg), "migrate"], timeout=3600)
    took = time.monotonic() - t0
    done.set()
    for t in threads:
        t.join()
    assert r.returncode == 0, r.stderr
    kept = db.value("SELECT count(*) FROM webhook_inbox") + db.value("SELECT count(*) FROM attempts")
    assert kept == 2 * n, kept
    total = 2 * n + 2 * ne
    RESULTS.append(("hookd migrate, 0011 -> 0012", f"{took:.1f} s for {total} rows",
                    f"{took / (total / 1e6):.1f} s per million rows; ~{took / (total / 1e6) * 50:.0f} s for"
                    " 20M+20M+5M+5M (linear)"))
    RESULTS.append(("  a reader of webhook_inbox meanwhile", f"waited {probe.get('wait_s', 0):.1f} s",
                    "(started 1 s after migrate)"))
    RESULTS.append(("  ACCESS EXCLUSIVE seen", ", ".join(sorted({n_ for n_, _ in locks}))[:200], ""))
    db.close()


def main() -> int:
    for tool in ("loadgen", "sink"):
        if not (Path(os.environ.get("HOOKD_TOOLS", ROOT / "build" / "tools")) / tool).exists():
            print(f"bench-scale: build/tools/{tool} is missing", file=sys.stderr)
            return 2
    assert (PGBIN / "pgbench").exists()
    b = Bench()
    try:
        b.start()
        if os.environ.get("SCALE_ONLY", "") in ("", "migrate"):
            migration(b)
        if os.environ.get("SCALE_ONLY", "") in ("", "scale"):
            scale(b)
    finally:
        b.stop()
    print(f"\nbench-scale, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} (shared machine: compare ratios)")
    for what, value, note in RESULTS:
        print(f"  {what:<40} {value:<36} {note}")
    print(json.dumps(RESULTS))
    return 0


if __name__ == "__main__":
    sys.exit(main())
