"""5. Retries: outbox events to a sink that answers 500 three times per
webhook-id and 200 on the fourth, fixed 10 ms backoff, one relay worker
(BENCH_ONLY=retry). The figure is attempts/s: rows of `attempts` over the
span from the emit's commit to the last attempt. With BENCH_PGSS=1 the bench
Postgres is restarted with pg_stat_statements and the statements per attempt
are printed (diagnosis; it costs Postgres a little)."""
from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import time
from pathlib import Path

from hookdtest.bench.common import COMMANDS, EXTRA, RUN_CAP_S, SCALE, TOOLS, Bench, SystemCpu, cpu_seconds, log, metrics, row, sh
from hookdtest.paths import HOOKD_BIN, SERVICES

RETRY_EVENTS = int(20000 * SCALE)
RETRY_FAILS = 3
PGSS = os.environ.get("BENCH_PGSS") == "1"
EXPLAIN_MS = os.environ.get("BENCH_EXPLAIN_MS", "")

RETRY_SECTION = """
[retry endpoint:sink]
schedule = 10ms
max_attempts = 6
jitter = 0%
{circuit}"""


def start_sink(b: Bench, *args: str) -> tuple[subprocess.Popen, int]:
    cmd = [str(TOOLS / "sink"), "--port", "0", *args]
    COMMANDS.append(" ".join(cmd))
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    b.procs.append(p)
    port = json.loads(p.stdout.readline())["listening"]
    return p, port


def stop_sink(p: subprocess.Popen) -> dict:
    p.send_signal(signal.SIGTERM)
    return json.loads(p.communicate(timeout=10)[0].strip().splitlines()[-1])


def enable_pgss(b: Bench) -> None:
    """pg_stat_statements needs shared_preload_libraries: set it and restart
    the bench Postgres (fsync stays on)."""
    admin = b.services
    import psycopg2
    conn = psycopg2.connect(admin.pg_admin_url)
    conn.autocommit = True
    with conn.cursor() as cur:
        if EXPLAIN_MS:  # BENCH_EXPLAIN_MS=N: plans of statements slower than N ms go to the Postgres log
            cur.execute("LOAD 'auto_explain'")
            cur.execute("ALTER SYSTEM SET shared_preload_libraries = 'pg_stat_statements', 'auto_explain'")
            for key, value in (("log_min_duration", EXPLAIN_MS), ("log_analyze", "on"), ("log_buffers", "on"),
                               ("log_nested_statements", "on")):
                cur.execute(f"ALTER SYSTEM SET auto_explain.{key} = '{value}'")
        else:
            cur.execute("ALTER SYSTEM SET shared_preload_libraries = 'pg_stat_statements'")
    conn.close()
    env = dict(os.environ, HOOKD_PG_FSYNC="on")
    subprocess.run([str(SERVICES), "stop-pg", str(admin.dir)], check=True, capture_output=True)
    subprocess.run([str(SERVICES), "start-pg", str(admin.dir)], env=env, check=True, capture_output=True)


def keep_plans(b: Bench, label: str) -> None:
    """Copies the Postgres log, with auto_explain's plans, out of the work directory before it is removed."""
    out = Path("build/bench") / f"plans-retry{label.strip().replace(' ', '_')}.log"
    out.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(b.services.dir / "pg" / "server.log", out)
    log(f"   plans slower than {EXPLAIN_MS} ms: {out}")


def statements(db) -> list[dict]:
    return db.all("SELECT calls, rows, round(total_exec_time::numeric, 1) AS ms, left(regexp_replace(query, '\\s+', ' ',"
                  " 'g'), 90) AS query FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE"
                  " datname = current_database()) AND query NOT ILIKE '%%pg_stat_statements%%'"
                  " ORDER BY calls DESC LIMIT 25")


def retry_run(b: Bench, events: int = RETRY_EVENTS, circuit: str | None = "off", max_inflight: int = 16,
              label: str = "", binary: str | None = None) -> dict:
    """One retry run (with another hookd binary when given); returns its figures."""
    import hookdtest.worker as worker_mod
    saved = worker_mod.HOOKD_BIN
    if binary:
        worker_mod.HOOKD_BIN = binary
    try:
        return _retry_run(b, events, circuit, max_inflight, label)
    finally:
        worker_mod.HOOKD_BIN = saved


