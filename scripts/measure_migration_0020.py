#!/usr/bin/env python3
"""Migration 0020's cost: `hookd migrate` from 0019 to the latest
over an outbox of N events (N_TENANT of them API messages, N_MARKED of those
marked expunged the old way, {"expired": true}), in a throw-away Postgres
(fsync on, the tests' settings), with pg_locks sampled every 100 ms and a
reader and a writer of outbox_events started 1 s in. The 0019 schema is
applied from the migration files (as bench_scale.py's old_schema does); the
rows are history below 0012's partition bound. MODE=stmts times 0020's
statements one by one in one transaction instead of running hookd migrate
(hookd's "applied" lines reach a pipe only at its exit: no per-migration times).
usage: scripts/measure_migration_0020.py HOOKD_BIN N N_TENANT N_MARKED
(docs/benchmarks.md, Upgrade time: 2000000 400000 40000)"""
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from hookdtest import migrations
from hookdtest.services import Services, Db
from hookdtest.worker import write_config

ROOT = Path(__file__).resolve().parents[1]
binp, n, nt, nm = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
s = Services(fsync=True, prefix="hookd-mig-")
try:
    name = s.new_database(migrated=False)
    url = s.db_url(name)
    db = Db(url)
    db.all("CREATE TABLE schema_migrations (version text PRIMARY KEY, checksum text NOT NULL,"
           " applied_at timestamptz NOT NULL DEFAULT now())")
    for f in sorted((ROOT / "sql").glob("00*.sql")):
        if f.name >= "0020":
            break
        data = f.read_bytes()
        with db.conn.cursor() as cur:
            cur.execute(data.decode())
        db.all("INSERT INTO schema_migrations (version, checksum) VALUES (%s, %s)", f.stem, migrations.checksum(data))
    print("schema at", db.value("SELECT max(version) FROM schema_migrations"), flush=True)
    db.all("INSERT INTO hookd_tenants (id, uid, name) VALUES ('app_t', 't', 'T')")
    t = time.monotonic()
    # history: rows of the last hour, in the partition below 0012's time (as an upgraded installation's)
    db.all("INSERT INTO outbox_events (id, part_at, aggregate_type, aggregate_id, event_type, payload, fanned_out_at,"
           " processed_at) SELECT hookd_uuid7_at(x.t), x.t, 'order', 'o' || g, 'order.paid',"
           " '{\"type\": \"order.paid\", \"amount\": 1999}', x.t, x.t"
           " FROM generate_series(1, %s) g, LATERAL (SELECT date_trunc('milliseconds', now() - interval '1 hour'"
           " + g * interval '1 millisecond') AS t) x", n - nt)
    db.all("INSERT INTO outbox_events (id, part_at, aggregate_type, aggregate_id, event_type, payload, tenant_id,"
           " fanned_out_at, processed_at) SELECT hookd_uuid7_at(x.t), x.t, 'message', NULL, 'a.b',"
           " CASE WHEN g <= %s THEN '{\"expired\": true}'::jsonb ELSE '{\"n\": 1}'::jsonb END, 'app_t', x.t, x.t"
           " FROM generate_series(1, %s) g, LATERAL (SELECT date_trunc('milliseconds', now() - interval '50 minutes'"
           " + g * interval '1 millisecond') AS t) x", nm, nt)
    print("rows by partition:", db.all("SELECT tableoid::regclass::text AS p, count(*) FROM outbox_events GROUP BY 1"))
    db.all("VACUUM ANALYZE outbox_events")
    db.all("CHECKPOINT")
    size = db.value("SELECT pg_size_pretty(sum(pg_total_relation_size(part))) FROM hookd_partitions('outbox_events')")
    print(f"loaded {n} events ({nt} tenant messages, {nm} marked) in {time.monotonic() - t:.0f} s; outbox {size}", flush=True)
    if os.environ.get("MODE") == "stmts":  # 0020's statements one by one, in one transaction, timed
        sql = (ROOT / "sql" / "0020_message_payload_expiry.sql").read_text()
        body = "\n".join(l for l in sql.splitlines() if not l.startswith("--"))
        stmts, buf = [], []
        for part in body.split(";"):
            buf.append(part)
            if "".join(buf).count("$$") % 2 == 0:
                st = ";".join(buf).strip()
                if st:
                    stmts.append(st)
                buf = []
        c = Db(url)
        c.conn.autocommit = False
        with c.conn.cursor() as cur:
            for st in stmts:
                ts = time.monotonic()
                cur.execute(st)
                print(f"  {time.monotonic() - ts:7.3f} s  {st.splitlines()[0][:90]}", flush=True)
            ts = time.monotonic()
            c.conn.commit()
            print(f"  {time.monotonic() - ts:7.3f} s  COMMIT", flush=True)
        raise SystemExit(0)
    cfg = write_config(Path(s.dir), url, s.redis_url, "mig")
    locks, probes, done = {}, {}, threading.Event()
    t0 = [0.0]

    def sample():
        c = Db(url)
        me = c.value("SELECT pg_backend_pid()")
        while not done.is_set():
            for r in c.all("SELECT coalesce(c.relname, l.locktype) AS rel, l.mode, l.granted, a.query"
                           " FROM pg_locks l LEFT JOIN pg_class c ON c.oid = l.relation"
                           " JOIN pg_stat_activity a ON a.pid = l.pid WHERE l.pid <> %s"
                           " AND l.locktype = 'relation' AND c.relname LIKE 'outbox_events%%'", me):
                k = (r["rel"], r["mode"], r["granted"], "probe" if "probe" in (r["query"] or "") else "migrate")
                locks.setdefault(k, [time.monotonic() - t0[0], 0])
                locks[k][1] = time.monotonic() - t0[0]
            time.sleep(0.1)
        c.close()

    def probe(kind, sql, delay):
        time.sleep(delay)
        c = Db(url)
        ts = time.monotonic()
        c.all(sql)
        probes[kind] = (round(ts - t0[0], 2), round(time.monotonic() - ts, 2))
        c.close()

    threads = [threading.Thread(target=sample),
               threading.Thread(target=probe, args=("reader (SELECT by id, started 1 s in)",
                   "SELECT /* probe */ count(*) FROM outbox_events WHERE id = '018f0000-0000-7000-8000-000000000000'::uuid", 1.0)),
               threading.Thread(target=probe, args=("writer (INSERT, started 1 s in)",
                   "INSERT /* probe */ INTO outbox_events (aggregate_type, aggregate_id, event_type, payload)"
                   " VALUES ('probe', '1', 'probe', '{}')", 1.0))]
    t0[0] = time.monotonic()
    for th in threads:
        th.start()
    p = subprocess.Popen([binp, "-c", str(cfg), "migrate"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    stamps = []
    for line in p.stdout:
        stamps.append((round(time.monotonic() - t0[0], 2), line.strip()))
    p.wait()
    took = time.monotonic() - t0[0]
    done.set()
    for th in threads:
        th.join()
    print(f"hookd migrate 0019 -> latest: {took:.2f} s over {n} events, rc {p.returncode}", p.stderr.read(), flush=True)
    for st in stamps:
        print("  at", st[0], "s:", st[1])
    for k, v in sorted(probes.items()):
        print(f"  {k}: started at {v[0]} s, waited {v[1]} s")
    for k, (a, b) in sorted(locks.items(), key=lambda x: x[1][0]):
        print(f"  lock {k[0]} {k[1]} granted={k[2]} by {k[3]} seen {a:.1f}..{b:.1f} s")
    print("cleared markers:", db.value("SELECT count(*) FROM outbox_events WHERE payload = 'null'::jsonb"),
          "index rows:", db.value("SELECT count(*) FROM outbox_events WHERE payload_expires_at IS NOT NULL AND payload <> 'null'::jsonb"))
    db.close()
finally:
    s.stop()
