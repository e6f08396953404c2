"""4. Claim: the Redis claim script alone, from redis-py and from
redis-benchmark (information; BENCH_ONLY=claim)."""
from __future__ import annotations

import time

from hookdtest.bench.common import CLAIM_MEMBERS, EXTRA, Bench, log, row, sh
from hookdtest.paths import ROOT


def bench_claim(b: Bench) -> None:
    log(f"4. claim script: {CLAIM_MEMBERS} due members, claimed 100 at a time (as a worker does)")
    r = b.services.redis_client()
    sha = r.script_load((ROOT / "lua" / "claim.lua").read_text())
    due, infl = "benchclaim:{q}:due", "benchclaim:{q}:inflight"
    r.delete(due, infl)
    now = int(time.time() * 1000)
    pipe = r.pipeline(transaction=False)
    for i in range(0, CLAIM_MEMBERS, 10000):
        pipe.zadd(due, {f"{i + j:08d}-0000-4000-8000-000000000000": now - (i + j) % 5000
                        for j in range(min(10000, CLAIM_MEMBERS - i))})
        pipe.execute()
    t0 = time.monotonic()
    claimed = calls = 0
    while True:
        got = r.evalsha(sha, 2, due, infl, now, 100, now + 30000)
        calls += 1
        if not got:
            break
        claimed += len(got) // 2
    py_s = time.monotonic() - t0
    log(f"   redis-py, one client: {claimed} members in {calls} calls, {py_s:.2f} s = {claimed / py_s:,.0f} members/s,"
        f" {calls / py_s:,.0f} calls/s")
    # redis-benchmark: many clients, one member per call, from a full due set.
    r.delete(due, infl)
    for i in range(0, CLAIM_MEMBERS, 10000):
        pipe.zadd(due, {f"{i + j:08d}-0000-4000-8000-000000000000": now - (i + j) % 5000
                        for j in range(min(10000, CLAIM_MEMBERS - i))})
        pipe.execute()
    n = min(100000, CLAIM_MEMBERS)
    rb = sh(["redis-benchmark", "-h", "127.0.0.1", "-p", str(b.services.redis_port), "-n", str(n), "-c", "16",
             "--csv", "EVALSHA", sha, "2", due, infl, str(now), "1", str(now + 30000)], timeout=120)
    rb_rps = None
    for line in rb.stdout.splitlines():
        parts = [p.strip('"') for p in line.split('","')]
        if len(parts) > 1 and parts[0].startswith("EVALSHA"):
            rb_rps = float(parts[1])
    left = r.zcard(due)
    log(f"   redis-benchmark, 16 clients, 1 member per call: {rb_rps} calls/s (due left: {left})")
    r.delete(due, infl)
    EXTRA["claim"] = dict(members=claimed, calls=calls, seconds=py_s, members_per_s=claimed / py_s,
                          calls_per_s=calls / py_s, redis_benchmark_calls_per_s=rb_rps)
    row("4 Claim", "claim.lua, 100 per call, 1 client (members/s)", claimed / py_s, "/s")
    row("4 Claim", "claim.lua, 1 per call, 16 clients (redis-benchmark calls/s)", rb_rps, "/s")
