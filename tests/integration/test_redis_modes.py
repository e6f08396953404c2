"""hookd against Redis as the clouds run it: TLS (verified, and refused for
each failing check), client certificates, an ACL user with exactly the
commands docs/guides/deploy/redis.md lists, and Sentinel failover. Every test starts its own
Redis processes (tests/hookdtest/redis_servers.py) and stops them."""
from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from hookdtest.client import order_event, post_standard
from hookdtest.redis_servers import (RedisGroup, make_certs, master_of, sentinels_agree, wait_replicated)
from hookdtest.util import wait_for
from hookdtest.worker import run_hookd, write_config

# The ACL line of the Redis guide, read from it, with the key prefix and the
# password filled in: the test runs exactly what users are told to run.
GUIDE = Path(__file__).resolve().parents[2] / "docs" / "guides" / "deploy" / "redis.md"
ACL_GUIDE = next(l.strip() for l in GUIDE.read_text().splitlines() if l.strip().startswith("ACL SETUSER hookd "))
ACL_LINE = ACL_GUIDE.removeprefix("ACL SETUSER ").replace(">PASSWORD", ">{password}").replace("hookd:*", "{prefix}:*")


@pytest.fixture
def group(tmp_path):
    g = RedisGroup(tmp_path / "redis")
    try:
        yield g
    finally:
        g.stop()


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    return make_certs(tmp_path_factory.mktemp("certs"))


def config(env, url: str, hookd_extra: str = "") -> Path:
    path = write_config(env.tmp, env.db_url, url, env.prefix)
    path.write_text(path.read_text().replace("[hookd]\n", "[hookd]\n" + hookd_extra, 1))
    return path


def processed(env, ids) -> bool:
    n = env.db.value("SELECT count(*) FROM webhook_inbox WHERE status = 'PROCESSED' AND partner_event_id = ANY(%s)",
                     list(ids))
    return n == len(ids)


def flow(env, w, prefix: str, n: int = 5) -> None:
    ids = [f"{prefix}-{i}" for i in range(n)]
    for i, mid in enumerate(ids):
        status, _, _ = post_standard(w, "shop", mid, order_event("order.started", f"{prefix}-o{i}"))
        assert status == 200
    wait_for(lambda: processed(env, ids), timeout=20, what="events processed")


def tls_server(group, certs: Path, cert: str, auth_clients: bool = False):
    return group.server(cert, tls=dict(cert=str(certs / f"{cert}.pem"), key=str(certs / f"{cert}.key"),
                                       ca=str(certs / "ca.pem"), auth_clients=auth_clients))


# ---- TLS ------------------------------------------------------------------


def test_tls_verified_end_to_end(env, group, certs):
    r = tls_server(group, certs, "server")
    cfg = config(env, f"rediss://127.0.0.1:{r.port}/0", f"redis_ca_file = {certs / 'ca.pem'}\n")
    w = env.worker(config=cfg)
    assert "tls=1" in w.output()
    flow(env, w, "tls")
    st = run_hookd(["-c", str(cfg), "status", "--json"])
    assert st.returncode == 0, st.stderr
    # the CLI by name: SNI and the DNS name check
    cfg2 = config(env, f"rediss://localhost:{r.port}/0", f"redis_ca_file = {certs / 'ca.pem'}\n")
    st = run_hookd(["-c", str(cfg2), "status", "--json"])
    assert st.returncode == 0, st.stderr


@pytest.mark.parametrize("cert,check", [("untrusted", "unknown_ca"), ("expired", "expired"),
                                        ("wrong", "name_mismatch")])
def test_tls_refused_keeps_worker_alive(env, group, certs, cert, check):
    r = tls_server(group, certs, cert)
    cfg = config(env, f"rediss://127.0.0.1:{r.port}/0", f"redis_ca_file = {certs / 'ca.pem'}\n")
    w = env.worker(config=cfg, wait_ready=False)
    wait_for(lambda: "redis.tls_failed" in w.output(), what="the TLS failure logged")
    line = next(l for l in w.output().splitlines() if "redis.tls_failed" in l)
    assert "level=error" in line and f"check={check}" in line, line
    time.sleep(1.5)  # reconnecting with backoff, still alive, never ready
    assert w.alive() and w.get("/healthz")[0] == 200
    assert w.get("/readyz")[0] == 503
    st = run_hookd(["-c", str(cfg), "status"])
    assert st.returncode != 0 and f"check={check}" in st.stderr


def test_tls_client_certificate(env, group, certs):
    r = tls_server(group, certs, "server", auth_clients=True)
    url = f"rediss://127.0.0.1:{r.port}/0"
    ca = f"redis_ca_file = {certs / 'ca.pem'}\n"
    without = config(env, url, ca)
    w0 = env.worker(config=without, wait_ready=False)
    wait_for(lambda: "redis.tls_failed" in w0.output() or "redis.down" in w0.output(), what="refused without a cert")
    assert w0.get("/readyz")[0] == 503
    w0.stop()
    cfg = config(env, url, ca + f"redis_cert_file = {certs / 'client.pem'}\nredis_key_file = {certs / 'client.key'}\n")
    w = env.worker(config=cfg)
    flow(env, w, "mtls")


# ---- ACL users ------------------------------------------------------------


def acl_server(group, env, line: str):
    r = group.server("acl")
    r.client().execute_command("ACL", "SETUSER", *line.split())
    return r


