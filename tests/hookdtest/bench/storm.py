"""7. Storm: one relay worker, two endpoints (BENCH_ONLY=storm).

  healthy   events emitted at STORM_RATE/s for STORM_SECONDS to an endpoint
            that answers 200: emit -> delivered p99, first without the storm,
            then while the other endpoint fails with a backlog of
            STORM_BACKLOG deliveries (circuit on, the default, with
            circuit_probe = 1s)
  recovery  the failing endpoint's receiver comes back (a sink answering 200
            on the same port): its backlog drains; the rate (deliveries/s
            from the recovery to the last success) against the first-attempt
            delivery throughput of the same worker measured just before (a
            bulk emit to the healthy endpoint)

The backlog is the issue's 100,000 deliveries (STORM_BACKLOG, scaled by
BENCH_SCALE; BENCH_STORM_BACKLOG sets it outright)."""
from __future__ import annotations

import os
import re
import subprocess
import time

from hookdtest.bench.common import COMMANDS, EXTRA, SCALE, TOOLS, Bench, log, row, sh
from hookdtest.bench.delivery import latency_sql
from hookdtest.bench.retry import start_sink, stop_sink
from hookdtest.paths import HOOKD_BIN

STORM_BACKLOG = int(os.environ.get("BENCH_STORM_BACKLOG") or 100000 * SCALE)
STORM_RATE = 200
STORM_SECONDS = 5
STORM_BULK = int(10000 * SCALE)

STORM_SECTION = """
[retry endpoint:down]
schedule = 1s, 5s, 30s
max_attempts = 10
circuit = on
circuit_failures = 20
circuit_probe = 1s
"""


def emit(db, kind: str, n: int, tag: str) -> None:
    db.all("SELECT count(hookd_emit('order', %s || g, %s, jsonb_build_object('n', g))) FROM generate_series(1, %s) g",
           tag, kind, n)


def paced(b: Bench, db, kind: str, tag: str) -> int:
    """STORM_RATE events/s for STORM_SECONDS, one emit per commit, in ticks of
    10 ms; returns how many were emitted (fewer when the emitter falls behind)."""
    t0 = time.monotonic()
    sent = 0
    while time.monotonic() - t0 < STORM_SECONDS:
        due = int((time.monotonic() - t0) * STORM_RATE)
        if due > sent:
            for k in range(sent, due):
                db.all("SELECT hookd_emit('order', %s, %s, '{}'::jsonb)", f"{tag}{k}", kind)
            sent = due
        b.pause(0.01)
    return sent


def breakdown(db, tag: str) -> dict:
    """Where the healthy deliveries' emit -> delivered time goes: the
    request itself (send -> answer, the attempt's duration) and everything
    before it (the relay's wake-up, claim and queue), p50 and p99 in ms."""
    row = db.one("SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY a.duration_ms) AS send_p50,"
                 " percentile_cont(0.99) WITHIN GROUP (ORDER BY a.duration_ms) AS send_p99,"
                 " percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM d.delivered_at - e.created_at)"
                 "  * 1000 - a.duration_ms) AS before_p50,"
                 " percentile_cont(0.99) WITHIN GROUP (ORDER BY extract(epoch FROM d.delivered_at - e.created_at)"
                 "  * 1000 - a.duration_ms) AS before_p99,"
                 " count(*) FILTER (WHERE d.attempts > 1) AS retried"
                 " FROM outbox_deliveries d JOIN outbox_events e ON e.id = d.event_id"
                 " JOIN attempts a ON a.source = 'delivery' AND a.source_id = d.id AND a.outcome = 'succeeded'"
                 f" WHERE d.status = 'SUCCEEDED' AND e.aggregate_id LIKE '{tag}%%'")
    return {k: float(v or 0) for k, v in row.items()}


