"""3. Delivery: outbox rows -> 2xx at a local sink, in bulk and paced at
1,000 events/s, against the sink's own ceiling; the application's emit rate
with and without the NOTIFY trigger (BENCH_ONLY=delivery)."""
from __future__ import annotations

import json
import signal
import subprocess
import time
import urllib.request

from hookdtest.bench.common import (COMMANDS, DELIVERY_EVENTS, EXTRA, PACED_RATE, PACED_SECONDS, RUN_CAP_S, TOOLS,
                                    Bench, SystemCpu, cpu_seconds, log, metrics, row, sh, vm_hwm_mib)
from hookdtest.paths import HOOKD_BIN


def start_sink(b: Bench) -> tuple[subprocess.Popen, int]:
    cmd = [str(TOOLS / "sink"), "--port", "0"]
    COMMANDS.append(" ".join(cmd))
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    b.procs.append(p)
    port = json.loads(p.stdout.readline())["listening"]
    return p, port


def sink_count(port: int) -> int:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/count", timeout=5) as r:
        return json.loads(r.read())["count"]


def latency_sql(where: str) -> str:
    return ("SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM d.delivered_at - e.created_at))"
            "  * 1000 AS p50,"
            " percentile_cont(0.99) WITHIN GROUP (ORDER BY extract(epoch FROM d.delivered_at - e.created_at))"
            "  * 1000 AS p99,"
            " max(extract(epoch FROM d.delivered_at - e.created_at)) * 1000 AS max, count(*) AS n"
            " FROM outbox_deliveries d JOIN outbox_events e ON e.id = d.event_id"
            f" WHERE d.status = 'SUCCEEDED' AND {where}")


