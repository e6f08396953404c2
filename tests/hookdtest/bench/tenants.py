"""10. Fan-out with tenants: deliveries/s to one local sink with
one global endpoint, with 10,000 tenants x 3 endpoints (each tenant's
endpoints get each of its events; the events are spread so every endpoint
gets the same number), and the same with a payload filter on every
endpoint — the three in one run, one relay worker each, so the two ratios
(tenants / one endpoint, filtered / tenants) compare like with like
(BENCH_ONLY=tenants). The figure is deliveries over the span from the
emit's commit to the last `delivered_at`. The sink also reports how many
connections carried the deliveries.

BENCH_TENANTS_BASELINE=BINARY runs the three with another hookd binary
(e.g. main's) too, alternately: this build, the baseline, this build, the
baseline. BENCH_TENANTS_RUNS=N repeats this build's three N times (default
1). BENCH_PERF=DIR records each worker with perf. BENCH_TENANTS_ONLY=single,tenants
runs those scenarios only (diagnosis; no ratio rows without both sides);
BENCH_TENANTS_KEYS="key=value,..." adds [hookd] keys to the workers'
config (diagnosis, e.g. max_idle_per_origin=1000). Each scenario also
logs where the fan-out put its deliveries (hookd_fanout_deliveries_total:
written by the pass, handed over to the regular path, scheduled), its
passes (count, mean and the windows that ran out) and the Redis calls; a
binary without those metrics logs none of it. BENCH_PGSS=1 (as for
retries) also logs each scenario's statements from pg_stat_statements."""
from __future__ import annotations

import json
import os
import subprocess
import time
import urllib.request

from hookdtest.bench.common import COMMANDS, EXTRA, RUN_CAP_S, SCALE, TOOLS, Bench, cpu_seconds, log, metrics, row
from hookdtest.bench.retry import PGSS, enable_pgss
from hookdtest.bench.storm import Perf

TENANTS = 10000
ENDPOINTS_PER_TENANT = 3
DELIVERIES = max(3 * ENDPOINTS_PER_TENANT, int(30000 * SCALE))  # per scenario
FILTER = '{"n": {"$gt": 0}}'  # true for every event: the filter's cost, not fewer deliveries
SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
BASELINE = os.environ.get("BENCH_TENANTS_BASELINE")
RUNS = max(1, int(os.environ.get("BENCH_TENANTS_RUNS", "1")))
SCENARIOS = tuple(s for s in ("single", "tenants", "filters")
                  if s in (os.environ.get("BENCH_TENANTS_ONLY") or "single,tenants,filters").split(","))
EXTRA_KEYS = dict(kv.split("=", 1) for kv in os.environ.get("BENCH_TENANTS_KEYS", "").split(",") if "=" in kv)
TARGET_RATIO = 0.90  # tenants >= 0.90x one endpoint; a filter costs <= 10%

EMIT_SINGLE = ("SELECT count(hookd_emit('order', 'o' || g, 'order.paid',"
               " jsonb_build_object('type', 'order.paid', 'n', g, 'amount', 1999)))"
               " FROM generate_series(1, %s) g")
# Event g goes to tenant 1 + (g * 7919) mod 10,000: consecutive events to
# scattered tenants, each tenant once per 10,000 events.
EMIT_TENANTS = ("SELECT count(hookd_emit('order', 'o' || g, 'order.paid',"
                " jsonb_build_object('type', 'order.paid', 'n', g, 'amount', 1999),"
                " 't' || lpad((1 + (g * 7919) %% 10000)::text, 6, '0')))"
                " FROM generate_series(1, %s) g")


def start_sink(b: Bench) -> tuple[subprocess.Popen, int]:
    cmd = [str(TOOLS / "sink"), "--port", "0"]
    COMMANDS.append(" ".join(cmd))
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    b.procs.append(p)
    return p, json.loads(p.stdout.readline())["listening"]


def sink_counts(port: int) -> dict:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/count", timeout=5) as r:
        return json.loads(r.read())


