"""Redis failover under hookd, beyond "the master died" (test_redis_modes.py):

- A promoted replica that lost the last writes: Redis replicates
  asynchronously, so the ZADDs that scheduled events can be gone after a
  failover while their rows are in Postgres. Postgres is the truth: the
  reconcile that follows the switch re-schedules them (reconcile_interval is
  10 min here, so nothing else could).
- `+switch-master` is followed when the sentinels announce it, not when the
  old master's connection finally breaks: after a `SENTINEL FAILOVER` (the
  old master stays up and answers) the first thing hookd logs is the switch.
- `rediss+sentinel://`: sentinels, master and replica all on TLS with a
  throw-away CA; hookd verifies every one of them, and follows a failover.

Every test starts its own Redis processes (hookdtest.redis_servers) and stops
them in a fixture."""
from __future__ import annotations

import os
import re
import signal
import time
from pathlib import Path

import pytest
import redis

from hookdtest.client import order_event, post_standard
from hookdtest.redis_servers import RedisGroup, RedisProc, make_certs, master_of, sentinels_agree, wait_replicated
from hookdtest.util import free_port, wait_for
from hookdtest.worker import write_config

pytestmark = pytest.mark.slow

SERVICE = "mymaster"


@pytest.fixture
def group(tmp_path):
    g = RedisGroup(tmp_path / "redis")
    try:
        yield g
    finally:
        g.stop()


def config(env, url: str, hookd_extra: str = "", **overrides) -> Path:
    path = write_config(env.tmp, env.db_url, url, env.prefix, **overrides)
    path.write_text(path.read_text().replace("[hookd]\n", "[hookd]\n" + hookd_extra, 1))
    return path


def sentinel_group(group: RedisGroup, n: int = 3):
    master = group.server("master")
    replica = group.server("replica", ["--replicaof", "127.0.0.1", str(master.port)])
    wait_replicated(replica)
    sentinels = [group.sentinel(f"sentinel{i}", master.port) for i in range(n)]
    wait_for(lambda: sentinels_agree(sentinels), timeout=30, what="the sentinels to find each other and the replica")
    return master, replica, sentinels


def post(w, msg_id: str, order: str, typ: str = "order.started") -> None:
    status, _, body = post_standard(w, "shop", msg_id, order_event(typ, order))
    assert status == 200, (msg_id, status, body)


def processed(env, ids) -> bool:
    n = env.db.value("SELECT count(*) FROM webhook_inbox WHERE status = 'PROCESSED' AND partner_event_id = ANY(%s)",
                     list(ids))
    return n == len(ids)


def applied_once(env) -> None:
    doubled = env.db.all("SELECT source_id FROM attempts WHERE source = 'inbox' AND outcome = 'applied'"
                         " GROUP BY source_id HAVING count(*) > 1")
    assert doubled == [], doubled
    assert env.db.value("SELECT count(*) FROM hookd_entities e WHERE e.version <> (SELECT count(*) FROM"
                        " webhook_inbox i WHERE i.entity_id = e.entity_id AND i.outcome = 'applied')") == 0


# ---- a promoted replica that lost writes ---------------------------------------

