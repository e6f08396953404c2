#!/usr/bin/env python3
"""Before/after of two hookd binaries on the same Postgres and Redis in one
session, for a refactor that must not cost speed: the ingest scenario
(signed POSTs through loadgen, roles = ingest), the processing scenario
(PENDING rows to terminal, roles = inbox, 1 and 2 workers), the delivery
scenario (outbox events to 2xx at a local sink, roles = relay) and the
retry scenario (the sink answers 500 three times per webhook id, then 200)
of `make bench`, without their ceilings. Each figure is measured as a pair, old and
new back to back (in the order A B, then B A in the next round), so that a
drift of the shared machine's load hits both binaries alike; the verdict is
the median of the pairs' new/old ratios next to the ratio of the means.

    HOOKD_TOOLS=build/tools PYTHONPATH=tests /usr/bin/python3 scripts/bench_ab.py \\
        OLD_BIN NEW_BIN [--rounds 2] [--only ingest,processing,delivery,retry] [--workers 1,2]

BENCH_SCALE shrinks the sizes as in `make bench`. Prints every run and, per
figure, the means and NEW/OLD.

--callgrind runs each figure once per binary under valgrind's callgrind
and compares instructions executed per event, which the machine's load
hardly changes: throughput on a shared machine varies by tens of percent,
instruction counts by a few. Two figures: the whole process (start-up,
shutdown and the timers that run once a second included, so a longer run
costs more), and the event's own path (the inclusive cost of the callbacks
that handle it: PATHS). Use a small BENCH_SCALE (0.1 or less): callgrind
is ~50x slower."""
from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import time
from pathlib import Path

import hookdtest.worker
from hookdtest.bench.common import Bench, cpu_seconds, log
from hookdtest.bench.ingest import ingest_load
from hookdtest.bench.common import DELIVERY_EVENTS, PROC_ENTITIES, RUN_CAP_S, metrics, sh
from hookdtest.bench.delivery import start_sink
from hookdtest.bench.processing import bench_processing_run, remaining, seed_processing_rows
from hookdtest.bench.retry import RETRY_EVENTS, retry_run
from hookdtest.util import wait_for
from hookdtest.worker import Worker


def ingest_once(b: Bench) -> tuple[float, float]:
    """accepted/s, and hookd's CPU microseconds per accepted request"""
    url, db = b.new_db()
    cfg, port = b.config(url, b.prefix(), roles="ingest")
    w = b.worker(cfg, port, f"ingest-{b.nprefix}")
    id_prefix = f"ab-{os.getpid()}-{b.nprefix}"
    cpu0 = cpu_seconds(w.proc.pid)
    res = ingest_load(b, w, id_prefix)
    cpu = cpu_seconds(w.proc.pid) - cpu0
    w.stop()
    stored = db.value("SELECT count(*) FROM webhook_inbox WHERE partner_event_id LIKE %s", id_prefix + "-%")
    db.close()
    if stored != res["ok"] or res["errors"]:
        raise RuntimeError(f"ingest run lost something: stored {stored}, answered {res}")
    return res["ok_rps"], cpu * 1e6 / max(1, res["ok"])


def delivery_once(b: Bench) -> tuple[float, float]:
    """deliveries/s (the bulk emit's first 2xx to its last), and the relay's
    CPU microseconds per delivery"""
    sink, sport = start_sink(b)
    url, db = b.new_db()
    cfg, port = b.config(url, b.prefix(), roles="relay", hookd_keys={"allow_private_networks": "true"})
    r = sh([hookdtest.worker.HOOKD_BIN, "-c", str(cfg), "endpoint", "add", "--url", f"http://127.0.0.1:{sport}/",
            "--events", "*", "--name", "sink"], timeout=30)
    if r.returncode != 0:
        raise RuntimeError(f"endpoint add failed: {r.stderr}")
    w = b.worker(cfg, port, f"relay-{b.nprefix}")
    cpu0 = cpu_seconds(w.proc.pid)
    db.all("SELECT count(hookd_emit('order', 'o' || g, 'order.paid', jsonb_build_object('type', 'order.paid',"
           " 'order_id', 'o' || g, 'amount', 1999))) FROM generate_series(1, %s) g", DELIVERY_EVENTS)
    committed_at = db.value("SELECT clock_timestamp()")
    succeeded = lambda: db.value("SELECT count(*) FROM outbox_deliveries WHERE status = 'SUCCEEDED'")  # noqa: E731
    deadline = time.monotonic() + RUN_CAP_S
    while not (metrics(w).get("hookd_delivered_total", 0) >= DELIVERY_EVENTS and succeeded() >= DELIVERY_EVENTS):
        w.alive()  # raises when the worker died: never wait on a dead one
        if time.monotonic() > deadline:
            raise RuntimeError(f"delivery run incomplete after {RUN_CAP_S} s: {succeeded()}/{DELIVERY_EVENTS}")
        time.sleep(0.25)
    cpu = cpu_seconds(w.proc.pid) - cpu0
    span = float(db.value("SELECT extract(epoch FROM max(delivered_at) - %s) FROM outbox_deliveries"
                          " WHERE status = 'SUCCEEDED'", committed_at) or 0)
    w.stop()
    sink.terminate()
    sink.wait(timeout=10)
    db.close()
    return DELIVERY_EVENTS / span, cpu * 1e6 / DELIVERY_EVENTS


