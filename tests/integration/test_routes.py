"""Routes for inbound events ([route NAME]): a partner's verified,
deduplicated events handed to the outbox in the inbox's evaluation
transaction, and from there to HTTP endpoints like any emitted event.

Real Postgres, Redis, hookd workers and HTTP receivers. Covered: a
Stripe-signed event (and its duplicate) reaching an endpoint once through a
route; a route's payload filter; a partner with routes and no machine, whose
events end `routed` and never reach the DLQ, beside a type no route takes,
which still does, and a type the partner's own machine lacks; a route's
tenant, and one naming no tenant; a partner with a machine and a route, whose events both
apply and route, a deferred one routed once; a worker killed with kill -9
between storing and delivering; bad route configs refused with file:line."""
from __future__ import annotations

import json
import time

from hookdtest.client import http, post_standard
from hookdtest.partners import STRIPE_SECRET
from hookdtest.signing import sign_stripe
from hookdtest.util import wait_for
from hookdtest.worker import run_hookd
from test_outbound import HANG, add_endpoint, outbound_config
from test_outbound import receivers  # noqa: F401  (the fixture)

STRIPE = f"""
[partner stripe]
scheme = stripe
secret = {STRIPE_SECRET}
"""


def post_stripe(w, event_id: str, event_type: str, obj: dict | None = None) -> int:
    body = json.dumps({"id": event_id, "type": event_type, "data": {"object": obj or {}}}).encode()
    headers = {"Content-Type": "application/json", "Stripe-Signature": sign_stripe(STRIPE_SECRET, int(time.time()), body)}
    status, _, _ = http("POST", f"{w.url}/v1/inbox/stripe", body, headers)
    return status


def rows(env) -> dict:
    """partner event id -> its inbox row (status, outcome, routed, attempts)."""
    return {r["partner_event_id"]: r for r in env.db.all(
        "SELECT partner_event_id, status, outcome, routed_at IS NOT NULL AS routed, attempts FROM webhook_inbox")}


def wait_processed(env, n: int, timeout: float = 30) -> dict:
    return wait_for(lambda: (r := rows(env)) and sum(x["status"] == "PROCESSED" for x in r.values()) >= n and r,
                    timeout, what=f"{n} processed inbox events")


def routed_total(w) -> int:
    for line in w.metrics().splitlines():
        if line.startswith("hookd_routed_total "):
            return int(float(line.split()[1]))
    raise AssertionError("no hookd_routed_total in /metrics")


def test_stripe_event_reaches_an_endpoint_once_through_a_route(env, receivers):
    r = receivers()
    cfg = outbound_config(env, extra=STRIPE + "\n[route billing]\npartner = stripe\nevents = invoice.*\n"
                          "emit_type = billing.invoice\n")
    add_endpoint(cfg, r.url(), "billing", "billing.*")
    w = env.worker(config=cfg)
    obj = {"amount_due": 4200, "customer": "cus_1"}
    assert post_stripe(w, "evt_inv_1", "invoice.paid", obj) == 200
    assert post_stripe(w, "evt_inv_1", "invoice.paid", obj) == 200  # Stripe's retry: a duplicate, stored once
    req = r.wait(1)[0]
    assert req.json == {"id": "evt_inv_1", "type": "invoice.paid", "data": {"object": obj}}
    assert req.headers["webhook-id"] and req.headers["webhook-signature"].startswith("v1,")
    row = wait_processed(env, 1)["evt_inv_1"]
    assert (row["status"], row["outcome"], row["routed"], row["attempts"]) == ("PROCESSED", "routed", True, 0)
    ev = env.db.one("SELECT aggregate_type, aggregate_id, event_type, tenant_id FROM outbox_events")
    assert ev == {"aggregate_type": "stripe", "aggregate_id": "evt_inv_1", "event_type": "billing.invoice",
                  "tenant_id": None}
    wait_for(lambda: env.db.value("SELECT count(*) FROM outbox_deliveries WHERE status = 'SUCCEEDED'") == 1, 20,
             what="the delivery recorded")
    wait_for(lambda: routed_total(w) == 1, 10, what="hookd_routed_total = 1")
    status = wait_for(lambda: (s := json.loads(run_hookd(["-c", str(cfg), "status", "--json"]).stdout))
                      and s["counters"].get("routed") == 1 and s, 10, what="routed in hookd status")
    assert status["counters"]["routed"] == 1
    # nothing more arrives: the outbox holds one event, delivered once
    assert env.db.value("SELECT count(*) FROM outbox_events") == 1
    assert len(r.got()) == 1
    assert env.db.value("SELECT count(*) FROM dead_letters") == 0