def test_acl_user_with_the_listed_commands(env, group):
    r = acl_server(group, env, ACL_LINE.format(password="s3cret-pw", prefix=env.prefix))
    cfg = config(env, f"redis://hookd:s3cret-pw@127.0.0.1:{r.port}/0")
    w = env.worker(config=cfg)
    flow(env, w, "acl", n=10)
    wait_for(lambda: r.client().zcard(f"{env.prefix}:workers") >= 1, what="the heartbeat written")
    time.sleep(1)  # a few heartbeats, the reconciler
    assert "redis.noperm" not in w.output() and "level=error" not in w.output(), w.output()[-3000:]
    st = run_hookd(["-c", str(cfg), "status", "--json"])
    assert st.returncode == 0, st.stderr


def test_acl_wrong_password(env, group):
    r = acl_server(group, env, ACL_LINE.format(password="right-pw", prefix=env.prefix))
    cfg = config(env, f"redis://hookd:wrong-pw@127.0.0.1:{r.port}/0")
    w = env.worker(config=cfg, wait_ready=False)
    wait_for(lambda: "redis.auth_failed" in w.output(), what="the AUTH failure logged")
    line = next(l for l in w.output().splitlines() if "redis.auth_failed" in l)
    assert "level=error" in line and "user=hookd" in line and "WRONGPASS" in line and "wrong-pw" not in line
    assert w.alive()


def test_acl_user_without_evalsha(env, group):
    r = acl_server(group, env, ACL_LINE.format(password="pw-1234", prefix=env.prefix).replace(" +evalsha", ""))
    cfg = config(env, f"redis://hookd:pw-1234@127.0.0.1:{r.port}/0")
    w = env.worker(config=cfg)
    post_standard(w, "shop", "noperm-1", order_event("order.started", "np1"))
    wait_for(lambda: "redis.noperm" in w.output(), what="the NOPERM logged")
    line = next(l for l in w.output().splitlines() if "redis.noperm" in l)
    assert "level=error" in line and "command=EVALSHA" in line, line


# ---- bad URLs ---------------------------------------------------------------


@pytest.mark.parametrize("url,why", [
    ("redis//h:6379", "redis URL must start with redis://"),
    ("memcached://h:11211", "scheme 'memcached' is unknown"),
    ("redis+sentinel:///mymaster", "empty host list"),
    ("redis+sentinel://a:26379,,b:26379/mymaster", "empty host in its host list"),
    ("redis+sentinel://a:26379,b:26379", "needs the master's service name"),
    ("redis://h:99999", "port out of range"),
    ("redis+cluster://", "empty host list"),
    ("rediss+cluster://a:7000,,b:7001", "empty host in its host list"),
    ("redis+cluster://a:7000,b:7001/2", "Redis Cluster has database 0 only"),
    ("redis://a:7000,b:7001", "for Cluster: redis+cluster://"),
])
def test_config_check_refuses_bad_urls(env, url, why):
    cfg = config(env, url)
    line = next(i for i, l in enumerate(cfg.read_text().splitlines(), 1) if l.startswith("redis ="))
    r = run_hookd(["-c", str(cfg), "config", "check"])
    assert r.returncode != 0
    assert f"{cfg}:{line}:" in r.stderr and why in r.stderr, r.stderr


# ---- Sentinel ---------------------------------------------------------------


@pytest.mark.slow
def test_sentinel_failover(env, group):
    master = group.server("master")
    replica = group.server("replica", ["--replicaof", "127.0.0.1", str(master.port)])
    wait_replicated(replica)
    sentinels = [group.sentinel(f"sentinel{i}", master.port) for i in range(3)]
    wait_for(lambda: sentinels_agree(sentinels), timeout=30, what="the sentinels to find each other and the replica")
    hosts = ",".join(f"127.0.0.1:{s.port}" for s in sentinels)
    # the first sentinel listed is down: the next ones are asked
    cfg = config(env, f"redis+sentinel://127.0.0.1:1,{hosts}/mymaster/0")
    w = env.worker(config=cfg)
    flow(env, w, "before")
    st = run_hookd(["-c", str(cfg), "status", "--json"])
    assert st.returncode == 0, st.stderr

    accepted: list[str] = []
    stop = threading.Event()

    def post_loop():
        i = 0
        while not stop.is_set():
            mid = f"during-{i}"
            try:
                status, _, _ = post_standard(w, "shop", mid, order_event("order.started", f"d-o{i}"), )
                if status == 200:
                    accepted.append(mid)
            except Exception:
                pass
            i += 1
            time.sleep(0.02)

    t = threading.Thread(target=post_loop)
    t.start()
    try:
        time.sleep(1)
        master.kill9()
        killed = time.monotonic()
        wait_for(lambda: master_of(sentinels) == replica.port, timeout=30, what="the sentinels to promote the replica")
        switched = time.monotonic()
        wait_for(lambda: w.ready() and f"127.0.0.1:{replica.port}" in w.output(), timeout=switched - killed + 5 + 5,
                 what="hookd ready on the new master")
        ready = time.monotonic()
        assert ready - switched <= 5, f"ready {ready - switched:.1f}s after the switch"
        time.sleep(2)
    finally:
        stop.set()
        t.join()
    assert len(accepted) > 10
    wait_for(lambda: processed(env, accepted), timeout=30, what="every accepted event processed")
    # applied once: one inbox row per event, each processed once
    dup = env.db.value("SELECT count(*) FROM (SELECT partner_event_id FROM webhook_inbox "
                       "GROUP BY partner_event_id HAVING count(*) > 1) d")
    assert dup == 0
    assert "redis.switch_master" in w.output() or "redis.down" in w.output()
    st = run_hookd(["-c", str(cfg), "status", "--json"])
    assert st.returncode == 0, st.stderr
