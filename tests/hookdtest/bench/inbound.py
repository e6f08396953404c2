"""9. Inbound retries (BENCH_ONLY=inbound): a retry storm on the inbox. N
PENDING events (one `order.started` per entity), a fraction of them
(BENCH_INBOUND_FLAKY, default 10%) on entities whose apply raises an SQL
error three times (a trigger on hookd_entities, as an application's check
would) and goes through on the 4th attempt; [retry] schedule = 10ms x 3,
max_attempts = 4, jitter = 0%; one worker, roles = inbox. The figure is
evaluations/s (rows of `attempts` over the time from the worker's start to
the last event's end), next to the same run's first-attempt figure: the same
events with no failure (the trigger installed, refusing nothing).

BENCH_INBOUND_BASELINE=binary (e.g. main's hookd): both figures for that
binary too, runs alternating (this build, baseline, this build, baseline),
and this build's ratio to it."""
from __future__ import annotations

import os
import re
import time

from hookdtest.bench.common import COMMANDS, EXTRA, RUN_CAP_S, SCALE, Bench, cpu_seconds, log, row
from hookdtest.bench.processing import wait_all_terminal
from hookdtest.worker import Worker

INBOUND_EVENTS = int(20000 * SCALE)
INBOUND_FLAKY = float(os.environ.get("BENCH_INBOUND_FLAKY", "0.1"))
INBOUND_FAILS = 3
BASELINE = os.environ.get("BENCH_INBOUND_BASELINE")

# Entities 'f…' refuse their apply while their event has failed fewer than
# INBOUND_FAILS times (the attempts counter survives the rolled-back apply).
FLAKY_SQL = """
CREATE INDEX bench_flaky_inbox ON webhook_inbox (entity_id) WHERE entity_id LIKE 'f%%';
CREATE FUNCTION bench_flaky() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.entity_id LIKE 'f%%' AND EXISTS (SELECT 1 FROM webhook_inbox w WHERE w.entity_id LIKE 'f%%'
      AND w.entity_id = NEW.entity_id AND w.status <> 'PROCESSED' AND w.attempts < {fails}) THEN
    RAISE EXCEPTION 'flaky apply for %%', NEW.entity_id;
  END IF;
  RETURN NEW;
END $$;
CREATE TRIGGER bench_flaky BEFORE UPDATE ON hookd_entities FOR EACH ROW EXECUTE FUNCTION bench_flaky();
"""

SEED_SQL = ("INSERT INTO webhook_inbox (partner_name, partner_event_id, payload, signature_verified, event_type,"
            " entity_type, entity_id, next_attempt_at, received_at)"
            " SELECT 'shop', 'i-' || e, jsonb_build_object('type', 'order.started', 'data',"
            "  jsonb_build_object('order_id', x.id)), true, 'order.started', 'order', x.id,"
            "  now() - random() * interval '10 seconds', now() - interval '10 seconds'"
            " FROM generate_series(1, %s) e,"
            "  LATERAL (SELECT CASE WHEN e <= %s THEN 'f' ELSE 'o' END || e AS id) x")


def inbound_run(b: Bench, flaky: float, label: str, binary: str | None = None) -> dict:
    import hookdtest.worker as worker_mod
    saved = worker_mod.HOOKD_BIN
    if binary:
        worker_mod.HOOKD_BIN = binary
    try:
        return _inbound_run(b, flaky, label)
    finally:
        worker_mod.HOOKD_BIN = saved


