"""1. Ingest: signed POSTs -> committed inbox rows, against pgbench doing
single-row INSERTs (BENCH_ONLY=ingest)."""
from __future__ import annotations

import json
import os
import time

from hookdtest.bench.common import (BODY_TEMPLATE, Bench, EXTRA, INGEST_CONNECTIONS, INGEST_ENTITIES, INGEST_REQUESTS,
                                    PGBENCH_SECONDS, RUN_CAP_S, cpu_seconds, log, metrics, row)
from hookdtest.signing import SW_SECRET


def ingest_load(b: Bench, w, id_prefix: str) -> dict:
    """INGEST_REQUESTS signed POSTs from loadgen to worker w; loadgen's result."""
    return b.loadgen(["--url", f"{w.url}/v1/inbox/shop", "--connections", str(INGEST_CONNECTIONS),
                      "--requests", str(INGEST_REQUESTS), "--secret", SW_SECRET, "--scheme", "standard-webhooks",
                      "--body-template", BODY_TEMPLATE, "--entities", str(INGEST_ENTITIES),
                      "--id-prefix", id_prefix, "--max-seconds", str(RUN_CAP_S)])


def bench_ingest(b: Bench) -> None:
    log(f"1. ingest: {INGEST_REQUESTS} signed events over {INGEST_CONNECTIONS} connections, roles = ingest")
    url, db = b.new_db()
    cfg, port = b.config(url, b.prefix(), roles="ingest")
    w = b.worker(cfg, port, "ingest")
    id_prefix = f"bench-{os.getpid()}-{int(time.time())}"
    cpu0 = cpu_seconds(w.proc.pid)
    res = ingest_load(b, w, id_prefix)
    cpu = cpu_seconds(w.proc.pid) - cpu0
    m = metrics(w)
    w.stop()
    stored = db.value("SELECT count(*) FROM webhook_inbox WHERE partner_event_id LIKE %s", id_prefix + "-%")
    log(f"   hookd: {res}")
    log(f"   rows stored: {stored} (answered 2xx: {res['ok']}); hookd CPU {cpu:.1f} s")
    EXTRA["ingest"] = dict(loadgen=res, stored=stored, cpu_s=cpu,
                           ingest_hist_count=m.get("hookd_ingest_seconds_count"))
    db.close()

    log(f"   ceiling: pgbench single-row INSERT ... ON CONFLICT DO NOTHING, {INGEST_CONNECTIONS} clients, "
        f"{PGBENCH_SECONDS} s")
    url2, db2 = b.new_db()
    body = BODY_TEMPLATE.replace("%d", "1234")
    headers = json.dumps({"host": "127.0.0.1:12345", "content-type": "application/json", "content-length": "52",
                          "webhook-id": f"{id_prefix}-12345", "webhook-timestamp": "1700000000"})
    # the key into hookd_dedup and the row into webhook_inbox in one statement, as ingest_insert.sql does
    script = ("\\set id random(1, 1000000000)\n"
              "WITH k AS (INSERT INTO hookd_dedup (partner_name, partner_event_id, inbox_id)"
              " VALUES ('shop', 'pgb-' || :id, gen_random_uuid()) ON CONFLICT DO NOTHING RETURNING inbox_id)"
              " INSERT INTO webhook_inbox (id, partner_name, partner_event_id, payload, signature_verified, event_type,"
              " entity_type, entity_id, headers)"
              f" SELECT inbox_id, 'shop', 'pgb-' || :id, '{body}'::jsonb, true, 'order.started', 'order',"
              f" 'o' || (:id % 10000), '{headers}'::jsonb FROM k;\n")
    pg = b.pgbench(url2, "ingest_insert.sql", script, INGEST_CONNECTIONS, PGBENCH_SECONDS)
    db2.close()
    log(f"   pgbench: {pg['tps']:.0f} tps, latency avg {pg['latency_avg_ms']} ms")
    EXTRA["ingest"]["pgbench"] = {k: v for k, v in pg.items() if k != "output"}

    rate = res["ok_rps"]
    row("1 Ingest", "accepted events/s (20k signed, 32 conns)", rate, "/s", pg["tps"],
        "pgbench 1-row INSERT, 32 clients", ">= 1.5x", rate >= 1.5 * pg["tps"])
    row("1 Ingest", "request latency p50", res["p50_ms"], "ms", pg["latency_avg_ms"], "pgbench avg latency")
    row("1 Ingest", "request latency p99", res["p99_ms"], "ms", None, "", "<= 25 ms", res["p99_ms"] <= 25)
    row("1 Ingest", "accepted rows present afterwards", stored, f"of {res['ok']}", None, "", "all",
        stored == res["ok"] and res["errors"] == 0)
    EXTRA.setdefault("chart", []).append(("Ingest", rate, pg["tps"]))
