"""2. Processing: PENDING rows -> applied transitions with 1, 2 and 4 workers,
against pgbench doing one transaction per event; peak RSS; scheduler
lateness at 2,000 and 200 due rows per second (BENCH_ONLY=processing)."""
from __future__ import annotations

import statistics
import time

from hookdtest.bench.common import (COMMANDS, EXTRA, LATENESS_ROWS, LATENESS_SPREAD_S, PGBENCH_SECONDS, PROC_ENTITIES,
                                    PROC_EVENTS_PER_ENTITY, PROC_WORKERS, RUN_CAP_S, Bench, SystemCpu, cpu_seconds, log, metrics,
                                    row, vm_hwm_mib)
from hookdtest.services import Db
from hookdtest.worker import Worker


def seed_processing_rows(db: Db, entities: int, prefix: str = "", analyze: str = "webhook_inbox") -> int:
    """entities x (started, paid, shipped, started again), in random due order.
    prefix: makes the event ids and entities new (a repeated run on the same database).
    analyze: the table (or partition) to ANALYZE after. Returns the rows in analyze."""
    sql = ("INSERT INTO webhook_inbox (partner_name, partner_event_id, payload, signature_verified, event_type,"
           " entity_type, entity_id, next_attempt_at, received_at)"
           " SELECT 'shop', 'p-' || %s || e || '-' || k,"
           "  jsonb_build_object('type', t, 'data', jsonb_build_object('order_id', 'o' || %s || e)), true, t,"
           "  'order', 'o' || %s || e, now() - random() * interval '10 seconds', now() - interval '10 seconds'"
           " FROM generate_series(1, %s) e,"
           "  unnest(ARRAY['order.started', 'order.paid', 'order.shipped', 'order.started'], ARRAY[1, 2, 3, 4])"
           "  AS x(t, k)")
    cmd = "-- processing data (once per run): " + sql.replace("%s", "''", 3).replace("%s", str(entities))
    if cmd not in COMMANDS:
        COMMANDS.append(cmd)
    db.all(sql, prefix, prefix, prefix, entities)
    db.all(f"ANALYZE {analyze}")
    return db.value(f"SELECT count(*) FROM {analyze}")


def remaining(db: Db) -> int:
    return db.value("SELECT count(*) FROM webhook_inbox WHERE status IN ('PENDING', 'DEFERRED', 'RETRYING')")


def terminal_by_metrics(workers: list[Worker]) -> int:
    """Inbox events the workers brought to a terminal state, from their own
    counters: polling /metrics costs the database nothing, so watching does
    not slow down what is watched (a count(*) four times a second did)."""
    n = 0
    for w in workers:
        m = metrics(w)
        n += int(sum(m.get(f"hookd_{k}_total", 0) for k in ("applied", "noop", "ignored", "dead_letters")))
    return n


def wait_all_terminal(b: Bench, db: Db, workers: list[Worker], total: int, cap_s: float, t0: float,
                      on_tick=None) -> int:
    """Polls the workers' counters every 0.25 s and Postgres only when they
    say everything is done (or every 5 s); returns the rows still open.
    WorkerDied as soon as a worker is dead."""
    left, last_db = total, time.monotonic()
    while time.monotonic() - t0 < cap_s:
        b.pause(0.25)
        if on_tick:
            on_tick()
        try:
            done = terminal_by_metrics(workers)
        except OSError:
            done = 0  # not listening yet
        if done >= total or time.monotonic() - last_db > 5:
            left, last_db = remaining(db), time.monotonic()
            if left == 0:
                break
    return remaining(db)


