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