def test_a_routes_payload_filter_drops_what_it_should(env, receivers):
    r = receivers()
    cfg = outbound_config(env, extra=STRIPE + "\n[route big]\npartner = stripe\nevents = charge.*\n"
                          'filter = {"data.object.amount": {"$gt": 1000}}\n')
    add_endpoint(cfg, r.url(), "charges", "charge.*")
    w = env.worker(config=cfg)
    for i, amount in enumerate([500, 5000, 1000, 20000]):
        assert post_stripe(w, f"evt_ch_{i}", "charge.succeeded", {"amount": amount}) == 200
    got = wait_processed(env, 4)
    # every event is done with outcome routed, the filtered ones with no outbox event
    assert {k: (v["outcome"], v["routed"]) for k, v in got.items()} == {
        f"evt_ch_{i}": ("routed", True) for i in range(4)}
    assert sorted(env.db.value("SELECT array_agg(aggregate_id) FROM outbox_events")) == ["evt_ch_1", "evt_ch_3"]
    reqs = r.wait(2)
    assert sorted(q.json["data"]["object"]["amount"] for q in reqs) == [5000, 20000]
    assert env.db.value("SELECT count(*) FROM dead_letters") == 0


def test_route_only_events_end_routed_never_dead_lettered(env, receivers):
    """Without routes, an event no machine names is retried into the DLQ;
    with a route that takes it, it ends routed at its first evaluation."""
    r = receivers()
    cfg = outbound_config(env, extra=STRIPE + "\n[route subs]\npartner = stripe\nevents = customer.subscription.*\n")
    add_endpoint(cfg, r.url(), "subs")
    w = env.worker(config=cfg)
    assert post_stripe(w, "evt_sub", "customer.subscription.created", {"id": "sub_1"}) == 200
    assert post_stripe(w, "evt_other", "payout.paid", {"id": "po_1"}) == 200
    wait_for(lambda: env.db.value("SELECT status FROM webhook_inbox WHERE partner_event_id = 'evt_other'")
             == "QUARANTINED", 30, what="the unrouted event dead-lettered")
    got = rows(env)
    assert (got["evt_sub"]["status"], got["evt_sub"]["outcome"], got["evt_sub"]["attempts"]) == (
        "PROCESSED", "routed", 0)
    assert env.db.value("SELECT count(*) FROM attempts a JOIN webhook_inbox w ON a.source_id = w.id"
                        " WHERE w.partner_event_id = 'evt_sub'") == 1
    dead = env.db.all("SELECT w.partner_event_id FROM dead_letters d JOIN webhook_inbox w ON d.source_id = w.id")
    assert dead == [{"partner_event_id": "evt_other"}]
    assert [q.json["id"] for q in r.wait(1)] == ["evt_sub"]
    assert not got["evt_other"]["routed"]


