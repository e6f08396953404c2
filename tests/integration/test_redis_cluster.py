"""hookd on Redis Cluster: three masters with a replica each, made by the
harness with `redis-cli --cluster create` (tests/hookdtest/redis_servers.py).
Signed events ingested and processed end to end, out-of-order events
deferred and popped again, the slot of the inbox queue migrated key by key
while events flow (MOVED, ASK and TRYAGAIN followed), a replica promoted with
CLUSTER FAILOVER and a master killed, all with nothing lost or applied twice;
rediss+cluster:// with a throw-away CA; a wrong password refused with a clear
error; `hookd status` reading the cluster."""
from __future__ import annotations

import json
import os
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from hookdtest.client import order_event, post_standard
from hookdtest.redis_servers import RedisGroup, make_certs
from hookdtest.util import wait_for
from hookdtest.worker import run_hookd, write_config


# The Redis guide's ACL line (as test_redis_modes reads it): on a cluster the
# user needs it on every node, and nothing more than it lists.
GUIDE = Path(__file__).resolve().parents[2] / "docs" / "guides" / "deploy" / "redis.md"
ACL_LINE = next(l.strip() for l in GUIDE.read_text().splitlines() if l.strip().startswith("ACL SETUSER hookd ")) \
    .removeprefix("ACL SETUSER ").replace(">PASSWORD", ">{password}").replace("hookd:*", "{prefix}:*")


@pytest.fixture
def group(tmp_path):
    g = RedisGroup(tmp_path / "redis")
    try:
        yield g
    finally:
        g.stop()


def config(env, url: str, hookd_extra: str = "") -> Path:
    path = write_config(env.tmp, env.db_url, url, env.prefix, log_level=os.environ.get("HOOKD_TEST_LOG_LEVEL", "info"))
    path.write_text(path.read_text().replace("[hookd]\n", "[hookd]\n" + hookd_extra, 1))
    return path


def outcomes(env, ids) -> dict:
    rows = env.db.all("SELECT partner_event_id, status, outcome FROM webhook_inbox WHERE partner_event_id = ANY(%s)",
                      list(ids))
    return {r["partner_event_id"]: (r["status"], r["outcome"]) for r in rows}


def all_processed(env, ids) -> bool:
    got = outcomes(env, ids)
    return len(got) == len(ids) and all(s == "PROCESSED" for s, _ in got.values())


def versions(env, orders) -> dict:
    rows = env.db.all("SELECT entity_id, state, version FROM hookd_entities WHERE entity_type = 'order' "
                      "AND entity_id = ANY(%s)", list(orders))
    return {r["entity_id"]: (r["state"], r["version"]) for r in rows}


class Load:
    """Posts order lifecycles (paid before started for every third order, so
    those are deferred first) until stopped; remembers what was accepted."""

    def __init__(self, w, tag: str) -> None:
        self.w, self.tag = w, tag
        self.accepted: dict[str, str] = {}  # message id -> order
        self.stop_ev = threading.Event()
        self.t = threading.Thread(target=self.run, daemon=True)

    def post(self, mid: str, typ: str, order: str) -> None:
        for _ in range(50):
            try:
                status, _, _ = post_standard(self.w, "shop", mid, order_event(typ, order))
                if status == 200:
                    self.accepted[mid] = order
                    return
            except Exception:
                pass
            time.sleep(0.05)

    def run(self) -> None:
        i = 0
        while not self.stop_ev.is_set():
            order = f"{self.tag}-o{i}"
            steps = [("order.started", "s"), ("order.paid", "p")]
            if i % 3 == 0:
                steps.reverse()
            for typ, k in steps:
                self.post(f"{self.tag}-{i}-{k}", typ, order)
            i += 1
            time.sleep(0.01)

    def __enter__(self):
        self.t.start()
        return self

    def __exit__(self, *exc):
        self.stop_ev.set()
        self.t.join(30)

    def check(self, env, timeout: float = 60) -> None:
        """Every accepted event processed; each order paid with exactly two
        applied transitions (version 2: nothing applied twice)."""
        assert len(self.accepted) >= 10, len(self.accepted)
        wait_for(lambda: all_processed(env, self.accepted), timeout=timeout, what="every accepted event processed")
        orders = {o for o in self.accepted.values()}
        full = {o for o in orders if sum(1 for v in self.accepted.values() if v == o) == 2}
        v = versions(env, orders)
        bad = {o: v.get(o) for o in full if v.get(o) != ("paid", 2)}
        assert not bad, f"orders not paid exactly once each: {list(bad.items())[:10]}"
        assert all(out == "applied" for _, out in outcomes(env, self.accepted).values())


class FlakySink:
    """An HTTP receiver that answers 503 to the first attempt of each
    webhook-id and 200 to the next: every delivery goes through the delivery
    queue's retry schedule once."""

    def __init__(self) -> None:
        self.attempts: Counter = Counter()
        self.ok: Counter = Counter()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                self.rfile.read(int(self.headers.get("content-length", 0)))
                wid = self.headers.get("webhook-id", "")
                outer.attempts[wid] += 1
                good = outer.attempts[wid] > 1
                if good:
                    outer.ok[wid] += 1
                self.send_response(200 if good else 503)
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def status_json(cfg: Path) -> dict:
    st = run_hookd(["-c", str(cfg), "status", "--json"])
    assert st.returncode == 0, st.stderr
    return json.loads(st.stdout)


