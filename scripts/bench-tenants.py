#!/usr/bin/env python3
"""Fan-out with tenants, next to its peers in the same run: deliveries/s to a
local sink (build/tools/sink) with one global endpoint, with 10,000 tenants x
3 endpoints (events spread over the tenants), and the same with a payload
filter on every endpoint. usage: scripts/bench-tenants.py [DELIVERIES]
(after make; throw-away Postgres and Redis)"""
import os, sys, json, tempfile, time, subprocess, urllib.request
sys.path.insert(0, "tests")
os.environ.setdefault("HOOKD_BIN", os.getcwd() + "/build/hookd")
from pathlib import Path
from hookdtest.services import Services, Db
from hookdtest.worker import write_config, Worker, run_hookd
SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
N = int(sys.argv[1]) if len(sys.argv) > 1 else 9000
s = Services(); procs = []
def count(port):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/count", timeout=5) as r:
        return json.loads(r.read())["count"]
try:
    sink = subprocess.Popen(["build/tools/sink", "--port", "0"], stdout=subprocess.PIPE, text=True); procs.append(sink)
    sport = json.loads(sink.stdout.readline())["listening"]
    results = {}
    for scenario in ("single", "tenants", "filters"):
        name = s.new_database(); url = s.db_url(name); db = Db(url)
        tmp = Path(tempfile.mkdtemp(prefix=f"hookd-bench-{scenario}-"))
        cfg = write_config(tmp, url, s.redis_url, "fo" + scenario, log_level="warn")
        cfg.write_text(cfg.read_text().replace("[hookd]\n", "[hookd]\nallow_private_networks = true\nroles = relay\n", 1))
        port = int(next(l for l in cfg.read_text().splitlines() if l.startswith("listen")).rsplit(":", 1)[1])
        base = count(sport)
        if scenario == "single":
            db.all("INSERT INTO webhook_endpoints (name, url, secret) VALUES ('sink', %s, %s)", f"http://127.0.0.1:{sport}/", SECRET)
            emit = "SELECT count(hookd_emit('order', 'o' || g, 'order.paid', jsonb_build_object('n', g))) FROM generate_series(1, %s) g"
            args = (N,); want = N
        else:
            db.all("INSERT INTO hookd_tenants (id, uid, name) SELECT 't' || lpad(g::text, 6, '0'), 'u' || g, 'T' || g FROM generate_series(1, 10000) g")
            db.all("INSERT INTO webhook_endpoints (name, url, secret, tenant_id) SELECT 'e' || g || '-' || k, %s, %s, 't' || lpad(g::text, 6, '0')"
                   " FROM generate_series(1, 10000) g, generate_series(1, 3) k", f"http://127.0.0.1:{sport}/", SECRET)
            if scenario == "filters":
                db.all("""UPDATE webhook_endpoints SET payload_filter = '{"n": {"$gt": 0}}'""")
            db.all("ANALYZE webhook_endpoints")
            emit = ("SELECT count(hookd_emit('order', 'o' || g, 'order.paid', jsonb_build_object('n', g), 't' || lpad((1 + (g * 7919) %% 10000)::text, 6, '0')))"
                    " FROM generate_series(1, %s) g")
            args = (N // 3,); want = (N // 3) * 3
        w = Worker(config=cfg, port=port, log_path=tmp / "w.log"); w.start(); procs.append(w)
        t0 = time.monotonic()
        db.all(emit, *args)
        while count(sport) - base < want:
            if time.monotonic() - t0 > 300: raise SystemExit(f"{scenario}: timeout at {count(sport) - base}")
            time.sleep(0.05)
        dt = time.monotonic() - t0
        results[scenario] = want / dt
        print(scenario, f"{want} deliveries in {dt:.2f}s = {want / dt:.0f}/s", flush=True)
        w.stop(); procs.remove(w)
    print("ratio tenants/single", results["tenants"] / results["single"], "filters/tenants", results["filters"] / results["tenants"])
finally:
    for p in procs:
        try: p.stop() if hasattr(p, "stop") else p.kill()
        except Exception: pass
    s.stop()
