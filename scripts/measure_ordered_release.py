#!/usr/bin/env python3
"""Ordered delivery: the time from one delivery's answer to its
successor's send (delivered_at minus the attempt's duration, less the
predecessor's delivered_at), per aggregate, with binaries alternated round by
round: AGGREGATES x EVENTS emitted in one statement to one ordered endpoint
on tests/tools/sink, one worker (roles = relay), a throw-away Postgres and
Redis (the tests' services).
usage: scripts/measure_ordered_release.py ROUNDS AGGREGATES EVENTS LABEL=BIN...
(docs/benchmarks.md, Ordered endpoints: 3 4 25 main=<main's build/hookd> new=build/hookd)"""
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from hookdtest.services import Services, Db
from hookdtest.worker import write_config

rounds, naggs, nev = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
bins = dict(a.split("=", 1) for a in sys.argv[4:])
tools = Path(os.environ.get("HOOKD_TOOLS", Path(__file__).resolve().parents[1] / "build" / "tools"))
s = Services(prefix="hookd-ordered-")
procs = []
try:
    sink = subprocess.Popen([str(tools / "sink"), "--port", "0"], stdout=subprocess.PIPE, text=True)
    procs.append(sink)
    sport = json.loads(sink.stdout.readline())["listening"]
    results = {k: [] for k in bins}
    for rnd in range(rounds):
        for label, binp in bins.items():
            name = s.new_database(migrated=False)
            url = s.db_url(name)
            cfg = write_config(Path(s.dir), url, s.redis_url, f"p{rnd}{label}")
            cfg.write_text(cfg.read_text().replace("[hookd]\n", "[hookd]\nallow_private_networks = true\nroles = relay\n", 1))
            r = subprocess.run([binp, "-c", str(cfg), "migrate"], capture_output=True, text=True)
            assert r.returncode == 0, r.stderr
            r = subprocess.run([binp, "-c", str(cfg), "endpoint", "add", "--url", f"http://127.0.0.1:{sport}/", "--events", "*",
                                "--name", "sink", "--ordered"], capture_output=True, text=True)
            assert r.returncode == 0, r.stderr
            log = open(Path(s.dir) / f"w-{rnd}-{label}.log", "w")
            w = subprocess.Popen([binp, "-c", str(cfg), "run"], stdout=log, stderr=subprocess.STDOUT)
            procs.append(w)
            db = Db(url)
            time.sleep(1.0)
            t0 = time.monotonic()
            db.value("SELECT count(*) FROM (SELECT hookd_emit('order', 'a' || a, 'order.paid', jsonb_build_object('n', n))"
                     " FROM generate_series(1, %s) n, generate_series(1, %s) a ORDER BY n, a) x", nev, naggs)
            total = nev * naggs
            while db.value("SELECT count(*) FROM outbox_deliveries WHERE status = 'SUCCEEDED'") < total:
                if time.monotonic() - t0 > 300:
                    raise SystemExit(f"{label}: timeout")
                time.sleep(0.2)
            elapsed = time.monotonic() - t0
            gaps = [float(r["gap"]) for r in db.all(
                "WITH s AS (SELECT e.aggregate_id AS agg, e.emit_seq AS seq, d.delivered_at AS done,"
                " a.attempted_at AS sent_rec, a.duration_ms AS dur"
                " FROM outbox_deliveries d JOIN outbox_events e ON e.id = d.event_id"
                " JOIN attempts a ON a.source = 'delivery' AND a.source_id = d.id AND a.outcome = 'succeeded'),"
                " o AS (SELECT agg, seq, done - dur * interval '1 millisecond' AS sent,"
                " lag(done) OVER (PARTITION BY agg ORDER BY seq) AS prev_done FROM s)"
                " SELECT extract(epoch FROM sent - prev_done) * 1000 AS gap FROM o WHERE prev_done IS NOT NULL")]
            gaps.sort()
            res = dict(label=label, round=rnd, elapsed_s=round(elapsed, 2), n=len(gaps),
                       p50_ms=round(statistics.median(gaps), 1), p90_ms=round(gaps[int(0.9 * (len(gaps) - 1))], 1),
                       max_ms=round(gaps[-1], 1), mean_ms=round(statistics.mean(gaps), 1),
                       load=os.getloadavg()[0])
            print(json.dumps(res), flush=True)
            results[label].append(res)
            w.terminate(); w.wait(20); procs.remove(w)
            db.close()
    for label, rs in results.items():
        print(label, "p50 of p50s", statistics.median(r["p50_ms"] for r in rs), "mean of means",
              round(statistics.mean(r["mean_ms"] for r in rs), 1), "elapsed", [r["elapsed_s"] for r in rs])
finally:
    for p in procs:
        p.terminate()
        try: p.wait(10)
        except Exception: p.kill()
    s.stop()