class Perf:
    """BENCH_PERF=DIR: `perf record` of the worker (user space, call graphs)
    while a phase runs, and the top of its report in the log."""

    def __init__(self, pid: int, name: str) -> None:
        self.dir = os.environ.get("BENCH_PERF")
        self.proc = None
        if self.dir:
            self.out = os.path.join(self.dir, f"perf-{name}.data")
            self.proc = subprocess.Popen(["perf", "record", "-q", "-F", "499", "-g", "-p", str(pid), "-o", self.out],
                                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def stop(self) -> None:
        if not self.proc:
            return
        self.proc.send_signal(2)
        self.proc.wait(60)
        r = subprocess.run(["perf", "report", "-i", self.out, "--stdio", "--no-children", "--percent-limit", "2",
                            "-g", "none"], capture_output=True, text=True)
        for line in r.stdout.splitlines():
            if line.strip() and not line.startswith("#"):
                log(f"   perf {os.path.basename(self.out)}: {line.strip()}")


def count(db, name: str, status: str = "SUCCEEDED") -> int:
    return db.value("SELECT count(*) FROM outbox_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id"
                    " WHERE e.name = %s AND d.status = %s", name, status)


def bench_storm(b: Bench) -> None:
    log(f"7. storm: a healthy endpoint at {STORM_RATE}/s next to a failing one with {STORM_BACKLOG} deliveries,"
        " then the failing one recovers")
    good, gport = start_sink(b)
    bad, bport = start_sink(b, "--status", "500")
    url, db = b.new_db()
    cfg, port = b.config(url, b.prefix(), roles="relay", hookd_keys={"allow_private_networks": "true"})
    text = cfg.read_text().replace("circuit = off\n", "")  # the harness's default for tests: on here
    cfg.write_text(text + STORM_SECTION)
    EXTRA.setdefault("configs", {})["relay (storm)"] = cfg.read_text()
    for name, p, ev in (("good", gport, "good.*"), ("down", bport, "bad.*")):
        r = sh([HOOKD_BIN, "-c", str(cfg), "endpoint", "add", "--url", f"http://127.0.0.1:{p}/", "--events", ev,
                "--name", name], timeout=30)
        if r.returncode != 0:
            raise RuntimeError(f"endpoint add failed: {r.stderr}")
    w = b.worker(cfg, port, "relay-storm")
    log(f"   calm: {STORM_RATE}/s for {STORM_SECONDS} s to the healthy endpoint")
    perf = Perf(w.proc.pid, "calm")
    n_calm = paced(b, db, "good.calm", "calm")
    perf.stop()
    b.wait_for(lambda: count(db, "good") >= n_calm, 60, what="calm deliveries")
    calm = db.one(latency_sql("e.aggregate_id LIKE 'calm%%'"))
    calm_parts = breakdown(db, "calm")
    log(f"   bulk: {STORM_BULK} events to the healthy endpoint (first-attempt throughput)")
    t0 = db.value("SELECT clock_timestamp()")
    emit(db, "good.bulk", STORM_BULK, "bulk")
    b.wait_for(lambda: db.value("SELECT count(*) FROM outbox_deliveries d JOIN outbox_events e ON e.id = d.event_id"
                              " WHERE e.aggregate_id LIKE 'bulk%%' AND d.status = 'SUCCEEDED'") >= STORM_BULK,
             120, interval=0.25, what="bulk deliveries")
    bulk_rate = STORM_BULK / float(db.value(
        "SELECT extract(epoch FROM max(d.delivered_at) - %s) FROM outbox_deliveries d JOIN outbox_events e"
        " ON e.id = d.event_id WHERE e.aggregate_id LIKE 'bulk%%'", t0))
    log(f"   storm: {STORM_BACKLOG} events to the failing endpoint, then {STORM_RATE}/s to the healthy one")
    emit(db, "bad.storm", STORM_BACKLOG, "storm")
    # The storm is a backlog of deliveries due (fanned out, failing), as in the
    # issue, not a burst of new events ahead of the healthy ones in the outbox.
    b.wait_for(lambda: db.value("SELECT count(*) FROM outbox_events WHERE fanned_out_at IS NULL") == 0, 600,
             interval=0.25, what="the storm's events fanned out")
    prefix = re.search(r"^key_prefix = (\S+)", text, flags=re.M).group(1)
    b.wait_for(lambda: b.services.redis_client().hget(f"{prefix}:{{delivery}}:circuit:open", "down"), 60,
             what="the circuit to open")
    perf = Perf(w.proc.pid, "storm")
    n_storm = paced(b, db, "good.storm", "gstorm")
    perf.stop()
    b.wait_for(lambda: db.value("SELECT count(*) FROM outbox_deliveries d JOIN outbox_events e ON e.id = d.event_id"
                              " WHERE e.aggregate_id LIKE 'gstorm%%' AND d.status = 'SUCCEEDED'") >= n_storm, 60,
             what="storm-time deliveries")
    stormy = db.one(latency_sql("e.aggregate_id LIKE 'gstorm%%'"))
    storm_parts = breakdown(db, "gstorm")
    for name, parts in (("calm", calm_parts), ("storm", storm_parts)):
        log(f"   {name}: request (send -> answer) p50/p99 {parts['send_p50']:.1f}/{parts['send_p99']:.1f} ms,"
            f" before it (emit -> sent) {parts['before_p50']:.1f}/{parts['before_p99']:.1f} ms,"
            f" {parts['retried']:.0f} retried")
    sent_bad = stop_sink(bad)["count"]
    attempts_bad = db.value("SELECT coalesce(sum(d.attempts), 0) FROM outbox_deliveries d JOIN webhook_endpoints e"
                            " ON e.id = d.endpoint_id WHERE e.name = 'down'")
    log(f"   healthy p99: {float(calm['p99']):.1f} ms calm, {float(stormy['p99']):.1f} ms during the storm;"
        f" the failing endpoint got {sent_bad} requests ({attempts_bad} attempts) for {STORM_BACKLOG} deliveries")
    # Recovery: a healthy receiver on the failing endpoint's port.
    cmd = [str(TOOLS / "sink"), "--port", str(bport)]
    COMMANDS.append(" ".join(cmd))
    rec = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    b.procs.append(rec)
    rec.stdout.readline()
    t_rec = db.value("SELECT clock_timestamp()")
    b.wait_for(lambda: count(db, "down") >= STORM_BACKLOG, 900, interval=0.5, what="the backlog drained")
    drain_s = float(db.value("SELECT extract(epoch FROM max(d.delivered_at) - %s) FROM outbox_deliveries d"
                             " JOIN webhook_endpoints e ON e.id = d.endpoint_id WHERE e.name = 'down'", t_rec))
    drain_rate = STORM_BACKLOG / drain_s if drain_s > 0 else 0.0
    log(f"   recovery: {STORM_BACKLOG} drained in {drain_s:.1f} s = {drain_rate:,.0f}/s (first attempts:"
        f" {bulk_rate:,.0f}/s)")
    w.stop()
    stop_sink(rec)
    stop_sink(good)
    db.close()
    EXTRA["storm"] = dict(calm={k: float(v) for k, v in calm.items()}, storm={k: float(v) for k, v in stormy.items()},
                          bulk_rate=bulk_rate, drain_s=drain_s, drain_rate=drain_rate, backlog=STORM_BACKLOG,
                          requests_to_failing=sent_bad, attempts_failing=attempts_bad, calm_parts=calm_parts,
                          storm_parts=storm_parts)
    row("7 Storm", f"healthy endpoint p99 emit -> delivered during the storm ({STORM_RATE}/s, backlog"
        f" {STORM_BACKLOG:,} failing)", float(stormy["p99"]), "ms", float(calm["p99"]), "the same without the storm",
        "<= 2x", float(stormy["p99"]) <= 2 * float(calm["p99"]))
    row("7 Storm", f"recovery drain of the {STORM_BACKLOG:,} backlog (deliveries/s)", drain_rate, "/s", bulk_rate,
        "first-attempt delivery throughput, same worker", ">= 50%", drain_rate >= 0.5 * bulk_rate)
    row("7 Storm", f"requests to the failing endpoint while its circuit was open ({STORM_BACKLOG:,} deliveries)",
        sent_bad, "")
