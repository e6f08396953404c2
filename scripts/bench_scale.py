#!/usr/bin/env python3
"""`make bench-scale`: hookd's speed with months of history in its
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

import json
import os
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

sys.path.insert(0, str(Path(__file__).resolve().parent))  # scripts/: embed.expand_macros
from embed import expand_macros  # noqa: E402
from hookdtest import migrations  # noqa: E402
from hookdtest.bench.common import (BODY_TEMPLATE, PGBIN, Bench, log, metrics, sh)  # noqa: E402
from hookdtest.bench.delivery import sink_count, start_sink  # noqa: E402
from hookdtest.bench.processing import remaining, seed_processing_rows, wait_all_terminal  # noqa: E402
from hookdtest.paths import ROOT  # noqa: E402
from hookdtest.services import Db  # noqa: E402
from hookdtest.signing import SW_SECRET  # noqa: E402
from hookdtest.worker import HOOKD_BIN  # noqa: E402

N_INBOX = int(os.environ.get("SCALE_INBOX", 2_000_000))
N_ATTEMPTS = int(os.environ.get("SCALE_ATTEMPTS", 2_000_000))
N_EVENTS = int(os.environ.get("SCALE_EVENTS", 500_000))
N_MIGRATE = int(os.environ.get("SCALE_MIGRATE", 1_000_000))
INGEST_N = int(os.environ.get("SCALE_INGEST", 20000))
PROC_ENTITIES = int(os.environ.get("SCALE_ENTITIES", 25000))
DELIVERY_N = int(os.environ.get("SCALE_DELIVERY", 20000))
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


# The load, as a restore would do it: each history partition detached, its
# indexes dropped, filled by generate_series (rows in the same order and with
# the same values as one INSERT through the parent would give), its indexes
# built again and the partition attached. The rows, their partitions and the
# indexes' definitions are those of the parent-routed load; the indexes are
# freshly built (as after pg_restore), not grown by random inserts.
LOAD_THREADS = int(os.environ.get("SCALE_LOAD_THREADS", 2))


def _history_parts(db: Db, table: str) -> list[tuple[str, str, str]]:
    return [(r["part"], r["lo"], r["hi"]) for r in db.all(
        "SELECT part::text, lo::text, hi::text FROM hookd_partitions(%s::regclass)"
        " WHERE lo > '1971-01-01' AND hi < 'infinity'", table)]


def _index_defs(db: Db, rel: str) -> tuple[list[str], list[str], list[str]]:
    """(constraint DDL, index DDL, drop DDL) of rel's indexes."""
    cons = db.all("SELECT conname, pg_get_constraintdef(oid) AS def FROM pg_constraint"
                  " WHERE conrelid = %s::regclass AND contype IN ('p', 'u', 'x')", rel)
    idx = db.all("SELECT i.indexrelid::regclass::text AS name, pg_get_indexdef(i.indexrelid) AS def"
                 " FROM pg_index i WHERE i.indrelid = %s::regclass AND NOT EXISTS (SELECT 1 FROM pg_constraint c"
                 " WHERE c.conindid = i.indexrelid AND c.conrelid = i.indrelid)", rel)
    make = [f'ALTER TABLE {rel} ADD CONSTRAINT "{c["conname"]}" {c["def"]}' for c in cons]
    drop = [f'ALTER TABLE {rel} DROP CONSTRAINT "{c["conname"]}"' for c in cons]
    return make, [x["def"] for x in idx], drop + [f"DROP INDEX {x['name']}" for x in idx]


