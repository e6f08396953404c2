#!/usr/bin/env python3
"""`make soak`: hookd at a steady load for a long time (default 30 minutes),
sampling every 10 s what would grow if something leaked — each worker's RSS
and open file descriptors, Postgres connections, Redis memory — and printing
the per-metric slope at the end. `--valgrind` runs the workers under
valgrind (use a shorter --minutes): their exit status is 99 on any leak.

Load: signed order lifecycles posted in shuffled order (about --rate events/s)
to two workers, every shipment emitted to a local receiver through the
outbox. Not part of `make test` (it is about time, not correctness).

`--retention 1m` (the accelerated soak): every [retention] window
that long, passes every 5 s, log_lock_waits on; it also samples the total
size of hookd's tables and indexes, their dead tuples, and the throughput,
prints the slopes over the second half of the run (after the first windows
expired), and the longest lock wait of ingest or the workers Postgres logged.
"""
from __future__ import annotations

import argparse
import os
import random
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from hookdtest import worker as hookd_worker
from hookdtest.client import order_event, post_standard
from hookdtest.services import Db, Services
from hookdtest.util import free_port, wait_for
from hookdtest.worker import Worker, run_hookd


class Receiver:
    def __init__(self) -> None:
        self.count = 0

        outer = self

        class H(BaseHTTPRequestHandler):
            def do_POST(self):
                self.rfile.read(int(self.headers.get("content-length", 0)))
                outer.count += 1
                self.send_response(200)
                self.end_headers()

            def log_message(self, *a):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", free_port()), H)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


def proc_stats(pid: int) -> tuple[float, int]:
    rss_kb = 0
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            rss_kb = int(line.split()[1])
    return rss_kb / 1024.0, len(os.listdir(f"/proc/{pid}/fd"))


