"""The chaos suite: hookd under fire, then a ledger check.

Starts its own throw-away PostgreSQL - a primary and a synchronous
streaming standby (PgHA), hookd on the two-host URL with
target_session_attrs=read-write - and Redis (plain, or with --redis
sentinel-tls a TLS master, replica and three TLS sentinels: RedisHA; with
--redis cluster three masters with a replica each: RedisClusterHA),
three hookd workers with every role, a flaky local receiver subscribed to
`order.*`, a second receiver with several endpoints on it (CIRCUIT_ENDPOINTS,
subscribed to `circuit.*`, each with its circuit on), and keeps two kinds of
load running: signed partner webhooks (order lifecycles started/paid/shipped,
shuffled, sometimes duplicated, to random live workers) and application
outbox events (`hookd_emit` in SQL; every fourth one a `circuit.tick` for the
second receiver). `order.shipped` is also emitted by the machine, so applied
shipments flow out through the outbox.

Meanwhile it injects faults: first every kind once, then kinds drawn from
`random.Random(seed)` (the schedule is reproducible; the interleaving with the
load threads is not). After each fault it measures recovery: the time from the
end of the injection (service back, worker restarted, config restored) until
a freshly posted probe event is PROCESSED.

Then it stops the load, waits for quiescence and checks the ledger:
  * every accepted inbound event (a 200 answer) is PROCESSED, or QUARANTINED
    with a dead letter; none missing, none stuck;
  * every entity equals a serial replay of its accepted events in lifecycle
    order (state, version = applied rows, no transition applied twice, one
    `order.shipped` outbox event per applied shipment);
  * every outbox event is processed with one delivery per endpoint it was
    meant for, and each delivery SUCCEEDED (and its endpoint saw it answered
    2xx) or is DEAD with a dead letter; all requests for one webhook-id carried
    the same body (= the outbox payload) and valid signatures;
  * the Redis counters (`<prefix>:stats`) never exceed what Postgres records,
    and equal it exactly in a fault-free window at the end (see README.md for
    why the whole-run totals are informational).

Usage:  HOOKD_BIN=build/hookd PYTHONPATH=tests /usr/bin/python3 tests/chaos/chaos.py --faults 24 --seed 1 [--short]
        [--redis plain|sentinel-tls|cluster] [--kinds K,K] [--keep-logs DIR]
Exit status 0 only if every check passes. Everything it starts is stopped.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import psycopg2
import psycopg2.extras
import redis

from hookdtest.client import order_event, post_standard
from hookdtest.paths import SERVICES
from hookdtest.redis_servers import Cluster, RedisGroup, RedisProc, make_certs
from hookdtest.services import PgPair, PgServer, Services
from hookdtest.signing import sign_standard
from hookdtest.util import free_port
from hookdtest.worker import Worker, run_hookd, write_config

PARTNER = "shop"
# The machine's lifecycle, in order: (event type, from, to).
CHAIN = [("order.started", "draft", "started"), ("order.paid", "started", "paid"),
         ("order.shipped", "paid", "shipped")]
CHAIN_TYPES = [t for t, _, _ in CHAIN]
TERMINAL = ("PROCESSED", "QUARANTINED")
FAULT_KINDS = ["kill9", "sigterm", "redis_flushall", "redis_restart", "redis_down", "pg_restart",
               "pg_kill_conns", "pg_failover", "receiver_down", "sighup_bad_config", "circuit"]
# The endpoints on the second receiver (one origin): the circuit fault makes it
# answer 500 until their circuits open, then lets them close again. A small
# max_inflight_per_origin makes their requests wait for the origin as well as
# behind their own max_inflight, so an opening circuit takes back queued ones.
CIRCUIT_ENDPOINTS = ["chaos-c1", "chaos-c2", "chaos-c3", "chaos-c4"]
MAX_INFLIGHT_PER_ORIGIN = 4
CIRCUIT_SECTION = """[retry endpoint:{name}]
schedule = 500ms, 1s, 2s
max_attempts = 8
circuit = on
circuit_failures = 5
circuit_probe = 500ms

"""
# --redis sentinel-tls: hookd on rediss+sentinel:// (a TLS master, a TLS
# replica, three TLS sentinels); the plain Redis faults become these.
SENTINEL_TLS_KINDS = ["sentinel_failover", "redis_tls_restart", "redis_flushall", "kill9", "pg_failover"]
# --redis cluster: hookd on redis+cluster:// (three masters, a replica each);
# the failover and the slot migration act on the inbox or delivery queue's slot.
CLUSTER_KINDS = ["cluster_failover", "cluster_slot_migration", "redis_flushall", "kill9", "pg_failover"]
REDIS_MODES = {"plain": FAULT_KINDS, "sentinel-tls": SENTINEL_TLS_KINDS,
               "cluster": CLUSTER_KINDS}  # the default kinds of each mode
# what --kinds may name in each mode: the plain Redis faults act on the one plain Redis only
AVAILABLE = {"plain": FAULT_KINDS,
             "sentinel-tls": SENTINEL_TLS_KINDS + [k for k in FAULT_KINDS if not k.startswith("redis_")
                                                   and k not in SENTINEL_TLS_KINDS],
             "cluster": CLUSTER_KINDS + [k for k in FAULT_KINDS if not k.startswith("redis_")
                                         and k not in CLUSTER_KINDS]}
APP = "hookd-chaos-w"  # + the worker's index: application_name of a worker's sessions
# Redis counters and the Postgres facts they count (see pg_counts()).
RELOADED = re.compile(r"event=config\.reloaded .*?generation=(\d+)")


def this_run(out: str) -> str:
    """The part of a worker's log written by its current process (the log
    file is appended to by every restart)."""
    i = out.rfind("event=worker.started")
    return out[i:] if i >= 0 else out
COUNTERS = ["ingested", "applied", "noop", "deferred", "retried", "dead", "delivered", "delivery_failed"]


@dataclass
class Timing:
    """Durations of one run; --short shrinks the long outages."""
    redis_down: float = 30.0
    receiver_down: float = 60.0
    pause: float = 3.0          # between faults, under load
    warmup: float = 3.0
    probe_timeout: float = 90.0
    settle_timeout: float = 240.0
    send_pause: float = 0.02    # between two partner posts
    emit_pause: float = 0.2     # between two hookd_emit transactions
    window_orders: int = 10     # orders posted in the fault-free counter window
    circuit_down: float = 10.0  # the circuit fault: the second receiver answers 500 this long after the circuits open
    circuit_burst: int = 200    # events emitted to the circuit endpoints at the start of the fault (and half mid-way)

    @classmethod
    def make(cls, short: bool) -> "Timing":
        if not short:
            return cls()
        return cls(redis_down=4.0, receiver_down=5.0, pause=1.0, warmup=1.5, probe_timeout=45.0,
                   settle_timeout=90.0, send_pause=0.03, emit_pause=0.25, window_orders=6, circuit_down=3.0,
                   circuit_burst=100)


def secs(v: float | None) -> str:
    return f"{v:.2f}s" if v is not None else "NONE"


def log(msg: str) -> None:
    print(f"[chaos {time.strftime('%H:%M:%S')}] {msg}", flush=True)


# ---- Postgres, resilient to the faults we inject ----------------------------------

class Pg:
    """One autocommit connection that reconnects on failure (Postgres is
    restarted and its backends are killed under our feet)."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.conn = None

    def _connect(self):
        if self.conn is None or self.conn.closed:
            self.conn = psycopg2.connect(self.url, connect_timeout=3)
            self.conn.autocommit = True
        return self.conn

    def all(self, sql: str, *params, retry_for: float = 30.0):
        deadline = time.monotonic() + retry_for
        while True:
            try:
                with self._connect().cursor(cursor_factory=psycopg2.extras.RealDictCursor) as cur:
                    cur.execute(sql, params)
                    return cur.fetchall() if cur.description else []
            except (psycopg2.OperationalError, psycopg2.InterfaceError):
                self.close()
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)

    def one(self, sql: str, *params, **kw):
        rows = self.all(sql, *params, **kw)
        return rows[0] if rows else None

    def value(self, sql: str, *params, **kw):
        row = self.one(sql, *params, **kw)
        return next(iter(row.values())) if row else None

    def close(self) -> None:
        if self.conn is not None:
            try:
                self.conn.close()
            except Exception:
                pass
        self.conn = None


# ---- the plain Redis (hookd's Postgres is PgHA below) -----------------------------

class RedisOnly(Services):
    """Services without its Postgres (no initdb, no server): the throw-away
    Redis of scripts/services.sh, and the directory the logs go to."""

    def __init__(self) -> None:  # not the parent's: it would start Postgres too
        self.dir = Path(tempfile.mkdtemp(prefix="hookd-chaos-"))
        subprocess.run([str(SERVICES), "start-redis", str(self.dir)], check=True, capture_output=True)
        self.redis_port = int((self.dir / "redis.port").read_text())
        self.redis_url = f"redis://127.0.0.1:{self.redis_port}/0"


# ---- hookd's database: a primary and a synchronous standby ------------------------