def bench_processing_run(b: Bench, nworkers: int) -> dict:
    url, db = b.new_db()
    total = seed_processing_rows(db, PROC_ENTITIES)
    prefix = b.prefix()
    log(f"   {nworkers} worker(s), roles = inbox, {total} PENDING rows over {PROC_ENTITIES} entities")
    locks0 = b.pg_log_counts()
    cfgs = [b.config(url, prefix, roles="inbox") for _ in range(nworkers)]
    meter = SystemCpu(b)
    t0 = time.monotonic()
    ws = []
    for i, (cfg, port) in enumerate(cfgs):
        w = Worker(config=cfg, port=port, log_path=b.work / f"proc{nworkers}-{i}.log")
        b.workers.append(w)
        ws.append(w.start(wait_ready=False))
    hwm = [0.0] * nworkers

    def tick():
        for i, w in enumerate(ws):
            hwm[i] = max(hwm[i], vm_hwm_mib(w.proc.pid))

    left = wait_all_terminal(b, db, ws, total, RUN_CAP_S, t0, tick)
    elapsed = time.monotonic() - t0
    for i, w in enumerate(ws):
        hwm[i] = max(hwm[i], vm_hwm_mib(w.proc.pid))
    cpus = [cpu_seconds(w.proc.pid) for w in ws]
    meter.pids = [w.proc.pid for w in ws]
    cpu = meter.per_event(total - left)
    for w in ws:
        w.stop()
    locks = {k: v - locks0.get(k, 0) for k, v in b.pg_log_counts().items()}
    done = total - left
    outcomes = {r["outcome"] or r["status"]: r["n"] for r in
                db.all("SELECT outcome, status, count(*) AS n FROM webhook_inbox GROUP BY 1, 2")}
    shipped = db.value("SELECT count(*) FROM hookd_entities WHERE state = 'shipped'")
    span = db.value("SELECT extract(epoch FROM max(processed_at) - min(processed_at)) FROM webhook_inbox")
    work = db.one("SELECT sum(deferrals) AS deferrals, sum(attempts) AS failed_attempts FROM webhook_inbox")
    n_attempts = db.value("SELECT count(*) FROM attempts")
    timeline = [r["n"] for r in db.all(
        "SELECT date_trunc('second', processed_at) AS s, count(*) AS n FROM webhook_inbox GROUP BY 1 ORDER BY 1")]
    db.close()
    r = dict(workers=nworkers, total=total, done=done, seconds=elapsed, rate=done / elapsed,
             complete=left == 0, outcomes=outcomes, shipped=shipped, entities=PROC_ENTITIES,
             processed_span_s=float(span or 0), deferrals=work["deferrals"], failed_attempts=work["failed_attempts"],
             attempt_rows=n_attempts, vm_hwm_mib=hwm, cpu_s=cpus, pg_lock_errors=locks, cpu=cpu)
    log(f"   -> {done}/{total} terminal in {elapsed:.1f} s = {r['rate']:.0f} events/s; outcomes {outcomes}; "
        f"entities shipped {shipped}/{PROC_ENTITIES}; deferrals {work['deferrals']}; "
        f"peak RSS {', '.join(f'{h:.1f}' for h in hwm)} MiB; CPU {', '.join(f'{c:.1f}' for c in cpus)} s; "
        f"Postgres logged {locks}; processed per second {timeline}")
    return r


def bench_processing_ceiling(b: Bench) -> dict:
    url, db = b.new_db()
    n = PROC_ENTITIES * PROC_EVENTS_PER_ENTITY
    db.all("INSERT INTO hookd_entities (entity_type, entity_id, state)"
           " SELECT 'order', 'o' || e, 'started' FROM generate_series(1, %s) e", PROC_ENTITIES)
    db.all("INSERT INTO webhook_inbox (partner_name, partner_event_id, payload, signature_verified, event_type,"
           " entity_type, entity_id)"
           " SELECT 'pgb', 'e' || i, jsonb_build_object('type', 'order.paid', 'data',"
           "  jsonb_build_object('order_id', 'o' || (i %% %s))), true, 'order.paid', 'order', 'o' || (i %% %s)"
           " FROM generate_series(1, %s) i", PROC_ENTITIES, PROC_ENTITIES, n)
    # Since sql/0012 the partner's key is unique in hookd_dedup, not in the
    # (partitioned) inbox: the ceiling's by-key lookup gets its index back,
    # as the ceiling this script was written for had it (hookd finds rows by id).
    db.all("CREATE INDEX ON webhook_inbox (partner_name, partner_event_id)")
    db.all("ANALYZE")
    db.close()
    script = (f"\\set e random(1, {PROC_ENTITIES})\n"
              f"\\set id random(1, {n})\n"
              "BEGIN;\n"
              "SELECT state FROM hookd_entities WHERE entity_type = 'order' AND entity_id = 'o' || :e FOR UPDATE;\n"
              "UPDATE hookd_entities SET state = 'paid', version = version + 1, updated_at = now()"
              " WHERE entity_type = 'order' AND entity_id = 'o' || :e;\n"
              "UPDATE webhook_inbox SET status = 'PROCESSED', outcome = 'applied', processed_at = now()"
              " WHERE partner_name = 'pgb' AND partner_event_id = 'e' || :id;\n"
              "COMMIT;\n")
    return b.pgbench(url, "process_event.sql", script, 16, PGBENCH_SECONDS)


