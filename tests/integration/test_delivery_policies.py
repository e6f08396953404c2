"""Per-endpoint delivery policies enforced on the delivery path:
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

from hookdtest.paths import ROOT
from hookdtest.queries import statement
from hookdtest.util import wait_for
from hookdtest.worker import run_hookd

from test_api import new_token, raw, receivers, svix  # noqa: F401  (fixture)
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


def run_cli(cfg, *args: str):
    return run_hookd(["-c", str(cfg), *args])


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


def test_tenant_messages_carry_their_msg_id(env, acme, receivers):
    """A tenant's message is sent with its API id (`msg_…`) as webhook-id, on
    the first attempt and on a retry, signed over that id: the svix SDK's
    Webhook class verifies it. Global events keep the event's UUID."""
    cfg, w, token = acme
    fails = {"left": 1}

    def respond(req):
        if fails["left"] > 0:
            fails["left"] -= 1
            return (500, {}, b"no")
        return (200, {}, b"ok")

    rx = receivers(respond)
    ep = endpoint(w, token, url=rx.url())
    status, msg = raw(w, "POST", "/api/v1/app/acme/msg/", token, {"eventType": "order.paid", "payload": {"n": 1}})
    assert status == 202 and msg["id"].startswith("msg_"), msg
    got = rx.wait(2, timeout=30)  # a failed first attempt, then the retry through the claim path
    assert [r.headers["webhook-id"] for r in got[:2]] == [msg["id"], msg["id"]]
    status, sec = raw(w, "GET", f"/api/v1/app/acme/endpoint/{ep['id']}/secret/", token)
    assert status == 200
    checks = svix(w, token, [{"verify": {"secret": sec["key"], "payload": r.body.decode(), "headers": {
        k: r.headers[k] for k in ("webhook-id", "webhook-timestamp", "webhook-signature")}}} for r in got[:2]])
    assert all("ok" in c for c in checks), checks
    # hookd_emit for a tenant: the same form of id
    emit(env, 1, start=2)
    third = rx.wait(3)[2]
    assert third.headers["webhook-id"].startswith("msg_") and third.headers["webhook-id"] != msg["id"]


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


def dead_letter_of(env, aggregate: str) -> str:
    return env.db.value("SELECT dl.id::text FROM dead_letters dl JOIN outbox_deliveries d ON d.id = dl.source_id"
                        " JOIN outbox_events e ON e.id = d.event_id WHERE e.aggregate_id = %s"
                        " AND dl.replayed_at IS NULL", aggregate)


def test_ordered_delivery_held_behind_a_dead_head(env, acme, receivers):
    """Per aggregate, one at a time in hookd_emit order; a dead-lettered head
    holds its successors until it is replayed (then it and the rest follow,
    in order) or skipped (`hookd dlq skip`); other aggregates go on."""
    cfg, w, token = acme
    heal = {"a": False}
    seen: list[tuple[int, bool]] = []  # (n, answered 2xx), in arrival order

    def respond(req):
        n = json.loads(req.body)["n"]
        ok = not ((n == 0 and not heal["a"]) or n == 20)
        seen.append((n, ok))
        return (200, {}, b"ok") if ok else (500, {}, b"down")

    rx = receivers(respond)
    endpoint(w, token, url=rx.url(), ordered=True)
    # one transaction: equal created_at, random ids - emit order is emit_seq
    env.db.value("SELECT count(*) FROM (SELECT hookd_emit('order', agg, 'order.paid', jsonb_build_object('n', n),"
                 " p_tenant => 'acme') FROM (VALUES ('a', 0), ('b', 10), ('c', 20), ('a', 1), ('b', 11), ('c', 21),"
                 " ('a', 2), ('b', 12), ('c', 22), ('a', 3)) v(agg, n)) x")

    def ok_of(lo, hi):
        return [n for n, ok in list(seen) if ok and lo <= n < hi]

    # b has no failure: all of it, in order
    wait_for(lambda: ok_of(10, 20) == [10, 11, 12], 30, what="aggregate b in order")
    # a's and c's heads are dead-lettered after their 4 attempts; nothing behind them was sent
    wait_for(lambda: env.db.value("SELECT count(*) FROM dead_letters WHERE replayed_at IS NULL") == 2, 30,
             what="two dead heads")
    assert {n for n, _ in seen if n < 10 or n >= 20} == {0, 20}
    assert env.db.value("SELECT count(*) FROM outbox_deliveries d JOIN outbox_events e ON e.id = d.event_id"
                        " WHERE e.aggregate_id IN ('a', 'c') AND d.status = 'PENDING' AND d.attempts = 0") == 5
    # replayed (the receiver healed): the head, then its successors, in order
    heal["a"] = True
    r = run_cli(cfg, "dlq", "replay", dead_letter_of(env, "a"))
    assert r.returncode == 0, r.stderr
    wait_for(lambda: ok_of(0, 10) == [0, 1, 2, 3], 30, what="aggregate a in order after the replay")
    # skipped by the operator: the head stays dead, its successors go on in order
    assert ok_of(20, 30) == []
    r = run_cli(cfg, "dlq", "skip", dead_letter_of(env, "c"))
    assert r.returncode == 0 and "1 skipped" in r.stdout, r.stderr
    wait_for(lambda: ok_of(20, 30) == [21, 22], 30, what="aggregate c's successors after the skip")
    assert env.db.value("SELECT count(*) FROM dead_letters WHERE skipped_at IS NOT NULL") == 1
    assert env.db.value("SELECT count(*) FROM outbox_deliveries WHERE status = 'DEAD'") == 1
    # a second skip of the same entry is refused
    assert run_cli(cfg, "dlq", "skip", env.db.value("SELECT id::text FROM dead_letters WHERE skipped_at IS NOT NULL")
                   ).returncode == 1
    # held deliveries burned no attempt: one each, bar the heads
    assert env.db.value("SELECT max(attempts) FROM outbox_deliveries d JOIN outbox_events e ON e.id = d.event_id"
                        " WHERE (e.payload->>'n')::int NOT IN (0, 20)") == 1


