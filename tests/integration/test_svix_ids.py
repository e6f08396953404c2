"""Ids in Svix's shape (sql/0031_svix_ids.sql, engine/base/api_id.c).

Svix's published API gives every id a `pattern` of a prefix and 27 base62
characters (`ApplicationOut.id`: `^app_[A-Za-z0-9]{27}$`, likewise
`EndpointOut.id`, `MessageOut.id`, `MessageAttemptOut.id`, `ReplayOut.id`),
KSUIDs: 4 bytes of seconds since the KSUID epoch, then 16 bytes. Covered:
every id the API answers (through the official `svix` SDK) and every
webhook-id a receiver gets has that shape; ids map back to their rows
without a lookup (the UUID, or an attempt's key, is in them) and carry the
row's time; attempt ids no longer read as a counter; the former ids (22
digits, `atmpt_` and 11) still name their objects in paths and iterators;
and a message that existed before keeps the webhook-id its receivers saw,
on every attempt."""
from __future__ import annotations

import hashlib
import re
import time
import uuid

from hookdtest.util import wait_for

from test_api import api, deliveries_settled, hookd, new_token, raw, receivers, svix  # noqa: F401  (fixtures)

# Svix's pattern for each prefix hookd answers (svix-lib-openapi.json).
SVIX_ID = re.compile(r"^(app|ep|msg|atmpt|qtask)_[A-Za-z0-9]{27}$")
B62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
KSUID_EPOCH = 1400000000
ID_FIELDS = ("id", "appId", "endpointId", "msgId", "taskId", "iterator", "prevIterator")


def b62(digits: str) -> int:
    n = 0
    for c in digits:
        n = n * 62 + B62.index(c)
    return n


def b62_digits(n: int, width: int) -> str:
    out = ""
    for _ in range(width):
        n, r = divmod(n, 62)
        out = B62[r] + out
    return out


def ksuid(api_id: str) -> tuple[int, int]:
    """(seconds since the KSUID epoch, the 16 bytes as a number) of an id."""
    n = b62(api_id.split("_", 1)[1])
    assert n < 1 << 160
    return n >> 128, n & ((1 << 128) - 1)


def uuid_seconds(u: uuid.UUID) -> int:
    """The seconds an id of a version 7 UUID carries: its clock's."""
    assert u.version == 7
    return (u.int >> 80) // 1000 - KSUID_EPOCH


def legacy(prefix: str, u: uuid.UUID) -> str:
    return f"{prefix}_{b62_digits(u.int, 22)}"


def ids_in(answer, found: list[str]) -> list[str]:
    """Every id-valued field of an answer, at any depth."""
    if isinstance(answer, dict):
        for k, v in answer.items():
            if k in ID_FIELDS and isinstance(v, str):
                found.append(v[1:] if k == "prevIterator" else v)  # "-" + an id: Svix's backward iterator
            else:
                ids_in(v, found)
    elif isinstance(answer, list):
        for v in answer:
            ids_in(v, found)
    return found


