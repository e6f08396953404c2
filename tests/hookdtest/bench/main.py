"""`make bench` (scripts/bench.py): runs the scenarios in order, each one
isolated from a failure of another, stops everything it started, and writes
the report (BENCH_ONLY=...: the named scenarios and the table only). A hookd
worker that dies during a scenario fails it at once (Bench.check_workers), is
reported on stderr with the scenario's name and the worker's exit status or
signal, and makes the run exit 1."""
from __future__ import annotations

import signal
import sys
import time

from hookdtest.bench.api import bench_api
from hookdtest.bench.claim import bench_claim
from hookdtest.bench.common import ONLY, REPORT, REPORT_DIR, TOOLS, Bench, WorkerDied, log
from hookdtest.bench.delivery import bench_delivery
from hookdtest.bench.inbound import bench_inbound
from hookdtest.bench.ingest import bench_ingest
from hookdtest.bench.peers import bench_peers
from hookdtest.bench.processing import bench_processing
from hookdtest.bench.retry import bench_retry
from hookdtest.bench.storm import bench_storm
from hookdtest.bench.tenants import bench_tenants
from hookdtest.bench.report import chart, machine, table_lines, write_report


def main() -> int:
    for tool in ("loadgen", "sink"):
        if not (TOOLS / tool).exists():
            print(f"bench: {TOOLS / tool} is missing (make build/tools/{tool})", file=sys.stderr)
            return 2
    started = time.monotonic()
    m = machine()
    b = Bench()
    errors: list[str] = []
    dead: list[str] = []  # workers that died, as WorkerDied said it
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    try:
        b.start()
        for fn in (bench_ingest, bench_processing, bench_delivery, bench_claim, bench_retry, bench_peers, bench_storm,
                   bench_api, bench_inbound, bench_tenants):
            name = fn.__name__.removeprefix("bench_")
            if ONLY and name not in ONLY:
                continue
            b.scenario = name
            try:
                fn(b)
                b.check_workers()  # one that died after the scenario's last wait
            except KeyboardInterrupt:
                raise
            except WorkerDied as e:
                worker_died(e, dead)
                errors.append(f"{fn.__name__}: {str(e)[:2000]}")
            except Exception as e:  # one scenario failing must not hide the others
                log(f"{fn.__name__} failed: {e}")
                errors.append(f"{fn.__name__}: {str(e)[:2000]}")
                try:  # did it fail because a worker died?
                    b.check_workers()
                except WorkerDied as d:
                    worker_died(d, dead)
            finally:
                for w in b.workers:  # anything a failed scenario left running
                    if w.proc and w.proc.poll() is None:
                        try:
                            w.stop(timeout=20)
                        except Exception:
                            pass
    finally:
        b.stop()
    if ONLY:  # a partial run: the table only, the report stays as the last full run wrote it
        print("\n".join(table_lines()))
        report_dead(dead)
        return 1 if errors else 0
    png = chart()
    write_report(m, started, png, errors)
    print()
    print("\n".join(table_lines()))
    print()
    print(f"written: {REPORT}" + (f", {REPORT_DIR / png}" if png else " (no chart: gnuplot not installed)"))
    if errors:
        print("scenarios that failed to run:\n  " + "\n  ".join(errors), file=sys.stderr)
    report_dead(dead)
    return 1 if errors else 0


def worker_died(e: WorkerDied, dead: list[str]) -> None:
    """Says so at once on stderr, with the worker's last log lines."""
    print(f"\nbench: FAIL: {e}\n", file=sys.stderr, flush=True)
    dead.append(str(e).split("\n", 1)[0])


def report_dead(dead: list[str]) -> None:
    """The dead workers again, last on stderr, where a reader of the run looks."""
    for line in dead:
        print(f"bench: FAIL: {line}", file=sys.stderr, flush=True)
