"""Outbound connections are shared per origin (fan-out to tenants): many
endpoints on one receiver (a SaaS's customers behind one ingress) reuse the
same few keep-alive connections instead of opening one pool each, while each
endpoint keeps its own `max_inflight`. The receiver counts the TCP
connections it accepts and the requests in progress per path."""
from __future__ import annotations

import json
from collections import Counter
import threading
import time

from hookdtest.util import wait_for

from test_outbound import outbound_config, receivers  # noqa: F401  (fixture)

SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"


def count_connections(rx) -> dict:
    """Wraps the receiver's per-connection entry point (before any traffic)."""
    seen = {"connections": 0}
    lock = threading.Lock()
    inner = rx.server.finish_request

    def finish_request(request, client_address):
        with lock:
            seen["connections"] += 1
        return inner(request, client_address)

    rx.server.finish_request = finish_request
    return seen


def add_endpoints(env, rx, prefix: str, n: int, path: str = "/hook", max_inflight: int = 16) -> None:
    env.db.value("INSERT INTO webhook_endpoints (name, url, secret, max_inflight)"
                 " SELECT %s || g, %s, %s, %s FROM generate_series(1, %s) g RETURNING 1",
                 prefix, rx.url(path=path), SECRET, max_inflight, n)


def emit_many(env, n: int, tag: str) -> None:
    env.db.value("SELECT count(hookd_emit('order', %s || g, 'order.paid', jsonb_build_object('n', g)))"
                 " FROM generate_series(1, %s) g", tag, n)


def test_endpoints_on_one_origin_share_connections(env, receivers):
    """40 endpoints x 25 events = 1,000 deliveries to one receiver: every one
    arrives, over at most max_inflight (16) connections — with a pool per
    endpoint it took at least one per endpoint (40)."""
    rx = receivers()
    seen = count_connections(rx)
    cfg = outbound_config(env, hookd_lines=("allow_private_networks = true", "max_inflight = 16"))
    add_endpoints(env, rx, "tenant-ep-", 40)
    env.worker(cfg)
    emit_many(env, 25, "o")
    got = rx.wait(1000, timeout=90)
    per_event = Counter(r.headers["webhook-id"] for r in got)
    assert len(got) == 1000 and len(per_event) == 25 and set(per_event.values()) == {40}
    wait_for(lambda: env.db.value("SELECT count(*) FROM outbox_deliveries WHERE status = 'SUCCEEDED'") == 1000,
             timeout=30, what="1,000 deliveries SUCCEEDED")
    assert 1 <= seen["connections"] <= 16, seen
    assert {json.loads(r.body)["n"] for r in got} == set(range(1, 26))


def bounded_receiver(receivers):
    """A receiver that answers /slow after 150 ms and the rest after 10 ms,
    counting the requests in progress (all, and /slow's)."""
    state = {"active": 0, "max_active": 0, "all": 0, "max_all": 0}
    lock = threading.Lock()

    def respond(req):
        with lock:
            state["all"] += 1
            state["max_all"] = max(state["max_all"], state["all"])
            if req.path == "/slow":
                state["active"] += 1
                state["max_active"] = max(state["max_active"], state["active"])
        time.sleep(0.15 if req.path == "/slow" else 0.01)
        with lock:
            state["all"] -= 1
            if req.path == "/slow":
                state["active"] -= 1
        return 200, {}, b"ok"

    rx = receivers(respond)
    return rx, state, count_connections(rx)


def test_endpoint_inflight_bound_holds_on_a_shared_origin(env, receivers):
    """One endpoint with max_inflight = 2 and a slow answer, next to 20 fast
    endpoints on the same origin: its requests never overlap more than 2 at a
    time, however many idle connections its neighbours leave."""
    rx, state, seen = bounded_receiver(receivers)
    cfg = outbound_config(env, hookd_lines=("allow_private_networks = true", "max_inflight = 32"))
    add_endpoints(env, rx, "fast-", 20)
    add_endpoints(env, rx, "slow-", 1, path="/slow", max_inflight=2)
    env.worker(cfg)
    emit_many(env, 12, "a")
    got = rx.wait(12 * 21, timeout=60)
    assert len([r for r in got if r.path == "/slow"]) == 12
    assert state["max_active"] == 2, state  # never 3 or more; and 2 did go in parallel
    wait_for(lambda: env.db.value("SELECT count(*) FROM outbox_deliveries WHERE status = 'SUCCEEDED'") == 12 * 21,
             timeout=30, what="all deliveries SUCCEEDED")
    assert seen["connections"] <= 32, seen