# ---- end to end, deferrals, a migrated slot --------------------------------


def test_cluster_end_to_end_and_slot_migration(env, group):
    cl = group.cluster()
    cfg = config(env, cl.url(), "allow_private_networks = true\n")
    w = env.worker(config=cfg)
    assert "cluster=1 masters=3 tls=0" in w.output(), w.output()[-2000:]
    inbox_slot = cl.keyslot(f"{env.prefix}:{{inbox}}:due")
    delivery_slot = cl.keyslot(f"{env.prefix}:{{delivery}}:due")
    assert cl.owner(inbox_slot).port != cl.owner(delivery_slot).port  # the two queues on two masters

    with Load(w, "pre") as pre:
        wait_for(lambda: len(pre.accepted) >= 30, timeout=30, what="events accepted")
    pre.check(env)
    st = status_json(cfg)
    assert len(st["workers"]) >= 1, st

    # outbound: each delivery fails once and is retried through the delivery
    # queue, whose slot is on another master than the inbox queue's
    sink = FlakySink()
    try:
        r = run_hookd(["-c", str(cfg), "endpoint", "add", "--name", "sink", "--events", "order.*", "--url",
                       f"http://127.0.0.1:{sink.port}/hook"])
        assert r.returncode == 0, r.stderr
        for i in range(10):
            env.db.all("SELECT hookd_emit('order', %s, 'order.shipped', '{}'::jsonb)", f"out-{i}")
        wait_for(lambda: len(sink.ok) == 10, timeout=30, what="every delivery retried and delivered")
        assert set(sink.attempts.values()) == {2} and set(sink.ok.values()) == {1}, sink.attempts
        wait_for(lambda: env.db.value("SELECT count(*) FROM outbox_deliveries WHERE status = 'SUCCEEDED'") == 10,
                 what="the deliveries recorded")
    finally:
        sink.stop()

    # every master forgets the scripts: NOSCRIPT answered by SCRIPT LOAD on
    # the node that said it, and the call sent again
    for m in cl.masters():
        m.client().script_flush()
    with Load(w, "flush") as flushed:
        wait_for(lambda: len(flushed.accepted) >= 10, timeout=30, what="events accepted after SCRIPT FLUSH")
    flushed.check(env)
    assert "redis.script_reload" in w.output()

    # the inbox queue's slot moves to another master while events flow
    with Load(w, "mig") as load:
        wait_for(lambda: len(load.accepted) >= 10, timeout=30, what="events flowing")
        src = cl.owner(inbox_slot)
        to = next(m for m in cl.masters() if m.port != src.port)
        cl.migrate_slot(inbox_slot, to)
        n = len(load.accepted)
        wait_for(lambda: len(load.accepted) >= n + 20, timeout=30, what="events accepted after the migration")
    load.check(env)
    assert cl.owner(inbox_slot).port == to.port
    assert to.client().zcard(f"{env.prefix}:{{inbox}}:due") >= 0
    assert src.client().execute_command("CLUSTER", "COUNTKEYSINSLOT", inbox_slot) == 0
    assert "redis.down" not in w.output(), "a slot migration is no reconnect"
    assert f"event=redis.moved" in w.output() and f"slot={inbox_slot}" in w.output()
    st = status_json(cfg)
    assert st is not None


# ---- failover: a coordinated one, then a killed master ----------------------


