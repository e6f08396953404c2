"""6. Peers: the same work in hookd, BullMQ 6.7.6, pg-boss 12.38.0 and Graphile
Worker 0.18.0 (pinned in tests/node, drivers in tests/node/bench/), on the
same Postgres and Redis in the same run, and hookd's ratio to the best peer
(BENCH_ONLY=peers, or `make bench-peers`):

  processing  one Postgres transaction per job: lock the entity row, update
              it, insert a processed row (hookd: its inbox applying events)
  retries     fail 3 times, succeed on the 4th with that transaction, 10 ms
              fixed backoff (hookd: deliveries to a sink that answers 500
              three times per webhook-id, `circuit = off`)
  lateness    jobs due at about 1,000/s for 10 s: start - due (hookd: its
              scheduler's claim lateness, the same rows as scenario 2)

Every system does the same number of jobs: PEER_JOBS processed (hookd:
PEER_JOBS / 4 entities x 4 events), PEER_RETRY_JOBS retried (as many as
scenario 5), PEER_LATENESS_JOBS due. Graphile Worker's retries wait
exp(attempts) seconds, fixed in the library: they are reported, and the
retry ratio is taken against BullMQ and pg-boss only (RETRY_PEERS)."""
from __future__ import annotations

import json
import os
import subprocess
import time

from hookdtest.bench import processing
from hookdtest.bench.common import COMMANDS, EXTRA, SCALE, Bench, SystemCpu, cpu_text, log, row
from hookdtest.bench.retry import retry_run
from hookdtest.paths import ROOT