def test_origin_bound_across_endpoints(env, receivers):
    """max_inflight_per_origin = 6: 21 endpoints on one receiver never have
    more than 6 requests in progress there together (nor more than 6
    connections), the slow one no more than its own 2, and everything is
    delivered."""
    rx, state, seen = bounded_receiver(receivers)
    cfg = outbound_config(env, hookd_lines=("allow_private_networks = true", "max_inflight = 32",
                                            "max_inflight_per_origin = 6"))
    add_endpoints(env, rx, "fast-", 20)
    add_endpoints(env, rx, "slow-", 1, path="/slow", max_inflight=2)
    env.worker(cfg)
    emit_many(env, 12, "a")
    got = rx.wait(12 * 21, timeout=60)
    assert len([r for r in got if r.path == "/slow"]) == 12
    wait_for(lambda: env.db.value("SELECT count(*) FROM outbox_deliveries WHERE status = 'SUCCEEDED'") == 12 * 21,
             timeout=30, what="all deliveries SUCCEEDED")
    assert state["max_all"] == 6 and state["max_active"] <= 2, state
    assert seen["connections"] <= 6, seen


def metrics_values(w, prefix: str) -> dict[str, float]:
    """Every sample of /metrics whose name (with its labels) starts with prefix."""
    text = w.admin_get("/metrics")[2].decode()
    out = {}
    for line in text.splitlines():
        if line.startswith(prefix):
            name, _, value = line.rpartition(" ")
            out[name] = float(value)
    return out


def test_outbound_metrics_move_with_deliveries(env, receivers):
    """/metrics exports the delivery role's HTTP client counters and where the
    fan-out put its deliveries: 0 before anything was sent; after two waves
    of 5 endpoints x 8 events on one receiver, the requests, the connections
    (as many as the receiver accepted) and the reuse all show, and every
    delivery the fan-out created is counted on exactly one path."""
    rx = receivers()
    seen = count_connections(rx)
    cfg = outbound_config(env, hookd_lines=("allow_private_networks = true",))
    add_endpoints(env, rx, "metrics-ep-", 5)
    w = env.worker(cfg)
    before = metrics_values(w, "hookd_outbound_")
    assert before["hookd_outbound_connections_opened_total"] == 0
    assert before["hookd_outbound_requests_total"] == 0
    assert before["hookd_outbound_requests_reused_total"] == 0
    assert before["hookd_outbound_connections_closed_total"] == 0
    assert before["hookd_outbound_connections_idle"] == 0
    for wave in (1, 2):  # the second wave finds the first one's connections idle
        emit_many(env, 8, f"m{wave}-")
        assert len(rx.wait(40 * wave, timeout=60)) == 40 * wave
        wait_for(lambda: env.db.value("SELECT count(*) FROM outbox_deliveries WHERE status = 'SUCCEEDED'")
                 == 40 * wave, timeout=30, what=f"{40 * wave} deliveries SUCCEEDED")
    m = metrics_values(w, "hookd_outbound_")
    opened = m["hookd_outbound_connections_opened_total"]
    assert opened == seen["connections"] and opened >= 1, (m, seen)
    # each request went out on a new connection or a kept-alive one (80, or
    # more if a kept-alive connection the receiver closed made one go again)
    assert m["hookd_outbound_requests_total"] >= 80
    assert m["hookd_outbound_requests_reused_total"] == m["hookd_outbound_requests_total"] - opened
    assert m["hookd_outbound_requests_reused_total"] >= 1
    assert m["hookd_outbound_connections_idle"] + m["hookd_outbound_connections_closed_total"] == opened
    assert m["hookd_outbound_origins"] >= 1
    assert m["hookd_outbound_requests_queued"] == 0
    paths = metrics_values(w, "hookd_fanout_deliveries_total{")
    assert set(paths) == {f'hookd_fanout_deliveries_total{{path="{p}"}}' for p in
                          ("pass_succeeded", "pass_failed", "handed_over", "scheduled")}, paths
    assert sum(paths.values()) == 80, paths
    assert metrics_values(w, "hookd_fanout_seconds_count")["hookd_fanout_seconds_count"] >= 1