def bench_lateness(b: Bench, n: int) -> dict:
    # The rows are written first and the worker started after: its start-up
    # reconcile pass puts them into Redis (reconcile_horizon covers them), and
    # from then on only the scheduler decides when each is claimed. The
    # default reconcile_interval applies (a pass every second would measure
    # the reconciler's Redis traffic as much as the scheduler).
    url, db = b.new_db()
    cfg, port = b.config(url, b.prefix(), roles="inbox")
    sql = ("INSERT INTO webhook_inbox (partner_name, partner_event_id, payload, signature_verified, event_type,"
           " entity_type, entity_id, next_attempt_at)"
           " SELECT 'shop', 'l-' || i, jsonb_build_object('type', 'order.started', 'data',"
           "  jsonb_build_object('order_id', 'l' || i)), true, 'order.started', 'order', 'l' || i,"
           "  now() + interval '3 seconds' + (i * %s) * interval '1 millisecond'"
           " FROM generate_series(0, %s - 1) i")
    step_ms = LATENESS_SPREAD_S * 1000.0 / max(n, 1)
    COMMANDS.append("-- lateness data: " + sql.replace("%s", str(step_ms), 1).replace("%s", str(n), 1))
    db.all(sql, step_ms, n)
    w = b.worker(cfg, port, f"lateness-{n}")
    t0 = time.monotonic()
    samples = []
    last = [0.0]

    def tick():
        if time.monotonic() - last[0] >= 0.5:
            last[0] = time.monotonic()
            m = metrics(w)
            samples.append((m.get('hookd_inbox_lateness_seconds{quantile="0.5"}', 0) * 1000,
                            m.get('hookd_inbox_lateness_seconds{quantile="0.99"}', 0) * 1000))

    wait_all_terminal(b, db, [w], n, LATENESS_SPREAD_S + 30, t0, tick)
    final = metrics(w)
    hwm = vm_hwm_mib(w.proc.pid)
    w.stop()
    # Independently of the worker's own window: due -> committed, for every row.
    q = db.one("SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM processed_at - next_attempt_at))"
               "  * 1000 AS p50,"
               " percentile_cont(0.99) WITHIN GROUP (ORDER BY extract(epoch FROM processed_at - next_attempt_at))"
               "  * 1000 AS p99,"
               " max(extract(epoch FROM processed_at - next_attempt_at)) * 1000 AS max,"
               " count(*) FILTER (WHERE status = 'PROCESSED') AS done FROM webhook_inbox")
    db.close()
    during = [s for s in samples if s[1] > 0]
    r = dict(final_p50_ms=final.get('hookd_inbox_lateness_seconds{quantile="0.5"}', 0) * 1000,
             final_p99_ms=final.get('hookd_inbox_lateness_seconds{quantile="0.99"}', 0) * 1000,
             worst_window_p99_ms=max((s[1] for s in during), default=0.0),
             median_window_p50_ms=statistics.median([s[0] for s in during]) if during else 0.0,
             due_to_processed_p50_ms=float(q["p50"] or 0), due_to_processed_p99_ms=float(q["p99"] or 0),
             due_to_processed_max_ms=float(q["max"] or 0), done=q["done"], rows=n, vm_hwm_mib=hwm,
             rate=n / LATENESS_SPREAD_S)
    log(f"   lateness: {r}")
    return r


def bench_processing(b: Bench) -> None:
    log(f"2. processing: {PROC_ENTITIES * PROC_EVENTS_PER_ENTITY} events, 1 / 2 / 4 workers")
    runs = []
    for n in PROC_WORKERS:
        runs.append(bench_processing_run(b, n))
    log("   ceiling: pgbench per-event transaction, 16 clients")
    pg = bench_processing_ceiling(b)
    log(f"   pgbench: {pg['tps']:.0f} tps, latency avg {pg['latency_avg_ms']} ms, failed {pg['failed']}")
    lats = []
    for n in (LATENESS_ROWS, LATENESS_ROWS // 10):
        log(f"   lateness: {n} rows due over {LATENESS_SPREAD_S:.0f} s ({n / LATENESS_SPREAD_S:.0f}/s),"
            " seeded by the worker's start-up reconcile pass")
        lats.append(bench_lateness(b, n))
    lat, low = lats
    EXTRA["processing"] = dict(runs=runs, pgbench={k: v for k, v in pg.items() if k != "output"}, lateness=lats)

    for r in runs:
        label = f"events/s, {r['workers']} worker{'s' if r['workers'] > 1 else ''}"
        label += (f" ({r['attempt_rows'] / r['seconds']:,.0f} evaluations/s incl. deferrals;"
                  f" Postgres logged {r['pg_lock_errors'].get('deadlocks', 0)} deadlocks)")
        if not r["complete"]:
            label += f" (INCOMPLETE: {r['done']}/{r['total']} in {RUN_CAP_S} s)"
        correct = r["shipped"] == r["entities"]
        if not correct:
            label += f" (only {r['shipped']}/{r['entities']} entities reached 'shipped')"
        target = ">= 2x" if r["workers"] <= 2 else "scale-out"
        ok = (r["rate"] >= 2 * pg["tps"] and r["complete"] and correct) if r["workers"] <= 2 else None
        row("2 Processing", label, r["rate"], "/s", pg["tps"], "pgbench per-event txn, 16 clients", target, ok,
            cpu=r["cpu"])
    one = runs[0]
    row("2 Processing", "peak RSS of the worker (VmHWM, 1-worker run)", max(one["vm_hwm_mib"]), "MiB", None, "",
        "<= 64 MiB", max(one["vm_hwm_mib"]) <= 64)
    for x in (lat, low):
        r = f"{x['rate']:,.0f} due/s"
        row("2 Processing", f"scheduler lateness p50 at {r} (/metrics, median of 0.5 s samples)",
            x["median_window_p50_ms"], "ms")
        row("2 Processing", f"scheduler lateness p99 at {r} (/metrics, worst 0.5 s sample)", x["worst_window_p99_ms"],
            "ms", None, "", "<= 25 ms" if x is lat else "-", (x["worst_window_p99_ms"] <= 25) if x is lat else None)
        row("2 Processing", f"due -> committed p99 at {r} (every row, from SQL)", x["due_to_processed_p99_ms"], "ms")
    EXTRA.setdefault("chart", []).extend([(f"Process {r['workers']}w", r["rate"], pg["tps"]) for r in runs])