def setup_endpoints(db, scenario: str, sink_url: str) -> None:
    if scenario == "single":
        db.all("INSERT INTO webhook_endpoints (name, url, secret) VALUES ('sink', %s, %s)", sink_url, SECRET)
        return
    db.all("INSERT INTO hookd_tenants (id, uid, name) SELECT 't' || lpad(g::text, 6, '0'), 'u' || g, 'T' || g"
           " FROM generate_series(1, %s) g", TENANTS)
    # inserted with their filters (not updated after: 30,000 dead rows would
    # bring autovacuum into the measured run), then vacuumed like the rest
    db.all("INSERT INTO webhook_endpoints (name, url, secret, tenant_id, payload_filter)"
           " SELECT 'e' || g || '-' || k, %s, %s, 't' || lpad(g::text, 6, '0'), %s::jsonb"
           " FROM generate_series(1, %s) g, generate_series(1, %s) k",
           sink_url, SECRET, FILTER if scenario == "filters" else None, TENANTS, ENDPOINTS_PER_TENANT)
    db.all("VACUUM ANALYZE webhook_endpoints")


def redis_calls(b: Bench) -> dict:
    """Redis's commands so far: calls and microseconds per command."""
    stats = b.services.redis_client().info("commandstats")
    return {k.replace("cmdstat_", ""): (v["calls"], v["usec"]) for k, v in stats.items()}


def diagnosis(b: Bench, w, db, redis0: dict, label: str) -> dict:
    """Where the deliveries went, the passes, Redis and (BENCH_PGSS=1) Postgres."""
    out = {}
    try:
        m = metrics(w)
    except Exception:  # noqa: BLE001 - a baseline without the admin listener's figures
        m = {}
    paths = {k.split('"')[1]: int(v) for k, v in m.items() if k.startswith("hookd_fanout_deliveries_total{")}
    if paths:
        n, secs = m.get("hookd_fanout_seconds_count", 0), m.get("hookd_fanout_seconds_sum", 0)
        out.update(paths=paths, passes=int(n), pass_ms=1000 * secs / max(n, 1),
                   windows_ran_out=int(m.get("hookd_fanout_window_closed_total", 0)),
                   conns=int(m.get("hookd_outbound_connections_opened_total", 0)),
                   reused=int(m.get("hookd_outbound_requests_reused_total", 0)))
        log(f"   {label}: fan-out paths {paths}; {out['passes']} passes, mean {out['pass_ms']:.0f} ms,"
            f" {out['windows_ran_out']} windows ran out; outbound connections {out['conns']},"
            f" requests reused {out['reused']}")
    r1 = redis_calls(b)
    busy = sorted(((r1[k][1] - redis0.get(k, (0, 0))[1], r1[k][0] - redis0.get(k, (0, 0))[0], k) for k in r1),
                  reverse=True)[:5]
    out["redis"] = {k: dict(calls=c, ms=us / 1000) for us, c, k in busy if c}
    log(f"   {label}: Redis " + ", ".join(f"{k} {c} calls {us / 1000:.0f} ms" for us, c, k in busy if c))
    if PGSS:
        rows = db.all("SELECT calls, rows, round(total_exec_time::numeric, 1) AS ms, left(regexp_replace(query,"
                      " '\\s+', ' ', 'g'), 70) AS query FROM pg_stat_statements WHERE dbid = (SELECT oid FROM"
                      " pg_database WHERE datname = current_database()) AND query NOT ILIKE '%%pg_stat_statements%%'"
                      " ORDER BY total_exec_time DESC LIMIT 12")
        out["statements"] = rows
        for r in rows:
            log(f"   {label}: pgss {r['ms']:>9} ms {r['calls']:>6} calls {r['rows']:>7} rows  {r['query']}")
    return out


def admin(b: Bench, sql: str) -> None:
    import psycopg2
    conn = psycopg2.connect(b.services.pg_admin_url)
    conn.autocommit = True
    try:
        with conn.cursor() as cur:
            cur.execute(sql)
    finally:
        conn.close()