class PgHA:
    """hookd's Postgres in the chaos run: a primary and a streaming standby made
    with pg_basebackup -R (hookdtest.services.PgPair), replication synchronous
    (a commit returns once the standby flushed it), and hookd on the two-host
    URL with target_session_attrs=read-write. The roles move: failover() stops
    the primary with -m immediate and promotes the standby; rebuild() then
    makes the dead one a synchronous standby of the new primary again, in the
    same directory and on the same port, so the URL never changes."""

    def __init__(self) -> None:
        self.pair = PgPair(sync=True, database="hookd")
        self.primary: PgServer = self.pair.primary
        self.standby: PgServer = self.pair.standby
        self.needs_rebuild = False
        # A standby whose primary restarted retries every 5 s by default, and
        # a synchronous commit waits for it meanwhile: retry sooner (the
        # setting travels to rebuilt standbys with the base backup).
        for server in (self.primary, self.standby):
            server.sql("ALTER SYSTEM SET wal_retrieve_retry_interval = '500ms'")
            server.sql("SELECT pg_reload_conf()")

    def url(self, app: str) -> str:
        return self.pair.hosts_url() + f"&application_name={app}"

    def restart_primary(self) -> None:
        self.primary.stop("immediate")
        self.primary.start()

    def failover(self) -> None:
        old = self.primary
        old.stop("immediate")
        self.standby.promote()
        self.primary, self.standby = self.standby, old
        # alone now: a commit must not wait for a synchronous standby that
        # does not exist yet (the promoted one never had the setting, but a
        # later cycle must not depend on that)
        self.primary.sql("ALTER SYSTEM RESET synchronous_standby_names")
        self.primary.sql("SELECT pg_reload_conf()")
        self.needs_rebuild = True

    def rebuild(self, timeout: float = 60) -> None:
        """The dead primary becomes the new primary's synchronous standby."""
        shutil.rmtree(self.standby.data)
        # a standby's max_wal_senders etc. must not be below its primary's
        self.standby.options = list(self.primary.options)
        self.standby.basebackup_from(self.primary).start()
        self.primary.sql("ALTER SYSTEM SET synchronous_standby_names = '*'")
        self.primary.sql("SELECT pg_reload_conf()")
        deadline = time.monotonic() + timeout
        while self.primary.sql("SELECT string_agg(sync_state, ',') FROM pg_stat_replication") != "sync":
            if time.monotonic() > deadline:
                raise RuntimeError("the rebuilt standby did not become synchronous")
            time.sleep(0.1)
        self.needs_rebuild = False

    def sessions(self, server: PgServer, sql: str = "true") -> list[dict]:
        """hookd workers' sessions on server (application_name, query)."""
        conn = psycopg2.connect(server.url("postgres"), connect_timeout=3)
        try:
            with conn.cursor(cursor_factory=psycopg2.extras.RealDictCursor) as cur:
                cur.execute("SELECT application_name, query, pid FROM pg_stat_activity"
                            f" WHERE application_name LIKE '{APP}%%' AND ({sql})")
                return cur.fetchall()
        finally:
            conn.close()

    def logs(self) -> list[Path]:
        return [self.pair.primary.log, self.pair.standby.log]

    def stop(self) -> None:
        self.pair.stop()


# ---- Redis behind Sentinel, all on TLS (--redis sentinel-tls) ----------------------