def retry_once(b: Bench) -> tuple[float, float]:
    """attempts/s, and the relay's CPU microseconds per attempt"""
    r = retry_run(b, RETRY_EVENTS, "off", 16, label=f"-ab{b.nprefix}", binary=hookdtest.worker.HOOKD_BIN)
    if not r["complete"]:
        raise RuntimeError(f"retry run incomplete: {r['succeeded']}/{r['events']}")
    return r["attempts_per_s"], r["cpu_s"] * 1e6 / max(1, r["attempts"])


def processing_once(b: Bench, workers: int) -> tuple[float, float]:
    """events/s, and the workers' CPU microseconds per event"""
    r = bench_processing_run(b, workers)
    if not r["complete"] or r["shipped"] != r["entities"]:
        raise RuntimeError(f"processing run incomplete or wrong: {r['done']}/{r['total']}, shipped {r['shipped']}")
    return r["rate"], sum(r["cpu_s"]) * 1e6 / r["total"]


# The callbacks an event passes through, old and new names (file:function,
# inclusive cost; DB-thread work included: callgrind adds all threads up).
PATHS = {
    "ingest": ["engine/inbound/ingest.c:handle_inbox", "engine/inbound/ingest.c:work_batch",
               "engine/inbound/ingest.c:done_batch", "engine/inbound/ingest.c:on_flush", "engine/io/batcher.c:on_turn_end"],
    "processing": ["schedulers/sched.c:on_timer", "schedulers/sched.c:on_next_due", "schedulers/sched.c:on_claimed",
                   "engine/inbound/inbox.c:work_batch", "engine/inbound/inbox.c:done_batch", "schedulers/sched.c:on_flush",
                   "engine/io/batcher.c:on_turn_end"],
}


def callgrind_path(out: Path, figure: str) -> int:
    text = subprocess.run(["callgrind_annotate", "--inclusive=yes", "--threshold=100", str(out)],
                          capture_output=True, text=True, check=True).stdout
    total = 0
    for line in text.splitlines():
        m = re.match(r"\s*([\d,]+) \([^)]*\)\s+\S*?((?:engine|schedulers)/\S+:\w+) ", line)
        if m and m.group(2) in PATHS[figure.split()[0]]:
            total += int(m.group(1).replace(",", ""))
    return total


def callgrind_worker(b: Bench, cfg: Path, port: int, name: str) -> tuple[Worker, Path]:
    out = b.work / f"callgrind-{name}.out"
    w = Worker(config=cfg, port=port, log_path=b.work / f"{name}.log",
               prefix=["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}"])
    b.workers.append(w)
    w.start(wait_ready=False)
    wait_for(lambda: w.alive() and w.ready(), 120, what=f"{name} under callgrind to be ready")
    return w, out


def callgrind_total(w: Worker, out: Path) -> int:
    w.stop(timeout=300)
    m = re.search(r"^(?:summary|totals): (\d+)", out.read_text(), flags=re.M)
    return int(m.group(1))


def callgrind_once(b: Bench, figure: str) -> tuple[int, float, float]:
    """(events, instructions an event: whole process, the event's path) of
    one run under callgrind; for processing an event is one evaluation"""
    url, db = b.new_db()
    if figure == "ingest":
        cfg, port = b.config(url, b.prefix(), roles="ingest")
        w, out = callgrind_worker(b, cfg, port, f"ingest-{b.nprefix}")
        res = ingest_load(b, w, f"cg-{os.getpid()}-{b.nprefix}")
        events = res["ok"]
    else:
        seed_processing_rows(db, PROC_ENTITIES)
        cfg, port = b.config(url, b.prefix(), roles="inbox")
        w, out = callgrind_worker(b, cfg, port, f"proc-{b.nprefix}")
        wait_for(lambda: w.alive() and remaining(db) == 0, 600, interval=0.5, what="processing under callgrind")
        # per evaluation (an attempts row each, deferrals included): how
        # often an event is deferred depends on timing, not on the binary
        events = db.value("SELECT count(*) FROM attempts")
    db.close()
    total = callgrind_total(w, out)
    return events, total / max(1, events), callgrind_path(out, figure) / max(1, events)


def measure(b: Bench, figure: str) -> tuple[float, float]:
    """One run of a figure; a run that fails (a worker gone, on a shared
    machine) is logged and run once more."""
    for attempt in (1, 2):
        try:
            if figure == "ingest":
                return ingest_once(b)
            if figure == "delivery":
                return delivery_once(b)
            if figure == "retry":
                return retry_once(b)
            return processing_once(b, int(figure.split()[1][:-1]))
        except Exception as e:
            if attempt == 2:
                raise
            log(f"   run failed, once more: {str(e)[:300]}")
            for w in b.workers:
                if w.proc and w.proc.poll() is None:
                    w.stop(timeout=20)
    raise AssertionError("unreachable")