def _pool(url: str, jobs: list[str]) -> None:
    """Runs the statements on LOAD_THREADS connections (each job a list of statements, in order)."""
    lock = threading.Lock()
    queue = list(jobs)
    errors: list[BaseException] = []

    def run() -> None:
        c = Db(url)
        try:
            while True:
                with lock:
                    if not queue or errors:
                        return
                    job = queue.pop(0)
                for stmt in job:
                    c.all(stmt)
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)
        finally:
            c.close()

    threads = [threading.Thread(target=run) for _ in range(LOAD_THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]


def load_history(db: Db, url: str) -> float:
    started = time.monotonic()
    log(f"   loading {N_INBOX} inbox rows (+dedup keys), {N_ATTEMPTS} attempts, {N_EVENTS} events + deliveries"
        f" ({LOAD_THREADS} connections, indexes built after)")
    base = db.value("SELECT now()::text")
    ts = f"'{base}'::timestamptz - interval '30 days' + (g::float8 / {{n}}) * interval '29 days'"
    selects = {
        "webhook_inbox": (N_INBOX, "(id, partner_name, partner_event_id, payload, signature_verified, status,"
                          " received_at, processed_at, event_type, entity_type, entity_id, outcome, part_at)"
                          " SELECT md5('i' || g)::uuid, 'shop', 'h-' || g, jsonb_build_object('type', 'order.started',"
                          " 'data', jsonb_build_object('order_id', 'h' || g)), true, 'PROCESSED', {ts}, {ts},"
                          " 'order.started', 'order', 'h' || g, 'applied', {ts}"),
        "attempts": (N_ATTEMPTS, "(source, source_id, attempted_at, outcome, duration_ms, part_at)"
                     f" SELECT 'inbox', md5('i' || mod(g, {max(N_INBOX, 1)}))::uuid, {{ts}}, 'applied', 1.5, {{ts}}"),
        "outbox_events": (N_EVENTS, "(id, aggregate_type, aggregate_id, event_type, payload, created_at,"
                          " fanned_out_at, processed_at, part_at) SELECT md5('e' || g)::uuid, 'order', 'h' || g,"
                          " 'order.paid', '{{\"amount\": 1999}}', {ts}, {ts}, {ts}, {ts}"),
        "outbox_deliveries": (N_EVENTS, "(id, event_id, endpoint_id, status, attempts, created_at, delivered_at,"
                              " last_status_code, part_at) SELECT md5('d' || g)::uuid, md5('e' || g)::uuid,"
                              " '00000000-0000-0000-0000-000000000001', 'SUCCEEDED', 1, {ts}, {ts}, 200, {ts}"),
    }
    fills, builds, attaches = [], [], []
    for table, (n, body) in selects.items():
        t = ts.format(n=n)
        for part, lo, hi in _history_parts(db, table):
            bound = db.value("SELECT pg_get_expr(relpartbound, oid) FROM pg_class WHERE oid = %s::regclass", part)
            make, idx, drop = _index_defs(db, part)
            db.all(f"ALTER TABLE {table} DETACH PARTITION {part}")
            for d in drop:
                db.all(d)
            # the rows whose timestamp falls in [lo, hi), as the parent would route them
            g0, g1 = (int(x) for x in db.one(
                "SELECT greatest(1, floor(extract(epoch FROM %s::timestamptz - b) / d * %s) - 1) AS a,"
                " least(%s, ceil(extract(epoch FROM %s::timestamptz - b) / d * %s) + 1) AS z"
                " FROM (SELECT %s::timestamptz - interval '30 days' AS b, 29 * 86400.0 AS d) x",
                lo, n, n, hi, n, base).values())
            if g0 <= g1:
                fills.append([f"INSERT INTO {part} {body.format(ts=t)} FROM generate_series({g0}, {g1}) g"
                              f" WHERE {t} >= '{lo}' AND {t} < '{hi}'"])
            builds += [[m] for m in make] + [[i] for i in idx]
            attaches.append(f"ALTER TABLE {table} ATTACH PARTITION {part} {bound}")
    make, idx, drop = _index_defs(db, "hookd_dedup")
    for d in drop:
        db.all(d)
    t = ts.format(n=N_INBOX)
    chunk = max(N_INBOX // 4, 1)
    for a in range(1, N_INBOX + 1, chunk):
        fills.append(["INSERT INTO hookd_dedup (partner_name, partner_event_id, inbox_id, received_at)"
                      f" SELECT 'shop', 'h-' || g, md5('i' || g)::uuid, {t}"
                      f" FROM generate_series({a}, {min(a + chunk - 1, N_INBOX)}) g"])
    builds += [[m] for m in make] + [[i] for i in idx]
    _pool(url, fills)
    log(f"   rows in: {time.monotonic() - started:.0f} s")
    _pool(url, builds)
    log(f"   indexes built: {time.monotonic() - started:.0f} s")
    for a in attaches:
        db.all(a)
    _pool(url, [[f"VACUUM ANALYZE {table}"] for table in TABLES + ["hookd_dedup"]])
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
    new = expand_macros("\n".join(x for x in new.splitlines() if not x.startswith("--")), "lock_rows").replace("$1", "%s")
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


def run_ingest(b: Bench, url: str, db: Db, rnd: int) -> float:
    cfg, port = b.config(url, b.prefix(), roles="ingest")
    w = b.worker(cfg, port, f"ingest-{port}")
    res = b.loadgen(["--url", f"{w.url}/v1/inbox/shop", "--connections", "32", "--requests", str(INGEST_N),
                     "--secret", SW_SECRET, "--scheme", "standard-webhooks", "--body-template", BODY_TEMPLATE,
                     "--entities", "10000", "--id-prefix", f"s{port}", "--max-seconds", "60"])
    w.stop()
    return float(res["ok_rps"])


def run_processing(b: Bench, url: str, db: Db, rnd: int) -> float:
    db.all("DELETE FROM webhook_inbox WHERE status = 'PENDING'")
    # the partition of now(), as autovacuum would analyze it (not the history's partitions)
    hot = db.value("SELECT part::text FROM hookd_partitions('webhook_inbox') WHERE now() >= lo AND now() < hi")
    seed_processing_rows(db, PROC_ENTITIES, prefix=f"r{rnd}-", analyze=hot)
    total = remaining(db)
    cfg, port = b.config(url, b.prefix(), roles="inbox")
    t0 = time.monotonic()
    w = b.worker(cfg, port, f"proc-{port}")
    # watched through the worker's counters (a count(*) of open rows every
    # 0.5 s cost the database as much as a tenth of the work it watched)
    left = wait_all_terminal(db, [w], total, 120, t0)
    elapsed = time.monotonic() - t0
    assert left == 0, f"{left} events still open"
    w.stop()
    return total / elapsed


def run_delivery(b: Bench, url: str, db: Db, rnd: int) -> float:
    sink, sport = start_sink(b)
    db.all("DELETE FROM webhook_endpoints")  # the previous round's endpoint (its sink is gone)
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


SCENARIOS = {"ingest": run_ingest, "processing": run_processing, "delivery": run_delivery}
SCENARIOS = {k: v for k, v in SCENARIOS.items()
             if k in os.environ.get("SCALE_SCENARIOS", "ingest,processing,delivery").split(",")}
# SCALE_STATEMENTS=1: pg_stat_statements loaded, and each run's costliest
# statements (shared buffers) logged: where the loaded database's time goes.
STATEMENTS = os.environ.get("SCALE_STATEMENTS") == "1"


def top_statements(db: Db) -> list:
    return [(int(r["blks"]), int(r["calls"]), round(float(r["ms"])), r["q"]) for r in db.all(
        "SELECT shared_blks_hit + shared_blks_read AS blks, calls, total_exec_time AS ms,"
        " left(regexp_replace(query, '\\s+', ' ', 'g'), 70) AS q FROM pg_stat_statements"
        " WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())"
        " ORDER BY shared_blks_hit + shared_blks_read DESC LIMIT 8")]
ROUNDS = int(os.environ.get("SCALE_ROUNDS", 3))


def counters(db: Db) -> dict:
    """Cluster-wide WAL and checkpoint counters, and this database's buffer
    traffic by relation (the scenario's database is the only busy one)."""
    out = dict(db.one("SELECT wal_records, wal_fpi, wal_bytes::bigint FROM pg_stat_wal"))
    out.update(db.one("SELECT checkpoints_timed + checkpoints_req AS checkpoints, buffers_checkpoint,"
                      " buffers_clean, buffers_backend, buffers_alloc FROM pg_stat_bgwriter"))
    out.update(db.one("SELECT blks_read, blks_hit FROM pg_stat_database WHERE datname = current_database()"))
    out.update(db.one("SELECT coalesce(sum(autovacuum_count + autoanalyze_count), 0)::bigint AS autovacuums"
                      " FROM pg_stat_user_tables"))
    out["rel"] = {r["name"]: (int(r["rd"]), int(r["hit"])) for r in db.all(
        "SELECT relname AS name, coalesce(heap_blks_read, 0) + coalesce(idx_blks_read, 0) AS rd,"
        " coalesce(heap_blks_hit, 0) + coalesce(idx_blks_hit, 0) AS hit FROM pg_statio_user_tables"
        " UNION ALL SELECT indexrelname, idx_blks_read, idx_blks_hit FROM pg_statio_user_indexes")}
    return out


def delta(a: dict, b: dict) -> dict:
    d = {k: int(b[k]) - int(a[k]) for k in a if k != "rel"}
    rel = {k: (v[0] - a["rel"].get(k, (0, 0))[0], v[1] - a["rel"].get(k, (0, 0))[1]) for k, v in b["rel"].items()}
    d["top_read"] = sorted(((v[0], k) for k, v in rel.items() if v[0] > 0), reverse=True)[:4]
    d["top_hit"] = sorted(((v[1], k) for k, v in rel.items() if v[1] > 0), reverse=True)[:4]
    return d


def scale(b: Bench) -> None:
    dbs = {}
    for kind in ("empty", "loaded"):
        url, db = b.new_db()
        if STATEMENTS:
            db.all("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
        layout_30_days(db)
        if kind == "loaded":
            RESULTS.append(("load history (SQL)", f"{load_history(db, url):.0f} s",
                            f"{N_INBOX}/{N_ATTEMPTS}/{N_EVENTS}"))
            size = db.value("SELECT pg_size_pretty(sum(bytes)) FROM hookd_storage(1, 1, 1, 1, 1)")
            RESULTS.append(("hookd tables loaded", size, ""))
        old_b, new_b = lock_buffers(db)
        RESULTS.append((f"buffers to lock 250 rows, {kind}", f"ids alone {old_b}, with part_at {new_b}",
                        "EXPLAIN (ANALYZE, BUFFERS)"))
        dbs[kind] = (url, db)
    # Rounds, each scenario on both databases back to back (the order swapped
    # every round), so that the machine's load changes hit both alike.
    figures: dict = {k: {"empty": [], "loaded": []} for k in SCENARIOS}
    for rnd in range(ROUNDS):
        for name, fn in SCENARIOS.items():
            for kind in (("empty", "loaded") if rnd % 2 == 0 else ("loaded", "empty")):
                url, db = dbs[kind]
                db.all("CHECKPOINT")  # each run starts from the same clean state (no debt of the previous run)
                before = counters(db)
                if STATEMENTS:
                    db.all("SELECT pg_stat_statements_reset()")
                load0 = os.getloadavg()[0]
                rate = fn(b, url, db, rnd)
                d = delta(before, counters(db))
                if STATEMENTS:
                    d["statements"] = top_statements(db)
                figures[name][kind].append(rate)
                log(f"   round {rnd + 1} {name} {kind}: {rate:.0f}/s (load {load0:.1f}) " + json.dumps(d))
    for k in SCENARIOS:
        e, l_ = figures[k]["empty"], figures[k]["loaded"]
        ratios = [x / y for x, y in zip(l_, e)]
        RESULTS.append((f"{k} (events/s)", f"empty {' '.join(f'{x:.0f}' for x in e)}",
                        f"loaded {' '.join(f'{x:.0f}' for x in l_)}"))
        RESULTS.append((f"  {k} loaded/empty", f"median {100 * sorted(ratios)[len(ratios) // 2]:.0f}%",
                        f"per round {' '.join(f'{100 * r:.0f}%' for r in ratios)}; sums"
                        f" {100 * sum(l_) / sum(e):.0f}% (target >= 90%)"))
    for _, db in dbs.values():
        db.close()


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
               migrations.checksum(data))
    db.close()
    return url


def migration(b: Bench) -> None:
    n, ne = N_MIGRATE, N_MIGRATE // 4
    url = old_schema(b, "convert")
    db = Db(url)
    log(f"migration: {n} inbox rows, {n} attempts, {ne} events and deliveries in the 0011 layout")
    t_load = time.monotonic()
    # as a restore would: the tables' keys and indexes dropped, the rows
    # inserted, the keys and indexes built, the foreign key validated
    make, drops, fks = [], [], []
    for table in TABLES:
        for r in db.all("SELECT conname, pg_get_constraintdef(oid) AS def FROM pg_constraint"
                        " WHERE conrelid = %s::regclass AND contype = 'f'", table):
            fks.append(f'ALTER TABLE {table} ADD CONSTRAINT "{r["conname"]}" {r["def"]}')
            db.all(f'ALTER TABLE {table} DROP CONSTRAINT "{r["conname"]}"')
    for table in TABLES:
        m, i, d = _index_defs(db, table)
        make += [[x] for x in m + i]
        for x in d:
            db.all(x)
    chunks = 4
    fill = []
    for k in range(chunks):
        a, z = k * n // chunks + 1, (k + 1) * n // chunks
        fill.append([f"INSERT INTO webhook_inbox (partner_name, partner_event_id, payload, signature_verified, status,"
                     " received_at, processed_at, event_type, entity_type, entity_id) SELECT 'shop', 'm-' || g,"
                     " '{\"type\": \"order.started\"}', true, 'PROCESSED', now(), now(), 'order.started', 'order',"
                     f" 'o' || g FROM generate_series({a}, {z}) g"])
        fill.append(["INSERT INTO attempts (source, source_id, outcome) SELECT 'inbox', gen_random_uuid(), 'applied'"
                     f" FROM generate_series({a}, {z}) g"])
    fill.append(["INSERT INTO outbox_events (aggregate_type, aggregate_id, event_type, payload, fanned_out_at,"
                 f" processed_at) SELECT 'order', 'o' || g, 'order.paid', '{{}}', now(), now()"
                 f" FROM generate_series(1, {ne}) g",
                 "INSERT INTO outbox_deliveries (event_id, endpoint_id, status) SELECT id, gen_random_uuid(),"
                 " 'SUCCEEDED' FROM outbox_events"])
    _pool(url, fill)
    _pool(url, make)
    for fk in fks:
        db.all(fk)
    _pool(url, [[f"VACUUM ANALYZE {t}"] for t in TABLES])
    db.all("CHECKPOINT")
    RESULTS.append(("load of the 0011 layout (SQL)", f"{time.monotonic() - t_load:.0f} s", ""))
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
    RESULTS.append(("hookd migrate, 0011 -> latest", f"{took:.1f} s for {total} rows",
                    f"{took / (total / 1e6):.1f} s per million rows; ~{took / (total / 1e6) * 50:.0f} s for"
                    " 20M+20M+5M+5M (linear)"))
    RESULTS.append(("  a reader of webhook_inbox meanwhile", f"waited {probe.get('wait_s', 0):.1f} s",
                    "(started 1 s after migrate)"))
    RESULTS.append(("  ACCESS EXCLUSIVE seen", ", ".join(sorted({n_ for n_, _ in locks}))[:200], ""))
    db.close()


def production_settings() -> dict:
    """What a production Postgres on this machine would run (PGTune's "OLTP"
    profile for its RAM and SSD: shared_buffers a quarter of RAM, the WAL
    sized so that checkpoints come from checkpoint_timeout, WAL compressed),
    the same for the empty and the loaded database. SCALE_PG=small keeps
    services.sh's test settings (shared_buffers 128 MB, the WAL defaults)."""
    preload = {"shared_preload_libraries": "pg_stat_statements"} if STATEMENTS else {}
    if os.environ.get("SCALE_PG", "production") == "small":
        return preload
    mem_mb = int(next(x for x in open("/proc/meminfo") if x.startswith("MemTotal")).split()[1]) // 1024
    return {"shared_buffers": f"{mem_mb // 4}MB", "effective_cache_size": f"{mem_mb * 3 // 4}MB",
            "maintenance_work_mem": "1GB", "work_mem": "16MB", "max_wal_size": "8GB", "min_wal_size": "2GB",
            "checkpoint_timeout": "15min", "checkpoint_completion_target": "0.9", "wal_buffers": "16MB",
            "wal_compression": "lz4", "random_page_cost": "1.1", "effective_io_concurrency": "200", **preload}


def main() -> int:
    for tool in ("loadgen", "sink"):
        if not (Path(os.environ.get("HOOKD_TOOLS", ROOT / "build" / "tools")) / tool).exists():
            print(f"bench-scale: build/tools/{tool} is missing", file=sys.stderr)
            return 2
    assert (PGBIN / "pgbench").exists()
    settings = production_settings()
    b = Bench(settings)
    try:
        b.start()
        log("Postgres settings: " + (", ".join(f"{k}={v}" for k, v in settings.items()) or "services.sh's"))
        small = os.environ.get("SCALE_PG", "production") == "small"
        RESULTS.append(("Postgres settings", "small (tests')" if small else "production",
                        " ".join(f"{k}={v}" for k, v in settings.items())))
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
