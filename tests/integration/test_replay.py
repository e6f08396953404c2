"""Replays of captured inbound requests, for every signature scheme. An
attacker who saw one correctly signed request sends it again:
unchanged, with a new event id, with another event type, with a new
timestamp. Whatever the scheme, the event is stored and applied once, and the
entity keeps the state the original gave it.

How each scheme is protected (docs/guides/guarantees.md, Inbound):
standard-webhooks signs id, timestamp and body, stripe timestamp and body
(its id and type are in the body), so a changed id or timestamp
breaks the signature (401) and an unchanged request is a duplicate of its id.
github and hmac-sha256 sign the body only, with id and type from unsigned
headers (github by default; `header:` sources for hmac-sha256): ingest also
deduplicates on the SHA-256 of the body (webhook_inbox.content_digest), so
any header they carry, the same body is a duplicate."""
from __future__ import annotations

import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from hookdtest.client import http
from hookdtest.partners import GENERIC_SECRET, GITHUB_SECRET, STRIPE_SECRET
from hookdtest.partners import PARTNERS as SCHEME_PARTNERS
from hookdtest.signing import SW_SECRET, sign_github, sign_hmac_hex, sign_standard, sign_stripe
from hookdtest.util import wait_for

# One partner per scheme, and hmac-sha256 twice: its id and type from the
# (signed) body, and from unsigned headers.
PARTNERS = SCHEME_PARTNERS + f"""
[partner generic-hdr]
scheme = hmac-sha256
secret = {GENERIC_SECRET}
header = X-Signature
event_id = header:X-Request-Id
event_type = header:X-Event-Type
entity_id = json:data.order_id
"""

SCHEMES = ["shop", "stripe", "github", "generic", "generic-hdr"]
JSON = "application/json"


def body_for(partner: str, event_id: str, order_id: str, event_type: str = "order.started") -> bytes:
    if partner == "stripe":
        doc = {"id": event_id, "type": event_type, "data": {"object": {"metadata": {"order_id": order_id}}}}
    elif partner == "github":
        doc = {"order_id": order_id, "action": "opened"}  # GitHub's type is in X-GitHub-Event only
    elif partner == "generic":
        doc = {"id": event_id, "type": event_type, "data": {"order_id": order_id}}
    elif partner == "generic-hdr":
        doc = {"data": {"order_id": order_id}, "note": "id and type travel in headers"}
    else:
        doc = {"type": event_type, "data": {"order_id": order_id}}
    return json.dumps(doc).encode()


def signed(partner: str, event_id: str, body: bytes, ts: int, event_type: str = "order.started") -> dict:
    """The headers the partner's real sender would send."""
    h = {"Content-Type": JSON}
    if partner == "stripe":
        h["Stripe-Signature"] = sign_stripe(STRIPE_SECRET, ts, body)
    elif partner == "github":
        h.update({"X-GitHub-Delivery": event_id, "X-GitHub-Event": event_type,
                  "X-Hub-Signature-256": sign_github(GITHUB_SECRET, body)})
    elif partner == "generic":
        h["X-Signature"] = sign_hmac_hex(GENERIC_SECRET, body)
    elif partner == "generic-hdr":
        h.update({"X-Request-Id": event_id, "X-Event-Type": event_type,
                  "X-Signature": sign_hmac_hex(GENERIC_SECRET, body)})
    else:
        h.update({"webhook-id": event_id, "webhook-timestamp": str(ts),
                  "webhook-signature": sign_standard(SW_SECRET, event_id, ts, body)})
    return h


def replays(partner: str, headers: dict, ts: int) -> list[tuple[str, dict]]:
    """What an attacker holding the captured headers can send with the same
    body: the request again, a new event id, another event type, a new
    timestamp (each with the captured signature; nothing can be re-signed)."""
    new_id = {"shop": "webhook-id", "github": "X-GitHub-Delivery", "generic-hdr": "X-Request-Id"}
    new_type = {"github": "X-GitHub-Event", "generic-hdr": "X-Event-Type"}
    out = [("same request", dict(headers))]
    if partner in new_id:
        out.append(("new event id", dict(headers, **{new_id[partner]: "replayed-id-2"})))
    for name in ("X-GitHub-Event", "X-Event-Type"):  # types a careless config might read
        out.append((f"{name}: order.cancelled", dict(headers, **{new_type.get(partner, name): "order.cancelled"})))
    if partner in new_id:
        out.append(("new id and type", dict(headers, **{new_id[partner]: "replayed-id-3",
                                                         new_type.get(partner, "X-Event-Type"): "order.cancelled"})))
    if partner == "shop":
        out.append(("new timestamp", dict(headers, **{"webhook-timestamp": str(ts + 1)})))
    if partner == "stripe":
        out.append(("new timestamp", dict(headers, **{
            "Stripe-Signature": headers["Stripe-Signature"].replace(f"t={ts},", f"t={ts + 1},")})))
    return out


def ingest_only(env):
    """A worker with only the ingest role: rows stay as stored."""
    cfg = env.config(extra=PARTNERS)
    cfg.write_text(cfg.read_text().replace("[hookd]\n", "[hookd]\nroles = ingest\n", 1))
    return env.worker(config=cfg)