@pytest.mark.slow
def test_cluster_failover_and_killed_master(env, group):
    cl = group.cluster()
    cfg = config(env, cl.url())
    w = env.worker(config=cfg)
    inbox_slot = cl.keyslot(f"{env.prefix}:{{inbox}}:due")

    with Load(w, "fo") as load:
        wait_for(lambda: len(load.accepted) >= 10, timeout=30, what="events flowing")
        old = cl.owner(inbox_slot)
        new = cl.failover(old)  # CLUSTER FAILOVER on its replica
        # every node's view of the slot map converges by gossip: await it
        wait_for(lambda: cl.owner(inbox_slot).port == new.port, what="the slot map to name the new master")
        n = len(load.accepted)
        wait_for(lambda: len(load.accepted) >= n + 20, timeout=30, what="events accepted after the failover")
    load.check(env)
    assert "redis.moved" in w.output(), "the old master's MOVED was followed"

    with Load(w, "kill") as load:
        wait_for(lambda: len(load.accepted) >= 10, timeout=30, what="events flowing")
        victim = cl.owner(inbox_slot)
        heir = cl.replica_of(victim)
        victim.kill9()
        wait_for(lambda: cl.role(heir) == "master", timeout=30, what="the replica promoted")
        wait_for(lambda: w.ready(), timeout=30, what="hookd ready again")
        n = len(load.accepted)
        wait_for(lambda: len(load.accepted) >= n + 20, timeout=30, what="events accepted after the kill")
    load.check(env)
    assert "redis.down" in w.output()

    # A promoted replica may lack the last writes: here it loses the whole
    # inbox schedule while five events wait deferred (paid before started);
    # Postgres is the truth, and the reconciler re-seeds them.
    late = [f"late-{i}" for i in range(5)]
    for i, mid in enumerate(late):
        assert post_standard(w, "shop", f"{mid}-p", order_event("order.paid", f"late-o{i}"))[0] == 200
    wait_for(lambda: env.db.value("SELECT count(*) FROM webhook_inbox WHERE status = 'DEFERRED' "
                                  "AND partner_event_id LIKE 'late-%%'") == 5, what="the paid events deferred")
    due = f"{env.prefix}:{{inbox}}:due"
    wait_for(lambda: cl.owner(inbox_slot).client().zcard(due) >= 5, what="the deferred events scheduled")
    assert cl.owner(inbox_slot).client().delete(due) == 1
    for i, mid in enumerate(late):
        assert post_standard(w, "shop", f"{mid}-s", order_event("order.started", f"late-o{i}"))[0] == 200
    wait_for(lambda: all_processed(env, [f"{m}-{k}" for m in late for k in "ps"]), timeout=30,
             what="the events whose schedule was lost processed")
    assert set(versions(env, [f"late-o{i}" for i in range(5)]).values()) == {("paid", 2)}
    st = status_json(cfg)  # the CLI routes around the dead node
    assert any(x.get("state") == "live" for x in st["workers"]), st


# ---- TLS, passwords, scripts -------------------------------------------------


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    return make_certs(tmp_path_factory.mktemp("certs"))


def test_rediss_cluster(env, group, certs):
    # The nodes' certificates name "localhost" only, and CLUSTER SLOTS
    # announces them as 127.0.0.1: hookd checks each against the seed's name.
    tls = dict(cert=str(certs / "node-dns.pem"), key=str(certs / "node-dns.key"), ca=str(certs / "ca.pem"))
    cl = group.cluster(replicas=0, tls=tls, password="cl-pw-1")
    cfg = config(env, cl.url("rediss+cluster", user="default", host="localhost"), f"redis_ca_file = {certs / 'ca.pem'}\n")
    w = env.worker(config=cfg)
    assert "cluster=1 masters=3 tls=1" in w.output(), w.output()[-2000:]
    with Load(w, "tls") as load:
        wait_for(lambda: len(load.accepted) >= 20, timeout=30, what="events accepted")
    load.check(env)
    st = status_json(cfg)
    assert st["workers"], st
    # a CA that did not sign the nodes' certificates: refused with the check
    # named, and the worker lives on, not ready
    bad = config(env, cl.url("rediss+cluster", user="default"), f"redis_ca_file = {certs / 'untrusted.pem'}\n")
    w2 = env.worker(config=bad, wait_ready=False)
    wait_for(lambda: "redis.tls_failed" in w2.output(), what="the TLS failure logged")
    line = next(l for l in w2.output().splitlines() if "redis.tls_failed" in l)
    assert "level=error" in line and "check=unknown_ca" in line, line
    assert w2.alive() and w2.get("/readyz")[0] == 503


def test_cluster_wrong_password_and_acl_user(env, group):
    cl = group.cluster(replicas=0, password="right-pw")
    cfg = config(env, cl.url(user="default", password="wrong-pw"))
    w = env.worker(config=cfg, wait_ready=False)
    wait_for(lambda: "redis.auth_failed" in w.output(), what="the AUTH failure logged")
    line = next(l for l in w.output().splitlines() if "redis.auth_failed" in l)
    assert "level=error" in line and "WRONGPASS" in line and "wrong-pw" not in w.output(), line
    assert w.alive() and w.get("/readyz")[0] == 503
    st = run_hookd(["-c", str(cfg), "status"])
    assert st.returncode != 0 and "WRONGPASS" in st.stderr and "wrong-pw" not in st.stderr, st.stderr
    # an ACL user with exactly the guide's commands, made on every node
    for n in cl.nodes:
        n.client().execute_command("ACL", "SETUSER", *ACL_LINE.format(password="acl-pw-2", prefix=env.prefix).split())
    good = config(env, cl.url(user="hookd", password="acl-pw-2"))
    w2 = env.worker(config=good)
    flowed = Load(w2, "pw")
    with flowed:
        wait_for(lambda: len(flowed.accepted) >= 10, timeout=30, what="events accepted")
    flowed.check(env)
    # the counters' MULTI/HINCRBY/EXEC went to the master of <prefix>:stats
    wait_for(lambda: status_json(good)["counters"].get("applied", 0) >= len(flowed.accepted), timeout=20,
             what="the applied counter flushed to the cluster")
    time.sleep(1)  # more heartbeats and a reconcile pass
    assert "redis.noperm" not in w2.output() and "level=error" not in w2.output(), w2.output()[-3000:]