def test_ordered_next_releases_the_aggregates_next_open_delivery(env):
    """sql/queries/delivery_ordered_next.sql, which a finished ordered
    delivery (a success, `hookd dlq skip`) runs to schedule its successor at
    once: the aggregate's next open delivery to the same endpoint, in
    hookd_emit order, due now or at its own later time; nothing for an
    unordered endpoint, another aggregate or the last one."""
    db = env.db
    secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
    ordered = db.value("INSERT INTO webhook_endpoints (name, url, secret, ordered) VALUES ('ord',"
                       " 'http://127.0.0.1:9/', %s, true) RETURNING id::text", secret)
    plain = db.value("INSERT INTO webhook_endpoints (name, url, secret) VALUES ('plain',"
                     " 'http://127.0.0.1:9/', %s) RETURNING id::text", secret)
    # one transaction: equal created_at; the order is emit_seq
    events = [r["id"] for r in db.all(
        "SELECT hookd_emit('order', agg, 'order.paid', jsonb_build_object('n', n))::text AS id"
        " FROM (VALUES ('a', 0), ('b', 0), ('a', 1), ('a', 2)) v(agg, n)")]
    dl = {}
    for ev in events:
        for ep in (ordered, plain):
            dl[ev, ep] = db.value("INSERT INTO outbox_deliveries (id, event_id, endpoint_id, status, part_at)"
                                  " SELECT hookd_uuid7_at(part_at), id, %s, 'PENDING', part_at FROM outbox_events"
                                  " WHERE id = %s RETURNING id::text", ep, ev)
    a0, b0, a1, a2 = events
    with db.conn.cursor() as cur:  # no parameters: the statement's % signs are its own
        cur.execute("PREPARE next_q AS " + statement("delivery_ordered_next"))

    def nxt(*ids):
        return db.all("EXECUTE next_q(%s)", "{" + ",".join(ids) + "}")

    db.all("UPDATE outbox_deliveries SET status = 'SUCCEEDED' WHERE id = %s", dl[a0, ordered])
    got = nxt(dl[a0, ordered])
    assert [r["id"] for r in got] == [dl[a1, ordered]]
    assert abs(got[0]["due_ms"] - db.value("SELECT (extract(epoch FROM now()) * 1000)::bigint")) < 5000
    # a retrying successor keeps its own due time
    db.all("UPDATE outbox_deliveries SET status = 'RETRYING', next_attempt_at = now() + interval '1 hour'"
           " WHERE id = %s", dl[a1, ordered])
    due = db.value("SELECT (extract(epoch FROM next_attempt_at) * 1000)::bigint FROM outbox_deliveries WHERE id = %s",
                   dl[a1, ordered])
    assert [(r["id"], r["due_ms"]) for r in nxt(dl[a0, ordered])] == [(dl[a1, ordered], due)]
    # a finished successor is passed over for the next open one
    db.all("UPDATE outbox_deliveries SET status = 'SUCCEEDED' WHERE id = %s", dl[a1, ordered])
    assert [r["id"] for r in nxt(dl[a0, ordered])] == [dl[a2, ordered]]
    # nothing: an unordered endpoint, the last of its aggregate, an aggregate of one
    assert nxt(dl[a0, plain], dl[a2, ordered], dl[b0, ordered]) == []
