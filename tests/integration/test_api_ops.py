"""The rest of the Svix-compatible API, driven by the official `svix` SDK
(tests/node/svix_ops.mjs): one attempt, the messages an endpoint was
attempted with and the endpoints a message was attempted to, endpoint
statistics, replay-missing, expunging a message's payload and an attempt's
response, backward pages (`prevIterator`), each with tenant isolation (a
tenant's token gets 404 for another tenant's objects, 403 for the
organization's operations) and bad input. And the operators' side:
`hookd status --tenant` (that tenant only) and the delivery-policy options
of `hookd endpoint add|update`."""
from __future__ import annotations

import json
import time

from hookdtest.util import wait_for

from test_api import api, deliveries_settled, hookd, new_token, raw, receivers, svix, task_finished  # noqa: F401


def iso(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


def test_attempts_destinations_stats_and_isolation(env, api, receivers):
    cfg, w, root = api
    ok_rx, dead_rx, g_rx = receivers(), receivers(lambda req: (500, {}, b"no")), receivers()
    out = svix(w, root, [
        {"call": "application.create", "args": [{"name": "Acme", "uid": "acme"}]},
        {"call": "application.create", "args": [{"name": "Globex", "uid": "globex"}]},
        {"call": "endpoint.create", "args": ["acme", {"url": ok_rx.url(), "uid": "ok"}], "as": "ok"},
        {"call": "endpoint.create", "args": ["acme", {"url": dead_rx.url(), "uid": "dead"}], "as": "dead"},
        {"call": "endpoint.create", "args": ["globex", {"url": g_rx.url(), "uid": "g"}], "as": "g"},
        {"call": "message.create", "args": ["acme", {"eventType": "a.b", "eventId": "e1", "payload": {"n": 1}}],
         "as": "m1"},
        {"call": "message.create", "args": ["acme", {"eventType": "a.c", "payload": {"n": 2}}], "as": "m2"},
        {"call": "message.create", "args": ["globex", {"eventType": "a.b", "payload": {"n": 3}}], "as": "gm"},
    ])
    assert all("ok" in o for o in out), out
    ok, dead, g = out[2]["ok"], out[3]["ok"], out[4]["ok"]
    m1, m2, gm = out[5]["ok"], out[6]["ok"], out[7]["ok"]
    ok_rx.wait(2)
    g_rx.wait(1)
    dead_rx.wait(8)  # 2 messages x 4 attempts, then dead-lettered
    deliveries_settled(env, 5)
    out = svix(w, root, [
        {"call": "messageAttempt.listByMsg", "args": ["acme", m1["id"], {"withContent": True}], "as": "byMsg"},
        {"call": "messageAttempt.get", "args": ["acme", m1["id"], "$byMsg.data.0.id"]},
        {"call": "messageAttempt.get", "args": ["acme", "e1", "$byMsg.data.0.id"]},  # the eventId names it too
        {"call": "messageAttempt.get", "args": ["acme", m2["id"], "$byMsg.data.0.id"]},  # not m2's attempt
        {"call": "messageAttempt.get", "args": ["acme", m1["id"], "atmpt_nope"]},
        {"call": "messageAttempt.listAttemptedMessages", "args": ["acme", ok["id"]]},
        {"call": "messageAttempt.listAttemptedMessages", "args": ["acme", "dead", {"status": 2, "withContent": True}]},
        {"call": "messageAttempt.listAttemptedMessages", "args": ["acme", "dead", {"status": 0}]},
        {"call": "messageAttempt.listAttemptedMessages", "args": ["acme", "ok", {"eventTypes": ["a.c"]}]},
        {"call": "messageAttempt.listAttemptedDestinations", "args": ["acme", m1["id"]]},
        {"call": "messageAttempt.listAttemptedDestinations", "args": ["acme", m1["id"], {"limit": 1}], "as": "d1"},
        {"call": "messageAttempt.listAttemptedDestinations", "args": ["acme", m1["id"],
                                                                       {"limit": 1, "iterator": "$d1.iterator"}],
         "as": "d2"},
        {"call": "messageAttempt.listAttemptedDestinations", "args": ["acme", m1["id"],
                                                                       {"limit": 1, "iterator": "$d2.prevIterator"}]},
        {"call": "endpoint.getStats", "args": ["acme", "ok"]},
        {"call": "endpoint.getStats", "args": ["acme", dead["id"], {"since": iso(time.time() - 3600)}]},
        {"call": "endpoint.getStats", "args": ["acme", "ok", {"since": iso(time.time() - 40 * 86400)}]},
        {"call": "endpoint.getStats", "args": ["acme", "ok", {"until": iso(time.time() + 86400)}]},
        {"call": "endpoint.getStats", "args": ["acme", "ok", {"since": "yesterday"}]},
    ])
    a = out[0]["ok"]["data"]
    assert len(a) == 5 and {x["endpointId"] for x in a} == {ok["id"], dead["id"]}
    got = out[1]["ok"]
    assert got == a[0] and out[2]["ok"] == a[0]
    assert got["id"].startswith("atmpt_") and got["msgId"] == m1["id"] and got["url"] in (ok_rx.url(), dead_rx.url())
    assert out[3]["status"] == 404 and out[4]["status"] == 404 and out[4]["body"]["code"] == "not_found"
    listed = out[5]["ok"]["data"]
    assert [x["id"] for x in listed] == [m2["id"], m1["id"]]  # newest first
    assert all(x["status"] == 0 and x["statusText"] == "success" and x["payload"] == {} for x in listed)
    failed = out[6]["ok"]["data"]
    assert [x["id"] for x in failed] == [m2["id"], m1["id"]] and failed[1]["payload"] == {"n": 1}
    assert all(x["status"] == 2 and x["statusText"] == "fail" for x in failed)
    assert out[7]["ok"]["data"] == [] and out[7]["ok"]["done"] is True
    assert [x["eventType"] for x in out[8]["ok"]["data"]] == ["a.c"]
    dests = out[9]["ok"]["data"]
    assert sorted(dests, key=lambda d: d["id"]) == dests and len(dests) == 2
    by_id = {d["id"]: d for d in dests}
    assert by_id[ok["id"]]["status"] == 0 and by_id[ok["id"]]["url"] == ok_rx.url()
    assert by_id[dead["id"]]["status"] == 2 and by_id[dead["id"]]["statusText"] == "fail"
    d1, d2, back = out[10]["ok"], out[11]["ok"], out[12]["ok"]
    assert d1["done"] is False and d2["done"] is True and d1["data"] + d2["data"] == dests
    assert d2["prevIterator"] == "-" + d2["data"][0]["id"] and back["data"] == d1["data"]
    assert out[13]["ok"] == {"success": 2, "pending": 0, "sending": 0, "fail": 0, "canceled": 0}
    assert out[14]["ok"]["fail"] == 8 and out[14]["ok"]["success"] == 0
    assert out[15]["status"] == 400 and out[15]["body"]["code"] == "invalid_range"
    assert out[16]["status"] == 400 and out[16]["body"]["code"] == "invalid_range"
    assert out[17]["status"] == 400 and "since" in out[17]["body"]["detail"]
    # the attempt lists' filters: status code class, event types, before/after
    out = svix(w, root, [
        {"call": "messageAttempt.listByEndpoint", "args": ["acme", "dead", {"statusCodeClass": 500}]},
        {"call": "messageAttempt.listByEndpoint", "args": ["acme", "dead", {"statusCodeClass": 200}]},
        {"call": "messageAttempt.listByEndpoint", "args": ["acme", "ok", {"statusCodeClass": 200}]},
        {"call": "messageAttempt.listByEndpoint", "args": ["acme", "ok", {"eventTypes": ["a.c"]}]},
        {"call": "messageAttempt.listByMsg", "args": ["acme", m1["id"], {"before": iso(time.time() - 3600)}]},
        {"call": "messageAttempt.listByMsg", "args": ["acme", m1["id"], {"after": iso(time.time() - 3600),
                                                                         "endpointId": "ok"}]},
    ])
    assert len(out[0]["ok"]["data"]) == 8 and all(x["responseStatusCode"] == 500 for x in out[0]["ok"]["data"])
    assert out[1]["ok"]["data"] == [] and len(out[2]["ok"]["data"]) == 2
    assert [x["msgId"] for x in out[3]["ok"]["data"]] == [m2["id"]]
    assert out[4]["ok"]["data"] == [] and [x["endpointId"] for x in out[5]["ok"]["data"]] == [ok["id"]]
    # a tenant's token: another tenant's attempts, messages and endpoints are 404 (never 403)
    globex_tok = new_token(cfg, "globex-token", "globex")
    out = svix(w, globex_tok, [
        {"call": "messageAttempt.get", "args": ["acme", m1["id"], got["id"]]},
        {"call": "messageAttempt.listAttemptedMessages", "args": ["acme", ok["id"]]},
        {"call": "messageAttempt.listAttemptedDestinations", "args": ["acme", m1["id"]]},
        {"call": "endpoint.getStats", "args": ["acme", ok["id"]]},
        {"call": "messageAttempt.listAttemptedDestinations", "args": ["globex", gm["id"]]},
        {"call": "endpoint.getStats", "args": ["globex", "g"]},
        # acme's ids under globex's application: not found either
        {"call": "messageAttempt.get", "args": ["globex", m1["id"], got["id"]]},
        {"call": "messageAttempt.listAttemptedMessages", "args": ["globex", ok["id"]]},
        {"call": "endpoint.getStats", "args": ["globex", ok["id"]]},
    ])
    assert [o.get("status") for o in out[:4]] == [404] * 4
    assert [d["id"] for d in out[4]["ok"]["data"]] == [g["id"]]
    assert out[5]["ok"]["success"] == 1
    assert [o.get("status") for o in out[6:]] == [404] * 3
    # bad input, raw: what the SDK's types would not send
    for path in ("/api/v1/app/acme/endpoint/ok/msg?status=7", "/api/v1/app/acme/endpoint/ok/msg?before=nope",
                 "/api/v1/app/acme/attempt/endpoint/ok?status=x", f"/api/v1/app/acme/msg/{m1['id']}/endpoint?limit=0",
                 "/api/v1/app/acme/attempt/endpoint/ok?status_code_class=250",
                 f"/api/v1/app/acme/attempt/msg/{m1['id']}?after=2026-13"):
        st, body = raw(w, "GET", path, root)
        if "limit=0" in path:  # the right type, out of range: a validation error
            assert st == 422 and body["detail"][0]["loc"][0] == "query", (path, body)
        else:  # not of the parameter's type: Svix's query deserialisation fails
            assert st == 400 and body["code"] == "generic_error", (path, body)


def test_prev_iterator_pages_back(env, api):
    cfg, w, root = api
    ops = [{"call": "application.create", "args": [{"name": f"App {i}", "uid": f"app{i}"}]} for i in range(5)]
    ops += [{"call": "message.create", "args": ["app0", {"eventType": "a.b", "payload": {"i": i}}]} for i in range(5)]
    ops += [{"call": "eventType.create", "args": [{"name": f"t.{i}", "description": "d"}]} for i in range(3)]
    svix(w, root, ops)
    out = svix(w, root, [
        {"call": "application.list", "args": [{"limit": 2}], "as": "a1"},
        {"call": "application.list", "args": [{"limit": 2, "iterator": "$a1.iterator"}], "as": "a2"},
        {"call": "application.list", "args": [{"limit": 2, "iterator": "$a2.prevIterator"}]},
        {"call": "message.list", "args": ["app0", {"withContent": True, "limit": 2}], "as": "m1"},
        {"call": "message.list", "args": ["app0", {"withContent": True, "limit": 2, "iterator": "$m1.iterator"}], "as": "m2"},
        {"call": "message.list", "args": ["app0", {"withContent": True, "limit": 2, "iterator": "$m2.prevIterator"}]},
        {"call": "message.list", "args": ["app0", {"withContent": True, "limit": 2, "iterator": "$m1.prevIterator"}]},
        {"call": "eventType.list", "args": [{"limit": 1}], "as": "t1"},
        {"call": "eventType.list", "args": [{"limit": 1, "iterator": "$t1.iterator"}], "as": "t2"},
        {"call": "eventType.list", "args": [{"limit": 1, "iterator": "$t2.prevIterator"}]},
    ])
    a1, a2, a_back = (out[i]["ok"] for i in range(3))
    ids = [a["id"] for a in a1["data"] + a2["data"]]
    assert ids == sorted(ids) and len(ids) == 4 and a2["done"] is False
    assert a1["prevIterator"] == "-" + a1["data"][0]["id"] and a1["iterator"] == a1["data"][-1]["id"]
    assert a_back["data"] == a1["data"] and a_back["done"] is True  # nothing before the first page
    m1, m2, m_back, m_none = (out[i]["ok"] for i in range(3, 7))
    assert [m["payload"]["i"] for m in m1["data"] + m2["data"]] == [4, 3, 2, 1]  # newest first
    assert m_back["data"] == m1["data"]
    assert m_none["data"] == [] and m_none["done"] is True and "prevIterator" not in m_none
    assert out[9]["ok"]["data"] == out[7]["ok"]["data"]
    # endpoints and attempts page back the same way (raw: the endpoint list's prevIterator)
    for i in range(3):
        st, _ = raw(w, "POST", "/api/v1/app/app1/endpoint", root, {"url": f"http://127.0.0.1:9/{i}"})
        assert st == 201
    st, e1 = raw(w, "GET", "/api/v1/app/app1/endpoint?limit=2", root)
    st, e2 = raw(w, "GET", f"/api/v1/app/app1/endpoint?limit=2&iterator={e1['iterator']}", root)
    st, e_back = raw(w, "GET", f"/api/v1/app/app1/endpoint?limit=2&iterator={e2['prevIterator']}", root)
    assert len(e2["data"]) == 1 and e2["done"] is True and e_back["data"] == e1["data"]
    # Svix's `order`: endpoints list newest first by default, applications oldest first
    ep_ids = [e["id"] for e in e1["data"] + e2["data"]]
    assert ep_ids == sorted(ep_ids, reverse=True)
    st, asc = raw(w, "GET", "/api/v1/app/app1/endpoint?order=ascending", root)
    assert [e["id"] for e in asc["data"]] == sorted(ep_ids)
    out = svix(w, root, [{"call": "application.list", "args": [{"order": "descending", "limit": 2}], "as": "d1"},
                         {"call": "application.list", "args": [{"order": "descending", "limit": 2,
                                                                "iterator": "$d1.iterator"}], "as": "d2"},
                         {"call": "application.list", "args": [{"order": "descending", "limit": 2,
                                                                "iterator": "$d2.prevIterator"}]}])
    desc = [a["id"] for a in out[0]["ok"]["data"] + out[1]["ok"]["data"]]
    assert desc == sorted(desc, reverse=True) and len(desc) == 4 and out[2]["ok"]["data"] == out[0]["ok"]["data"]
    assert raw(w, "GET", "/api/v1/app?order=sideways", root)[0] == 400


def test_replay_missing_and_expunge(env, api, receivers):
    cfg, w, root = api
    first, late, picky, retry_rx = receivers(), receivers(), receivers(), receivers(lambda req: (500, {}, b"x"))
    since = iso(time.time() - 60)
    out = svix(w, root, [
        {"call": "eventType.create", "args": [{"name": "invoice.paid", "description": "paid"}]},
        {"call": "eventType.create", "args": [{"name": "invoice.voided", "description": "voided"}]},
        {"call": "application.create", "args": [{"name": "Acme", "uid": "acme"}]},
        {"call": "application.create", "args": [{"name": "Globex", "uid": "globex"}]},
        {"call": "endpoint.create", "args": ["acme", {"url": first.url()}]},
        {"call": "message.create", "args": ["acme", {"eventType": "invoice.paid", "payload": {"n": 1}}], "as": "m1"},
        {"call": "message.create", "args": ["acme", {"eventType": "invoice.voided", "payload": {"n": 2}}]},
        {"call": "message.create", "args": ["acme", {"eventType": "invoice.paid", "payload": {"n": 3}}], "as": "m3"},
        {"call": "message.create", "args": ["globex", {"eventType": "invoice.paid", "payload": {"n": 9}}],
         "as": "gm"},
    ])
    assert all("ok" in o for o in out), out
    m1, m3, gm = out[5]["ok"], out[7]["ok"], out[8]["ok"]
    first.wait(3)
    deliveries_settled(env, 3)
    # endpoints created afterwards: the messages they never got go to them if their filters match
    out = svix(w, root, [
        {"call": "endpoint.create", "args": ["acme", {"url": late.url(), "uid": "late",
                                                      "eventTypes": ["invoice.paid"]}]},
        {"call": "endpoint.replayMissing", "args": ["acme", "late", {"since": since}]},
        {"call": "endpoint.get", "args": ["acme", "late"]},
        {"call": "endpoint.replayMissing", "args": ["acme", "late", {"since": "soon"}]},
        {"call": "endpoint.replayMissing", "args": ["globex", "late", {"since": since}]},
    ])
    r1 = out[1]["ok"]
    assert r1["task"] == "endpoint.replay"
    # the task's count of messages sent is in its `data`
    assert task_finished(w, root, r1)["data"] == {"messagesSent": 2}
    st, r2 = raw(w, "POST", f"/api/v1/app/acme/endpoint/{out[2]['ok']['id']}/replay-missing", root, {"since": since})
    assert st == 202 and task_finished(w, root, r2)["data"] == {"messagesSent": 0}  # never twice
    assert out[3]["status"] == 422 and out[3]["body"]["detail"][0]["loc"] == ["body", "since"]
    assert out[4]["status"] == 404
    got = late.wait(2)
    deliveries_settled(env, 5)
    assert env.db.value("SELECT count(*) FROM outbox_deliveries WHERE endpoint_id = hookd_api_uuid('ep', %s)",
                        out[2]["ok"]["id"]) == 2
    assert sorted(json.loads(r.body)["n"] for r in got) == [1, 3]  # not the voided one, nor globex's
    # payloadFilter (raw: the SDK drops fields it does not know) applies as at fan-out
    st, ep = raw(w, "POST", "/api/v1/app/acme/endpoint", root, {"url": picky.url(), "payloadFilter": {"n": 3}})
    assert st == 201
    st, r = raw(w, "POST", f"/api/v1/app/acme/endpoint/{ep['id']}/replay-missing", root, {"since": since})
    assert st == 202 and task_finished(w, root, r)["data"] == {"messagesSent": 1}
    assert [json.loads(x.body)["n"] for x in picky.wait(1)] == [3]
    # expunge: the organization's operation; a tenant's token is refused whatever the application
    acme_tok = new_token(cfg, "acme-token", "acme")
    out = svix(w, acme_tok, [{"call": "message.expungeContent", "args": ["acme", m1["id"]]},
                             {"call": "message.expungeContent", "args": ["globex", gm["id"]]}])
    assert out[0]["status"] == 403 and out[1]["status"] == 403
    out = svix(w, root, [
        {"call": "messageAttempt.listByMsg", "args": ["acme", m3["id"], {"withContent": True}], "as": "att"},
        {"call": "message.expungeContent", "args": ["acme", m1["id"]]},
        {"call": "message.get", "args": ["acme", m1["id"], {"withContent": True}]},
        {"call": "messageAttempt.resend", "args": ["acme", m1["id"], "late"]},
        {"call": "message.expungeContent", "args": ["acme", gm["id"]]},  # globex's message, acme's path
        {"call": "message.expungeContent", "args": ["acme", "msg_nope"]},
        {"call": "messageAttempt.expungeContent", "args": ["acme", m3["id"], "$att.data.0.id"]},
        {"call": "messageAttempt.get", "args": ["acme", m3["id"], "$att.data.0.id"]},
        {"call": "messageAttempt.expungeContent", "args": ["acme", m1["id"], "$att.data.0.id"]},
        {"call": "message.get", "args": ["globex", gm["id"], {"withContent": True}]},
    ])
    assert out[0]["ok"]["data"][0]["response"] == "ok"
    assert out[1]["ok"] is None and out[2]["ok"]["payload"] == {"expired": True}
    assert out[3]["status"] == 400 and out[3]["body"]["code"] == "missing_payload"
    assert out[4]["status"] == 404 and out[5]["status"] == 404
    assert out[6]["ok"] is None and out[7]["ok"]["response"] == "EXPUNGED"
    assert out[8]["status"] == 404  # that attempt is m3's, not m1's
    assert out[9]["ok"]["payload"] == {"n": 9}
    assert env.db.value("SELECT count(*) FROM outbox_events WHERE payload = '{\"n\": 1}'::jsonb") == 0
    # a message still being retried is never sent again once expunged; its delivery is closed
    svix(w, root, [{"call": "endpoint.create", "args": ["globex", {"url": retry_rx.url(), "uid": "flaky"}]}])
    m = svix(w, root, [{"call": "message.create", "args": ["globex", {"eventType": "invoice.paid",
                                                                       "payload": {"n": 10}}]}])[0]["ok"]
    retry_rx.wait(1)
    assert svix(w, root, [{"call": "message.expungeContent", "args": ["globex", m["id"]]}])[0]["ok"] is None
    assert env.db.value("SELECT count(*) FROM outbox_deliveries d WHERE d.event_id = hookd_api_uuid('msg', %s)"
                        " AND d.status IN ('PENDING', 'RETRYING')", m["id"]) == 0
    assert env.db.value("SELECT count(*) FROM dead_letters dl JOIN outbox_deliveries d ON d.id = dl.source_id"
                        " WHERE d.event_id = hookd_api_uuid('msg', %s) AND dl.replayed_at IS NULL", m["id"]) == 0
    st, rec = raw(w, "POST", "/api/v1/app/globex/endpoint/flaky/recover", root, {"since": since})
    assert st == 202 and task_finished(w, root, rec)["data"] == {"messagesSent": 0}  # recover leaves it too
    assert not any(json.loads(r.body) == {"expired": True} for r in retry_rx.got())


def test_cli_status_tenant_and_endpoint_policies(env, api, receivers):
    cfg, w, root = api
    rx, dead_rx, other_rx = receivers(), receivers(lambda req: (500, {}, b"no")), receivers()
    hookd(cfg, "tenant", "add", "acme")
    hookd(cfg, "tenant", "add", "globex")
    # -c before and after the subcommand
    hookd(cfg, "endpoint", "add", "--url", rx.url(), "--name", "acme-main", "--tenant", "acme",
          "--headers", '{"X-Team": "billing", "Authorization": "Bearer t0k"}', "--rate-limit", "50", "--ordered")
    r = run_cli(["endpoint", "add", "-c", str(cfg), "--url", dead_rx.url(), "--name", "acme-dead", "--tenant", "acme"])
    assert r.returncode == 0, r.stderr
    hookd(cfg, "endpoint", "add", "--url", other_rx.url(), "--name", "globex-secret-hook", "--tenant", "globex")
    row = env.db.one("SELECT headers, rate_limit, ordered FROM webhook_endpoints WHERE name = 'acme-main'")
    assert dict(row) == {"headers": {"X-Team": "billing", "Authorization": "Bearer t0k"}, "rate_limit": 50,
                         "ordered": True}
    shown = hookd(cfg, "endpoint", "show", "acme-main").stdout
    assert "headers: Authorization, X-Team" in shown and "rate_limit: 50" in shown and "ordered: yes" in shown
    assert "t0k" not in shown  # header values are not printed
    # the custom headers go out with the deliveries
    for n in (1, 2):
        env.db.value("SELECT hookd_emit('order', '1', 'order.paid', %s::jsonb, p_tenant => 'acme')",
                     json.dumps({"n": n}))
    env.db.value("SELECT hookd_emit('order', '2', 'order.paid', '{}'::jsonb, p_tenant => 'globex')")
    got = rx.wait(2)
    assert all(g.headers.get("x-team") == "billing" for g in got)
    other_rx.wait(1)
    dead_rx.wait(8)
    wait_for(lambda: env.db.value("SELECT count(*) FROM dead_letters WHERE replayed_at IS NULL") == 2, 20,
             what="2 dead letters")
    # update: what is not given stays; none/{}/--unordered take policies off
    r = run_cli(["-c", str(cfg), "endpoint", "update", "acme-main", "--headers", "{}", "--rate-limit", "none",
                 "--unordered"])
    assert r.returncode == 0 and "endpoint acme-main updated" in r.stdout, r.stderr
    row = env.db.one("SELECT headers, rate_limit, ordered, url FROM webhook_endpoints WHERE name = 'acme-main'")
    assert dict(row) == {"headers": {}, "rate_limit": None, "ordered": False, "url": rx.url()}
    hookd(cfg, "endpoint", "update", "acme-main", "--rate-limit", "7", "--ordered", "--events", "order.*")
    row = env.db.one("SELECT rate_limit, ordered, event_types FROM webhook_endpoints WHERE name = 'acme-main'")
    assert dict(row) == {"rate_limit": 7, "ordered": True, "event_types": ["order.*"]}
    for args, words in ((["add", "--url", rx.url(), "--headers", '{"Host": "evil"}'], "--headers"),
                        (["add", "--url", rx.url(), "--headers", "[1]"], "--headers"),
                        (["add", "--url", rx.url(), "--rate-limit", "0"], "--rate-limit"),
                        (["update", "acme-main", "--rate-limit", "-3"], "--rate-limit"),
                        (["update", "acme-main", "--ordered", "--unordered"], "contradict"),
                        (["update", "nope", "--ordered"], "no endpoint named 'nope'")):
        r = run_cli(["-c", str(cfg), "endpoint", *args])
        assert r.returncode != 0 and words in r.stderr, (args, r.stderr)
    assert env.db.value("SELECT rate_limit FROM webhook_endpoints WHERE name = 'acme-main'") == 7
    # status --tenant: that tenant's endpoints, queues and DLQ, nothing of globex's
    r = run_cli(["status", "--tenant", "acme", "-c", str(cfg), "--json"])
    assert r.returncode == 0, r.stderr
    s = json.loads(r.stdout)
    assert s["tenant"]["uid"] == "acme" and [e["name"] for e in s["endpoints"]] == ["acme-dead", "acme-main"]
    assert s["dlq_size"] == 2 and s["endpoints"][0]["dead"] == 2 and s["endpoints"][0]["dlq"] == 2
    assert s["queues"]["delivery"]["open"] == 0 and s["queues"]["relay"]["unfanned"] == 0
    assert "workers" not in s and "counters" not in s
    text = run_cli(["-c", str(cfg), "status", "--tenant", "acme"])
    assert text.returncode == 0, text.stderr
    for out in (r.stdout, text.stdout):
        assert "globex" not in out and other_rx.url() not in out
    assert "acme-main" in text.stdout and "DLQ: 2 open dead letters" in text.stdout
    s = json.loads(run_cli(["-c", str(cfg), "status", "--json", "--tenant", "globex"]).stdout)
    assert [e["name"] for e in s["endpoints"]] == ["globex-secret-hook"] and s["dlq_size"] == 0
    r = run_cli(["-c", str(cfg), "status", "--tenant", "nobody"])
    assert r.returncode == 1 and "no tenant 'nobody'" in r.stderr


def run_cli(args: list[str]):
    from hookdtest.worker import run_hookd
    return run_hookd(args)