def slope(xs: list[float], ys: list[float]) -> float:
    """Least-squares slope, per minute."""
    n = len(xs)
    if n < 2:
        return 0.0
    mx, my = sum(xs) / n, sum(ys) / n
    den = sum((x - mx) ** 2 for x in xs) or 1.0
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / den * 60.0


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--minutes", type=float, default=30.0)
    ap.add_argument("--rate", type=float, default=60.0, help="inbound events per second")
    ap.add_argument("--valgrind", action="store_true")
    ap.add_argument("--retention", default="", help="every [retention] window, e.g. 1m (the accelerated soak)")
    args = ap.parse_args()
    if args.valgrind:
        os.environ["HOOKD_VALGRIND"] = "1"
        hookd_worker.VALGRIND = True
    services = Services()
    workers: list[Worker] = []
    stop = threading.Event()
    ok = True
    try:
        dbname = services.new_database()
        db = Db(services.db_url(dbname))
        rc = services.redis_client()
        recv = Receiver()
        extra = "[machine parcel]\ninitial = new\ntransition parcel.sent = new -> sent\nemit parcel.sent = parcel.sent\n"
        overrides = {}
        if args.retention:
            w_ = args.retention
            extra += (f"[retention]\ninbox = {w_}\noutbox = {w_}\nattempts = {w_}\ndead_letters = {w_}\n"
                      f"dedup = {w_}\ninterval = 5s\n")
            overrides["defer_max_age"] = "30s"
            admin = Db(services.pg_admin_url)
            admin.all(f"ALTER DATABASE {dbname} SET log_lock_waits = on")
            admin.all(f"ALTER DATABASE {dbname} SET deadlock_timeout = '200ms'")
            admin.close()
            log_start = (services.dir / "pg" / "server.log").stat().st_size
        for i in range(2):
            cfg = hookd_worker.write_config(services.dir, services.db_url(dbname), services.redis_url, "soak",
                                            extra=extra, log_level="warn", **overrides)
            cfg.write_text(cfg.read_text().replace("[hookd]\n", "[hookd]\nallow_private_networks = true\n", 1))
            port = int(next(l for l in cfg.read_text().splitlines() if l.startswith("listen")).rsplit(":", 1)[1])
            workers.append(Worker(config=cfg, port=port, log_path=services.dir / f"soak-{i}.log").start(wait_ready=True))
        run_hookd(["-c", str(workers[0].config), "endpoint", "add", "--name", "recv", "--events", "*",
                   "--url", f"http://127.0.0.1:{recv.port}/"], check=True)

        def load():
            rng, n = random.Random(1), 0
            while not stop.is_set():
                n += 1
                events = [("order.started", f"o{n}"), ("order.paid", f"o{n}"), ("order.shipped", f"o{n}"),
                          ("parcel.sent", f"p{n}")]
                rng.shuffle(events)
                for typ, eid in events:
                    try:
                        post_standard(rng.choice(workers), "shop", f"{typ}-{eid}", order_event(typ, eid))
                    except OSError:
                        pass
                time.sleep(len(events) / args.rate)

        threading.Thread(target=load, daemon=True).start()
        start = time.monotonic()
        end = start + args.minutes * 60
        samples: dict[str, list[float]] = {}
        ts: list[float] = []
        print(f"soak: {args.minutes:g} min at ~{args.rate:g} events/s, sampling every 10 s", flush=True)
        while time.monotonic() < end:
            time.sleep(min(10, max(0.0, end - time.monotonic())))
            t = time.monotonic() - start
            ts.append(t)
            row = {}
            for i, w in enumerate(workers):
                rss, fds = proc_stats(w.proc.pid)
                row[f"w{i}_rss_mib"], row[f"w{i}_fds"] = rss, fds
            row["pg_conns"] = db.value("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()")
            row["redis_mib"] = int(rc.info("memory")["used_memory"]) / 1048576
            row["backlog"] = db.value("SELECT count(*) FROM webhook_inbox WHERE status <> 'PROCESSED'")
            if args.retention:
                row["tables_mib"] = db.value("SELECT sum(bytes) FROM hookd_storage(1, 1, 1, 1, 1)") / 1048576
                for table in ("webhook_inbox", "outbox_events", "outbox_deliveries", "attempts", "hookd_dedup"):
                    row[f"dead_{table}"] = db.value("SELECT coalesce(sum(n_dead_tup), 0) FROM pg_stat_user_tables"
                                                " WHERE relname LIKE %s", table.replace("_", "\\_") + "%")
                row["partitions"] = db.value("SELECT count(*) FROM pg_inherits")
                row["ingested"] = float(rc.hget("soak:stats", "ingested") or 0)
            for k, v in row.items():
                samples.setdefault(k, []).append(float(v))
            print(f"  t={t:6.0f}s " + " ".join(f"{k}={v:.1f}" for k, v in row.items()), flush=True)
        stop.set()
        half = len(ts) // 2
        print(f"\n{'metric':<24} {'first':>9} {'last':>9} {'max':>9} {'slope/min':>10} {'2nd half slope/min':>18}")
        for k, v in samples.items():
            print(f"{k:<24} {v[0]:>9.1f} {v[-1]:>9.1f} {max(v):>9.1f} {slope(ts, v):>10.3f}"
                  f" {slope(ts[half:], v[half:]):>18.3f}")
        if args.retention:
            import re
            text = (services.dir / "pg" / "server.log").read_bytes()[log_start:].decode(errors="replace")
            waits = [float(m.group(2)) for m in re.finditer(
                r"acquired (RowExclusiveLock|AccessShareLock|RowShareLock) on relation \d+ of database \d+"
                r" after ([\d.]+) ms", text)]
            print(f"lock waits of ingest/workers over 200 ms: {len(waits)}, longest {max(waits, default=0):.0f} ms")
        wait_for(lambda: db.value("SELECT count(*) FROM webhook_inbox WHERE status NOT IN ('PROCESSED', 'QUARANTINED')")
                 == 0, timeout=120, what="the backlog drained")
        print(f"inbound rows {db.value('SELECT count(*) FROM webhook_inbox')}, deliveries received {recv.count}")
        db.close()
    finally:
        stop.set()
        for w in workers:
            try:
                code = w.stop(timeout=120)
                if code != 0:
                    ok = False
                    print(f"worker exited {code}{' (valgrind found errors)' if code == 99 else ''}")
                w.check_sanitizers()
            except AssertionError as e:
                ok = False
                print(e)
        services.stop()
    print("soak: " + ("ok" if ok else "FAILED"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