def _retry_run(b: Bench, events: int, circuit: str | None, max_inflight: int, label: str) -> dict:
    sink, sport = start_sink(b, "--fail-first", str(RETRY_FAILS))
    url, db = b.new_db()
    cfg, port = b.config(url, b.prefix(), roles="relay", hookd_keys={"allow_private_networks": "true"})
    text = cfg.read_text()
    if not circuit:  # a binary that predates the circuit (the baseline) knows no circuit key
        text = re.sub(r"^circuit = .*\n", "", text, flags=re.M)
    cfg.write_text(text + RETRY_SECTION.format(circuit=f"circuit = {circuit}\n" if circuit else ""))
    EXTRA.setdefault("configs", {})["relay (retry)"] = cfg.read_text()
    import hookdtest.worker as worker_mod  # the binary under test, which retry_run may have swapped in
    r = sh([worker_mod.HOOKD_BIN, "-c", str(cfg), "endpoint", "add", "--url", f"http://127.0.0.1:{sport}/", "--events", "*",
            "--name", "sink", "--max-inflight", str(max_inflight)], timeout=30)
    if r.returncode != 0:
        raise RuntimeError(f"endpoint add failed: {r.stderr}")
    if PGSS:
        db.all("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
        db.all("SELECT pg_stat_statements_reset()")
    w = b.worker(cfg, port, f"relay-retry{label}")
    cpu0 = cpu_seconds(w.proc.pid)
    meter = SystemCpu(b, [w.proc.pid])
    emit = ("SELECT count(hookd_emit('order', 'o' || g, 'order.paid',"
            " jsonb_build_object('type', 'order.paid', 'order_id', 'o' || g, 'amount', 1999)))"
            " FROM generate_series(1, %s) g")
    COMMANDS.append("-- retry emit (one statement): " + emit.replace("%s", str(events)))
    db.all(emit, events)
    committed_at = db.value("SELECT clock_timestamp()")
    t0 = time.monotonic()
    last_db = t0
    while time.monotonic() - t0 < 2 * RUN_CAP_S:
        b.pause(0.25)
        if metrics(w).get("hookd_delivered_total", 0) >= events or time.monotonic() - last_db > 5:
            last_db = time.monotonic()
            if db.value("SELECT count(*) FROM outbox_deliveries WHERE status = 'SUCCEEDED'") >= events:
                break
    cpu = cpu_seconds(w.proc.pid) - cpu0
    succeeded = db.value("SELECT count(*) FROM outbox_deliveries WHERE status = 'SUCCEEDED'")
    attempts = db.value("SELECT count(*) FROM attempts WHERE source = 'delivery'")
    span = float(db.value("SELECT extract(epoch FROM max(attempted_at) - %s) FROM attempts", committed_at) or 0)
    dead = db.value("SELECT count(*) FROM dead_letters")
    cpu_sys = meter.per_event(attempts)
    stmts = statements(db) if PGSS else []
    if EXPLAIN_MS:
        keep_plans(b, label)
    w.stop()
    final = stop_sink(sink)
    db.close()
    rate = attempts / span if span > 0 else 0.0
    out = dict(events=events, succeeded=succeeded, attempts=attempts, sink=final, span_s=span, attempts_per_s=rate,
               dead=dead, cpu_s=cpu, cpu=cpu_sys, max_inflight=max_inflight, circuit=circuit, complete=succeeded >= events)
    log(f"   retry{label}: {succeeded}/{events} SUCCEEDED, {attempts} attempts rows (sink saw {final['count']},"
        f" {final['failed']} answered 500) in {span:.1f} s = {rate:,.0f} attempts/s; dead {dead}; relay CPU {cpu:.1f} s")
    if stmts:
        log(f"   statements per attempt ({attempts} attempts):")
        for s in stmts:
            log(f"     {s['calls'] / max(attempts, 1):6.2f}/attempt {s['calls']:>7} calls {s['ms']:>9} ms  {s['query']}")
        out["statements"] = [dict(s) for s in stmts]
    return out


BASELINE = os.environ.get("BENCH_RETRY_BASELINE")  # another hookd binary (e.g. main's), run alternately


def bench_retry(b: Bench) -> None:
    log(f"5. retries: {RETRY_EVENTS} outbox events, the sink answers 500 {RETRY_FAILS}x per webhook-id then 200;"
        " [retry endpoint:sink] schedule = 10ms, max_attempts = 6, jitter = 0%, circuit = off; roles = relay")
    if PGSS:
        enable_pgss(b)
    runs = [retry_run(b, label=" (this build)")]
    if BASELINE:
        base = retry_run(b, circuit=None, label=" (baseline)", binary=BASELINE)
        runs.append(retry_run(b, label=" (this build, again)"))
        base2 = retry_run(b, circuit=None, label=" (baseline, again)", binary=BASELINE)
        EXTRA["retry_baseline"] = [base, base2]
        mine = sum(r["attempts_per_s"] for r in runs) / len(runs)
        theirs = (base["attempts_per_s"] + base2["attempts_per_s"]) / 2
        log(f"   this build / baseline: {mine:,.0f} / {theirs:,.0f} attempts/s = {mine / theirs:.2f}x"
            f" (baseline {BASELINE})")
        row("5 Retry", "attempts/s, this build vs the baseline binary (alternating, mean of 2)", mine, "/s", theirs,
            f"baseline {BASELINE}")
    EXTRA["retry"] = runs[0]
    EXTRA["retry_runs"] = runs
    r0 = runs[0]
    row("5 Retry", f"attempts/s ({r0['events']:,} events x 4 attempts, 1 relay worker, circuit = off)"
        + ("" if r0["complete"] else " (INCOMPLETE)"), r0["attempts_per_s"], "/s", cpu=r0["cpu"])