NODE_DIR = ROOT / "tests" / "node"
PEER_JOBS = int(20000 * SCALE)
PEER_ENTITIES = max(1, PEER_JOBS // 4)
PEER_RETRY_JOBS = int(20000 * SCALE)
PEER_LATENESS_JOBS = int(10000 * SCALE)
PEER_SPREAD_MS = 10000
PEERS = [p for p in os.environ.get("BENCH_PEERS", "bullmq,pgboss,graphile").split(",") if p]
RETRY_PEERS = [p for p in PEERS if p != "graphile"]  # a fixed exponential backoff of seconds: reported only


def peer_db(b: Bench) -> str:
    url, db = b.new_db()
    db.all("CREATE TABLE peer_entities (id text PRIMARY KEY, state text NOT NULL, version int NOT NULL DEFAULT 0,"
           " updated_at timestamptz)")
    db.all("CREATE TABLE peer_processed (job_id text PRIMARY KEY, entity_id text NOT NULL,"
           " at timestamptz NOT NULL DEFAULT now())")
    db.all("INSERT INTO peer_entities (id, state) SELECT 'e' || g, 'started' FROM generate_series(0, %s) g",
           PEER_ENTITIES)
    db.all("ANALYZE")
    db.close()
    return url


def run_peer(b: Bench, peer: str, mode: str, n: int) -> dict:
    url = peer_db(b)
    a = dict(mode=mode, n=n, entities=PEER_ENTITIES, pg=url, redisPort=b.services.redis_port, fails=3,
             spreadMs=PEER_SPREAD_MS, capMs=120000)
    cmd = ["node", str(NODE_DIR / "bench" / f"{peer}.mjs"), json.dumps(a)]
    COMMANDS.append(f"(cd tests/node && node bench/{peer}.mjs '{json.dumps(dict(a, pg='postgresql://.../DB'))}')")
    meter = SystemCpu(b)  # node is this process's child: its CPU counts once it has exited
    r = subprocess.run(cmd, cwd=NODE_DIR, capture_output=True, text=True, timeout=300)
    try:
        out = json.loads(r.stdout.strip().splitlines()[-1])
    except Exception:
        raise RuntimeError(f"{peer} {mode} printed no result ({r.returncode}): {r.stdout[-500:]} {r.stderr[-1500:]}")
    if mode != "lateness":
        from hookdtest.services import Db
        db = Db(url)
        out["processed_rows"] = db.value("SELECT count(*) FROM peer_processed")
        db.close()
    out["cpu"] = meter.per_event(out.get("attempts") or out.get("completed") or n, app="node")
    log(f"   {peer} {mode}: {json.dumps({k: v for k, v in out.items() if k != 'config'})}")
    return out


def hookd_processing(b: Bench) -> dict:
    saved = processing.PROC_ENTITIES
    processing.PROC_ENTITIES = PEER_ENTITIES
    try:
        return processing.bench_processing_run(b, 1)
    finally:
        processing.PROC_ENTITIES = saved


def ratio_row(what: str, mine: float, peers: dict[str, dict], key: str, unit: str, target: float,
              lower_is_better: bool = False, cpu: dict | None = None) -> None:
    """hookd's figure next to the best peer's; `cpu` is hookd's CPU per
    event, the best peer's is named beside it."""
    vals = {p: r[key] for p, r in peers.items() if r and r.get("complete", True)}
    if not vals:
        row("6 Peers", what, mine, unit, cpu=cpu)
        return
    best_peer = (min if lower_is_better else max)(vals, key=vals.get)
    best = vals[best_peer]
    who = f"best peer: {best_peer}"
    if cpu and peers[best_peer].get("cpu"):
        who += f", CPU us an event {cpu_text(peers[best_peer]['cpu'])}"
    if lower_is_better:
        ok = mine <= target
        row("6 Peers", what, mine, unit, best, who, f"<= {target:g} {unit}", ok, cpu=cpu)
    else:
        ok = best > 0 and mine >= target * best
        row("6 Peers", what, mine, unit, best, who, f">= {target:g}x", ok, cpu=cpu)


def bench_peers(b: Bench) -> None:
    log(f"6. peers: {', '.join(PEERS)} next to hookd, same Postgres and Redis, same run:"
        f" processing {PEER_JOBS} jobs over {PEER_ENTITIES} entities, retries {PEER_RETRY_JOBS} jobs x 4 attempts,"
        f" lateness {PEER_LATENESS_JOBS} jobs due over {PEER_SPREAD_MS / 1000:.0f} s")
    if subprocess.run(["node", "--version"], capture_output=True).returncode != 0:
        raise RuntimeError("node is not installed (scripts/node-deps.sh)")
    res: dict[str, dict] = {"hookd": {}}
    t0 = time.monotonic()
    res["hookd"]["processing"] = hookd_processing(b)
    for p in PEERS:
        res.setdefault(p, {})["processing"] = run_peer(b, p, "processing", PEER_JOBS)
    res["hookd"]["retries"] = retry_run(b, events=PEER_RETRY_JOBS, label=" (peers section)")
    for p in PEERS:
        res[p]["retries"] = run_peer(b, p, "retries", PEER_RETRY_JOBS)
    log(f"   hookd lateness: {PEER_LATENESS_JOBS} inbox rows due over {PEER_SPREAD_MS / 1000:.0f} s")
    res["hookd"]["lateness"] = processing.bench_lateness(b, PEER_LATENESS_JOBS)
    for p in PEERS:
        res[p]["lateness"] = run_peer(b, p, "lateness", PEER_LATENESS_JOBS)
    EXTRA["peers"] = dict(results=res, seconds=time.monotonic() - t0)

    h = res["hookd"]
    pr = h["processing"]
    ratio_row(f"processing: jobs/s (hookd: inbox events/s, 1 worker; peers: 1 process)", pr["rate"],
              {p: res[p]["processing"] for p in PEERS}, "per_s", "/s", 3, cpu=pr["cpu"])
    rr = h["retries"]
    ratio_row("retries: attempts/s (fail 3x, 4th succeeds; hookd: deliveries, circuit = off)", rr["attempts_per_s"],
              {p: res[p]["retries"] for p in RETRY_PEERS}, "attempts_per_s", "/s", 2, cpu=rr["cpu"])
    for p in set(PEERS) - set(RETRY_PEERS):
        row("6 Peers", f"{p} retries: attempts/s (its own exponential backoff, not compared)",
            res[p]["retries"]["attempts_per_s"], "/s", cpu=res[p]["retries"]["cpu"])
    lat = h["lateness"]
    peer_lat = {p: dict(res[p]["lateness"], p99=res[p]["lateness"]["lateness_p99_ms"]) for p in PEERS}
    ratio_row(f"lateness p99 at {PEER_LATENESS_JOBS * 1000 // PEER_SPREAD_MS:,} due/s (hookd: worst 0.5 s window"
              " of /metrics)", lat["worst_window_p99_ms"], peer_lat, "p99", "ms", 25, lower_is_better=True)
    for p in PEERS:
        row("6 Peers", f"{p} lateness p50 / p99 (ms)", res[p]["lateness"]["lateness_p50_ms"], "ms",
            None, f"p99 {res[p]['lateness']['lateness_p99_ms']:.0f} ms")
