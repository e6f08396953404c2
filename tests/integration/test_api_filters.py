"""Svix's list filters on every list hookd implements that takes them,
through the official `svix` SDK and raw HTTP (for what the SDK encodes one
way only): message.list (before, after, channel, tag, event_types in each of
its encodings, with_content, the iterator both ways, and `after` alone
paging forwards from it as Svix's server does), the attempt lists
(status, status_code_class, channel, tag, event_types, before, after,
with_content, with_msg, endpoint_id), list-attempted-messages,
list-attempted-destinations, and the `order` of application, endpoint and
event-type lists. A bad filter value is a 4xx that names the parameter.
Each list's statement keeps to its index (EXPLAIN)."""
from __future__ import annotations

import json
from urllib.parse import urlencode

from hookdtest.util import wait_for
from test_api import api, hookd, new_token, raw, receivers, svix  # noqa: F401  (fixtures)


def ago(env, seconds: float) -> str:
    """Postgres's now() - seconds as RFC 3339 (what the SDK sends for a Date)."""
    return env.db.value("SELECT to_char((now() - %s * interval '1 second') AT TIME ZONE 'UTC',"
                        " 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"')", seconds)


def get(w, token, path: str, query=()) -> tuple[int, dict]:
    """GET path?query (a list of pairs: repeated keys stay repeated)."""
    return raw(w, "GET", path + ("?" + urlencode(list(query)) if query else ""), token)


def ids(page: dict) -> list[str]:
    return [x["id"] for x in page["data"]]


def bad_param(status: int, body, field: str) -> bool:
    """A refused query parameter: a 4xx whose body names the parameter."""
    return 400 <= status < 500 and field in json.dumps(body)


def backdate_message(env, msg_id: str, hours: float) -> None:
    env.db.all("UPDATE outbox_events SET created_at = created_at - %s * interval '1 hour'"
                   " WHERE id = hookd_api_uuid('msg', %s)", hours, msg_id)


def make_messages(w, root) -> list[dict]:
    """acme with three messages (no endpoint: nothing is sent), oldest first."""
    out = svix(w, root, [
        {"call": "application.create", "args": [{"name": "Acme", "uid": "acme"}]},
        {"call": "message.create", "args": ["acme", {"eventType": "a.one", "payload": {"n": 1},
                                                     "channels": ["ch1"], "tags": ["t1"]}]},
        {"call": "message.create", "args": ["acme", {"eventType": "b.two", "payload": {"n": 2},
                                                     "channels": ["ch2"], "tags": ["t2"]}]},
        {"call": "message.create", "args": ["acme", {"eventType": "c.three", "payload": {"n": 3},
                                                     "channels": ["ch1", "ch2"]}]},
    ])
    return [o["ok"] for o in out[1:]]


def test_message_list_before_and_after(env, api):
    cfg, w, root = api
    m1, m2, m3 = make_messages(w, root)
    backdate_message(env, m1["id"], 2)
    backdate_message(env, m2["id"], 1)
    out = svix(w, root, [
        {"call": "message.list", "args": ["acme", {"before": ago(env, 1800)}]},
        {"call": "message.list", "args": ["acme", {"after": ago(env, 5400)}]},
        {"call": "message.list", "args": ["acme", {"before": ago(env, 1800), "after": ago(env, 5400)}]},
    ])
    assert ids(out[0]["ok"]) == [m2["id"], m1["id"]]
    assert ids(out[1]["ok"]) == [m3["id"], m2["id"]]
    assert ids(out[2]["ok"]) == [m2["id"]]
    # a bad time is refused, the parameter named
    st, body = get(w, root, "/api/v1/app/acme/msg", [("before", "yesterday")])
    assert bad_param(st, body, "before"), (st, body)


def test_message_list_after_pages_forwards(env, api):
    """`after` alone (Svix's filter_and_paginate_time_limited): the page holds
    the oldest messages after it, newest first, and its prevIterator goes on
    towards the newer ones."""
    cfg, w, root = api
    m1, m2, m3 = make_messages(w, root)
    st, page = get(w, root, "/api/v1/app/acme/msg", [("after", "2000-01-01T00:00:00Z"), ("limit", "2")])
    assert st == 200 and ids(page) == [m2["id"], m1["id"]] and page["done"] is False, page
    st, newer = get(w, root, "/api/v1/app/acme/msg", [("iterator", page["prevIterator"]), ("limit", "2")])
    assert st == 200 and ids(newer) == [m3["id"]], newer
    # and the iterator of a forward page goes back in time from its last item
    st, first = get(w, root, "/api/v1/app/acme/msg", [("limit", "1")])
    assert ids(first) == [m3["id"]]
    st, older = get(w, root, "/api/v1/app/acme/msg", [("limit", "5"), ("iterator", first["iterator"])])
    assert ids(older) == [m2["id"], m1["id"]] and older["done"] is True
    st, back = get(w, root, "/api/v1/app/acme/msg", [("limit", "5"), ("iterator", older["prevIterator"])])
    assert ids(back) == [m3["id"]]


def test_message_list_channel_and_tag(env, api):
    cfg, w, root = api
    m1, m2, m3 = make_messages(w, root)
    out = svix(w, root, [
        {"call": "message.list", "args": ["acme", {"channel": "ch1"}]},
        {"call": "message.list", "args": ["acme", {"tag": "t2"}]},
        {"call": "message.list", "args": ["acme", {"channel": "ch2", "tag": "t1"}]},
    ])
    assert ids(out[0]["ok"]) == [m3["id"], m1["id"]]
    assert ids(out[1]["ok"]) == [m2["id"]]
    assert ids(out[2]["ok"]) == []
    st, body = get(w, root, "/api/v1/app/acme/msg", [("channel", "bad channel!")])
    assert bad_param(st, body, "channel"), (st, body)
    st, body = get(w, root, "/api/v1/app/acme/msg", [("tag", "x" * 129)])
    assert bad_param(st, body, "tag"), (st, body)


def test_message_list_event_types_every_encoding(env, api):
    cfg, w, root = api
    m1, m2, m3 = make_messages(w, root)
    want = [m2["id"], m1["id"]]
    out = svix(w, root, [{"call": "message.list", "args": ["acme", {"eventTypes": ["a.one", "b.two"]}]}])
    assert ids(out[0]["ok"]) == want  # the SDK joins with commas
    for query in ([("event_types", "a.one"), ("event_types", "b.two")],
                  [("event_types[]", "a.one"), ("event_types[]", "b.two")],
                  [("event_types[0]", "a.one"), ("event_types[1]", "b.two,a.one")]):
        st, page = get(w, root, "/api/v1/app/acme/msg", query)
        assert st == 200 and ids(page) == want, (query, page)
    st, body = get(w, root, "/api/v1/app/acme/msg", [("event_types", "a.one"), ("event_types", "bad type")])
    assert bad_param(st, body, "event_types"), (st, body)


def test_message_list_with_content(env, api):
    cfg, w, root = api
    make_messages(w, root)
    st, page = get(w, root, "/api/v1/app/acme/msg", [("with_content", "false")])
    assert st == 200 and all(m["payload"] == {} for m in page["data"])
    st, page = get(w, root, "/api/v1/app/acme/msg")
    assert [m["payload"]["n"] for m in page["data"]] == [3, 2, 1]
    st, body = get(w, root, "/api/v1/app/acme/msg", [("with_content", "maybe")])
    assert bad_param(st, body, "with_content"), (st, body)


def fail_marked(req):
    """Answers 500 to a body that asks for it, 200 otherwise."""
    return (500, {}, b"no") if b'"fail"' in req.body else (200, {}, b"ok")


def make_attempts(env, w, root, rx) -> tuple[dict, dict, dict]:
    """acme, an endpoint `main` at rx, m1 (a.one, ch1, t1) delivered at the
    first attempt, m2 (b.two, ch2, t2) failing until dead. Returns (endpoint,
    m1, m2) once every attempt is recorded."""
    out = svix(w, root, [
        {"call": "application.create", "args": [{"name": "Acme", "uid": "acme"}]},
        {"call": "endpoint.create", "args": ["acme", {"url": rx.url(), "uid": "main"}]},
        {"call": "message.create", "args": ["acme", {"eventType": "a.one", "payload": {"n": 1},
                                                     "channels": ["ch1"], "tags": ["t1"]}]},
        {"call": "message.create", "args": ["acme", {"eventType": "b.two", "payload": {"n": 2, "fail": True},
                                                     "channels": ["ch2"], "tags": ["t2"]}]},
    ])
    ep, m1, m2 = out[1]["ok"], out[2]["ok"], out[3]["ok"]
    wait_for(lambda: env.db.value("SELECT count(*) FROM outbox_deliveries WHERE status IN ('SUCCEEDED', 'DEAD')")
             == 2, 30, what="both deliveries settled")
    return ep, m1, m2


def attempt_msgs(page: dict) -> list[str]:
    return [a["msgId"] for a in page["data"]]


def test_attempt_lists_channel_tag_and_event_types(env, api, receivers):
    cfg, w, root = api
    ep, m1, m2 = make_attempts(env, w, root, receivers(fail_marked))
    fails = len(attempt_msgs(get(w, root, f"/api/v1/app/acme/attempt/endpoint/{ep['id']}")[1])) - 1
    assert fails >= 2
    out = svix(w, root, [
        {"call": "messageAttempt.listByEndpoint", "args": ["acme", ep["id"], {"channel": "ch1"}]},
        {"call": "messageAttempt.listByEndpoint", "args": ["acme", ep["id"], {"tag": "t2"}]},
        {"call": "messageAttempt.listByEndpoint", "args": ["acme", ep["id"], {"eventTypes": ["a.one"]}]},
        {"call": "messageAttempt.listByMsg", "args": ["acme", m1["id"], {"channel": "ch2"}]},
        {"call": "messageAttempt.listByMsg", "args": ["acme", m2["id"], {"tag": "t2"}]},
        {"call": "messageAttempt.listByMsg", "args": ["acme", m2["id"], {"endpointId": "main", "tag": "t1"}]},
    ])
    assert attempt_msgs(out[0]["ok"]) == [m1["id"]]
    assert attempt_msgs(out[1]["ok"]) == [m2["id"]] * fails
    assert attempt_msgs(out[2]["ok"]) == [m1["id"]]
    assert attempt_msgs(out[3]["ok"]) == []
    assert attempt_msgs(out[4]["ok"]) == [m2["id"]] * fails
    assert attempt_msgs(out[5]["ok"]) == []
    # event_types repeated, as form encoders send it: both types
    st, page = get(w, root, f"/api/v1/app/acme/attempt/endpoint/{ep['id']}",
                   [("event_types", "a.one"), ("event_types", "b.two")])
    assert st == 200 and sorted(set(attempt_msgs(page))) == sorted([m1["id"], m2["id"]])
    for field, value in (("channel", "no spaces"), ("tag", "a,b"), ("event_types", "a b")):
        st, body = get(w, root, f"/api/v1/app/acme/attempt/endpoint/{ep['id']}", [(field, value)])
        assert bad_param(st, body, field), (field, st, body)


def test_attempt_lists_status_class_time_and_content(env, api, receivers):
    cfg, w, root = api
    ep, m1, m2 = make_attempts(env, w, root, receivers(fail_marked))
    # m1's attempt an hour earlier: before and after split the attempts
    env.db.all("UPDATE attempts SET attempted_at = attempted_at - interval '1 hour' WHERE source_id ="
               " (SELECT id FROM outbox_deliveries WHERE event_id = hookd_api_uuid('msg', %s))", m1["id"])
    base = f"/api/v1/app/acme/attempt/endpoint/{ep['id']}"
    st, ok_only = get(w, root, base, [("status", "0")])
    st, code5 = get(w, root, base, [("status_code_class", "500")])
    st, early = get(w, root, base, [("before", ago(env, 1800))])
    st, late = get(w, root, base, [("after", ago(env, 1800))])
    st, no_content = get(w, root, base, [("with_content", "false")])
    st, full = get(w, root, base)
    assert attempt_msgs(ok_only) == [m1["id"]]
    assert set(attempt_msgs(code5)) == {m2["id"]}
    assert attempt_msgs(early) == [m1["id"]]
    assert set(attempt_msgs(late)) == {m2["id"]} and len(late["data"]) == len(full["data"]) - 1
    assert all(a["response"] == "{}" for a in no_content["data"]) and full["data"][-1]["response"] == "ok"
    # `after` alone pages forwards from it: the oldest attempt first
    st, first = get(w, root, base, [("after", "2000-01-01T00:00:00Z"), ("limit", "1")])
    assert st == 200 and attempt_msgs(first) == [m1["id"]] and first["done"] is False
    st, body = get(w, root, base, [("status", "7")])
    assert bad_param(st, body, "status"), body


def test_attempt_list_by_endpoint_with_msg(env, api, receivers):
    cfg, w, root = api
    ep, m1, m2 = make_attempts(env, w, root, receivers(fail_marked))
    out = svix(w, root, [
        {"call": "messageAttempt.listByEndpoint", "args": ["acme", ep["id"], {"withMsg": True, "status": 0}]},
        {"call": "messageAttempt.listByEndpoint", "args": ["acme", ep["id"], {"status": 0}]},
    ])
    [a] = out[0]["ok"]["data"]
    assert a["msg"]["id"] == m1["id"] and a["msg"]["eventType"] == "a.one" and a["msg"]["channels"] == ["ch1"]
    assert a["msg"]["payload"] == {}  # Svix: payloads never come with with_msg
    assert out[1]["ok"]["data"][0].get("msg") is None
    st, body = get(w, root, f"/api/v1/app/acme/attempt/endpoint/{ep['id']}", [("with_msg", "yes")])
    assert bad_param(st, body, "with_msg"), body


def test_attempted_messages_channel_tag(env, api, receivers):
    cfg, w, root = api
    ep, m1, m2 = make_attempts(env, w, root, receivers(fail_marked))
    out = svix(w, root, [
        {"call": "messageAttempt.listAttemptedMessages", "args": ["acme", ep["id"], {"channel": "ch2"}]},
        {"call": "messageAttempt.listAttemptedMessages", "args": ["acme", ep["id"], {"tag": "t1"}]},
        {"call": "messageAttempt.listAttemptedMessages", "args": ["acme", ep["id"], {"status": 2}]},
        {"call": "messageAttempt.listAttemptedMessages", "args": ["acme", ep["id"], {"eventTypes": ["a.one"]}]},
    ])
    assert ids(out[0]["ok"]) == [m2["id"]]
    assert ids(out[1]["ok"]) == [m1["id"]]
    assert ids(out[2]["ok"]) == [m2["id"]]
    assert ids(out[3]["ok"]) == [m1["id"]]
    backdate_message(env, m1["id"], 1)
    st, page = get(w, root, f"/api/v1/app/acme/endpoint/{ep['id']}/msg",
                   [("after", "2000-01-01T00:00:00Z"), ("limit", "1")])
    assert st == 200 and ids(page) == [m1["id"]] and page["done"] is False, page
    st, body = get(w, root, f"/api/v1/app/acme/endpoint/{ep['id']}/msg", [("channel", "x y")])
    assert bad_param(st, body, "channel"), body


def test_attempted_destinations_iterates_both_ways(env, api, receivers):
    cfg, w, root = api
    rx = receivers()
    out = svix(w, root, [{"call": "application.create", "args": [{"name": "Acme", "uid": "acme"}]}] + [
        {"call": "endpoint.create", "args": ["acme", {"url": rx.url(path=f"/e{i}")}]} for i in range(3)] + [
        {"call": "message.create", "args": ["acme", {"eventType": "a.one", "payload": {}}]}])
    msg = out[-1]["ok"]
    rx.wait(3)
    wait_for(lambda: env.db.value("SELECT count(*) FROM attempts") == 3, 20, what="3 attempts")
    eps = sorted(o["ok"]["id"] for o in out[1:4])
    base = f"/api/v1/app/acme/msg/{msg['id']}/endpoint"
    st, p1 = get(w, root, base, [("limit", "2")])
    st, p2 = get(w, root, base, [("limit", "2"), ("iterator", p1["iterator"])])
    st, back = get(w, root, base, [("limit", "2"), ("iterator", p2["prevIterator"])])
    assert ids(p1) == eps[:2] and p1["done"] is False
    assert ids(p2) == eps[2:] and p2["done"] is True
    assert ids(back) == eps[:2]


def test_list_order(env, api):
    cfg, w, root = api
    out = svix(w, root, [
        {"call": "application.create", "args": [{"name": "A", "uid": "a1"}]},
        {"call": "application.create", "args": [{"name": "B", "uid": "a2"}]},
        {"call": "endpoint.create", "args": ["a1", {"url": "https://example.com/1"}]},
        {"call": "endpoint.create", "args": ["a1", {"url": "https://example.com/2"}]},
        {"call": "eventType.create", "args": [{"name": "a.x", "description": "x"}]},
        {"call": "eventType.create", "args": [{"name": "b.x", "description": "x"}]},
        {"call": "eventType.create", "args": [{"name": "c.x", "description": "x"}]},
        {"call": "eventType.delete", "args": ["c.x"]},
        {"call": "application.list", "args": [{"order": "descending"}]},
        {"call": "application.list", "args": [{}]},
        {"call": "endpoint.list", "args": ["a1", {"order": "ascending"}]},
        {"call": "endpoint.list", "args": ["a1", {}]},
        {"call": "eventType.list", "args": [{"order": "descending"}]},
        {"call": "eventType.list", "args": [{}]},
        {"call": "eventType.list", "args": [{"includeArchived": True, "order": "descending", "limit": 2}],
         "as": "etp"},
        {"call": "eventType.list", "args": [{"order": "descending", "iterator": "$etp.iterator",
                                             "includeArchived": True}]},
    ])
    assert [a["uid"] for a in out[8]["ok"]["data"]] == ["a2", "a1"]
    assert [a["uid"] for a in out[9]["ok"]["data"]] == ["a1", "a2"]
    asc = [e["id"] for e in out[10]["ok"]["data"]]
    assert [e["id"] for e in out[11]["ok"]["data"]] == asc[::-1] and asc == sorted(asc)
    assert [t["name"] for t in out[12]["ok"]["data"]] == ["b.x", "a.x"]
    assert [t["name"] for t in out[13]["ok"]["data"]] == ["a.x", "b.x"]
    assert [t["name"] for t in out[14]["ok"]["data"]] == ["c.x", "b.x"]
    assert [t["name"] for t in out[15]["ok"]["data"]] == ["a.x"]
    st, body = get(w, root, "/api/v1/event-type", [("order", "sideways")])
    assert bad_param(st, body, "order"), body
    st, body = get(w, root, "/api/v1/event-type", [("include_archived", "1")])
    assert bad_param(st, body, "include_archived"), body


def test_precheck(env, api):
    cfg, w, root = api
    svix(w, root, [{"call": "eventType.create", "args": [{"name": n, "description": n}]}
                   for n in ("order.paid", "invoice.paid", "user_x", "gone")])
    out = svix(w, root, [
        {"call": "application.create", "args": [{"name": "Acme", "uid": "acme"}]},
        {"call": "application.create", "args": [{"name": "Empty", "uid": "empty"}]},
        {"call": "endpoint.create", "args": ["acme", {"url": "https://example.com/a", "eventTypes": ["order.*"]}]},
        {"call": "endpoint.create", "args": ["acme", {"url": "https://example.com/b", "eventTypes": ["user_x"],
                                                      "channels": ["eu"]}]},
        {"call": "endpoint.create", "args": ["acme", {"url": "https://example.com/c", "eventTypes": ["gone"],
                                                      "disabled": True}]},
        {"call": "message.precheck", "args": ["acme", {"eventType": "order.paid"}]},
        {"call": "message.precheck", "args": ["acme", {"eventType": "invoice.paid"}]},
        {"call": "message.precheck", "args": ["acme", {"eventType": "user_x"}]},
        {"call": "message.precheck", "args": ["acme", {"eventType": "user_x", "channels": ["us"]}]},
        {"call": "message.precheck", "args": ["acme", {"eventType": "user_x", "channels": ["us", "eu"]}]},
        {"call": "message.precheck", "args": ["acme", {"eventType": "userAx"}]},
        {"call": "message.precheck", "args": ["acme", {"eventType": "gone"}]},
        {"call": "message.precheck", "args": ["empty", {"eventType": "order.paid"}]},
        {"call": "message.precheck", "args": ["nope", {"eventType": "order.paid"}]},
        {"call": "message.precheck", "args": ["acme", {"eventType": "bad type"}]},
    ])
    assert all("ok" in o for o in out[:5]), out[:5]
    active = [o["ok"]["active"] if "ok" in o else o["status"] for o in out[5:]]
    assert active == [True, False, False, False, True, False, False, False, 404, 422]
    assert "eventType" in json.dumps(out[14]["body"])
    assert env.db.value("SELECT count(*) FROM outbox_events") == 0  # nothing was created


def test_count_by_endpoint(env, api, receivers):
    cfg, w, root = api
    ep, m1, m2 = make_attempts(env, w, root, receivers(fail_marked))
    total = len(get(w, root, f"/api/v1/app/acme/attempt/endpoint/{ep['id']}")[1]["data"])
    base = f"/api/v1/app/acme/attempt/endpoint/{ep['id']}/count"
    answers = [get(w, root, base, q) for q in ([], [("status", "0")], [("channel", "ch2")], [("tag", "t1")],
                                               [("event_types", "b.two")], [("status_code_class", "200")],
                                               [("after", ago(env, 3600))], [("before", ago(env, 3600))])]
    assert all(st == 200 for st, _ in answers), answers
    counts = [b["count"] for _, b in answers]
    assert counts == [total, 1, total - 1, 1, total - 1, 1, total, 0]
    assert all(b["approximated"] is False for _, b in answers)
    st, body = get(w, root, base, [("status_code_class", "250")])
    assert bad_param(st, body, "status_code_class"), body
    assert get(w, root, "/api/v1/app/acme/attempt/endpoint/nope/count")[0] == 404


def test_attempt_headers(env, api, receivers):
    cfg, w, root = api
    rx = receivers()
    out = svix(w, root, [
        {"call": "application.create", "args": [{"name": "Acme", "uid": "acme"}]},
        {"call": "endpoint.create", "args": ["acme", {"url": rx.url(), "headers": {
            "X-Team": "blue", "Authorization": "Bearer s3cret"}}]},
        {"call": "message.create", "args": ["acme", {"eventType": "a.one", "payload": {"n": 1}}]},
    ])
    msg = out[2]["ok"]
    [got] = rx.wait(1)
    wait_for(lambda: env.db.value("SELECT count(*) FROM attempts") == 1, 20, what="the attempt")
    att = svix(w, root, [{"call": "messageAttempt.listByMsg", "args": ["acme", msg["id"]]}])[0]["ok"]["data"][0]
    st, h = get(w, root, f"/api/v1/app/acme/msg/{msg['id']}/attempt/{att['id']}/headers")
    assert st == 200, h
    sent = {k.lower(): v for k, v in h["sentHeaders"].items()}
    # every value shown is the one the receiver got; the secret ones are named, not shown
    for k, v in sent.items():
        assert got.headers[k] == v, (k, v, got.headers.get(k))
    assert sent["webhook-id"] == msg["id"] and sent["x-team"] == "blue"
    assert {"webhook-signature", "Authorization"} <= set(h["sensitive"])
    assert "s3cret" not in json.dumps(h) and got.headers["authorization"] == "Bearer s3cret"
    assert get(w, root, f"/api/v1/app/acme/msg/{msg['id']}/attempt/atmpt_00000000099/headers")[0] == 404


def plan(env, query: str, params: list) -> str:
    """EXPLAIN of sql/queries/<query>.sql (macros written out, as the binary
    holds it) with these parameters, sequential scans disabled: a Seq Scan
    left in the plan is a table that no index can serve."""
    import importlib.util
    from hookdtest.paths import ROOT
    spec = importlib.util.spec_from_file_location("embed", ROOT / "scripts" / "embed.py")
    embed = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(embed)
    path = ROOT / "sql" / "queries" / f"{query}.sql"
    sql = embed.parse_query(str(path), path.read_text())["sql"]
    args = ", ".join("NULL" if p is None else "'" + str(p).replace("'", "''") + "'" for p in params)
    with env.db.conn.cursor() as cur:  # no parameters: the statement's '%' stay as they are
        cur.execute("SET enable_seqscan = off")
        try:
            cur.execute(f"PREPARE q AS {sql}")
            cur.execute(f"EXPLAIN EXECUTE q({args})")
            return "\n".join(r[0] for r in cur.fetchall())
        finally:
            cur.execute("DEALLOCATE ALL")
            cur.execute("RESET enable_seqscan")


def test_filtered_lists_keep_to_their_indexes(env, api, receivers):
    cfg, w, root = api
    ep, m1, m2 = make_attempts(env, w, root, receivers(fail_marked))
    msg, epid, t = m1["id"], ep["id"], "2000-01-01T00:00:00Z"
    msg_uuid = env.db.value("SELECT hookd_api_uuid('msg', %s)::text", msg)
    ep_uuid = env.db.value("SELECT hookd_api_uuid('ep', %s)::text", epid)
    app = env.db.value("SELECT tenant_id FROM outbox_events WHERE id = %s::uuid", msg_uuid)
    filters = ["a.one,b.two", "true", "ch1", "t1", "2100-01-01T00:00:00Z", t]
    plans = {
        "api_message_list (forwards)": plan(env, "api_message_list", [app] + filters + [None, 51, "false"]),
        "api_message_list (after)": plan(env, "api_message_list", [app] + filters + [None, 51, "true"]),
        "api_message_list (iterator)": plan(env, "api_message_list", [app] + filters + [msg, 51, "false"]),
        "api_attempt_list (by msg)": plan(env, "api_attempt_list", [
            app, msg_uuid, ep_uuid, 0, "true", 200, "a.one", "2100-01-01T00:00:00Z", t, "ch1", "t1", "true",
            None, 51, "false"]),
        "api_attempted_messages": plan(env, "api_attempted_messages", [
            app, ep_uuid, 0, "a.one", "2100-01-01T00:00:00Z", t, "true", "ch1", "t1", None, 51, "true"]),
        "api_message_precheck": plan(env, "api_message_precheck", [app, "a.one", '["ch1"]']),
    }
    tenant_index = ("outbox_events_tenant", "tenant_id_created_at_id_idx")  # the parent's and its partitions'
    wants = {name: tenant_index for name in plans if name.startswith("api_message_list")}
    wants["api_attempt_list (by msg)"] = ("event_id_endpoint_id",)
    wants["api_attempted_messages"] = tenant_index
    wants["api_message_precheck"] = ("webhook_endpoints_tenant",)
    for name, text in plans.items():
        assert "Seq Scan" not in text, f"{name}:\n{text}"
        index_lines = [line for line in text.splitlines() if "Index" in line]
        assert any(i in line for i in wants[name] for line in index_lines), f"{name}:\n{text}"


def test_application_list_exclusions(env, api):
    cfg, w, root = api
    svix(w, root, [
        {"call": "application.create", "args": [{"name": "None", "uid": "none"}]},
        {"call": "application.create", "args": [{"name": "Off", "uid": "off"}]},
        {"call": "application.create", "args": [{"name": "On", "uid": "on"}]},
        {"call": "endpoint.create", "args": ["off", {"url": "https://example.com/a", "disabled": True}]},
        {"call": "endpoint.create", "args": ["on", {"url": "https://example.com/b"}]},
        {"call": "endpoint.create", "args": ["on", {"url": "https://example.com/c", "disabled": True}]},
    ])

    def uids(query):
        st, page = get(w, root, "/api/v1/app", query)
        assert st == 200, page
        return sorted(a["uid"] for a in page["data"])
    assert uids([]) == ["none", "off", "on"]
    assert uids([("exclude_apps_with_no_endpoints", "true")]) == ["off", "on"]
    assert uids([("exclude_apps_with_disabled_endpoints", "true")]) == ["none", "on"]
    assert uids([("exclude_apps_with_no_endpoints", "true"), ("exclude_apps_with_disabled_endpoints", "true"),
                 ("exclude_apps_with_svix_play_endpoints", "true")]) == ["on"]
    st, body = get(w, root, "/api/v1/app", [("exclude_apps_with_no_endpoints", "yes")])
    assert bad_param(st, body, "exclude_apps_with_no_endpoints"), body