def post(w, partner: str, body: bytes, headers: dict):
    status, _, raw = http("POST", f"{w.url}/v1/inbox/{partner}", body, headers)
    try:
        return status, json.loads(raw)
    except ValueError:
        return status, None


def entity(env, order_id: str):
    return env.db.one("SELECT state, version FROM hookd_entities WHERE entity_type = 'order' AND entity_id = %s",
                      order_id)


def applied(env, partner: str):
    return env.db.all("SELECT partner_event_id, event_type, status, outcome FROM webhook_inbox"
                      " WHERE partner_name = %s", partner)


@pytest.mark.parametrize("partner", SCHEMES)
def test_a_replayed_request_is_never_applied_twice_nor_as_another_type(env, partner):
    w = env.worker(extra=PARTNERS)
    order = f"order-{partner}"
    ts = int(time.time())
    body = body_for(partner, "evt-1", order)
    headers = signed(partner, "evt-1", body, ts)
    status, doc = post(w, partner, body, headers)
    assert (status, doc["status"]) == (200, "accepted"), doc
    wait_for(lambda: (entity(env, order) or {}).get("state") == "started", what="the original applied")
    before = entity(env, order)

    for what, h in replays(partner, headers, ts):
        status, doc = post(w, partner, body, h)
        # a duplicate (200: the sender must not retry) or a refused signature;
        # never accepted as a new event
        if status == 401:
            assert doc["error"] in ("bad_signature", "timestamp"), (what, doc)
        else:
            assert (status, doc) == (200, {"status": "duplicate"}), (what, status, doc)

    time.sleep(0.5)  # what a wrongly stored replay would need to be applied
    rows = applied(env, partner)
    assert len(rows) == 1, rows
    assert rows[0]["partner_event_id"] == "evt-1" and rows[0]["event_type"] == "order.started", rows
    assert (rows[0]["status"], rows[0]["outcome"]) == ("PROCESSED", "applied"), rows
    assert entity(env, order) == before == {"state": "started", "version": 1}


@pytest.mark.parametrize("partner", ["github", "generic-hdr"])
def test_a_replay_racing_the_original_is_stored_once(env, partner):
    """The original and replays under new ids at the same moment land in one
    insert batch: the body is stored once whatever ids they carry."""
    w = env.worker(extra=PARTNERS)
    body = body_for(partner, "race-0", "order-race")
    ts = int(time.time())
    n = 8
    barrier = threading.Barrier(n)

    def send(i):
        barrier.wait()
        return post(w, partner, body, signed(partner, f"race-{i}", body, ts,
                                             event_type="order.started" if i % 2 == 0 else "order.cancelled"))

    with ThreadPoolExecutor(n) as pool:
        answers = list(pool.map(send, range(n)))
    assert all(s == 200 for s, _ in answers), answers
    assert sorted(d["status"] for _, d in answers) == ["accepted"] + ["duplicate"] * (n - 1), answers
    assert len(applied(env, partner)) == 1
    wait_for(lambda: applied(env, partner)[0]["status"] == "PROCESSED", what="the one stored event processed")
    assert entity(env, "order-race")["version"] == 1


def test_distinct_bodies_under_body_only_schemes_are_all_stored(env):
    """The digest is per body and per partner: different events are not
    mistaken for replays, and one body sent to two partners is stored for
    each. (Two events with byte-identical bodies from a body-only scheme are
    one event to hookd; docs/guides/guarantees.md says so.)"""
    w = ingest_only(env)
    ts = int(time.time())
    for i in range(3):
        body = body_for("github", "", f"order-gh-{i}")
        status, doc = post(w, "github", body, signed("github", f"gh-{i}", body, ts))
        assert (status, doc["status"]) == (200, "accepted"), doc
    body = body_for("generic-hdr", "", "order-shared")
    for partner in ("generic-hdr", "generic-hdr", "github"):
        status, doc = post(w, partner, body, signed(partner, "shared-1", body, ts))
    assert len(applied(env, "github")) == 4
    assert len(applied(env, "generic-hdr")) == 1
    digests = env.db.all("SELECT partner_name, content_digest IS NOT NULL AS has FROM webhook_inbox")
    assert all(r["has"] for r in digests), digests


def test_schemes_signing_id_type_and_timestamp_store_no_digest(env):
    """standard-webhooks and stripe with their default fields keep
    UNIQUE(partner_name, partner_event_id) alone: two events with the same
    body but distinct signed ids are both stored."""
    w = ingest_only(env)
    ts = int(time.time())
    body = body_for("shop", "", "order-sw")
    for eid in ("sw-1", "sw-2"):
        status, doc = post(w, "shop", body, signed("shop", eid, body, ts))
        assert (status, doc["status"]) == (200, "accepted"), doc
    rows = env.db.all("SELECT content_digest FROM webhook_inbox WHERE partner_name = 'shop'")
    assert len(rows) == 2 and all(r["content_digest"] is None for r in rows)
