#!/usr/bin/env python3
"""`make demo`: hookd's main job, end to end, on one machine.

Starts a throw-away PostgreSQL and Redis, migrates, starts two workers and a
flaky local receiver, then plays the story with short backoffs
(examples/demo.conf):

  1. orders whose partner events arrive shuffled (shipped before paid) heal;
  2. duplicate deliveries are absorbed;
  3. a poison event takes four attempts and lands in the DLQ with an alert;
  4. the config is "fixed" (SIGHUP) and the poison event is replayed;
  5. every shipped order is announced through the outbox to a receiver that
     fails twice per event and then succeeds: signed, retried, delivered.

It ends with a summary table that it checks, exits non-zero if any check
fails, and stops everything it started.

`make demo REDIS=tls` plays the same story on a Redis that speaks TLS only
(a throw-away CA made for the run, `rediss://` and `redis_ca_file`);
`REDIS=cluster` on a three-master Redis Cluster (`redis+cluster://`), and
`REDIS=cluster-tls` on the same over TLS (`rediss+cluster://`).
"""
from __future__ import annotations

import json
import os
import random
import signal
import sys
import threading
import time
from collections import defaultdict
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

# The test harness (tests/hookdtest: services, workers, signing); `make demo`
# puts tests/ on PYTHONPATH.
from hookdtest.client import order_event, post_standard
from hookdtest.redis_servers import RedisGroup, make_certs
from hookdtest.services import Db, Services
from hookdtest.signing import sign_standard
from hookdtest.util import free_port, wait_for
from hookdtest.worker import Worker, run_hookd

ROOT = Path(__file__).resolve().parents[1]
ORDERS = 12
ADMIN_TOKEN = "demo-admin-token-0123456789"  # admin_token needs 24 characters or more


def say(msg: str) -> None:
    print(f"\033[1m==>\033[0m {msg}", flush=True)


class FlakyReceiver:
    """Answers 503 to the first two attempts of each webhook-id, then 200,
    and verifies every signature."""

    def __init__(self) -> None:
        self.attempts: dict[str, int] = defaultdict(int)
        self.delivered: dict[str, bytes] = {}
        self.bad_signatures = 0
        self.secret: str | None = None
        self.lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("content-length", 0)))
                wid, ts = self.headers["webhook-id"], int(self.headers["webhook-timestamp"])
                want = sign_standard(outer.secret, wid, ts, body)
                with outer.lock:
                    if want not in self.headers["webhook-signature"].split(" "):
                        outer.bad_signatures += 1
                    outer.attempts[wid] += 1
                    n = outer.attempts[wid]
                    ok = n > 2
                    if ok:
                        outer.delivered[wid] = body
                self.send_response(200 if ok else 503)
                self.end_headers()
                self.wfile.write(b"ok" if ok else b"try again")

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", free_port()), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        self.server.shutdown()


ADMIN_PORTS: dict[int, int] = {}  # listen port -> admin_listen port, the same across rewrites
REDIS_EXTRA = ""  # [hookd] lines the Redis mode needs (redis_ca_file)
REDIS_MODES = ("plain", "tls", "cluster", "cluster-tls")


def start_redis(mode: str, tmp: Path, group: RedisGroup):
    """The Redis of the chosen mode: (URL, a redis-py client for the alerts
    channel, the [hookd] lines it needs)."""
    tls = None
    extra = ""
    if mode in ("tls", "cluster-tls"):
        certs = make_certs(tmp / "certs")
        tls = dict(cert=str(certs / "node.pem"), key=str(certs / "node.key"), ca=str(certs / "ca.pem"))
        extra = f"redis_ca_file = {certs / 'ca.pem'}\n"
    if mode == "tls":
        p = group.server("redis-tls", tls=tls)
        return f"rediss://127.0.0.1:{p.port}/0", p.client(), extra
    cl = group.cluster(replicas=0, tls=tls)
    return cl.url("rediss+cluster" if tls else "redis+cluster"), cl.nodes[0].client(), extra