def test_reconciler_heals_a_promoted_replica_that_lost_recent_zadds(env, group):
    master, replica, sentinels = sentinel_group(group)
    hosts = ",".join(f"127.0.0.1:{s.port}" for s in sentinels)
    url = f"redis+sentinel://{hosts}/{SERVICE}/0"
    # one worker takes webhooks (and schedules them: the ZADDs), the other
    # evaluates them; only a reconcile triggered by the switch can heal,
    # since the periodic one is 10 minutes away
    ingest = env.worker(config=config(env, url, "roles = ingest\n", reconcile_interval="10m"))
    inbox = env.worker(config=config(env, url, "roles = inbox\n", reconcile_interval="10m"))
    before = [f"before-{i}" for i in range(3)]
    for i, m in enumerate(before):
        post(ingest, m, f"b{i}")
    wait_for(lambda: processed(env, before), 20, what="events processed before the failover")

    # The writes the replica will never see. Freezing it is not enough (the
    # kernel would still take the stream for it), so its link is clogged
    # first: 64 MB, more than both sockets' buffers can take (tcp_rmem's
    # maximum is 32 MB here), behind which the master
    # keeps everything else in its own memory, to die with it. The
    # evaluating worker is frozen too: nothing is claimed meanwhile.
    inbox.signal(signal.SIGSTOP)
    replica.proc.send_signal(signal.SIGSTOP)
    master.client().set("clog", "x" * (64 << 20))
    lost = [f"lost-{i}" for i in range(10)]
    try:
        for i, m in enumerate(lost):
            post(ingest, m, f"l{i}")
        ids = [r["id"] for r in env.db.all("SELECT id::text FROM webhook_inbox WHERE partner_event_id = ANY(%s)",
                                             lost)]
        due = f"{env.prefix}:{{inbox}}:due"
        wait_for(lambda: all(master.client().zscore(due, i) is not None for i in ids), 10,
                 what="the ZADDs on the master")
        master.kill9()
    finally:
        replica.proc.send_signal(signal.SIGCONT)
    # the loss is real: the replica never got those ZADDs
    assert all(replica.client().zscore(due, i) is None for i in ids)
    wait_for(lambda: master_of(sentinels) == replica.port, 30, what="the sentinels to promote the replica")
    inbox.signal(signal.SIGCONT)
    # hookd follows the switch; the reconcile that follows it puts the lost
    # schedule back from Postgres, and every event is evaluated, once
    wait_for(lambda: processed(env, lost), 30, what="the events whose ZADDs the promotion lost")
    applied_once(env)
    assert "reconcile" in inbox.output() + ingest.output()
    after = [f"after-{i}" for i in range(3)]
    for i, m in enumerate(after):
        post(ingest, m, f"a{i}")
    wait_for(lambda: processed(env, after), 20, what="events after the failover")
    assert f"addr=127.0.0.1:{replica.port}" in ingest.output()


# ---- +switch-master while the old master still answers --------------------------

WATCH = re.compile(r"event=(redis\.switch_master|redis\.down|redis\.readonly|redis\.not_master|redis\.unresponsive)"
                   r"[^\n]*")


def test_switch_master_is_followed_without_waiting_for_a_connection_loss(env, group):
    master, replica, sentinels = sentinel_group(group)
    hosts = ",".join(f"127.0.0.1:{s.port}" for s in sentinels)
    w = env.worker(config=config(env, f"redis+sentinel://{hosts}/{SERVICE}/0"))
    post(w, "pre", "p0")
    wait_for(lambda: processed(env, ["pre"]), 20, what="an event processed")
    mark = len(w.output())
    # a manual failover: the old master is up and answering the whole time
    # (the sentinels only demote it later, on their next round)
    sentinels[0].client().execute_command("SENTINEL", "FAILOVER", SERVICE)
    wait_for(lambda: master_of(sentinels) == replica.port, 30, what="the sentinels to promote the replica")
    wait_for(lambda: f"event=redis.up" in w.output()[mark:] and f"addr=127.0.0.1:{replica.port}"
             in w.output()[mark:], 15, what="hookd on the new master")
    events = WATCH.findall(w.output()[mark:])
    lines = [m.group(0) for m in WATCH.finditer(w.output()[mark:])]
    assert events and events[0] == "redis.switch_master", lines
    # every connection that went down went down because of the switch
    downs = [line for line in lines if "redis.down" in line]
    assert downs and all('error="+switch-master"' in d for d in downs), lines
    assert master.proc.poll() is None  # the old master never stopped
    post(w, "post", "p1")
    wait_for(lambda: processed(env, ["post"]), 20, what="an event processed on the new master")


# ---- rediss+sentinel:// ----------------------------------------------------------