def test_route_only_when_the_partners_machine_lacks_the_type(env, receivers):
    """A partner whose entity_type names a machine: a type that machine has
    no transition for is route-only all the same."""
    r = receivers()
    cfg = outbound_config(env, extra=STRIPE + "entity_type = order\n\n[route refunds]\npartner = stripe\n"
                          "events = refund.*\n")
    add_endpoint(cfg, r.url(), "refunds")
    w = env.worker(config=cfg)
    assert post_stripe(w, "evt_rf", "refund.created", {"id": "re_1"}) == 200
    got = wait_processed(env, 1)["evt_rf"]
    assert (got["outcome"], got["routed"], got["attempts"]) == ("routed", True, 0)
    assert [q.json["id"] for q in r.wait(1)] == ["evt_rf"]
    assert env.db.value("SELECT count(*) FROM dead_letters") == 0


def test_machine_and_route_both_apply_and_route(env, receivers):
    """The template's partner `shop` with its machine `order`, and a route
    of its order events: each event applies and is routed once, a deferred
    one at its first evaluation and never again."""
    r = receivers()
    cfg = outbound_config(env, extra="\n[route orders]\npartner = shop\nevents = order.*\nemit_type = gw.order\n")
    add_endpoint(cfg, r.url(), "gw", "gw.order")
    w = env.worker(config=cfg)
    body = lambda t: json.dumps({"type": t, "data": {"order_id": "o-77"}}).encode()  # noqa: E731
    # paid before started: deferred until started applies
    assert post_standard(w, "shop", "msg-paid", body("order.paid"))[0] == 200
    wait_for(lambda: env.db.value("SELECT deferrals FROM webhook_inbox WHERE partner_event_id = 'msg-paid'") >= 2,
             20, what="order.paid deferred twice")
    assert env.db.value("SELECT count(*) FROM outbox_events") == 1  # routed at its first evaluation, once
    assert post_standard(w, "shop", "msg-started", body("order.started"))[0] == 200
    got = wait_processed(env, 2)
    assert {k: (v["outcome"], v["routed"]) for k, v in got.items()} == {
        "msg-paid": ("applied", True), "msg-started": ("applied", True)}
    assert env.db.value("SELECT state FROM hookd_entities WHERE entity_type = 'order' AND entity_id = 'o-77'") == "paid"
    evs = env.db.all("SELECT aggregate_type, aggregate_id, event_type, payload->>'type' AS t FROM outbox_events"
                     " ORDER BY emit_seq")
    assert evs == [{"aggregate_type": "shop", "aggregate_id": "o-77", "event_type": "gw.order", "t": "order.paid"},
                   {"aggregate_type": "shop", "aggregate_id": "o-77", "event_type": "gw.order", "t": "order.started"}]
    assert sorted(q.json["type"] for q in r.wait(2)) == ["order.paid", "order.started"]


def test_kill9_between_storing_and_delivering_loses_nothing(env, receivers):
    n = 30
    hold = {"on": True}
    r = receivers(lambda req: HANG if hold["on"] else (200, {}, b"ok"))
    cfg = outbound_config(env, extra=STRIPE + "\n[route all]\npartner = stripe\n", lease="2s")
    add_endpoint(cfg, r.url(), "all")
    a = env.worker(config=cfg)
    for i in range(n):
        assert post_stripe(a, f"evt_k{i:02d}", "invoice.created", {"n": i}) == 200
    r.wait(1)  # stored, routed, and on the wire
    a.kill9()
    hold["on"] = False
    r.release.set()
    b = env.worker(config=cfg)
    wait_for(lambda: {q.json["id"] for q in r.got() if q.body} >= {f"evt_k{i:02d}" for i in range(n)}, 60,
             what="every event delivered after the kill")
    got = wait_processed(env, n)
    assert all(v["outcome"] == "routed" and v["routed"] for v in got.values())
    # one outbox event per inbound event: nothing routed twice; a repeat
    # delivery (cut off by the kill) carries the same webhook-id
    assert env.db.value("SELECT count(*) FROM outbox_events") == n
    ids = {}
    for q in r.got():
        if q.body:
            ids.setdefault(q.json["id"], set()).add(q.event_id)
    assert all(len(v) == 1 for v in ids.values()), ids
    wait_for(lambda: env.db.value("SELECT count(*) FROM outbox_deliveries WHERE status = 'SUCCEEDED'") == n, 30,
             what="every delivery recorded")
    assert env.db.value("SELECT count(*) FROM dead_letters") == 0
    assert b.alive()


