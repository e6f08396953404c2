"""Per-endpoint delivery policies enforced on the delivery path (issue 19):
custom static headers, `rateLimit` across two workers, and ordered delivery
per aggregate (a dead-lettered head holds its successors until it is
replayed or skipped). Endpoints are configured through the Svix-compatible
API (raw HTTP), events emitted with hookd_emit(…, p_tenant => …), and
received by a local receiver that records every request's headers and
arrival time."""
from __future__ import annotations

import json
import time

import pytest

from hookdtest.util import wait_for

from test_api import new_token, raw, receivers  # noqa: F401  (fixture)
from test_outbound import outbound_config


@pytest.fixture
def acme(env):
    """One worker with the API, a root token and the tenant `acme`."""
    cfg = outbound_config(env)
    worker = env.worker(cfg)
    token = new_token(cfg, "root")
    status, _ = raw(worker, "POST", "/api/v1/app/", token, {"name": "Acme", "uid": "acme"})
    assert status == 201
    return cfg, worker, token


def endpoint(worker, token, **body) -> dict:
    status, out = raw(worker, "POST", "/api/v1/app/acme/endpoint/", token, body)
    assert status == 201, out
    return out


def emit(env, n: int, aggregate: str = "1", start: int = 0) -> None:
    for i in range(start, start + n):
        env.db.value("SELECT hookd_emit('order', %s, 'order.paid', %s::jsonb, p_tenant => 'acme')", aggregate,
                     json.dumps({"n": i}))


def test_custom_headers_sent_and_reloaded(env, acme, receivers):
    cfg, w, token = acme
    rx = receivers()
    ep = endpoint(w, token, url=rx.url(), headers={"X-Tenant-Key": "k1", "X-Other": "o"})
    emit(env, 1)
    (first,) = rx.wait(1)
    assert first.headers["x-tenant-key"] == "k1" and first.headers["x-other"] == "o"
    assert first.headers["content-type"] == "application/json"
    assert first.headers["user-agent"].startswith("hookd/")
    assert first.headers["webhook-id"] and first.headers["webhook-signature"].startswith("v1,")
    # changed through the API: the next delivery carries the new set
    status, _ = raw(w, "PUT", f"/api/v1/app/acme/endpoint/{ep['id']}/headers/", token,
                    {"headers": {"X-Tenant-Key": "k2"}})
    assert status == 204
    emit(env, 1, start=1)
    second = rx.wait(2)[1]
    assert second.headers["x-tenant-key"] == "k2" and "x-other" not in second.headers
    # a retried delivery (the claim path, not the relay's first attempt) carries them too
    fails = {"left": 1}

    def respond(req):
        if fails["left"] > 0:
            fails["left"] -= 1
            return (500, {}, b"no")
        return (200, {}, b"ok")

    rx2 = receivers(respond)
    endpoint(w, token, url=rx2.url(), headers={"X-Retry": "yes"})
    emit(env, 1, start=2)
    got = rx2.wait(2, timeout=30)
    assert [r.headers.get("x-retry") for r in got[:2]] == ["yes", "yes"]
    assert got[0].headers["webhook-id"] == got[1].headers["webhook-id"]
    # hookd's own headers are never overridden by stored ones
    env.db.value("UPDATE webhook_endpoints SET headers = '{\"webhook-id\": \"forged\", \"User-Agent\": \"x\","
                 " \"X-Ok\": \"1\"}' WHERE url = %s RETURNING 1", rx.url())
    emit(env, 1, start=3)
    third = next(r for r in rx.wait(4) if json.loads(r.body)["n"] == 3)
    assert third.headers["webhook-id"] != "forged" and third.headers["user-agent"].startswith("hookd/")
    assert third.headers["x-ok"] == "1"


def test_rate_limit_across_two_workers(env, acme, receivers):
    cfg, w1, token = acme
    w2 = env.worker(outbound_config(env))
    rx = receivers()
    rate, n = 5, 30
    ep = endpoint(w1, token, url=rx.url(), rateLimit=rate)
    emit(env, n, aggregate="r")
    got = rx.wait(n, timeout=60)
    wait_for(lambda: env.db.value("SELECT count(*) FROM outbox_deliveries WHERE status = 'SUCCEEDED'") == n, 20,
             what="every delivery recorded")
    assert sorted(json.loads(r.body)["n"] for r in got) == list(range(n))  # every one arrived, once
    assert len(got) == n
    times = sorted(r.at for r in got)
    # at most rate per second after a burst of rate, in any one-second window
    # (+1: a window's edges; +2 for the receiver's own timing on a busy machine)
    worst = max(sum(1 for t in times if s <= t < s + 1.0) for s in times)
    assert worst <= 2 * rate + 2, worst
    # and the whole run took at least (n - rate) / rate seconds
    assert times[-1] - times[0] >= (n - rate) / rate - 0.5
    # over-limit deliveries were put back, not failed: one attempt each
    assert env.db.value("SELECT max(attempts) FROM outbox_deliveries") == 1
    assert env.db.value("SELECT count(*) FROM attempts WHERE outcome <> 'succeeded'") == 0
    assert ep["rateLimit"] == rate and w2.port != w1.port