def migrating_config(b: Bench) -> None:
    """Every database a run configures is migrated by the binary in place:
    the template holds the schema of whichever binary created it, and a
    worker does not serve on a schema older than its own."""
    plain = b.config

    def config(db_url: str, *args, **kwargs):
        cfg, port = plain(db_url, *args, **kwargs)
        r = sh([hookdtest.worker.HOOKD_BIN, "-c", str(cfg), "migrate"], record=False)
        if r.returncode != 0:
            raise AssertionError(f"migrate with {hookdtest.worker.HOOKD_BIN} failed: {r.stderr}")
        return cfg, port

    b.config = config


def series(figures: list[str]) -> dict[tuple[str, str], list[float]]:
    return {(f, k): [] for f in figures for k in ("old", "new")}


def in_pairs(a: argparse.Namespace, figures: list[str]):
    """Yields (figure, "old" or "new") with that binary in place: each figure
    as a pair, old and new back to back, the order alternating by round."""
    for rnd in range(a.rounds):
        order = [("old", a.old), ("new", a.new)]
        if rnd % 2:
            order.reverse()
        for f in figures:
            for which, binary in order:
                hookdtest.worker.HOOKD_BIN = os.path.abspath(binary)
                log(f"round {rnd + 1}, {which}: {f}")
                yield f, which


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("old")
    ap.add_argument("new")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--only", default="ingest,processing,delivery,retry")
    ap.add_argument("--workers", default="1,2")
    ap.add_argument("--callgrind", action="store_true", help="instructions an event, under callgrind")
    a = ap.parse_args()
    if a.callgrind:
        return callgrind_main(a)
    only = set(a.only.split(","))
    workers = [int(x) for x in a.workers.split(",")]
    figures = (["ingest"] if "ingest" in only else []) + \
              ([f"processing {n}w" for n in workers] if "processing" in only else []) + \
              [f for f in ("delivery", "retry") if f in only]
    runs, cpu = series(figures), series(figures)
    b = Bench()
    migrating_config(b)
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    try:
        b.start()
        for f, which in in_pairs(a, figures):
            v, us = measure(b, f)
            runs[(f, which)].append(v)
            cpu[(f, which)].append(us)
            log(f"   {which} {f}: {v:,.0f}/s, hookd CPU {us:.1f} us an event")
    finally:
        b.stop()
    print(f"\nbench_ab {started} .. {time.strftime('%H:%M UTC', time.gmtime())}, BENCH_SCALE="
          f"{os.environ.get('BENCH_SCALE', '1.0')}, rounds {a.rounds}\nold: {a.old}\nnew: {a.new}\n")
    print("| figure | old (runs) -> mean | new (runs) -> mean | new / old (means) | new / old (median pair) |\n"
          "| --- | --- | --- | ---: | ---: |")
    for f in figures:
        old, new = runs[(f, "old")], runs[(f, "new")]
        mo, mn = statistics.mean(old), statistics.mean(new)
        pairs = statistics.median(n / o for o, n in zip(old, new))
        fmt = lambda xs, m: " · ".join(f"{x:,.0f}" for x in xs) + f" -> {m:,.0f}"  # noqa: E731
        print(f"| {f}, /s | {fmt(old, mo)} | {fmt(new, mn)} | {mn / mo:.2f} | {pairs:.2f} |")
    for f in figures:
        co, cn = statistics.mean(cpu[(f, "old")]), statistics.mean(cpu[(f, "new")])
        print(f"| {f}, hookd CPU us an event | {co:.1f} | {cn:.1f} | {cn / co:.2f} | |")
    return 0


def callgrind_main(a: argparse.Namespace) -> int:
    figures = [f for f in ("ingest", "processing 1w") if f.split()[0] in a.only.split(",")]  # the paths it knows
    ir, path = series(figures), series(figures)
    b = Bench()
    migrating_config(b)
    try:
        b.start()
        for f, which in in_pairs(a, figures):
            events, per, own = callgrind_once(b, f)
            ir[(f, which)].append(per)
            path[(f, which)].append(own)
            log(f"   {which} {f}: {events} events, {per:,.0f} instructions an event, {own:,.0f} on its path")
    finally:
        b.stop()
    print(f"\nbench_ab --callgrind, BENCH_SCALE={os.environ.get('BENCH_SCALE', '1.0')}, rounds {a.rounds}\n"
          f"old: {a.old}\nnew: {a.new}\n")
    print("| figure, instructions an event | old | new | new / old |\n| --- | --- | --- | ---: |")
    for f in figures:
        for what, d in (("whole process", ir), ("the event's path", path)):
            o, n = statistics.mean(d[(f, "old")]), statistics.mean(d[(f, "new")])
            print(f"| {f}, {what} | {o:,.0f} | {n:,.0f} | {n / o:.3f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
