#!/usr/bin/env python3
"""Message creation through the API (POST /api/v1/app/acme/msg, 32 keep-alive
connections, build/tools/loadgen --header) next to its peers on the same
worker in the same run: signed inbox ingest and POST /healthz.
usage: scripts/bench-api.py   (after make; throw-away Postgres and Redis)"""
import os, sys, json, tempfile, subprocess
sys.path.insert(0, "tests")
os.environ.setdefault("HOOKD_BIN", os.getcwd() + "/build/hookd")
from pathlib import Path
from hookdtest.services import Services
from hookdtest.worker import write_config, Worker, run_hookd
s = Services(); w = None
try:
    url = s.db_url(s.new_database())
    tmp = Path(tempfile.mkdtemp(prefix="hookd-bench-api-"))
    cfg = write_config(tmp, url, s.redis_url, "bench3", log_level="warn")
    cfg.write_text(cfg.read_text().replace("[hookd]\n", "[hookd]\nroles = ingest, relay\n", 1))
    port = int(next(l for l in cfg.read_text().splitlines() if l.startswith("listen")).rsplit(":", 1)[1])
    w = Worker(config=cfg, port=port, log_path=tmp / "w.log"); w.start()
    run_hookd(["-c", str(cfg), "tenant", "add", "acme"], check=True)
    tok = run_hookd(["-c", str(cfg), "token", "create", "--name", "b"], check=True).stdout.strip().splitlines()[-1]
    def lg(path, n, extra):
        r = subprocess.run(["build/tools/loadgen", "--url", f"http://127.0.0.1:{port}{path}", "--connections", "32",
                            "--requests", str(n), "--plain", "--max-seconds", "120"] + extra, capture_output=True, text=True)
        return json.loads(r.stdout.strip().splitlines()[-1])
    from hookdtest.signing import SW_SECRET
    def lg2(n):
        r = subprocess.run(["build/tools/loadgen", "--url", f"http://127.0.0.1:{port}/v1/inbox/shop", "--connections", "32",
                            "--requests", str(n), "--secret", SW_SECRET, "--scheme", "standard-webhooks", "--max-seconds", "120"], capture_output=True, text=True)
        return json.loads(r.stdout.strip().splitlines()[-1])
    res = lg2(6000); print("/v1/inbox/shop", {k: res[k] for k in ("ok", "errors", "seconds", "ok_rps")}, flush=True)
    for path, extra in (("/healthz", []), ("/api/v1/app/acme/msg", ["--header", f"Authorization: Bearer {tok}",
                         "--body-template", '{"eventType":"invoice.paid","payload":{"n":1}}'])):
        res = lg(path, 6000, extra)
        print(path, {k: res[k] for k in ("ok", "errors", "seconds", "ok_rps")}, flush=True)
finally:
    if w: w.stop()
    s.stop()
