"""Per-partner inbound policy: `allow_ips` (IPv4 and IPv6 ranges) without and
with `[hookd] trusted_proxies` (X-Forwarded-For believed only from a listed
proxy, its right-most untrusted entry taken, spoofed entries to the left of
it ignored), and `event_types` globs (other types refused with 422
event_type_not_allowed). Every refusal stores nothing. The test workers
listen on 127.0.0.1, so the direct peer is always 127.0.0.1."""
from __future__ import annotations

import json
import signal
import time

from hookdtest.client import http
from hookdtest.signing import SW_SECRET, sign_standard
from hookdtest.util import wait_for
from hookdtest.worker import run_hookd

PARTNERS = f"""
[partner fenced]
scheme = standard-webhooks
secret = {SW_SECRET}
entity_id = json:data.order_id
allow_ips = 192.0.2.0/24, 2001:db8::/32

[partner local]
scheme = standard-webhooks
secret = {SW_SECRET}
entity_id = json:data.order_id
allow_ips = 127.0.0.0/8

[partner typed]
scheme = standard-webhooks
secret = {SW_SECRET}
entity_id = json:data.order_id
event_types = order.started, order.pa*
"""


def worker(env, **hookd_keys):
    cfg = env.config(extra=PARTNERS)
    lines = "".join(f"{k} = {v}\n" for k, v in dict(roles="ingest", **hookd_keys).items())
    cfg.write_text(cfg.read_text().replace("[hookd]\n", "[hookd]\n" + lines, 1))
    return env.worker(config=cfg)


def post(w, partner: str, msg_id: str, event_type: str = "order.started", xff: str | None = None,
         base: str | None = None):
    body = json.dumps({"type": event_type, "data": {"order_id": "o-" + msg_id}}).encode()
    ts = int(time.time())
    h = {"Content-Type": "application/json", "webhook-id": msg_id, "webhook-timestamp": str(ts),
         "webhook-signature": sign_standard(SW_SECRET, msg_id, ts, body)}
    if xff is not None:
        h["X-Forwarded-For"] = xff
    status, _, raw = http("POST", f"{base or w.url}/v1/inbox/{partner}", body, h)
    return status, json.loads(raw) if raw else None


def stored(env, partner: str) -> list[str]:
    return [r["partner_event_id"] for r in
            env.db.all("SELECT partner_event_id FROM webhook_inbox WHERE partner_name = %s ORDER BY 1", partner)]


def refused(resp, status: int, code: str, *words: str):
    got, doc = resp
    assert got == status and doc["error"] == code, resp
    for w in words:
        assert w in doc["message"], doc


def test_allow_ips_without_trusted_proxies_uses_the_peer(env):
    w = worker(env)
    # 127.0.0.1 is not in 192.0.2.0/24: refused, and a forged X-Forwarded-For changes nothing
    refused(post(w, "fenced", "f1"), 403, "address_not_allowed", "127.0.0.1")
    refused(post(w, "fenced", "f2", xff="192.0.2.7"), 403, "address_not_allowed", "127.0.0.1")
    # a partner whose ranges hold the peer, and one without allow_ips
    assert post(w, "local", "l1")[0] == 200
    assert post(w, "local", "l2", xff="203.0.113.1")[0] == 200  # the header is ignored either way
    assert post(w, "shop", "s1")[0] == 200
    assert stored(env, "fenced") == [] and stored(env, "local") == ["l1", "l2"]
    _, _, raw = w.admin_get("/metrics")
    assert 'hookd_rejected_total{reason="address_not_allowed"} 2' in raw.decode()