def tls_args(certs: Path) -> dict:
    return dict(cert=str(certs / "server.pem"), key=str(certs / "server.key"), ca=str(certs / "ca.pem"))


def test_rediss_sentinel_with_tls_sentinels_and_a_throwaway_ca(env, group, tmp_path):
    certs = make_certs(tmp_path / "certs")
    tls = tls_args(certs)
    repl = ["--tls-replication", "yes"]

    def server(name: str, args: list[str]) -> RedisProc:
        p = RedisProc(group.dir, name, repl + args, free_port(), tls=tls)
        group.procs.append(p)
        return p

    def client(p: RedisProc) -> redis.Redis:
        return redis.Redis(host="127.0.0.1", port=p.port, ssl=True, ssl_ca_certs=tls["ca"], decode_responses=True,
                           socket_timeout=2)

    master = server("master", [])
    replica = server("replica", ["--replicaof", "127.0.0.1", str(master.port)])
    wait_for(lambda: client(replica).info("replication").get("master_link_status") == "up", 20,
             what="the TLS replica to sync")
    sentinels = []
    for i in range(3):
        conf = (f"sentinel monitor {SERVICE} 127.0.0.1 {master.port} 2\n"
                f"sentinel down-after-milliseconds {SERVICE} 1000\n"
                f"sentinel failover-timeout {SERVICE} 5000\n")
        p = RedisProc(group.dir, f"sentinel{i}", repl, free_port(), tls=tls, sentinel=True, conf=conf)
        group.procs.append(p)
        sentinels.append(p)

    def agree() -> bool:
        for s in sentinels:
            c = client(s)
            if len(c.execute_command("SENTINEL", "REPLICAS", SERVICE)) < 1 or \
                    len(c.execute_command("SENTINEL", "SENTINELS", SERVICE)) < 2:
                return False
        return True

    wait_for(agree, 30, what="the TLS sentinels to find each other and the replica")

    def master_port() -> int | None:
        for s in sentinels:
            try:
                return int(client(s).execute_command("SENTINEL", "GET-MASTER-ADDR-BY-NAME", SERVICE)[1])
            except Exception:
                continue
        return None

    hosts = ",".join(f"127.0.0.1:{s.port}" for s in sentinels)
    cfg = config(env, f"rediss+sentinel://{hosts}/{SERVICE}/0", f"redis_ca_file = {tls['ca']}\n")
    w = env.worker(config=cfg)

    def up_on(port: int, text: str) -> bool:
        """a redis.up line for port, over TLS"""
        return any(f"addr=127.0.0.1:{port} tls=1" in line
                   for line in text.splitlines() if "event=redis.up" in line)

    assert up_on(master.port, w.output()), w.output()
    first = [f"tls-{i}" for i in range(3)]
    for i, m in enumerate(first):
        post(w, m, f"t{i}")
    wait_for(lambda: processed(env, first), 20, what="events processed over TLS")
    mark = len(w.output())
    master.kill9()
    wait_for(lambda: master_port() == replica.port, 30, what="the TLS sentinels to promote the replica")
    wait_for(lambda: up_on(replica.port, w.output()[mark:]) and w.ready(), 20,
             what="hookd ready on the new TLS master")
    second = [f"tls2-{i}" for i in range(3)]
    for i, m in enumerate(second):
        post(w, m, f"u{i}")
    wait_for(lambda: processed(env, second), 20, what="events processed on the new TLS master")
    applied_once(env)

    # the sentinels' certificates are checked too: with another CA hookd
    # never gets a master address, stays up and not ready, and says why
    other = make_certs(tmp_path / "other")
    bad = env.worker(config=config(env, f"rediss+sentinel://{hosts}/{SERVICE}/0",
                                   f"redis_ca_file = {other / 'ca.pem'}\n"), wait_ready=False)
    wait_for(lambda: "redis.tls_failed" in bad.output(), 15, what="the TLS failure logged")
    assert "sentinel=127.0.0.1:" in bad.output() and not bad.ready() and bad.proc.poll() is None