def _inbound_run(b: Bench, flaky: float, label: str) -> dict:
    n = INBOUND_EVENTS
    nflaky = int(n * flaky)
    url, db = b.new_db()
    db.all(FLAKY_SQL.format(fails=INBOUND_FAILS))
    db.all(SEED_SQL, n, nflaky)
    db.all("ANALYZE webhook_inbox")
    cmd = "-- inbound storm data: " + FLAKY_SQL.format(fails=INBOUND_FAILS).replace("%%", "%") + \
        SEED_SQL.replace("%s", str(n), 1).replace("%s", "<flaky>", 1)
    if cmd not in COMMANDS:
        COMMANDS.append(cmd)
    cfg, port = b.config(url, b.prefix(), roles="inbox")
    text = re.sub(r"^schedule = .*$", "schedule = 10ms, 10ms, 10ms", cfg.read_text(), count=1, flags=re.M)
    cfg.write_text(text)
    EXTRA.setdefault("configs", {})["inbox (inbound retries)"] = text
    t0 = time.monotonic()
    w = Worker(config=cfg, port=port, log_path=b.work / f"inbound{label.replace(' ', '_')}.log")
    b.workers.append(w)
    w.start(wait_ready=False)
    left = wait_all_terminal(b, db, [w], n, 2 * RUN_CAP_S, t0)
    elapsed = time.monotonic() - t0
    cpu = cpu_seconds(w.proc.pid)
    w.stop()
    evaluations = db.value("SELECT count(*) FROM attempts WHERE source = 'inbox'")
    outcomes = {r["k"]: r["n"] for r in db.all(
        "SELECT coalesce(outcome, status) AS k, count(*) AS n FROM webhook_inbox GROUP BY 1")}
    timeline = [r["n"] for r in db.all(
        "SELECT date_trunc('second', attempted_at) AS s, count(*) AS n FROM attempts GROUP BY 1 ORDER BY 1")]
    wrong = db.value("SELECT count(*) FROM webhook_inbox WHERE outcome IS DISTINCT FROM 'applied'"
                     " OR attempts <> CASE WHEN entity_id LIKE 'f%%' THEN %s ELSE 0 END", INBOUND_FAILS)
    db.close()
    expected = n + INBOUND_FAILS * nflaky
    r = dict(events=n, flaky=nflaky, evaluations=evaluations, expected_evaluations=expected, seconds=elapsed,
             evals_per_s=evaluations / elapsed, events_per_s=(n - left) / elapsed, complete=left == 0,
             correct=wrong == 0 and evaluations == expected, outcomes=outcomes, cpu_s=cpu, per_second=timeline)
    log(f"   inbound{label}: {n - left}/{n} events ({nflaky} failing {INBOUND_FAILS}x) in {elapsed:.1f} s:"
        f" {r['evals_per_s']:,.0f} evaluations/s, {r['events_per_s']:,.0f} events/s; {evaluations} attempts rows"
        f" (expected {expected}); outcomes {outcomes}; {wrong} rows not applied as expected; CPU {cpu:.1f} s;"
        f" evaluations per second {timeline}")
    return r


def pair(b: Bench, label: str, binary: str | None = None) -> tuple[dict, dict]:
    first = inbound_run(b, 0.0, f" first attempts{label}", binary)
    storm = inbound_run(b, INBOUND_FLAKY, f" storm{label}", binary)
    log(f"   inbound{label}: storm / first attempts = {storm['evals_per_s']:,.0f} / {first['evals_per_s']:,.0f}"
        f" evaluations/s = {storm['evals_per_s'] / first['evals_per_s']:.2f}x")
    return first, storm


def bench_inbound(b: Bench) -> None:
    log(f"9. inbound retries: {INBOUND_EVENTS} inbox events, {INBOUND_FLAKY:.0%} of them refused by an SQL error"
        f" {INBOUND_FAILS}x then applied; [retry] schedule = 10ms x 3, max_attempts = 4; 1 worker, roles = inbox")
    rounds = 2 if BASELINE else 1
    mine, base = [], []
    for i in range(rounds):
        mine.append(pair(b, " (this build)" if i == 0 else " (this build, again)"))
        if BASELINE:
            base.append(pair(b, " (baseline)" if i == 0 else " (baseline, again)", BASELINE))
    EXTRA["inbound"] = dict(this_build=mine, baseline=base, baseline_binary=BASELINE)

    def mean(runs, k, key):
        return sum(p[k][key] for p in runs) / len(runs)

    first, storm = mean(mine, 0, "evals_per_s"), mean(mine, 1, "evals_per_s")
    ok = all(p[1]["complete"] and p[1]["correct"] for p in mine)
    note = "" if ok else " (INCOMPLETE or WRONG: see the log)"
    row("9 Inbound retry", f"evaluations/s in a storm ({INBOUND_EVENTS:,} events, {INBOUND_FLAKY:.0%} fail"
        f" {INBOUND_FAILS}x on an SQL error then apply){note}", storm, "/s", first,
        "first attempts, same events, no failure", "-", None)
    if BASELINE:
        bfirst, bstorm = mean(base, 0, "evals_per_s"), mean(base, 1, "evals_per_s")
        log(f"   storm evaluations/s, this build / baseline: {storm:,.0f} / {bstorm:,.0f} = {storm / bstorm:.2f}x;"
            f" first attempts {first:,.0f} / {bfirst:,.0f} = {first / bfirst:.2f}x; storm / first: this build"
            f" {storm / first:.2f}x, baseline {bstorm / bfirst:.2f}x (baseline {BASELINE})")
        row("9 Inbound retry", "storm evaluations/s, this build vs the baseline binary (alternating, mean of 2)",
            storm, "/s", bstorm, f"baseline {BASELINE}")
        row("9 Inbound retry", "baseline: storm evaluations/s next to its first attempts", bstorm, "/s", bfirst,
            "baseline, first attempts")
