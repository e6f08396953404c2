"""8. Message creation through the Svix-compatible API: POST
/api/v1/app/ID/msg as the svix SDKs send it — a bearer token, an
idempotency-key per request, a unique eventId — over 32 keep-alive
connections to one worker (roles = ingest, which serves the API), next to
its ceiling in the same run on the same worker: scenario 1's signed inbox
ingest (BENCH_ONLY=api)."""
from __future__ import annotations

import os
import time

from hookdtest.bench.common import (EXTRA, INGEST_CONNECTIONS, INGEST_REQUESTS, RUN_CAP_S, Bench, cpu_seconds, log,
                                    row)
from hookdtest.bench.ingest import ingest_load
from hookdtest.worker import run_hookd

API_REQUESTS = INGEST_REQUESTS
API_TARGET = 5000.0
MESSAGE_TEMPLATE = '{"eventType":"invoice.paid","eventId":"evt-%d","payload":{"invoice":"in_%d","amount":1200}}'


def bench_api(b: Bench) -> None:
    log(f"8. API: {API_REQUESTS} message creations (idempotency-key, eventId) over {INGEST_CONNECTIONS} connections,"
        " roles = ingest, next to signed inbox ingest on the same worker")
    url, db = b.new_db()
    cfg, port = b.config(url, b.prefix(), roles="ingest")
    w = b.worker(cfg, port, "api")
    run_hookd(["-c", str(cfg), "tenant", "add", "acme"], check=True)
    tok = run_hookd(["-c", str(cfg), "token", "create", "--name", "bench"], check=True).stdout.strip().splitlines()[-1]
    stamp = f"{os.getpid()}-{int(time.time())}"
    ceiling = ingest_load(b, w, f"bench-api-{stamp}")
    log(f"   ceiling, signed inbox ingest: {ceiling}")
    cpu0 = cpu_seconds(w.proc.pid)
    res = b.loadgen(["--url", f"{w.url}/api/v1/app/acme/msg", "--connections", str(INGEST_CONNECTIONS),
                     "--requests", str(API_REQUESTS), "--plain", "--idempotency", "--id-prefix", f"api-{stamp}",
                     "--header", f"Authorization: Bearer {tok}", "--body-template", MESSAGE_TEMPLATE,
                     "--max-seconds", str(RUN_CAP_S)])
    cpu = cpu_seconds(w.proc.pid) - cpu0
    w.stop()
    log(f"   hookd API: {res}; hookd CPU {cpu:.1f} s")
    stored = db.value("SELECT count(*) FROM outbox_events WHERE tenant_id IS NOT NULL")
    keys = db.value("SELECT count(*) FROM hookd_idempotency_keys WHERE status = 202")
    ids = db.value("SELECT count(*) FROM hookd_message_ids")
    db.close()
    log(f"   messages stored: {stored}, eventIds: {ids}, idempotency records: {keys} (answered 202: {res['ok']})")
    EXTRA["api"] = dict(loadgen=res, ceiling=ceiling, stored=stored, keys=keys, event_ids=ids, cpu_s=cpu)
    rate = res["ok_rps"]
    row("8 API", "messages created/s (svix requests, 32 conns, 1 worker)", rate, "/s", ceiling["ok_rps"],
        "signed inbox ingest, same worker", ">= 5,000/s", rate >= API_TARGET)
    row("8 API", "request latency p99", res["p99_ms"], "ms", ceiling["p99_ms"], "inbox ingest p99")
    row("8 API", "messages, eventIds and keys stored", stored, f"of {res['ok']}", None, "", "all, once",
        stored == res["ok"] == ids == keys and res["errors"] == 0)
    EXTRA.setdefault("chart", []).append(("API msgs", rate, ceiling["ok_rps"]))