def bench_delivery(b: Bench) -> None:
    log(f"3. delivery: {DELIVERY_EVENTS} outbox events to a local sink, roles = relay")
    sink, sport = start_sink(b)
    url, db = b.new_db()
    cfg, port = b.config(url, b.prefix(), roles="relay", hookd_keys={"allow_private_networks": "true"})
    r = sh([HOOKD_BIN, "-c", str(cfg), "endpoint", "add", "--url", f"http://127.0.0.1:{sport}/", "--events", "*",
            "--name", "sink"], timeout=30)
    if r.returncode != 0:
        raise RuntimeError(f"endpoint add failed: {r.stderr}")
    max_inflight = db.value("SELECT max_inflight FROM webhook_endpoints WHERE name = 'sink'")
    w = b.worker(cfg, port, "relay")
    cpu0 = cpu_seconds(w.proc.pid)
    meter = SystemCpu(b, [w.proc.pid])
    emit = ("SELECT count(hookd_emit('order', 'o' || g, 'order.paid',"
            " jsonb_build_object('type', 'order.paid', 'order_id', 'o' || g, 'amount', 1999)))"
            " FROM generate_series(1, %s) g")
    COMMANDS.append("-- bulk emit (one statement): " + emit.replace("%s", str(DELIVERY_EVENTS)))
    t_stmt = time.monotonic()
    db.all(emit, DELIVERY_EVENTS)
    committed_at = db.value("SELECT clock_timestamp()")
    t0 = time.monotonic()
    insert_s = t0 - t_stmt
    last_db = t0
    while time.monotonic() - t0 < RUN_CAP_S:  # the worker's counter first: it costs Postgres nothing
        b.pause(0.25)
        if metrics(w).get("hookd_delivered_total", 0) >= DELIVERY_EVENTS or time.monotonic() - last_db > 5:
            last_db = time.monotonic()
            if db.value("SELECT count(*) FROM outbox_deliveries WHERE status = 'SUCCEEDED'") >= DELIVERY_EVENTS:
                break
    succeeded = db.value("SELECT count(*) FROM outbox_deliveries WHERE status = 'SUCCEEDED'")
    wall = time.monotonic() - t0
    stats = db.one("SELECT extract(epoch FROM max(last_autoanalyze) - %s) AS analyzed_after_s,"
                   " sum(n_live_tup) AS n_live_tup FROM pg_stat_user_tables"
                   " WHERE relname LIKE 'outbox\\_deliveries%%'", committed_at)  # its partitions (0012)
    span = db.value("SELECT extract(epoch FROM max(delivered_at) - %s) FROM outbox_deliveries"
                    " WHERE status = 'SUCCEEDED'", committed_at)
    cpu_bulk = cpu_seconds(w.proc.pid) - cpu0
    cpu_sys = meter.per_event(succeeded)
    bulk_lat = db.one(latency_sql("true"))
    other = db.all("SELECT status, count(*) AS n FROM outbox_deliveries WHERE status <> 'SUCCEEDED' GROUP BY 1")
    complete = succeeded >= DELIVERY_EVENTS
    rate = succeeded / float(span) if span else 0.0
    log(f"   bulk: insert {insert_s:.1f} s; {succeeded}/{DELIVERY_EVENTS} SUCCEEDED, last {float(span or 0):.1f} s after"
        f" commit = {rate:.0f} deliveries/s; latency {dict(bulk_lat)}; not succeeded {other}; CPU {cpu_bulk:.1f} s")

    if not complete:  # the paced run must not queue behind the rest of the bulk
        log("   waiting (up to 120 s more) for the bulk backlog to drain before the paced run")
        t1 = time.monotonic()
        while time.monotonic() - t1 < 120 and \
                db.value("SELECT count(*) FROM outbox_deliveries WHERE status = 'SUCCEEDED'") < DELIVERY_EVENTS:
            b.pause(1)
    backlog = DELIVERY_EVENTS - db.value("SELECT count(*) FROM outbox_deliveries WHERE status = 'SUCCEEDED'")
    log(f"   paced: pgbench -R {PACED_RATE} for {PACED_SECONDS} s, SELECT hookd_emit(...) per transaction"
        + (f" (NOTE: {backlog} bulk deliveries still queued)" if backlog else ""))
    script = ("\\set id random(1, 1000000000)\n"
              "SELECT hookd_emit('order', 'paced-' || :id, 'order.paid',"
              " jsonb_build_object('type', 'order.paid', 'order_id', 'paced-' || :id, 'amount', 1999));\n")
    pg = b.pgbench(url, "emit_paced.sql", script, 16, PACED_SECONDS, extra=["-R", str(PACED_RATE)])
    paced_n = db.value("SELECT count(*) FROM outbox_events WHERE aggregate_id LIKE 'paced-%%'")
    b.wait_for(lambda: db.value("SELECT count(*) FROM outbox_deliveries d JOIN outbox_events e ON e.id = d.event_id"
                              " WHERE e.aggregate_id LIKE 'paced-%%' AND d.status = 'SUCCEEDED'") >= paced_n,
             timeout=60, interval=0.25, what="paced deliveries")
    paced = db.one(latency_sql("e.aggregate_id LIKE 'paced-%%'"))
    log(f"   paced: {paced_n} events emitted at {pg['tps']:.0f}/s; latency {dict(paced)}")

    # The relay keeps running (and delivering what is emitted here): an active
    # relay tells the trigger not to NOTIFY (sql/0008), which is what an
    # application sees in production. Then the same with the trigger disabled.
    log("   emit rate: pgbench hookd_emit, 16 clients, unpaced, 5 s, relay running; with hookd's trigger, then"
        " without")
    script_u = script.replace("'paced-'", "'unpaced-'")
    emit_on = b.pgbench(url, "emit_unpaced.sql", script_u, 16, 5)
    db.all("ALTER TABLE outbox_events DISABLE TRIGGER outbox_events_notify")
    COMMANDS.append("-- ALTER TABLE outbox_events DISABLE TRIGGER outbox_events_notify  (diagnostic; re-enabled after)")
    emit_off = b.pgbench(url, "emit_unpaced.sql", script_u, 16, 5)
    db.all("ALTER TABLE outbox_events ENABLE TRIGGER outbox_events_notify")
    log(f"   emit rate: {emit_on['tps']:.0f}/s with the trigger, {emit_off['tps']:.0f}/s without")
    hwm = vm_hwm_mib(w.proc.pid)
    w.stop()
    before_ceiling = sink_count(sport)

    log(f"   ceiling: loadgen --plain against the same sink, {max_inflight} connections, 10 s")
    body = json.dumps({"type": "order.paid", "order_id": "o12345", "amount": 1999})
    ceil = b.loadgen(["--url", f"http://127.0.0.1:{sport}/", "--plain", "--connections", str(max_inflight),
                      "--duration", "10", "--body-template", body, "--max-seconds", "60"])
    log(f"   sink ceiling: {ceil}")
    sink.send_signal(signal.SIGTERM)
    final = json.loads(sink.communicate(timeout=10)[0].strip().splitlines()[-1])
    db.close()
    EXTRA["delivery"] = dict(events=DELIVERY_EVENTS, succeeded=succeeded, wall_s=wall, span_s=float(span or 0),
                             insert_s=insert_s, rate=rate, bulk_latency={k: float(v) for k, v in bulk_lat.items()},
                             not_succeeded=[dict(x) for x in other], paced_events=paced_n,
                             paced_pgbench={k: v for k, v in pg.items() if k != "output"},
                             paced_latency={k: float(v) for k, v in paced.items()}, sink_ceiling=ceil,
                             sink_final=final, sink_before_ceiling=before_ceiling, vm_hwm_mib=hwm,
                             cpu_bulk_s=cpu_bulk, cpu=cpu_sys, max_inflight=max_inflight, paced_backlog=backlog,
                             autoanalyze_after_commit_s=float(stats["analyzed_after_s"])
                             if stats and stats["analyzed_after_s"] is not None else None,
                             emit_with_trigger={k: v for k, v in emit_on.items() if k != "output"},
                             emit_without_trigger={k: v for k, v in emit_off.items() if k != "output"})
    label = f"deliveries/s ({DELIVERY_EVENTS // 1000}k bulk emit, 1 relay worker)"
    if not complete:
        label += f" (INCOMPLETE: {succeeded}/{DELIVERY_EVENTS} in {RUN_CAP_S} s)"
    ceiling = ceil["ok_rps"]
    row("3 Delivery", label, rate, "/s", ceiling, f"loadgen --plain -> sink, {max_inflight} conns", ">= 5,000/s",
        rate >= 5000 and complete, cpu=cpu_sys)
    row("3 Delivery", "share of the sink's ceiling", 100.0 * rate / ceiling if ceiling else None, "%", None, "",
        ">= 40%", ceiling > 0 and rate >= 0.4 * ceiling)
    row("3 Delivery", "emit -> delivered p50 (bulk: mostly queueing)", float(bulk_lat["p50"] or 0), "ms")
    row("3 Delivery", "emit -> delivered p99 (bulk: mostly queueing)", float(bulk_lat["p99"] or 0), "ms")
    paced_label = f"paced; pgbench -R {PACED_RATE} achieved {pg['tps']:.0f}/s" + \
        (f"; started with {backlog} bulk deliveries still queued" if backlog else "")
    row("3 Delivery", f"emit -> delivered p50 ({paced_label})", float(paced["p50"] or 0), "ms")
    row("3 Delivery", f"emit -> delivered p99 ({paced_label})", float(paced["p99"] or 0), "ms", None, "",
        "<= 50 ms at 1,000/s", float(paced["p99"] or 1e9) <= 50 and pg["tps"] >= 0.95 * PACED_RATE)
    row("3 Delivery", "peak RSS of the relay worker (VmHWM)", hwm, "MiB", None, "", "<= 64 MiB", hwm <= 64)
    row("3 Delivery", "application emit rate (1 hookd_emit per txn, 16 clients, unpaced, relay running)", emit_on["tps"], "/s",
        emit_off["tps"], "same, NOTIFY trigger disabled")
    EXTRA.setdefault("chart", []).append(("Delivery", rate, ceiling))