def one(b: Bench, scenario: str, sport: int, binary: str | None, label: str) -> dict:
    """One scenario with a fresh database and worker; returns its figures.
    The database is dropped after it, and a CHECKPOINT precedes the emit, so
    that no scenario pays for the previous one's autovacuum or checkpoint."""
    import hookdtest.worker as worker_mod
    url, db = b.new_db()
    cfg, port = b.config(url, b.prefix(), roles="relay", hookd_keys={"allow_private_networks": "true", **EXTRA_KEYS})
    setup_endpoints(db, scenario, f"http://127.0.0.1:{sport}/")
    if PGSS:
        db.all("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
    if scenario == "single":
        events, emit = DELIVERIES, EMIT_SINGLE
    else:
        events, emit = DELIVERIES // ENDPOINTS_PER_TENANT, EMIT_TENANTS
    want = events if scenario == "single" else events * ENDPOINTS_PER_TENANT
    saved = worker_mod.HOOKD_BIN
    if binary:
        worker_mod.HOOKD_BIN = binary
    try:
        w = b.worker(cfg, port, f"tenants-{scenario}{label.replace(' ', '-')}")
    finally:
        worker_mod.HOOKD_BIN = saved
    admin(b, "CHECKPOINT")
    if PGSS:
        db.all("SELECT pg_stat_statements_reset()")
    redis0 = redis_calls(b)
    before = sink_counts(sport)
    cpu0 = cpu_seconds(w.proc.pid)
    perf = Perf(w.proc.pid, f"tenants-{scenario}{label.replace(' ', '-')}")
    db.all(emit, events)
    committed_at = db.value("SELECT clock_timestamp()")
    t0 = time.monotonic()
    while time.monotonic() - t0 < RUN_CAP_S:
        b.pause(0.1)
        if sink_counts(sport)["count"] - before["count"] >= want:
            break
    perf.stop()
    deadline = time.monotonic() + 10  # the last rows' outcome is written just after the sink answered
    while True:
        done = db.value("SELECT count(*) FROM outbox_deliveries WHERE status = 'SUCCEEDED'")
        if done >= want or time.monotonic() > deadline:
            break
        b.pause(0.1)
    span = float(db.value("SELECT extract(epoch FROM max(delivered_at) - %s) FROM outbox_deliveries"
                          " WHERE status = 'SUCCEEDED'", committed_at) or 0)
    cpu = cpu_seconds(w.proc.pid) - cpu0
    after = sink_counts(sport)
    diag = diagnosis(b, w, db, redis0, f"{scenario}{label}")
    w.stop()
    db.close()
    admin(b, f'DROP DATABASE "{url.rsplit("/", 1)[1]}" WITH (FORCE)')
    rate = done / span if span > 0 else 0.0
    out = dict(scenario=scenario, binary=binary or "this build", events=events, deliveries=want, succeeded=done,
               span_s=span, rate=rate, cpu_s=cpu, requests=after["count"] - before["count"],
               connections=after.get("connections", 0) - before.get("connections", 0), complete=done >= want,
               diagnosis=diag)
    log(f"   {scenario}{label}: {done}/{want} SUCCEEDED in {span:.2f} s = {rate:,.0f} deliveries/s; relay CPU"
        f" {cpu:.1f} s; the sink saw {out['requests']} requests on {out['connections']} new connections")
    return out


def trio(b: Bench, sport: int, binary: str | None = None, label: str = "", reverse: bool = False) -> dict:
    """The scenarios in one run (in reverse order every other run, so that
    an order effect shows as a difference between runs)."""
    res = {s: one(b, s, sport, binary, label) for s in (reversed(SCENARIOS) if reverse else SCENARIOS)}
    if len(res) < 3:
        return dict(runs=res, tenants_ratio=0.0, filters_ratio=0.0)
    t, f = res["tenants"]["rate"] / max(res["single"]["rate"], 1e-9), \
        res["filters"]["rate"] / max(res["tenants"]["rate"], 1e-9)
    log(f"   ratios{label}: tenants / one endpoint {t:.2f} (target >= {TARGET_RATIO:.2f}); filtered / tenants"
        f" {f:.2f} (a filter costs {100 * (1 - f):.0f}%, target <= {100 * (1 - TARGET_RATIO):.0f}%)")
    return dict(runs=res, tenants_ratio=t, filters_ratio=f)


def bench_tenants(b: Bench) -> None:
    log(f"10. tenants: {DELIVERIES:,} deliveries per scenario to one sink — one global endpoint; {TENANTS:,} tenants x"
        f" {ENDPOINTS_PER_TENANT} endpoints; the same with payload filter {FILTER} on every endpoint; roles = relay")
    sink, sport = start_sink(b)
    COMMANDS.append("-- tenants: endpoints, then per scenario (one relay worker each, fresh database):")
    COMMANDS.append("-- " + EMIT_SINGLE.replace("%s", str(DELIVERIES)))
    COMMANDS.append("-- " + EMIT_TENANTS.replace("%%", "%").replace("%s", str(DELIVERIES // ENDPOINTS_PER_TENANT)))
    if PGSS:
        enable_pgss(b)
    mine, base = [], []
    for i in range(RUNS):
        mine.append(trio(b, sport, label=" (this build)" if BASELINE or RUNS > 1 else "", reverse=i % 2 == 1))
        if BASELINE:
            base.append(trio(b, sport, BASELINE, " (baseline)", reverse=i % 2 == 1))
    EXTRA["tenants"] = dict(runs=mine, baseline=base, baseline_binary=BASELINE, deliveries=DELIVERIES,
                            filter=FILTER)
    first = mine[0]
    r = first["runs"]
    if len(r) < 3:
        return
    suffix = "" if all(x["complete"] for x in r.values()) else " (INCOMPLETE)"
    row("10 Tenants", f"deliveries/s, one global endpoint ({DELIVERIES:,} events, 1 relay worker){suffix}",
        r["single"]["rate"], "/s")
    row("10 Tenants", f"deliveries/s, {TENANTS:,} tenants x {ENDPOINTS_PER_TENANT} endpoints"
        f" ({DELIVERIES // ENDPOINTS_PER_TENANT:,} events)", r["tenants"]["rate"], "/s", r["single"]["rate"],
        "one global endpoint, same run", f">= {TARGET_RATIO:.2f}x", first["tenants_ratio"] >= TARGET_RATIO)
    row("10 Tenants", "deliveries/s, the same with a payload filter on every endpoint", r["filters"]["rate"], "/s",
        r["tenants"]["rate"], "the tenants without filters, same run", "<= 10% cost (>= 0.90x)",
        first["filters_ratio"] >= TARGET_RATIO)
    row("10 Tenants", "deliveries per new connection at the sink (tenants)",
        r["tenants"]["requests"] / max(r["tenants"]["connections"], 1), "")
    for i, m in enumerate(mine[1:], 2):
        row("10 Tenants", f"run {i}: tenants / one endpoint; filtered / tenants", m["tenants_ratio"], "x",
            None, f"filtered / tenants {m['filters_ratio']:.2f}x")
    for i, m in enumerate(base, 1):
        row("10 Tenants", f"baseline {i} ({BASELINE}): tenants / one endpoint", m["tenants_ratio"], "x", None,
            f"filtered / tenants {m['filters_ratio']:.2f}x; tenants {m['runs']['tenants']['rate']:,.0f}/s,"
            f" one endpoint {m['runs']['single']['rate']:,.0f}/s")
    stop = sink_counts(sport)
    sink.terminate()
    sink.wait(10)
    log(f"   the sink answered {stop['count']} requests on {stop.get('connections', '?')} connections in all")
    EXTRA.setdefault("chart", []).append(("Tenants 10kx3", r["tenants"]["rate"], r["single"]["rate"]))
