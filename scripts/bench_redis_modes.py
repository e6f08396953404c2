#!/usr/bin/env python3
"""`make bench-redis`: the processing figure of `make bench` (PENDING inbox
rows -> applied transitions, one worker, roles = inbox) with each Redis mode
in the same run: a plain single node, the same over TLS (rediss://), a
three-master Redis Cluster (redis+cluster://) and that cluster over TLS
(rediss+cluster://). The modes take turns, ROUNDS times (default 2), so a
burst of load from other users of the machine hits all of them alike; the
median of each mode is set against the plain node's.

Writes its section of the bench report, build/bench/report.md (between the
redis-modes markers, which `make bench` keeps), and prints it. Environment: HOOKD_BIN, HOOKD_TOOLS,
BENCH_SCALE (default 0.4 here: 40,000 rows per run), ROUNDS.
tests/ must be on PYTHONPATH, as the Makefile sets it.
"""
from __future__ import annotations

import os
import statistics
import sys
import time

os.environ.setdefault("BENCH_SCALE", "0.4")

from hookdtest.bench.common import (PROC_ENTITIES, PROC_EVENTS_PER_ENTITY, SCALE, REPORT, Bench,  # noqa: E402
                                    log)
from hookdtest.bench.processing import bench_processing_run  # noqa: E402
from hookdtest.bench.report import machine  # noqa: E402
from hookdtest.redis_servers import RedisGroup, make_certs  # noqa: E402

BEGIN, END = "<!-- redis-modes: begin (scripts/bench_redis_modes.py) -->", "<!-- redis-modes: end -->"
MODES = ("plain", "tls", "cluster", "cluster-tls")


class ModeBench(Bench):
    """Bench whose worker configs point at the Redis of the mode under test."""

    redis_url = ""
    redis_keys: dict = {}

    def config(self, db_url, prefix, roles, reconcile_interval="30s", hookd_keys=None, port=None):
        self.services.redis_url = self.redis_url
        keys = dict(self.redis_keys)
        keys.update(hookd_keys or {})
        return super().config(db_url, prefix, roles, reconcile_interval, keys, port)


def main() -> int:
    rounds = int(os.environ.get("ROUNDS", "2"))
    m = machine()
    started = time.monotonic()
    b = ModeBench()
    results: dict[str, list[float]] = {k: [] for k in MODES}
    try:
        b.start()
        group = RedisGroup(b.work / "redis")
        try:
            certs = make_certs(b.work / "certs")
            tls = dict(cert=str(certs / "node.pem"), key=str(certs / "node.key"), ca=str(certs / "ca.pem"))
            ca = {"redis_ca_file": str(certs / "ca.pem")}
            one_tls = group.server("tls", tls=tls)
            plain_cl = group.cluster(replicas=0)
            tls_cl = group.cluster(replicas=0, tls=tls)
            urls = {"plain": (b.services.redis_url, {}),
                    "tls": (f"rediss://127.0.0.1:{one_tls.port}/0", ca),
                    "cluster": (plain_cl.url(), {}),
                    "cluster-tls": (tls_cl.url("rediss+cluster"), ca)}
            for rnd in range(rounds):
                for mode in MODES:
                    b.redis_url, b.redis_keys = urls[mode]
                    log(f"round {rnd + 1}/{rounds}, Redis {mode}: {urls[mode][0]}")
                    r = bench_processing_run(b, 1)
                    if not r["complete"] or r["shipped"] != r["entities"]:
                        raise RuntimeError(f"{mode}: incomplete run {r['done']}/{r['total']}")
                    results[mode].append(r["rate"])
        finally:
            group.stop()
    finally:
        b.stop()
    base = statistics.median(results["plain"])
    lines = [BEGIN, "", "## Processing with each Redis mode (`make bench-redis`)", "",
             f"- date: {m['date']}; duration {time.monotonic() - started:.0f} s; git commit `{m['commit']}`"
             f"{' (with uncommitted changes)' if m['dirty'] else ''}",
             f"- machine: {m['cpu']}, {m['nproc']} cores; load average at start "
             f"{' / '.join(f'{x:.2f}' for x in m['load'])} — a **shared, busy machine**: other suites ran meanwhile",
             f"- command: `make bench-redis` (scripts/bench_redis_modes.py): {PROC_ENTITIES * PROC_EVENTS_PER_ENTITY:,}"
             f" PENDING inbox rows per run (BENCH_SCALE = {SCALE}), one worker, roles = inbox, Postgres fsync on;"
             f" the modes take turns, {rounds} rounds; every Redis on loopback without persistence, the cluster"
             " has three masters and no replicas",
             "", "| Redis mode | URL form | events/s (median) | each run | vs plain |", "| --- | --- | ---: | --- | ---: |"]
    forms = {"plain": "redis://", "tls": "rediss://", "cluster": "redis+cluster://",
             "cluster-tls": "rediss+cluster://"}
    for mode in MODES:
        med = statistics.median(results[mode])
        lines.append(f"| {mode} | `{forms[mode]}` | {med:,.0f} /s | {', '.join(f'{x:,.0f}' for x in results[mode])}"
                     f" | {med / base:.2f}x |")
    lines += ["", "Read the ratios: the issue's target is TLS within 15% of plain TCP (ratio >= 0.85) and a",
              "three-master cluster within 15% of one node.", "", END]
    section = "\n".join(lines)
    path = REPORT
    path.parent.mkdir(parents=True, exist_ok=True)
    text = path.read_text() if path.exists() else "# hookd benchmarks\n"
    if BEGIN in text and END in text:
        text = text[:text.index(BEGIN)] + section + text[text.index(END) + len(END):]
    else:
        text = text.rstrip("\n") + "\n\n" + section + "\n"
    path.write_text(text)
    print(section)
    return 0


if __name__ == "__main__":
    sys.exit(main())