class RedisHA:
    """A TLS master and replica watched by three TLS sentinels (service
    `chaos`), certificates from a throw-away CA; hookd on
    rediss+sentinel://. Faults: failover() (the master killed, or a
    SENTINEL FAILOVER; then the old node comes back as a replica of the new
    master) and restart_master() (the TLS master restarted on its port, empty
    as it has no persistence; quicker than the sentinels' down-after, so no
    failover)."""

    SERVICE = "chaos"
    DOWN_AFTER_MS = 2000

    def __init__(self, dir: Path) -> None:
        self.dir = dir / "redis-ha"
        self.certs = make_certs(self.dir / "certs")
        self.tls = dict(cert=str(self.certs / "server.pem"), key=str(self.certs / "server.key"),
                        ca=str(self.certs / "ca.pem"))
        self.nodes: dict[str, RedisProc] = {}
        self.sentinels: list[RedisProc] = []
        self.ports = {"a": free_port(), "b": free_port()}
        self.master = "a"
        try:
            self.start_node("a", None)
            self.start_node("b", "a")
            self.wait_synced("b")
            for i in range(3):
                conf = (f"sentinel monitor {self.SERVICE} 127.0.0.1 {self.ports['a']} 2\n"
                        f"sentinel down-after-milliseconds {self.SERVICE} {self.DOWN_AFTER_MS}\n"
                        f"sentinel failover-timeout {self.SERVICE} 10000\n")
                self.sentinels.append(RedisProc(self.dir, f"sentinel{i}", ["--tls-replication", "yes"], free_port(),
                                                tls=self.tls, sentinel=True, conf=conf))
            self.wait(self.agree, 30, "the sentinels to find each other and the replica")
        except Exception:
            self.stop()
            raise

    def start_node(self, name: str, replica_of: str | None) -> None:
        args = ["--tls-replication", "yes"]
        if replica_of:
            args += ["--replicaof", "127.0.0.1", str(self.ports[replica_of])]
        self.nodes[name] = RedisProc(self.dir, name, args, self.ports[name], tls=self.tls)

    def client(self, port: int) -> redis.Redis:
        return redis.Redis(host="127.0.0.1", port=port, ssl=True, ssl_ca_certs=self.tls["ca"], decode_responses=True,
                           socket_timeout=3)

    def master_client(self) -> redis.Redis:
        return self.client(self.ports[self.master])

    def other(self) -> str:
        return "b" if self.master == "a" else "a"

    @staticmethod
    def wait(cond, timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                if cond():
                    return
            except Exception:
                pass
            time.sleep(0.1)
        raise RuntimeError(f"redis-ha: timed out waiting for {what}")

    def wait_synced(self, name: str) -> None:
        self.wait(lambda: self.client(self.ports[name]).info("replication").get("master_link_status") == "up", 30,
                  f"{name} to sync")

    def agree(self) -> bool:
        for s in self.sentinels:
            c = self.client(s.port)
            if (len(c.execute_command("SENTINEL", "REPLICAS", self.SERVICE)) < 1
                    or len(c.execute_command("SENTINEL", "SENTINELS", self.SERVICE)) < len(self.sentinels) - 1):
                return False
        return True

    def sentinel_master(self) -> int | None:
        for s in self.sentinels:
            try:
                return int(self.client(s.port).execute_command("SENTINEL", "GET-MASTER-ADDR-BY-NAME",
                                                               self.SERVICE)[1])
            except Exception:
                continue
        return None

    def url(self) -> str:
        return "rediss+sentinel://" + ",".join(f"127.0.0.1:{s.port}" for s in self.sentinels) + f"/{self.SERVICE}/0"

    def failover(self, kill: bool) -> str:
        """Until the sentinels name the new master; repair() then brings the
        old one back as its replica (after the recovery is measured)."""
        self.repair()
        old, new = self.master, self.other()
        if kill:
            self.nodes[old].kill9()
        else:
            self.client(self.sentinels[0].port).execute_command("SENTINEL", "FAILOVER", self.SERVICE)
        self.wait(lambda: self.sentinel_master() == self.ports[new], 60, "the sentinels to promote the replica")
        self.master = new
        self.revive = old if kill else None
        self.damaged = True
        return f"master :{self.ports[old]} {'killed (-9)' if kill else 'SENTINEL FAILOVER'}, :{self.ports[new]} promoted"

    def restart_master(self) -> str:
        self.repair()
        name = self.master
        self.nodes[name].stop()
        self.start_node(name, None)
        self.revive = None
        self.damaged = True
        return f"TLS master :{self.ports[name]} restarted (empty)"

    def repair(self) -> None:
        """Before the next Redis fault (not at once: the run goes on
        meanwhile): the replica back in sync, and seen by every sentinel."""
        if not getattr(self, "damaged", False):
            return
        replica = self.other()
        if getattr(self, "revive", None) == replica:  # as the new master's replica (the sentinels would make it one)
            self.start_node(replica, self.master)
        self.revive = None
        self.wait_synced(replica)
        self.wait(self.agree, 60, "the sentinels to see the replica again")
        self.damaged = False

    def logs(self) -> list[Path]:
        return [p.dir / "log" for p in list(self.nodes.values()) + self.sentinels]

    def stop(self) -> None:
        for p in self.sentinels + list(self.nodes.values()):
            p.stop()


# ---- Redis Cluster (--redis cluster) -------------------------------------------------

class RedisClusterHA:
    """Three masters with a replica each (`redis-cli --cluster create`,
    node timeout 1 s: hookdtest.redis_servers.RedisGroup.cluster); hookd on
    redis+cluster:// with every node as a seed. Faults on the master that
    serves the inbox or the delivery queue's slot: failover() (the master
    killed with SIGKILL until its replica takes over - the dead node comes
    back later, before the next cluster fault, and rejoins as the new
    master's replica - or a CLUSTER FAILOVER on its replica, by turns) and
    migrate() (that queue's slot moved to another master key by key, as
    `redis-cli --cluster reshard` moves it, while hookd runs)."""

    def __init__(self, dir: Path, prefix: str) -> None:
        self.group = RedisGroup(dir / "redis-cluster")
        self.prefix = prefix
        self.revive: RedisProc | None = None
        self.failovers = 0
        try:
            self.cl: Cluster = self.group.cluster(masters=3, replicas=1)
            self.slots = {q: self.cl.keyslot(f"{prefix}:{{{q}}}:due") for q in ("inbox", "delivery")}
        except Exception:
            self.group.stop()
            raise

    def url(self) -> str:
        return self.cl.url(hosts=len(self.cl.nodes))

    def client_for(self, key: str) -> redis.Redis:
        return self.cl.owner(self.cl.keyslot(key)).client()

    def flushall(self) -> str:
        ports = []
        for m in self.cl.masters():
            m.client().flushall()
            ports.append(m.port)
        return "FLUSHALL on every master " + ",".join(f":{p}" for p in ports)

    @staticmethod
    def wait(cond, timeout: float, what: str) -> None:
        RedisHA.wait(cond, timeout, what)

    def repair(self) -> None:
        """The last failover's dead master back (same port and nodes.conf: it
        rejoins as a replica of the node that took over) and the cluster
        healthy again: every node cluster_state:ok, every replica linked."""
        if self.revive is not None:
            old = self.revive
            new = old.restart()
            self.cl.nodes[self.cl.nodes.index(old)] = new
            self.group.procs[self.group.procs.index(old)] = new
            self.revive = None
            self.wait(lambda: self.cl.role(new) == "slave", 60, f"{new.name} to rejoin as a replica")
        self.wait(self.cl.healthy, 60, "the cluster healthy again")

    def failover(self, queue: str) -> str:
        self.repair()
        slot = self.slots[queue]
        old = self.cl.owner(slot)
        heir = self.cl.replica_of(old)
        kill = self.failovers % 2 == 0  # by turns, a kill first
        self.failovers += 1
        if kill:
            old.kill9()
            self.wait(lambda: self.cl.role(heir) == "master" and self.cl.owner(slot).port == heir.port, 60,
                      f"{heir.name} to take over slot {slot}")
            self.revive = old
            how = "killed (SIGKILL)"
        else:
            self.cl.failover(old)  # CLUSTER FAILOVER on the replica; returns once it is master
            how = "CLUSTER FAILOVER on its replica"
        return f"{queue} slot {slot}: master :{old.port} {how}, replica :{heir.port} took over"

    def migrate(self, queue: str, rng: random.Random) -> str:
        self.repair()
        slot = self.slots[queue]
        src = self.cl.owner(slot)
        to = rng.choice([m for m in self.cl.masters() if m.port != src.port])

        def count() -> int:
            return int(src.client().execute_command("CLUSTER", "COUNTKEYSINSLOT", slot))

        # a queue's keys come and go with its work: move the slot while it
        # holds some (a schedule, leases), if it does within a few seconds
        deadline = time.monotonic() + 5
        while (keys := count()) == 0 and time.monotonic() < deadline:
            time.sleep(0.01)
        self.cl.migrate_slot(slot, to)
        return f"{queue} slot {slot} ({keys} keys) migrated :{src.port} -> :{to.port}"

    def logs(self) -> list[Path]:
        return [p.dir / "log" for p in self.group.procs]

    def stop(self) -> None:
        self.group.stop()


# ---- the flaky receiver -----------------------------------------------------------

class Receiver:
    """Webhook endpoints on one 127.0.0.1 port, one per path: answers 500 with
    probability fail_rate (to every request while `failing` is set), records
    every request (path, webhook-id, body, signature validity with the path's
    endpoint secret, answer), and can be taken down (port closed) and brought
    back on the same port. HTTP/1.0: one connection per request, so "down"
    really refuses."""

    def __init__(self, fail_rate: float, seed: int) -> None:
        self.fail_rate = fail_rate
        self.failing = False
        self.rng = random.Random(seed)
        self.secrets: dict[str, str] = {}  # path -> the secret of the endpoint on it
        self.endpoints: dict[str, str] = {}  # path -> endpoint name
        self.requests: list[dict] = []
        self.lock = threading.Lock()
        self.port = free_port()
        self.server: ThreadingHTTPServer | None = None
        self.up()

    def _handler(self):
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                wid = self.headers.get("webhook-id", "")
                try:
                    want = sign_standard(outer.secrets[self.path], wid, int(self.headers.get("webhook-timestamp", "0")),
                                         body)
                    sig_ok = want in (self.headers.get("webhook-signature") or "").split(" ")
                except Exception:
                    sig_ok = False
                with outer.lock:
                    status = 500 if outer.failing or outer.rng.random() < outer.fail_rate else 200
                    outer.requests.append(dict(endpoint=outer.endpoints.get(self.path, self.path), wid=wid, body=body,
                                               sig_ok=sig_ok, status=status, at=time.time()))
                self.send_response(status)
                self.send_header("content-length", "2")
                self.end_headers()
                self.wfile.write(b"ok" if status == 200 else b"no")

            def log_message(self, *args):
                pass

        return Handler

    def add_endpoint(self, name: str, path: str, add_output: str) -> None:
        """Takes the endpoint on path with the secret `hookd endpoint add` printed."""
        self.endpoints[path] = name
        self.secrets[path] = next(line.split(": ", 1)[1] for line in add_output.splitlines()
                                  if line.startswith("secret:"))

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def up(self) -> None:
        server = ThreadingHTTPServer(("127.0.0.1", self.port), self._handler())
        server.daemon_threads = True
        threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        self.server = server

    def down(self) -> None:
        if self.server:
            self.server.shutdown()
            self.server.server_close()
            self.server = None

    def snapshot(self) -> list[dict]:
        with self.lock:
            return list(self.requests)


# ---- the partner: signed webhooks, retried until accepted ------------------------

class Partner:
    """Posts signed order events to random live workers, like a partner that
    retries until it gets a 2xx: a refused request (connection error, 503) was
    never accepted and is sent again. Records every accepted event: an
    `accepted` answer (with the row id) or a `duplicate` one (the event is
    stored; e.g. the first answer was lost when a worker was killed)."""

    def __init__(self, chaos: "Chaos", seed: int) -> None:
        self.chaos = chaos
        self.rng = random.Random(seed)
        self.lock = threading.Lock()
        self.accepted: dict[str, dict] = {}   # msg id -> {id, type, order, at}
        self.planned: dict[str, list[str]] = {}  # order -> event types it will get
        self.answers: Counter = Counter()
        self.accepted_twice: dict[str, list] = {}  # msg id -> the ids of its "accepted" answers, when > 1
        self.anomalies: list[str] = []       # answers that should never happen (4xx)
        self.unaccepted: list[str] = []      # gave up after the deadline

    def send(self, msg_id: str, typ: str, order: str, deadline: float, worker: Worker | None = None) -> str | None:
        """Posts until accepted (to `worker`, or to random live workers);
        returns "accepted" / "duplicate", or None."""
        body = order_event(typ, order)
        while time.monotonic() < deadline:
            w = worker or self.chaos.pick_worker(self.rng)
            if w is None:
                time.sleep(0.05)
                continue
            try:
                status, _, raw = post_standard(w, PARTNER, msg_id, body)
            except Exception:  # refused, reset, timed out: not accepted
                with self.lock:
                    self.answers["connection error"] += 1
                time.sleep(0.05)
                continue
            if status == 200:
                ans = json.loads(raw)
                with self.lock:
                    self.answers[ans["status"]] += 1
                    if ans["status"] == "accepted" and msg_id in self.accepted and (
                            msg_id in self.accepted_twice or self.accepted[msg_id].get("answered") == "accepted"):
                        self.accepted_twice.setdefault(msg_id, [self.accepted[msg_id]["id"]]).append(ans.get("id"))
                    if msg_id not in self.accepted:
                        self.accepted[msg_id] = dict(id=ans.get("id"), type=typ, order=order, at=time.time(),
                                                     answered=ans["status"])
                    elif ans.get("id") and not self.accepted[msg_id]["id"]:
                        self.accepted[msg_id]["id"] = ans["id"]
                return ans["status"]
            with self.lock:
                self.answers[f"http {status}"] += 1
                if status != 503:
                    self.anomalies.append(f"{msg_id}: HTTP {status} {raw[:200]!r}")
                    return None
            time.sleep(0.1)
        with self.lock:
            self.unaccepted.append(msg_id)
        return None

    def batch(self, prefix: str, first: int, n: int, full: bool = False) -> list[tuple[str, str, str]]:
        """n orders' events, shuffled together, with exact duplicates (same
        msg id) and distinct-id restatements of a fact."""
        sends = []
        for k in range(first, first + n):
            order = f"{prefix}{k}"
            length = 3 if full else self.rng.choices([1, 2, 3], weights=[1, 2, 7])[0]
            types = CHAIN_TYPES[:length]
            with self.lock:
                self.planned[order] = list(types)
            mine = [(f"{order}:{t}", t, order) for t in types]
            if self.rng.random() < 0.15:
                t = self.rng.choice(types)
                mine.append((f"{order}:{t}:again", t, order))
            if self.rng.random() < 0.3:
                mine.append(self.rng.choice(mine))
            sends += mine
        self.rng.shuffle(sends)
        return sends


class Load(threading.Thread):
    """Background partner traffic until stopped; the batch in progress is
    finished (each event retried until accepted) before the thread ends."""

    def __init__(self, chaos: "Chaos") -> None:
        super().__init__(daemon=True, name="load")
        self.chaos = chaos
        self.stop_ev = threading.Event()
        self.error: str | None = None

    def run(self) -> None:
        try:
            k = 0
            while not self.stop_ev.is_set():
                sends = self.chaos.partner.batch("o", k, 4)
                k += 4
                for msg_id, typ, order in sends:
                    deadline = time.monotonic() + (600 if not self.stop_ev.is_set() else 60)
                    self.chaos.partner.send(msg_id, typ, order, deadline)
                    time.sleep(self.chaos.t.send_pause)
        except Exception as e:  # report, never hang the driver
            self.error = repr(e)


class Emitter(threading.Thread):
    """The application: one `hookd_emit` per transaction, in a loop. Records
    the ids of committed events; an exception during COMMIT leaves the outcome
    unknown, so those are looked up by payload afterwards."""

    def __init__(self, chaos: "Chaos", url: str) -> None:
        super().__init__(daemon=True, name="emitter")
        self.chaos = chaos
        self.url = url
        self.stop_ev = threading.Event()
        self.committed: dict[int, str] = {}   # n -> outbox event id
        self.unknown: set[int] = set()
        self.failed = 0

    def run(self) -> None:
        conn = None
        n = 0
        while not self.stop_ev.is_set():
            n += 1
            phase = "connect"
            try:
                if conn is None or conn.closed:
                    conn = psycopg2.connect(self.url, connect_timeout=3)
                phase = "emit"
                with conn.cursor() as cur:
                    typ = "circuit.tick" if n % 4 == 0 else "order.note"  # the circuit endpoints' steady load
                    cur.execute("SELECT hookd_emit('chaos', %s, %s, %s::jsonb)::text",
                                (f"n{n}", typ, json.dumps({"n": n, "note": "emitted by the application"})))
                    eid = cur.fetchone()[0]
                phase = "commit"
                conn.commit()
                self.committed[n] = eid
            except Exception:
                if phase == "commit":
                    self.unknown.add(n)
                else:
                    self.failed += 1
                try:
                    conn.close()
                except Exception:
                    pass
                conn = None
                time.sleep(0.2)
            self.stop_ev.wait(self.chaos.t.emit_pause)
        if conn is not None:
            conn.close()


# ---- results ----------------------------------------------------------------------

@dataclass
class Fault:
    n: int
    kind: str
    at: float                 # seconds since the run started
    took: float = 0.0         # the injection itself (incl. outage and restart)
    recovery: float | None = None  # end of injection -> inbound probe PROCESSED
    recovery_out: float | None = None  # end of injection -> outbound probe processed
    note: str = ""
    wall_start: float = 0.0
    wall_end: float = 0.0


@dataclass
class Result:
    faults: list[Fault] = field(default_factory=list)
    checks: list[tuple[str, bool, str]] = field(default_factory=list)
    totals: dict = field(default_factory=dict)
    counters: list[tuple] = field(default_factory=list)
    lost: int = -1
    duplicated: int = -1
    error: str | None = None
    warnings: list[str] = field(default_factory=list)  # findings that do not fail the ledger

    @property
    def passed(self) -> bool:
        return self.error is None and bool(self.checks) and all(ok for _, ok, _ in self.checks)

    def check(self, name: str, ok: bool, detail: str = "") -> bool:
        self.checks.append((name, bool(ok), detail))
        return bool(ok)


# ---- the driver -------------------------------------------------------------------

class Chaos:
    def __init__(self, faults: int = 24, seed: int = 1, short: bool = False, keep_logs: str | None = None,
                 kinds: list[str] | None = None, redis_mode: str = "plain") -> None:
        self.keep_logs = keep_logs
        self.redis_mode = redis_mode
        self.kinds = list(kinds or REDIS_MODES[redis_mode])  # the fault kinds to draw from
        self.rha: RedisHA | None = None
        self.rcl: RedisClusterHA | None = None
        self.nfaults = faults
        self.seed = seed
        self.short = short
        self.t = Timing.make(short)
        self.rng = random.Random(seed)  # the fault schedule and its targets
        self.result = Result()
        self.workers: list[Worker] = []
        self.worker_lock = threading.Lock()
        self.partner = Partner(self, seed * 7919 + 1)
        self.services: Services | None = None
        self.receiver: Receiver | None = None
        self.circuit_receiver: Receiver | None = None  # CIRCUIT_ENDPOINTS, one origin
        self.load: Load | None = None
        self.emitter: Emitter | None = None
        self.pg: Pg | None = None
        self.ha: PgHA | None = None
        self.fo_marks: list[int] = []
        self.t0 = time.monotonic()
        self.probes = 0
        self.unexpected_exits: list[str] = []

    # -- workers --

    def pick_worker(self, rng: random.Random) -> Worker | None:
        with self.worker_lock:
            live = [w for w in self.workers if w.proc and w.proc.poll() is None]
        return rng.choice(live) if live else None

    def start_worker(self, w: Worker) -> None:
        if getattr(w, "log", None):
            w.log.close()
        w.start(wait_ready=True)

    def check_workers_alive(self) -> None:
        """A worker that died without being told to is a finding; restart it
        so the run goes on."""
        for i, w in enumerate(self.workers):
            if w.proc and w.proc.poll() is not None:
                tail = w.output()[-1500:]
                self.unexpected_exits.append(f"worker {i} exited with {w.proc.returncode}:\n{tail}")
                log(f"worker {i} exited unexpectedly ({w.proc.returncode}); restarting it")
                self.start_worker(w)

    def write_config(self, i: int, port: int) -> Path:
        redis_url = self.rha.url() if self.rha else self.rcl.url() if self.rcl else self.services.redis_url
        cfg = write_config(self.services.dir, self.ha.url(f"{APP}{i}"), redis_url, self.prefix, port=port,
                           extra="emit order.shipped = order.shipped\n", lease="2s", reconcile_interval="2s",
                           retry_schedule="200ms, 500ms, 1s", defer_schedule="200ms, 500ms", defer_max_age="1h")
        text = cfg.read_text().replace("[hookd]\n", "[hookd]\nallow_private_networks = true\n"
                                       f"max_inflight_per_origin = {MAX_INFLIGHT_PER_ORIGIN}\n", 1)
        text = text.replace("[machine order]", "".join(CIRCUIT_SECTION.format(name=n) for n in CIRCUIT_ENDPOINTS)
                            + "[machine order]", 1)
        if self.rha:
            text = text.replace("[hookd]\n", f"[hookd]\nredis_ca_file = {self.rha.tls['ca']}\n", 1)
        assert re.findall(r"^\[[^\]]+\]", text, re.M)[-1] == "[machine order]"  # the emit lands there
        cfg.write_text(text)
        return cfg

    def elapsed(self) -> float:
        return time.monotonic() - self.t0

    # -- faults --

    def schedule(self) -> list[str]:
        first = list(self.kinds)
        self.rng.shuffle(first)
        kinds = first[:self.nfaults]
        while len(kinds) < self.nfaults:
            kinds.append(self.rng.choice(self.kinds))
        return kinds

    def inject(self, kind: str) -> str:
        s = self.services
        if kind in ("kill9", "sigterm", "sighup_bad_config"):
            i = self.rng.randrange(len(self.workers))
            w = self.workers[i]
            if kind == "kill9":
                pid = w.proc.pid
                w.kill9()
                self.start_worker(w)
                return f"worker {i} (pid {pid}) killed, restarted"
            if kind == "sigterm":
                pid = w.proc.pid
                w.signal(signal.SIGTERM)
                try:
                    rc = w.proc.wait(30)
                except Exception:
                    w.kill9()
                    rc = "hung (killed -9)"
                self.result.check(f"fault: SIGTERM of worker {i} exits 0", rc == 0, f"exit status {rc}")
                self.start_worker(w)
                return f"worker {i} (pid {pid}) exited {rc}, restarted"
            return self.bad_config(i, w)
        if kind in ("cluster_failover", "cluster_slot_migration"):
            queue = self.rng.choice(["inbox", "delivery"])
            started = time.monotonic()
            self.rcl.repair()  # the last failover's dead master back as a replica first
            waited = time.monotonic() - started
            note = self.rcl.failover(queue) if kind == "cluster_failover" else self.rcl.migrate(queue, self.rng)
            return note + (f" (after {waited:.1f}s for the last failover's node to rejoin)" if waited > 0.5 else "")
        if kind == "redis_flushall":
            if self.rcl:
                return self.rcl.flushall()
            self.redis_client().flushall()
            return "FLUSHALL" + (f" on the master :{self.rha.ports[self.rha.master]}" if self.rha else "")
        if kind in ("sentinel_failover", "redis_tls_restart"):
            started = time.monotonic()
            self.rha.repair()  # the last Redis fault's replica back first
            waited = time.monotonic() - started
            note = self.rha.failover(kill=self.rng.random() < 0.5) if kind == "sentinel_failover" \
                else self.rha.restart_master()
            return note + (f" (after {waited:.1f}s for the replica to be back in sync)" if waited > 0.5 else "")
        if kind == "redis_restart":
            s.stop_redis()
            s.start_redis()
            return "redis stopped and started"
        if kind == "redis_down":
            s.stop_redis()
            time.sleep(self.t.redis_down)  # the outage itself
            s.start_redis()
            return f"redis down for {self.t.redis_down:g}s"
        if kind == "pg_restart":
            self.ha.restart_primary()
            return f"primary :{self.ha.primary.port} stopped (immediate) and started"
        if kind == "pg_failover":
            self.fo_marks = [len(w.output()) for w in self.workers]
            old, new = self.ha.primary.port, self.ha.standby.port
            self.ha.failover()
            return f"primary :{old} stopped (immediate), standby :{new} promoted"
        if kind == "pg_kill_conns":
            conn = psycopg2.connect(self.db_url, connect_timeout=5)
            conn.autocommit = True
            try:
                with conn.cursor() as cur:
                    cur.execute("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
                                " WHERE datname = current_database() AND pid <> pg_backend_pid()")
                    n = cur.fetchone()[0]
            finally:
                conn.close()
            return f"{n} backends terminated"
        if kind == "receiver_down":
            self.receiver.down()
            time.sleep(self.t.receiver_down)  # the outage itself
            self.receiver.up()
            return f"receiver down for {self.t.receiver_down:g}s"
        if kind == "circuit":
            return self.circuit_fault()
        raise ValueError(kind)

    def open_circuits(self) -> set[str]:
        """The circuit endpoints whose circuit Redis holds open now."""
        key = f"{self.prefix}:{{delivery}}:circuit:open"
        client = self.rcl.client_for(key) if self.rcl else self.redis_client()
        return {k.decode() if isinstance(k, bytes) else k for k in client.hkeys(key)} & set(CIRCUIT_ENDPOINTS)

    def emit_burst(self, tag: str, n: int) -> None:
        """n `circuit.*` events in one transaction: one delivery each per circuit endpoint."""
        self.pg.all("SELECT count(hookd_emit('circuit', %s || g, 'circuit.burst', jsonb_build_object('burst', %s,"
                    " 'g', g))) FROM generate_series(1, %s) g", tag, tag, n)

    def circuit_fault(self) -> str:
        """Opens and closes the circuits of several endpoints on one receiver
        under load: a burst to all of them while their receiver answers 500,
        so that every worker counts failures and the circuits open while
        requests wait in the workers' queues (behind the endpoint's
        max_inflight or the origin's max_inflight_per_origin) and are taken
        back unsent; more events while they are open (parked at once); then
        the receiver answers 200 again and the probes close the circuits. The
        workers must stay up throughout; the ledger checks the deliveries."""
        marks = [len(w.output()) for w in self.workers]
        rcv = self.circuit_receiver
        tag = f"cf{len(self.result.faults) + 1}-"
        started = time.monotonic()
        rcv.failing = True
        try:
            self.emit_burst(tag + "a", self.t.circuit_burst)
            opened = set()
            self.wait(lambda: opened.update(self.open_circuits()) or opened == set(CIRCUIT_ENDPOINTS), 30, 0.05)
            took_open = time.monotonic() - started
            self.emit_burst(tag + "b", self.t.circuit_burst // 2)
            time.sleep(self.t.circuit_down)  # the outage itself, with the circuits open
        finally:
            rcv.failing = False
        recovered = time.monotonic()
        closed = self.wait(lambda: not self.open_circuits(), 60, 0.1)
        took_close = time.monotonic() - recovered
        logs = [w.output()[m:] for w, m in zip(self.workers, marks)]
        unsent = sum(int(n) for out in logs for n in re.findall(r"event=delivery\.unsent_parked .*?requests=(\d+)", out))
        opens = sum(out.count("event=delivery.circuit_open") for out in logs)
        exited = [f"worker {i} {w.proc.returncode}" for i, w in enumerate(self.workers) if w.proc.poll() is not None]
        self.result.check("fault: circuits opened and closed under load, every worker up",
                          opened == set(CIRCUIT_ENDPOINTS) and closed and not exited,
                          f"opened {sorted(opened)}, closed={closed}, exited: {', '.join(exited) or 'none'}")
        note = (f"{self.t.circuit_burst}+{self.t.circuit_burst // 2} events x {len(CIRCUIT_ENDPOINTS)} endpoints;"
                f" {len(opened)}/{len(CIRCUIT_ENDPOINTS)} circuits open in {took_open:.1f}s ({opens} opening(s)"
                f" logged), {unsent} queued requests taken back unsent; ")
        if closed:
            return note + f"all closed {took_close:.1f}s after the receiver recovered"
        return note + f"still open {took_close:.0f}s after the receiver recovered: {sorted(self.open_circuits())}"

    def bad_config(self, i: int, w: Worker) -> str:
        good = w.config.read_text()
        out = w.output()
        failed0 = out.count("event=config.reload_failed")
        # the log file is appended to across restarts: generations count
        # from the current process's start (each process starts at 1)
        gens = RELOADED.findall(this_run(out))
        gen0 = int(gens[-1]) if gens else 1
        w.config.write_text(good.replace("lease = 2s", "lease = whenever", 1))
        try:
            w.signal(signal.SIGHUP)
            refused = self.wait(lambda: w.output().count("event=config.reload_failed") > failed0, 15)
        finally:
            w.config.write_text(good)
        alive = w.proc.poll() is None
        ready = alive and self.wait(lambda: w.ready(), 10)
        w.signal(signal.SIGHUP)
        reloaded = self.wait(lambda: len(RELOADED.findall(this_run(w.output())))
                             > len(gens), 15)
        gens = RELOADED.findall(this_run(w.output()))
        gen1 = int(gens[-1]) if gens else None
        self.result.check(f"fault: bad config refused by worker {i}, old config kept",
                          refused and alive and ready and reloaded and gen1 == gen0 + 1,
                          f"refused={refused} alive={alive} ready={ready} good reload={reloaded} "
                          f"generation {gen0} -> {gen1}")
        return f"worker {i}: bad file refused={refused}, still ready={ready}, restored gen {gen0}->{gen1}"

    def after_failover(self, f: Fault) -> None:
        """After a failover's probes: every worker came back on the new
        primary - its main pool (reconcile.db_up: the pool is up again and the
        reconciler ran), its ingest pool (an event posted to it answered 200),
        its LISTEN (renewed: relay.listening, and a LISTEN session on the new
        primary) - and none is on the standby. Then the dead primary is
        rebuilt as the new synchronous standby, ready for the next failover."""
        problems = []
        for i, w in enumerate(self.workers):
            mark = self.fo_marks[i] if i < len(self.fo_marks) else 0
            for needle, what in (("reconcile.db_up", "main pool up again, reconciler ran"),
                                 ("relay.listening", "LISTEN renewed")):
                if not self.wait(lambda: needle in w.output()[mark:], 30):
                    problems.append(f"worker {i}: no {needle} after the failover ({what})")
            order = f"fo{f.n}w{i}"
            with self.partner.lock:
                self.partner.planned[order] = ["order.started"]
            if not self.partner.send(f"{order}:order.started", "order.started", order, time.monotonic() + 30,
                                     worker=w):
                problems.append(f"worker {i}: no 200 for an event posted to it (ingest pool)")
        want = {f"{APP}{i}" for i in range(len(self.workers))}
        listening: set = set()

        def all_listening() -> bool:
            listening.clear()
            listening.update(r["application_name"] for r in self.ha.sessions(
                self.ha.primary, "query = 'LISTEN hookd_outbox'"))
            return want <= listening

        if not self.wait(all_listening, 30, 0.2):
            problems.append(f"LISTEN sessions on the new primary: {sorted(listening)} (want {sorted(want)})")
        started = time.monotonic()
        self.ha.rebuild()
        f.note += f"; old primary rebuilt as sync standby in {time.monotonic() - started:.1f}s"
        on_standby = self.ha.sessions(self.ha.standby)
        if on_standby:
            problems.append(f"sessions on the standby: {[r['application_name'] for r in on_standby]}")
        self.result.check(f"fault #{f.n} pg_failover: every worker back on the new primary (reconcile.db_up,"
                          " ingest answers 200, LISTEN renewed), none on the standby", not problems,
                          "\n".join(problems))

    @staticmethod
    def wait(cond, timeout: float, interval: float = 0.05) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                if cond():
                    return True
            except Exception:
                pass
            time.sleep(interval)
        return False

    def probe(self) -> tuple[float | None, float | None]:
        """Recovery, both ways: seconds until a freshly posted inbound event is
        PROCESSED, and until a freshly emitted outbox event is processed
        (delivered, or dead-lettered after its retries). None = not within
        probe_timeout."""
        start = time.monotonic()
        deadline = start + self.t.probe_timeout
        self.probes += 1
        order = f"probe{self.probes}"
        msg = f"{order}:order.started"
        with self.partner.lock:
            self.partner.planned[order] = ["order.started"]
        eid = self.pg.value("SELECT hookd_emit('probe', %s, 'order.probe', %s::jsonb)::text", order,
                            json.dumps({"probe": self.probes}))
        took_in = took_out = None
        if self.partner.send(msg, "order.started", order, deadline):
            if self.wait(lambda: self.pg.value(
                    "SELECT status FROM webhook_inbox WHERE partner_name = %s AND partner_event_id = %s",
                    PARTNER, msg, retry_for=2) == "PROCESSED", deadline - time.monotonic(), 0.02):
                took_in = time.monotonic() - start
        if self.wait(lambda: self.pg.value("SELECT processed_at IS NOT NULL FROM outbox_events WHERE id = %s",
                                           eid, retry_for=2), deadline - time.monotonic(), 0.02):
            took_out = time.monotonic() - start
        return took_in, took_out

    # -- quiescence and counters --

    def quiescent(self) -> bool:
        row = self.pg.one(
            "SELECT (SELECT count(*) FROM webhook_inbox WHERE status NOT IN ('PROCESSED', 'QUARANTINED')) AS inbox,"
            " (SELECT count(*) FROM outbox_events WHERE processed_at IS NULL) AS outbox")
        return row["inbox"] == 0 and row["outbox"] == 0

    def pg_counts(self) -> dict:
        return dict(self.pg.one(
            "SELECT (SELECT count(*) FROM webhook_inbox) AS ingested,"
            " (SELECT count(*) FROM webhook_inbox WHERE outcome = 'applied') AS applied,"
            " (SELECT count(*) FROM webhook_inbox WHERE outcome = 'noop') AS noop,"
            " (SELECT count(*) FROM attempts WHERE source = 'inbox' AND outcome = 'deferred') AS deferred,"
            " (SELECT count(*) FROM attempts WHERE source = 'inbox' AND outcome = 'retry') AS retried,"
            " (SELECT count(*) FROM dead_letters) AS dead,"
            " (SELECT count(*) FROM attempts WHERE source = 'delivery' AND outcome = 'succeeded') AS delivered,"
            " (SELECT count(*) FROM attempts WHERE source = 'delivery' AND outcome IN ('failed', 'gone'))"
            " AS delivery_failed"))

    def redis_client(self) -> redis.Redis:
        return self.rha.master_client() if self.rha else self.services.redis_client()

    def redis_counts(self) -> dict:
        key = f"{self.prefix}:stats"
        h = self.rcl.client_for(key).hgetall(key) if self.rcl else self.redis_client().hgetall(key)
        return {k: int(v) for k, v in h.items()}

    def stable_counts(self, timeout: float = 30) -> tuple[dict, dict]:
        """Counters once every worker has flushed: the same values before and
        after more than three heartbeats (200 ms each) of a quiet system."""
        deadline = time.monotonic() + timeout
        prev = None
        while time.monotonic() < deadline:
            snap = (self.redis_counts(), self.pg_counts())
            if snap == prev:
                return snap
            prev = snap
            time.sleep(0.7)  # lets heartbeats pass: the flush is what we wait for
        raise AssertionError("counters did not settle")

    def counter_window(self) -> None:
        """A fault-free stretch: posts a few orders and checks that the Redis
        counters moved by exactly what Postgres recorded."""
        r0, p0 = self.stable_counts()
        answers0 = Counter(self.partner.answers)
        sends = self.partner.batch("w", 0, self.t.window_orders, full=True)
        for msg_id, typ, order in sends:
            self.partner.send(msg_id, typ, order, time.monotonic() + 30)
        if not self.wait(self.quiescent, self.t.settle_timeout, 0.2):
            self.result.check("counter window: quiescent", False, "the window's events did not settle")
            return
        r1, p1 = self.stable_counts()
        answers = Counter(self.partner.answers)
        answers.subtract(answers0)
        want = {k: p1[k] - p0[k] for k in COUNTERS}
        want["duplicate"] = answers["duplicate"]
        want["ingested_answers"] = answers["accepted"]
        got = {k: r1.get(k, 0) - r0.get(k, 0) for k in COUNTERS + ["duplicate"]}
        got["ingested_answers"] = got["ingested"]
        bad = {k: (got[k], want[k]) for k in want if got[k] != want[k]}
        self.result.check("counters exact in a fault-free window", not bad and want["applied"] > 0,
                          "all of " + ", ".join(f"{k}+{want[k]}" for k in want) if not bad
                          else "redis vs postgres: " + ", ".join(f"{k} {g} != {w}" for k, (g, w) in bad.items()))

    # -- the run --

    def run(self) -> Result:
        res = self.result
        try:
            self.setup()
            self.chaos_phase()
            self.settle()
            self.counter_window()
            self.ledger()
        except Exception as e:
            import traceback
            res.error = f"{type(e).__name__}: {e}"
            traceback.print_exc()
        finally:
            self.teardown()
        self.report()
        return res

    def setup(self) -> None:
        self.services = RedisOnly()  # hookd's Postgres is the pair below
        self.prefix = f"chaos{os.getpid()}"
        if self.redis_mode == "sentinel-tls":
            self.rha = RedisHA(self.services.dir)
        made: dict = {}
        maker = None
        if self.redis_mode == "cluster":  # made while the Postgres pair starts (both take seconds)
            def make_cluster() -> None:
                try:
                    made["cluster"] = RedisClusterHA(self.services.dir, self.prefix)
                except Exception as e:
                    made["error"] = e
            maker = threading.Thread(target=make_cluster, name="cluster", daemon=True)
            maker.start()
        try:
            self.ha = PgHA()
        finally:
            if maker is not None:
                maker.join(180)
                self.rcl = made.get("cluster")
        if maker is not None and self.rcl is None:
            raise RuntimeError(f"the Redis Cluster did not start: {made.get('error', 'timed out')!r}")
        self.db_url = self.ha.url("hookd-chaos-check")
        self.pg = Pg(self.db_url)
        self.receiver = Receiver(fail_rate=0.2, seed=self.seed * 31 + 7)
        ports = [free_port() for _ in range(3)]
        for i, port in enumerate(ports):
            cfg = self.write_config(i, port)
            self.workers.append(Worker(config=cfg, port=port, log_path=self.services.dir / f"worker-{i}.log"))
        run_hookd(["-c", str(self.workers[0].config), "migrate"], check=True)
        self.circuit_receiver = Receiver(fail_rate=0.0, seed=self.seed * 31 + 8)
        endpoints = [(self.receiver, "chaos-receiver", "order.*", "/hook")] + \
            [(self.circuit_receiver, name, "circuit.*", f"/c{i}") for i, name in enumerate(CIRCUIT_ENDPOINTS, 1)]
        for rcv, name, events, path in endpoints:
            out = run_hookd(["-c", str(self.workers[0].config), "endpoint", "add", "--name", name,
                             "--events", events, "--url", rcv.url(path)], check=True)
            rcv.add_endpoint(name, path, out.stdout)
        for w in self.workers:
            self.start_worker(w)
        log(f"services up (primary :{self.ha.primary.port}, sync standby :{self.ha.standby.port}, redis prefix"
            f" {self.prefix}{', redis ' + self.rha.url() if self.rha else ''}"
            f"{', redis ' + self.rcl.url() + ' slots ' + str(self.rcl.slots) if self.rcl else ''}); 3 workers on ports {ports}; "
            f"receiver on {self.receiver.port} (20% answered 500), {len(CIRCUIT_ENDPOINTS)} circuit endpoints on"
            f" {self.circuit_receiver.port}")
        self.load = Load(self)
        self.emitter = Emitter(self, self.ha.url("hookd-chaos-app"))
        self.load.start()
        self.emitter.start()

    def chaos_phase(self) -> None:
        res = self.result
        kinds = self.schedule()
        log(f"load running; {len(kinds)} faults ahead (seed {self.seed}{', short' if self.short else ''})")
        time.sleep(self.t.warmup)  # let load build up before the first fault
        for n, kind in enumerate(kinds, 1):
            f = Fault(n=n, kind=kind, at=self.elapsed(), wall_start=time.time())
            started = time.monotonic()
            f.note = self.inject(kind)
            f.took = time.monotonic() - started
            f.wall_end = time.time()
            f.recovery, f.recovery_out = self.probe()
            if kind == "pg_failover":
                self.after_failover(f)
            res.faults.append(f)
            log(f"fault {n:2}/{len(kinds)} {kind:<18} took {f.took:5.2f}s  recovery in {secs(f.recovery)}"
                f" out {secs(f.recovery_out)}  ({f.note})")
            self.check_workers_alive()
            if self.load.error:
                raise RuntimeError(f"load thread failed: {self.load.error}")
            time.sleep(self.t.pause)  # under load, between faults
        unrecovered = [f for f in res.faults if f.recovery is None or f.recovery_out is None]
        res.check("every fault recovered (inbound and outbound probes processed)", not unrecovered,
                  ", ".join(f"#{f.n} {f.kind}" for f in unrecovered) or f"{len(res.faults)} x 2 probes processed")
        res.check("no worker exited unless told to", not self.unexpected_exits,
                  "\n".join(self.unexpected_exits)[:3000])

    def settle(self) -> None:
        log("stopping the load; waiting for quiescence")
        self.load.stop_ev.set()
        self.emitter.stop_ev.set()
        self.load.join(120)
        self.emitter.join(30)
        settled = self.wait(self.quiescent, self.t.settle_timeout, 0.25)
        self.result.check("quiescence reached", settled, f"within {self.t.settle_timeout:g}s")

    # -- the ledger --

    def ledger(self) -> None:
        res = self.result
        pg = self.pg
        p = self.partner
        rows = {r["partner_event_id"]: r for r in pg.all(
            "SELECT i.id::text, i.partner_event_id, i.status, i.outcome, i.entity_id, i.event_type, i.received_at,"
            " (SELECT count(*) FROM dead_letters d WHERE d.source = 'inbox' AND d.source_id = i.id"
            "   AND d.replayed_at IS NULL) AS dlq"
            " FROM webhook_inbox i WHERE partner_name = %s", PARTNER)}

        # 1. every accepted inbound event is terminal
        missing, stuck, wrong_id, quarantined_nodlq, quarantined = [], [], [], [], []
        for msg, a in p.accepted.items():
            r = rows.get(msg)
            if r is None:
                missing.append(msg)
                continue
            if a["id"] and a["id"] != r["id"]:
                wrong_id.append(msg)
            if r["status"] not in TERMINAL:
                stuck.append(msg)
            elif r["status"] == "QUARANTINED":
                quarantined.append(msg)
                if r["dlq"] != 1:
                    quarantined_nodlq.append(msg)
        res.lost = len(missing) + len(stuck)
        terminal = sum(1 for m in p.accepted if m in rows and rows[m]["status"] in TERMINAL)
        res.check("accepted events all stored (none missing)", not missing, self.explain(missing, rows))
        res.check("accepted events all terminal (none stuck)", not stuck, self.explain(stuck, rows))
        res.check("stored ids match the 200 answers", not wrong_id, ", ".join(wrong_id[:10]))
        res.check("quarantined events have a dead letter", not quarantined_nodlq, ", ".join(quarantined_nodlq[:10]))
        strays = [m for m, r in rows.items() if m not in p.accepted and r["status"] not in TERMINAL]
        res.check("rows never acknowledged to the partner are terminal too", not strays, ", ".join(strays[:10]))
        res.check("no anomalous ingress answers (4xx)", not p.anomalies, "\n".join(p.anomalies[:10]))
        twice = sorted(p.accepted_twice)
        res.check("no event answered 'accepted' twice (a later request for a stored event is a 'duplicate')",
                  not twice, "\n".join(f"{m}: accepted with ids {p.accepted_twice[m]}" for m in twice[:10])
                  + ("\n" + self.explain(twice, rows) if twice else ""))

        # 2. every entity is a serial replay of its accepted events
        dup_effects, entity_problems = self.check_entities(rows)

        # 3. outbox: processed, delivered or dead, consistent bodies, valid signatures
        outbox = self.check_outbox()
        dup_effects += outbox["body_mismatch"]
        res.duplicated = dup_effects

        res.totals.update({
            "events in (accepted)": len(p.accepted),
            "events out (terminal)": terminal,
            "  of which quarantined": len(quarantined),
            "rows stored but answer lost": sum(1 for m in rows if m not in p.accepted),
            "lost": res.lost,
            "duplicated effects": res.duplicated,
            "entities checked": entity_problems["entities"],
            "ingress answers": dict(p.answers),
            "sends given up": len(p.unaccepted),
        })
        res.totals.update({k: v for k, v in outbox.items() if k != "body_mismatch"})
        errors = self.pg.all("SELECT a.outcome, left(a.error, 90) AS error, count(*) AS n FROM attempts a"
                             " WHERE a.source = 'inbox' AND a.outcome IN ('retry', 'dead')"
                             " GROUP BY 1, 2 ORDER BY 3 DESC LIMIT 5")
        res.totals["inbox retries/dead letters by error"] = (
            "; ".join(f"{e['n']}x {e['outcome']}: {e['error']}" for e in errors) or "none")
        # Every inbound event here is valid and in a known lifecycle, so any
        # failed evaluation is worth a look even though the ledger allows it.
        deadlocks = self.pg.value("SELECT count(*) FROM attempts WHERE source = 'inbox'"
                                  " AND outcome IN ('retry', 'dead') AND error LIKE '%%deadlock detected%%'")
        if deadlocks:
            res.warnings.append(f"{deadlocks} evaluation(s) of valid inbound events failed with 'deadlock detected'"
                                " and each cost a retry attempt (hookd treats 40P01 as a free lock conflict"
                                " elsewhere; max_attempts of them in a row would dead-letter a valid event)")
        res.check("lost == 0", res.lost == 0)
        res.check("duplicated effects == 0", res.duplicated == 0)

        # 4. counters
        self.check_counters()

    def check_entities(self, rows: dict) -> tuple[int, dict]:
        res = self.result
        p = self.partner
        accepted_types: dict[str, set] = defaultdict(set)
        for msg, a in p.accepted.items():
            r = rows.get(msg)  # a missing row is still owed; a quarantined one is not
            if r is None or r["status"] != "QUARANTINED":
                accepted_types[a["order"]].add(a["type"])
        ents = {e["entity_id"]: e for e in self.pg.all(
            "SELECT entity_id, state, version FROM hookd_entities WHERE entity_type = 'order'")}
        applied = defaultdict(Counter)
        for r in rows.values():
            if r["outcome"] == "applied":
                applied[r["entity_id"]][r["event_type"]] += 1
        emits = Counter(e["aggregate_id"] for e in self.pg.all(
            "SELECT aggregate_id FROM outbox_events WHERE aggregate_type = 'order' AND event_type = 'order.shipped'"))
        dup = 0
        problems = []
        for order in sorted(set(accepted_types) | set(ents)):
            state = "draft"
            for typ, frm, to in CHAIN:  # the serial replay, in lifecycle order
                if typ in accepted_types.get(order, ()) and state == frm:
                    state = to
            want_version = CHAIN_TYPES.index(next(t for t, _, to in CHAIN if to == state)) + 1 \
                if state != "draft" else 0
            e = ents.get(order)
            got_state, got_version = (e["state"], e["version"]) if e else ("(none)", 0)
            n_applied = sum(applied[order].values())
            twice = sum(c - 1 for c in applied[order].values() if c > 1)
            want_emits = 1 if state == "shipped" else 0
            extra = max(0, got_version - want_version) + twice + max(0, emits[order] - want_emits)
            dup += extra
            if (got_state != state or got_version != want_version or got_version != n_applied or twice
                    or emits[order] != want_emits):
                problems.append(f"{order}: state {got_state} (replay: {state}), version {got_version} "
                                f"(replay: {want_version}, applied rows: {n_applied}), applied {dict(applied[order])}, "
                                f"order.shipped emitted {emits[order]}x (want {want_emits})")
        res.check("entities equal a serial replay (state, version, one emit per shipment)", not problems,
                  "\n".join(problems[:15]) + self.explain_orders([x.split(":")[0] for x in problems[:3]], rows))
        return dup, {"entities": len(set(accepted_types) | set(ents))}

    @staticmethod
    def endpoints_for(event_type: str) -> set[str]:
        """The endpoints an outbox event of this type is delivered to."""
        return set(CIRCUIT_ENDPOINTS) if event_type.startswith("circuit.") else {"chaos-receiver"}

    def check_outbox(self) -> dict:
        res = self.result
        events = {e["id"]: e for e in self.pg.all(
            "SELECT e.id::text, e.aggregate_type, e.aggregate_id, e.event_type, e.payload::text AS payload,"
            " e.processed_at IS NOT NULL AS processed FROM outbox_events e")}
        deliveries = defaultdict(list)  # event id -> [(endpoint, status, delivery id)]
        for d in self.pg.all("SELECT d.event_id::text, w.name, d.status, d.id::text FROM outbox_deliveries d"
                             " JOIN webhook_endpoints w ON w.id = d.endpoint_id"):
            deliveries[d["event_id"]].append((d["name"], d["status"], d["id"]))
        dlq = {r["source_id"] for r in self.pg.all(
            "SELECT source_id::text FROM dead_letters WHERE source = 'delivery' AND replayed_at IS NULL")}
        reqs = self.receiver.snapshot() + self.circuit_receiver.snapshot()
        by_wid = defaultdict(list)
        by_delivery = defaultdict(list)  # (endpoint, webhook-id) -> requests
        for q in reqs:
            by_wid[q["wid"]].append(q)
            by_delivery[(q["endpoint"], q["wid"])].append(q)

        # the application's committed emits all exist (and the unknown ones are looked up)
        em = self.emitter
        missing = [n for n, eid in em.committed.items() if eid not in events]
        unknown_found = sum(1 for e in events.values() if e["aggregate_type"] == "chaos"
                            and json.loads(e["payload"])["n"] in em.unknown)
        res.check("committed hookd_emit events all in the outbox", not missing, f"missing n={missing[:10]}")

        not_done, bad_delivery, never_seen = [], [], []
        delivered = dead = 0
        for eid, e in events.items():
            if not e["processed"]:
                not_done.append(eid)
            mine = deliveries.get(eid, [])
            names = sorted(name for name, _, _ in mine)
            if names != sorted(self.endpoints_for(e["event_type"])):
                bad_delivery.append(f"{eid} ({e['event_type']}): deliveries to {names}")
                continue
            for name, status, did in mine:
                if status == "SUCCEEDED":
                    delivered += 1
                    if not any(200 <= q["status"] < 300 for q in by_delivery.get((name, eid), [])):
                        never_seen.append(f"{eid} to {name}")
                elif status == "DEAD":
                    dead += 1
                    if did not in dlq:
                        bad_delivery.append(f"{eid} to {name}: DEAD without a dead letter")
                else:
                    bad_delivery.append(f"{eid} to {name}: {status}")
        res.check("outbox events all processed", not not_done, ", ".join(not_done[:10]))
        res.check("each outbox event has one delivery per endpoint it was meant for, each SUCCEEDED or DEAD with a"
                  " dead letter", not bad_delivery, "\n".join(bad_delivery[:10]))
        res.check("every SUCCEEDED delivery was answered 2xx by its endpoint", not never_seen,
                  ", ".join(never_seen[:10]))

        mismatch, unknown_wid = [], []
        for wid, qs in by_wid.items():
            bodies = {q["body"] for q in qs}
            e = events.get(wid)
            if e is None:
                unknown_wid.append(wid)
                continue
            if len(bodies) != 1 or json.loads(next(iter(bodies))) != json.loads(e["payload"]):
                mismatch.append(wid)
        bad_sigs = sum(1 for q in reqs if not q["sig_ok"])
        res.check("one body per webhook-id, equal to the outbox payload", not mismatch, ", ".join(mismatch[:10]))
        res.check("receivers saw only known webhook-ids", not unknown_wid, ", ".join(unknown_wid[:10]))
        res.check("every delivery signature valid", bad_sigs == 0, f"{bad_sigs} of {len(reqs)} requests invalid")
        redelivered = sum(1 for qs in by_delivery.values() if sum(1 for q in qs if 200 <= q["status"] < 300) > 1)
        circuit_events = sum(1 for e in events.values() if e["event_type"].startswith("circuit."))
        return {"outbox events": len(events), "  of them to the circuit endpoints": circuit_events,
                "deliveries": sum(len(v) for v in deliveries.values()), "  delivered": delivered,
                "  dead-lettered": dead,
                "  emitted by the app (committed / unknown, found)": f"{len(em.committed)} / {len(em.unknown)}, "
                                                                     f"{unknown_found}",
                "  emitted by the machine (order.shipped)": sum(1 for e in events.values()
                                                                if e["aggregate_type"] == "order"),
                "receiver requests": len(reqs),
                "  deliveries answered 2xx more than once (at-least-once)": redelivered,
                "body_mismatch": len(mismatch)}

    def check_counters(self) -> None:
        res = self.result
        r, p = self.stable_counts()
        over = {k: (r.get(k, 0), p[k]) for k in COUNTERS if r.get(k, 0) > p[k]}
        res.check("counters never exceed Postgres (whole run)", not over,
                  ", ".join(f"{k} redis {a} > postgres {b}" for k, (a, b) in over.items()))
        for k in COUNTERS:
            res.counters.append((k, r.get(k, 0), p[k], p[k] - r.get(k, 0)))

    # -- evidence --

    def explain(self, msgs: list[str], rows: dict, limit: int = 3) -> str:
        """What happened to a few events: their row, attempts, the fault
        that preceded them, and the worker log lines naming them."""
        if not msgs:
            return ""
        out = [f"{len(msgs)}: " + ", ".join(msgs[:20])]
        for msg in msgs[:limit]:
            a = self.partner.accepted.get(msg, {})
            r = rows.get(msg)
            rid = (r or {}).get("id") or a.get("id")
            when = time.strftime("%H:%M:%S", time.localtime(a["at"])) if a.get("at") else "?"
            out.append(f"--- {msg}: answer id {a.get('id')}, accepted at {when}, row {dict(r) if r else None}")
            at = a.get("at") or 0
            before = [f for f in self.result.faults if f.wall_start <= at + 1]
            if before:
                f = before[-1]
                out.append(f"    preceding fault #{f.n} {f.kind} ({f.note}) {at - f.wall_start:+.1f}s before accept")
            if rid:
                for h in self.pg.all("SELECT attempted_at, outcome, error, worker_id FROM attempts"
                                     " WHERE source = 'inbox' AND source_id = %s ORDER BY id", rid):
                    out.append(f"    attempt {h['attempted_at']} {h['outcome']} {h['error']} {h['worker_id']}")
                out += ["    log: " + line for line in self.log_lines(rid)[:10]]
        return "\n".join(out)

    def explain_orders(self, orders: list[str], rows: dict) -> str:
        msgs = [m for m, r in rows.items() if r["entity_id"] in orders]
        return ("\n" + self.explain(msgs, rows, limit=6)) if msgs else ""

    def log_lines(self, needle: str) -> list[str]:
        lines = []
        for i, w in enumerate(self.workers):
            try:
                lines += [f"w{i} {line}" for line in w.log_path.read_text(errors="replace").splitlines()
                          if needle in line]
            except OSError:
                pass
        return lines

    # -- teardown and the table --

    def teardown(self) -> None:
        for th in (self.load, self.emitter):
            if th is not None:
                th.stop_ev.set()
        if self.load is not None:
            self.load.join(90)
        if self.emitter is not None:
            self.emitter.join(10)
        for w in self.workers:
            try:
                if w.proc and w.proc.poll() is None:
                    w.stop()
            except Exception as e:
                self.result.check("workers stop on SIGTERM at the end", False, str(e))
        if self.pg:
            self.pg.close()
        for rcv in (self.receiver, self.circuit_receiver):
            if rcv:
                rcv.down()
        if self.services:
            if self.keep_logs or not self.result.passed:  # keep the evidence
                keep = Path(self.keep_logs) if self.keep_logs else Path(tempfile.mkdtemp(prefix="hookd-chaos-logs-"))
                keep.mkdir(parents=True, exist_ok=True)
                logs = list(self.services.dir.glob("worker-*.log")) + [self.services.dir / "redis.log"]
                logs += self.ha.logs() if self.ha else []
                logs += self.rha.logs() if self.rha else []
                logs += self.rcl.logs() if self.rcl else []
                for f in logs:
                    if f.exists():
                        name = {"server.log": f"pg-{f.parent.name}.log", "log": f"redis-{f.parent.name}.log"}
                        shutil.copy(f, keep / name.get(f.name, f.name))
                log(f"worker logs kept in {keep}")
            self.services.stop()
        if self.ha:
            self.ha.stop()
        if self.rha:
            self.rha.stop()
        if self.rcl:
            self.rcl.stop()

    def report(self) -> None:
        res = self.result
        print()
        print(f"{'#':>3}  {'fault':<18} {'at (s)':>7} {'took (s)':>9} {'recovery in':>12} {'recovery out':>13}  note")
        for f in res.faults:
            print(f"{f.n:>3}  {f.kind:<18} {f.at:>7.1f} {f.took:>9.2f} {secs(f.recovery):>12} "
                  f"{secs(f.recovery_out):>13}  {f.note}")
        for label, vals in (("inbound", [f.recovery for f in res.faults]),
                            ("outbound", [f.recovery_out for f in res.faults])):
            vals = sorted(v for v in vals if v is not None)
            if vals:
                print(f"     {label} recovery: median {vals[len(vals) // 2]:.2f}s, max {vals[-1]:.2f}s")
        if res.faults:
            print("     (recovery = from the end of the injection - service back, worker restarted, config\n"
                  "      restored - until a fresh probe is processed: an inbound event PROCESSED, an outbox\n"
                  "      event delivered or dead-lettered)")
        print()
        for k, v in res.totals.items():
            print(f"{k:<58} {v}")
        if res.counters:
            print("\ncounters, whole run (informational: FLUSHALL and a Redis restart wipe the hash,"
                  " kill -9 drops unflushed deltas)")
            print(f"  {'counter':<16} {'redis':>8} {'postgres':>9} {'not counted':>12}")
            for k, a, b, d in res.counters:
                print(f"  {k:<16} {a:>8} {b:>9} {d:>12}")
        print()
        for name, ok, detail in res.checks:
            print(f"{'PASS' if ok else 'FAIL'}  {name}" + (f"  [{detail}]" if detail and ok else ""))
            if detail and not ok:
                print("      " + detail.replace("\n", "\n      "))
        for w in res.warnings:
            print(f"WARN  {w}")
        if res.error:
            print(f"FAIL  the run itself: {res.error}")
        print(f"\nchaos: {'PASS' if res.passed else 'FAIL'} — {len(res.faults)} faults, lost {res.lost}, "
              f"duplicated effects {res.duplicated}, {self.elapsed():.0f}s", flush=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--faults", type=int, default=24, help="faults to inject (every kind once first)")
    ap.add_argument("--seed", type=int, default=1, help="seed of the fault schedule")
    ap.add_argument("--short", action="store_true", help="short outages (Redis 4 s, receiver 5 s)")
    ap.add_argument("--keep-logs", metavar="DIR", help="copy the worker logs here (always kept on failure)")
    ap.add_argument("--redis", choices=sorted(REDIS_MODES), default="plain",
                    help="plain: one Redis (default); sentinel-tls: rediss+sentinel:// to a TLS master, replica and"
                         " three sentinels, with faults " + ",".join(SENTINEL_TLS_KINDS) + "; cluster: redis+cluster://"
                         " to three masters with a replica each, with faults " + ",".join(CLUSTER_KINDS))
    ap.add_argument("--kinds", metavar="K,K", help="only these fault kinds (default: all of the Redis mode's; plain: "
                                                    + ",".join(FAULT_KINDS) + ")")
    args = ap.parse_args(argv)
    kinds = args.kinds.split(",") if args.kinds else None
    unknown = sorted(set(kinds or []) - set(AVAILABLE[args.redis]))
    if unknown:
        ap.error(f"fault kind(s) not available with --redis {args.redis}: {', '.join(unknown)}")
    return 0 if Chaos(args.faults, args.seed, args.short, args.keep_logs, kinds, args.redis).run().passed else 1


if __name__ == "__main__":
    sys.exit(main())