def iso(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


def test_every_id_the_api_answers_is_svix_shaped(env, api, receivers):
    cfg, w, root = api
    rx = receivers()
    out = svix(w, root, [
        {"call": "application.create", "args": [{"name": "Acme", "uid": "acme"}]},
        {"call": "endpoint.create", "args": ["acme", {"url": rx.url(), "uid": "ok"}], "as": "ep"},
        {"call": "message.create", "args": ["acme", {"eventType": "a.b", "eventId": "e1", "payload": {"n": 1}}],
         "as": "m1"},
        {"call": "message.create", "args": ["acme", {"eventType": "a.b", "payload": {"n": 2}}]},
    ])
    assert all("ok" in o for o in out), out
    m1 = out[2]["ok"]
    rx.wait(2)
    deliveries_settled(env, 2)
    out += svix(w, root, [
        {"call": "application.list", "args": [{"limit": 1}]},
        {"call": "application.get", "args": ["acme"]},
        {"call": "endpoint.list", "args": ["acme", {"limit": 1}]},
        {"call": "endpoint.get", "args": ["acme", "ok"]},
        {"call": "message.list", "args": ["acme", {"limit": 1}]},
        {"call": "message.get", "args": ["acme", "e1"]},
        {"call": "messageAttempt.listByMsg", "args": ["acme", m1["id"], {"limit": 1}], "as": "byMsg"},
        {"call": "messageAttempt.listByEndpoint", "args": ["acme", "ok"]},
        {"call": "messageAttempt.get", "args": ["acme", m1["id"], "$byMsg.data.0.id"]},
        {"call": "messageAttempt.listAttemptedMessages", "args": ["acme", "ok", {"limit": 1}]},
        {"call": "messageAttempt.listAttemptedDestinations", "args": ["acme", m1["id"]]},
        {"call": "endpoint.recover", "args": ["acme", "ok", {"since": iso(time.time() - 3600)}]},
        {"call": "endpoint.replayMissing", "args": ["acme", "ok", {"since": iso(time.time() - 3600)}]},
    ])
    assert all("ok" in o for o in out), out
    found = ids_in([o["ok"] for o in out], [])
    bad = [i for i in found if i is not None and not SVIX_ID.match(i)]
    assert not bad, bad
    assert {i.split("_", 1)[0] for i in found} >= {"app", "ep", "msg", "atmpt", "qtask"}, found
    # a tenant's message reaches its receivers with its API id as webhook-id
    got = {r.headers["webhook-id"] for r in rx.got()}
    assert m1["id"] in got and all(SVIX_ID.match(i) for i in got), got


def test_ids_map_back_and_the_former_ones_still_resolve(env, api, receivers):
    cfg, w, root = api
    fails = {"n": 0}

    def twice_then_ok(req):
        fails["n"] += 1
        return (500, {}, b"no") if fails["n"] <= 2 else (200, {}, b"ok")

    rx = receivers(twice_then_ok)
    out = svix(w, root, [
        {"call": "application.create", "args": [{"name": "Acme", "uid": "acme"}]},
        {"call": "endpoint.create", "args": ["acme", {"url": rx.url(), "uid": "ok"}]},
        {"call": "message.create", "args": ["acme", {"eventType": "a.b", "eventId": "e1", "payload": {"n": 1}}]},
        {"call": "message.create", "args": ["acme", {"eventType": "a.b", "eventId": "e2", "payload": {"n": 2}}]},
    ])
    assert all("ok" in o for o in out), out
    app, ep, m1, m2 = (o["ok"] for o in out)
    rx.wait(4)  # e1 or e2 failed twice, then both arrived
    deliveries_settled(env, 2)

    # the UUID is in the id, after the seconds of the UUID's clock
    m1_uuid = uuid.UUID(env.db.value("SELECT id::text FROM outbox_events WHERE api_event_id = 'e1'"))
    ep_uuid = uuid.UUID(env.db.value("SELECT id::text FROM webhook_endpoints WHERE uid = 'ok'"))
    for api_id, u in ((m1["id"], m1_uuid), (ep["id"], ep_uuid)):
        assert SVIX_ID.match(api_id)
        assert ksuid(api_id) == (uuid_seconds(u), u.int), api_id
    secs, app_uuid = ksuid(app["id"])
    assert secs == uuid_seconds(uuid.UUID(int=app_uuid))
    assert app["id"] == env.db.value("SELECT id FROM hookd_tenants WHERE uid = 'acme'")
    assert sorted([m1["id"], m2["id"]]) == [m1["id"], m2["id"]]  # created in that order: sorted by time

    # an attempt's id holds its second, its key's MD5 and its key; successive
    # attempts' ids do not read as a counter
    byms = svix(w, root, [{"call": "messageAttempt.listByEndpoint", "args": ["acme", "ok"]}])[0]["ok"]["data"]
    keys = {r["id"]: r["at"] for r in env.db.all(
        "SELECT id, floor(extract(epoch FROM attempted_at))::bigint AS at FROM attempts WHERE source = 'delivery'")}
    assert len(byms) == len(keys) == 4
    for a in byms:
        assert SVIX_ID.match(a["id"]), a["id"]
        secs, low = ksuid(a["id"])
        key = low & ((1 << 64) - 1)
        assert key in keys and secs == keys[key] - KSUID_EPOCH
        assert low >> 64 == int(hashlib.md5(str(key).encode()).hexdigest()[:16], 16)
    ordered = sorted(byms, key=lambda a: ksuid(a["id"])[1] & ((1 << 64) - 1))
    for a, b in zip(ordered, ordered[1:]):
        shared = next(i for i, (x, y) in enumerate(zip(a["id"], b["id"])) if x != y)
        assert shared < 16 and abs(b62(b["id"][6:]) - b62(a["id"][6:])) > 1 << 64, (a["id"], b["id"])

    # the former ids name the same objects, in paths and iterators
    m1_old, ep_old = legacy("msg", m1_uuid), legacy("ep", ep_uuid)
    m2_old = legacy("msg", uuid.UUID(env.db.value("SELECT id::text FROM outbox_events WHERE api_event_id = 'e2'")))
    first = min(keys)
    m1_attempt = next(a for a in byms if a["msgId"] == m1["id"])
    m1_key = ksuid(m1_attempt["id"])[1] & ((1 << 64) - 1)
    atmpt_old = f"atmpt_{b62_digits(m1_key, 11)}"
    for path, want in ((f"msg/{m1_old}", m1["id"]), (f"endpoint/{ep_old}", ep["id"]),
                       (f"msg/{m1_old}/attempt/{atmpt_old}", m1_attempt["id"]),
                       (f"msg/{m1['id']}/attempt/{m1_attempt['id']}", m1_attempt["id"])):
        s, body = raw(w, "GET", f"/api/v1/app/{app['id']}/{path}", root)
        assert s == 200 and body["id"] == want, (path, s, body)
    s, page = raw(w, "GET", f"/api/v1/app/acme/msg?iterator={m2_old}", root)
    assert s == 200 and [m["id"] for m in page["data"]] == [m1["id"]]
    s, page = raw(w, "GET", f"/api/v1/app/acme/msg?iterator={m2['id']}", root)
    assert s == 200 and [m["id"] for m in page["data"]] == [m1["id"]]
    s, page = raw(w, "GET", f"/api/v1/app/acme/attempt/endpoint/{ep_old}?iterator=atmpt_{b62_digits(first + 1, 11)}",
                  root)
    assert s == 200 and [ksuid(a["id"])[1] & ((1 << 64) - 1) for a in page["data"]] == [first], page
    newest = max(byms, key=lambda a: ksuid(a["id"])[1] & ((1 << 64) - 1))
    s, page = raw(w, "GET", f"/api/v1/app/acme/attempt/endpoint/ok?iterator={newest['id']}", root)
    assert s == 200 and len(page["data"]) == 3 and newest["id"] not in [a["id"] for a in page["data"]]

    # an id of the right shape that hookd did not make names nothing
    forged = m1["id"][:4] + B62[(B62.index(m1["id"][4]) + 1) % 62] + m1["id"][5:]  # other seconds, same UUID
    s, body = raw(w, "GET", f"/api/v1/app/acme/msg/{forged}", root)
    assert s == 404 and body["code"] == "not_found"
    bad_check = m1_attempt["id"][:12] + B62[(B62.index(m1_attempt["id"][12]) + 1) % 62] + m1_attempt["id"][13:]
    s, body = raw(w, "GET", f"/api/v1/app/acme/msg/{m1['id']}/attempt/{bad_check}", root)
    assert s == 404 and body["code"] == "not_found"


def test_messages_from_before_keep_their_webhook_id(env, api, receivers):
    cfg, w, root = api
    seen: dict[str, int] = {}

    def first_fails(req):
        k = req.headers["webhook-id"]
        seen[k] = seen.get(k, 0) + 1
        return (500, {}, b"no") if seen[k] == 1 else (200, {}, b"ok")

    rx = receivers(first_fails)
    out = svix(w, root, [
        {"call": "application.create", "args": [{"name": "Acme", "uid": "acme"}]},
        {"call": "endpoint.create", "args": ["acme", {"url": rx.url(), "uid": "ok"}]},
    ])
    assert all("ok" in o for o in out), out
    app = out[0]["ok"]
    # a message as the migration leaves those that exist before it
    old = uuid.UUID(env.db.value(
        "INSERT INTO outbox_events (aggregate_type, aggregate_id, event_type, payload, tenant_id, legacy_webhook_id)"
        " VALUES ('a', '1', 'a.b', '{\"old\": true}', %s, true) RETURNING id::text", app["id"]))
    new = svix(w, root, [{"call": "message.create", "args": ["acme", {"eventType": "a.b", "payload": {"new": 1}}]}])
    m_new = new[0]["ok"]
    rx.wait(4)
    deliveries_settled(env, 2)
    by_body = {}
    for r in rx.got():
        by_body.setdefault(r.body, []).append(r.headers["webhook-id"])
    old_ids = next(v for k, v in by_body.items() if b'"old"' in k)
    new_ids = next(v for k, v in by_body.items() if b'"new"' in k)
    # the first attempt (the relay's) and the retry (the delivery's) agree
    assert old_ids == [legacy("msg", old)] * 2, old_ids
    assert new_ids == [m_new["id"]] * 2 and SVIX_ID.match(m_new["id"]), new_ids
    # the API names the old message in the current shape, and by its former id
    s, body = raw(w, "GET", f"/api/v1/app/acme/msg/{legacy('msg', old)}", root)
    assert s == 200 and SVIX_ID.match(body["id"]) and ksuid(body["id"])[1] == old.int