def make_config(tmp: Path, port: int, fixed: bool) -> Path:
    admin_port = ADMIN_PORTS.setdefault(port, free_port())
    text = (ROOT / "examples" / "demo.conf").read_text().replace("${PORT}", str(port))
    text = text.replace("${ADMIN_PORT}", str(admin_port))
    text = text.replace("redis = env:HOOKD_REDIS_URL\n", "redis = env:HOOKD_REDIS_URL\n" + REDIS_EXTRA, 1)
    if fixed:  # the "fix": refunds become a known transition
        text = text.replace("emit order.shipped", "transition order.refunded = shipped -> refunded\nemit order.shipped")
    path = tmp / f"demo-{port}.conf"
    path.write_text(text)
    return path


def main() -> int:
    global REDIS_EXTRA
    started = time.monotonic()
    mode = os.environ.get("HOOKD_DEMO_REDIS") or "plain"
    if mode not in REDIS_MODES:
        print(f"REDIS={mode}: use one of {', '.join(REDIS_MODES)}", file=sys.stderr)
        return 2
    services = Services()
    group = RedisGroup(services.dir / "redis-modes")
    workers: list[Worker] = []
    receiver = FlakyReceiver()
    failures: list[str] = []
    try:
        tmp = services.dir
        dbname = services.new_database(migrated=False)
        redis_url, r = services.redis_url, services.redis_client()
        if mode != "plain":
            redis_url, r, REDIS_EXTRA = start_redis(mode, tmp, group)
        env = dict(HOOKD_PG_URL=services.db_url(dbname), HOOKD_REDIS_URL=redis_url, HOOKD_ADMIN_TOKEN=ADMIN_TOKEN)
        os.environ.update(env)
        say(f"PostgreSQL and Redis ({mode}) are up ({services.db_url(dbname)}, {redis_url})")
        ports = [free_port(), free_port()]
        configs = [make_config(tmp, p, fixed=False) for p in ports]
        out = run_hookd(["-c", str(configs[0]), "migrate"], check=True)
        print(out.stdout.strip())
        db = Db(services.db_url(dbname))

        out = run_hookd(["-c", str(configs[0]), "endpoint", "add", "--name", "warehouse", "--events", "order.shipped",
                         "--url", f"http://127.0.0.1:{receiver.port}/hooks"], check=True)
        receiver.secret = next(l.split(": ", 1)[1] for l in out.stdout.splitlines() if l.startswith("secret:"))
        say(f"endpoint 'warehouse' subscribed to order.shipped (receiver on port {receiver.port}, fails twice per event)")

        for i, (cfg, port) in enumerate(zip(configs, ports)):
            w = Worker(config=cfg, port=port, log_path=tmp / f"worker-{i}.log")
            workers.append(w.start())
        say(f"two workers are ready: {workers[0].url} and {workers[1].url} (admin view: {workers[0].admin_url}/admin)")

        alerts = r.pubsub()
        alerts.subscribe("demo:alerts")

        # 1 + 2: shuffled lifecycles, every event sent twice, to either worker.
        say(f"posting {ORDERS} orders x 4 events, shuffled and each sent twice, to both workers")
        rng = random.Random(7)
        sends = []
        for n in range(ORDERS):
            for t in ("order.started", "order.paid", "order.shipped"):
                sends.append((f"{t}-o{n}", t, f"o{n}"))
        sends += [(f"order.started-o{n}-dup", "order.started", f"o{n}") for n in range(2)]  # distinct id, same fact
        rng.shuffle(sends)
        answers = defaultdict(int)
        for msg_id, typ, order in sends + rng.sample(sends, len(sends)):
            status, _, body = post_standard(rng.choice(workers), "shop", msg_id, order_event(typ, order))
            answers[json.loads(body)["status"] if status == 200 else f"http {status}"] += 1
        print(f"    answers: {dict(answers)}")
        wait_for(lambda: db.value("SELECT count(*) FROM hookd_entities WHERE state = 'shipped'") == ORDERS,
                 timeout=60, what="every order shipped")
        healed = db.value("SELECT count(*) FROM webhook_inbox WHERE deferrals > 0 AND outcome = 'applied'")
        say(f"all {ORDERS} orders reached 'shipped'; {healed} events arrived early, waited, and then applied")

        # 3: a poison event.
        say("posting a poison event (order.refunded: no machine knows it yet)")
        post_standard(workers[0], "shop", "refund-o1", order_event("order.refunded", "o1"))
        dead = wait_for(lambda: db.one("SELECT id, attempts, reason FROM dead_letters WHERE replayed_at IS NULL"),
                        timeout=30, what="the poison event in the DLQ")
        msg = wait_for(lambda: alerts.get_message(timeout=0.2), timeout=10, what="an alert") or {}
        while msg and msg.get("type") != "message":
            msg = wait_for(lambda: alerts.get_message(timeout=0.2), timeout=10, what="an alert")
        alert = json.loads(msg["data"])
        say(f"dead-lettered after {dead['attempts']} attempts ({dead['reason']}); alert on demo:alerts: "
            f"{alert['event_type']} severity={alert['severity']}")
        print(run_hookd(["-c", str(configs[0]), "dlq", "list"]).stdout)

        # 4: fix the config, reload, replay.
        say("fixing the config (order.refunded = shipped -> refunded), SIGHUP to both workers, replaying")
        for w, port in zip(workers, ports):
            fixed = make_config(tmp, port, fixed=True)
            w.config.write_text(fixed.read_text())
            w.signal(signal.SIGHUP)
        for w in workers:
            wait_for(lambda: "config.reloaded" in w.output(), what="config reloaded")
        out = run_hookd(["-c", str(configs[0]), "dlq", "replay", str(dead["id"])])
        print("    " + out.stdout.strip().replace("\n", "\n    "))
        wait_for(lambda: db.value("SELECT outcome FROM webhook_inbox WHERE partner_event_id = 'refund-o1'") == "applied",
                 timeout=30, what="the replayed event applied")
        say("the replayed event was applied: order o1 is 'refunded'")

        # 5: outbox deliveries.
        wait_for(lambda: db.value("SELECT count(*) FROM outbox_deliveries WHERE status = 'SUCCEEDED'") == ORDERS,
                 timeout=60, what="every shipment announced")
        say(f"{ORDERS} 'order.shipped' webhooks delivered, each on its 3rd attempt, all signatures valid")
        print(run_hookd(["-c", str(configs[0]), "status"]).stdout)

        # The summary, checked.
        checks = [
            ("orders in their final state", db.value(
                "SELECT count(*) FROM hookd_entities WHERE state = 'shipped' OR (entity_id = 'o1' AND state = 'refunded')"),
             ORDERS),
            ("inbox rows stored (duplicates absorbed)", db.value("SELECT count(*) FROM webhook_inbox"), len(sends) + 1),
            ("entity versions = applied events", db.value(
                "SELECT count(*) FROM hookd_entities e WHERE version = (SELECT count(*) FROM webhook_inbox i"
                " WHERE i.entity_id = e.entity_id AND outcome = 'applied')"), ORDERS),
            ("events not yet terminal", db.value(
                "SELECT count(*) FROM webhook_inbox WHERE status NOT IN ('PROCESSED', 'QUARANTINED')"), 0),
            ("DLQ entries replayed", db.value("SELECT count(*) FROM dead_letters WHERE replayed_at IS NOT NULL"), 1),
            ("DLQ entries still open", db.value("SELECT count(*) FROM dead_letters WHERE replayed_at IS NULL"), 0),
            ("deliveries received by the receiver", len(receiver.delivered), ORDERS),
            ("delivery attempts (3 per event)", sum(receiver.attempts.values()), 3 * ORDERS),
            ("signatures that did not verify", receiver.bad_signatures, 0),
            ("outbox events processed", db.value("SELECT count(*) FROM outbox_events WHERE processed_at IS NOT NULL"),
             ORDERS),
        ]
        print(f"\n{'check':<42} {'got':>6} {'want':>6}  result")
        for name, got, want in checks:
            ok = got == want
            if not ok:
                failures.append(name)
            print(f"{name:<42} {got!s:>6} {want!s:>6}  {'ok' if ok else 'FAILED'}")
        print(f"\ndemo finished in {time.monotonic() - started:.0f}s: "
              f"{'all checks passed' if not failures else f'{len(failures)} check(s) FAILED'}")
        db.close()
    except Exception as e:  # show what broke, then clean up
        failures.append(str(e))
        print(f"demo failed: {e}", file=sys.stderr)
        for w in workers:
            if w.proc:
                print(f"--- {w.log_path} (last lines)\n{w.output()[-2500:]}", file=sys.stderr)
    finally:
        for w in workers:
            try:
                w.stop()
            except AssertionError as e:
                failures.append(str(e))
        receiver.stop()
        group.stop()
        services.stop()
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