def test_allow_ips_behind_a_trusted_proxy(env):
    w = worker(env, trusted_proxies="127.0.0.1, 10.0.0.0/8")
    # the client the proxy saw
    assert post(w, "fenced", "a1", xff="192.0.2.7")[0] == 200
    assert post(w, "fenced", "a2", xff="2001:db8:1::5")[0] == 200
    # a chain of trusted proxies: the right-most untrusted entry is the client
    assert post(w, "fenced", "a3", xff="192.0.2.9, 10.1.1.1, 10.2.2.2")[0] == 200
    # whatever the client wrote to the left of what our proxy appended does not count
    assert post(w, "fenced", "a4", xff="203.0.113.66, 192.0.2.8")[0] == 200
    refused(post(w, "fenced", "r1", xff="192.0.2.8, 203.0.113.66"), 403, "address_not_allowed", "203.0.113.66")
    refused(post(w, "fenced", "r2", xff="2001:db9::1"), 403, "address_not_allowed", "2001:db9::1")
    # no header: the proxy itself is the client; garbage where the client should be fails closed
    refused(post(w, "fenced", "r3"), 403, "address_not_allowed", "127.0.0.1")
    refused(post(w, "fenced", "r4", xff="unknown"), 403, "address_not_allowed", "X-Forwarded-For")
    # a partner whose ranges hold only the proxy refuses the client behind it
    refused(post(w, "local", "r5", xff="192.0.2.7"), 403, "address_not_allowed", "192.0.2.7")
    assert stored(env, "fenced") == ["a1", "a2", "a3", "a4"] and stored(env, "local") == []


def test_allow_ips_with_an_ipv6_peer(env):
    """The peer itself on IPv6 (listen on ::1): its address, not a mapped
    IPv4 one, is what allow_ips sees."""
    extra = PARTNERS + f"""
[partner v6]
scheme = standard-webhooks
secret = {SW_SECRET}
entity_id = json:data.order_id
allow_ips = ::1
"""
    cfg = env.config(extra=extra)
    text = cfg.read_text().replace("[hookd]\n", "[hookd]\nroles = ingest\n", 1)
    port = next(l for l in text.splitlines() if l.startswith("listen")).rsplit(":", 1)[1]
    cfg.write_text(text.replace(f"listen = 127.0.0.1:{port}", f"listen = ::1:{port}"))
    w = env.worker(config=cfg, wait_ready=False)
    base = f"http://[::1]:{port}"
    wait_for(lambda: w.alive() and http("GET", base + "/readyz")[0] == 200, 30, what="worker on ::1")
    assert post(w, "v6", "v1", base=base)[0] == 200
    refused(post(w, "fenced", "v2", base=base), 403, "address_not_allowed", "::1")
    refused(post(w, "local", "v3", base=base), 403, "address_not_allowed", "::1")  # 127/8 is not ::1
    assert stored(env, "v6") == ["v1"] and stored(env, "fenced") == [] and stored(env, "local") == []


def test_policy_changes_apply_on_reload(env):
    """allow_ips and trusted_proxies are read per request from the config
    snapshot: a SIGHUP that widens them applies to the next request."""
    w = worker(env)
    refused(post(w, "fenced", "h1", xff="192.0.2.7"), 403, "address_not_allowed")
    text = w.config.read_text()
    w.config.write_text(text.replace("[hookd]\n", "[hookd]\ntrusted_proxies = 127.0.0.1\n", 1))
    w.signal(signal.SIGHUP)
    wait_for(lambda: "config.reloaded" in w.output(), what="config.reloaded")
    assert post(w, "fenced", "h2", xff="192.0.2.7")[0] == 200
    assert stored(env, "fenced") == ["h2"]


def test_event_types_globs(env):
    w = worker(env)
    assert post(w, "typed", "t1", "order.started")[0] == 200
    assert post(w, "typed", "t2", "order.paid")[0] == 200
    refused(post(w, "typed", "t3", "order.cancelled"), 422, "event_type_not_allowed", "order.cancelled")
    refused(post(w, "typed", "t4", "order.startedX"), 422, "event_type_not_allowed")
    assert stored(env, "typed") == ["t1", "t2"]


def test_bad_ranges_are_refused_at_load(env):
    for bad, words in [("allow_ips = 10.0.0.1/8", "prefix"), ("allow_ips = example.com", "not an IPv4"),
                       ("allow_ips = ", "empty"), ("event_types = ", "empty")]:
        cfg = env.config(extra=f"\n[partner p]\nscheme = github\nsecret = {'g' * 20}\n{bad}\n")
        r = run_hookd(["config", "check", str(cfg)])
        assert r.returncode != 0 and words in r.stderr and f"{cfg}:" in r.stderr, (bad, r.stderr)
    cfg = env.config()
    cfg.write_text(cfg.read_text().replace("[hookd]\n", "[hookd]\ntrusted_proxies = 10.0.0.0/33\n", 1))
    r = run_hookd(["config", "check", str(cfg)])
    assert r.returncode != 0 and "trusted_proxies" in r.stderr, r.stderr