def test_a_routes_tenant_scopes_its_events(env, receivers):
    """A route's tenant: its events reach that tenant's endpoints only; a
    tenant uid that names no tenant fails the event with that reason, and it
    is dead-lettered without anything delivered."""
    mine, other = receivers(), receivers()
    cfg = outbound_config(env, extra=STRIPE + "\n[route acme]\npartner = stripe\nevents = acme.*\ntenant = acme\n"
                          "\n[route ghost]\npartner = stripe\nevents = ghost.*\ntenant = ghost\n")
    assert run_hookd(["-c", str(cfg), "tenant", "add", "acme"]).returncode == 0
    add_endpoint(cfg, mine.url(), "acme-hook", "*", "--tenant", "acme")
    add_endpoint(cfg, other.url(), "global-hook", "*")
    w = env.worker(config=cfg)
    assert post_stripe(w, "evt_acme", "acme.created", {"n": 1}) == 200
    assert post_stripe(w, "evt_ghost", "ghost.created", {"n": 2}) == 200
    assert [q.json["id"] for q in mine.wait(1)] == ["evt_acme"]
    wait_for(lambda: env.db.value("SELECT status FROM webhook_inbox WHERE partner_event_id = 'evt_ghost'")
             == "QUARANTINED", 30, what="the event of the route without a tenant dead-lettered")
    err = env.db.value("SELECT last_error FROM webhook_inbox WHERE partner_event_id = 'evt_ghost'")
    assert "route ghost: no tenant ghost" in err
    assert env.db.value("SELECT count(*) FROM outbox_events WHERE tenant_id IS NOT NULL") == 1
    assert env.db.value("SELECT count(*) FROM outbox_events") == 1
    assert rows(env)["evt_acme"]["outcome"] == "routed"
    assert other.got() == [] and len(mine.got()) == 1


def check(env, extra: str):
    cfg = env.config(extra=extra)
    return cfg, run_hookd(["config", "check", str(cfg)])


def test_bad_route_config_is_refused_with_file_and_line(env):
    base = env.config().read_text().count("\n")  # the route's header is the line after the template
    cases = [
        ("[route r]\nevents = a.*\n", 1, "[route r] needs 'partner' (the name of a [partner NAME] section)"),
        ("[route r]\npartner = nope\n", 1, "[route r] names partner 'nope', but there is no [partner nope]"),
        ('[route r]\npartner = shop\nfilter = {"a": {"$like": 1}}\n', 3, "bad filter: "),
        ("[route r]\npartner = shop\nfilter = {oops\n", 3, "bad filter: not JSON"),
        ("[route r]\npartner = shop\ntenant = a b\n", 3, "bad tenant 'a b'"),
        ("[route r]\npartner = shop\nemit_type = a/b\n", 3, "bad emit_type 'a/b'"),
        ("[route r]\npartner = shop\nevents = order.*, a/b\n", 3, "bad event type glob 'a/b'"),
        ("[route r]\npartner = shop\nlimit = 3\n", 3, "unknown key 'limit' in [route r]"),
    ]
    for text, line, want in cases:
        cfg, res = check(env, "\n" + text)
        assert res.returncode != 0, text
        assert f"{cfg}:{base + 1 + line}: " in res.stderr and want in res.stderr, (text, res.stderr)
    # a worker refuses to start on it too
    cfg, _ = check(env, "\n[route r]\npartner = nope\n")
    res = run_hookd(["-c", str(cfg), "run"], timeout=30)
    assert res.returncode != 0 and "names partner 'nope'" in res.stderr + res.stdout
