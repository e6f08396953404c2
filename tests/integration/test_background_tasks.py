"""Background tasks (Svix's background-task operations): recover and
replay-missing answer 202 with a running task that the workers' task runner
(engine/outbound/task_runner.c) works through in batches; background-task
get and list show them, with their data, within the token's tenant; and a
task survives kill -9 of the worker running it, resumed by the next worker
from the last committed batch, nothing sent twice."""
from __future__ import annotations

import json
import time

from hookdtest.services import Db
from hookdtest.util import wait_for
from test_api import api, deliveries_settled, new_token, raw, receivers, svix, task_finished  # noqa: F401
from test_outbound import outbound_config


def iso(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


def test_recover_and_replay_tasks_through_the_sdk(env, api, receivers):
    cfg, w, root = api
    rx, late = receivers(), receivers()
    since = iso(time.time() - 60)
    out = svix(w, root, [
        {"call": "application.create", "args": [{"name": "Acme", "uid": "acme"}]},
        {"call": "application.create", "args": [{"name": "Globex", "uid": "globex"}]},
        {"call": "endpoint.create", "args": ["acme", {"url": rx.url()}]},
        *[{"call": "message.create", "args": ["acme", {"eventType": "order.paid", "payload": {"n": n}}]}
          for n in range(3)],
        {"call": "message.create", "args": ["globex", {"eventType": "order.paid", "payload": {"n": 9}}]},
    ])
    assert all("ok" in o for o in out), out
    rx.wait(3)
    deliveries_settled(env, 3)
    out = svix(w, root, [
        {"call": "endpoint.create", "args": ["acme", {"url": late.url(), "uid": "late"}]},
        {"call": "endpoint.replayMissing", "args": ["acme", "late", {"since": since}]},
        {"call": "endpoint.create", "args": ["globex", {"url": late.url(), "uid": "glate"}]},
        {"call": "endpoint.replayMissing", "args": ["globex", "glate", {"since": since}]},
        {"call": "endpoint.recover", "args": ["acme", "late", {"since": since}]},
    ])
    replay, greplay, recover = out[1]["ok"], out[3]["ok"], out[4]["ok"]
    # RecoverOut / ReplayOut: the task, running; the work is the runner's
    assert set(replay) == {"id", "status", "task", "updatedAt"}, replay
    assert (replay["status"], replay["task"]) == ("running", "endpoint.replay") and replay["id"].startswith("qtask_")
    assert recover["task"] == "endpoint.recover"
    for started in (replay, greplay, recover):
        task_finished(w, root, started)
    got = svix(w, root, [{"call": "backgroundTask.get", "args": [t["id"]]} for t in (replay, greplay, recover)])
    assert [g["ok"]["data"] for g in got] == [{"messagesSent": 3}, {"messagesSent": 1}, {"messagesSent": 0}]
    assert got[0]["ok"]["id"] == replay["id"] and got[0]["ok"]["status"] == "finished"
    assert sorted(json.loads(r.body)["n"] for r in late.wait(4)) == [0, 1, 2, 9]
    deliveries_settled(env, 7)
    assert env.db.value("SELECT count(*) FROM outbox_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id"
                        " WHERE e.uid IN ('late', 'glate') AND d.status = 'SUCCEEDED'") == 4

    # list: newest first, Svix's filters, pages
    ids = [replay["id"], greplay["id"], recover["id"]]
    out = svix(w, root, [
        {"call": "backgroundTask.list", "args": [{}]},
        {"call": "backgroundTask.list", "args": [{"task": "endpoint.replay"}]},
        {"call": "backgroundTask.list", "args": [{"task": "endpoint.recover", "status": "finished"}]},
        {"call": "backgroundTask.list", "args": [{"status": "running"}]},
        {"call": "backgroundTask.list", "args": [{"limit": 2, "order": "ascending"}], "as": "p1"},
        {"call": "backgroundTask.list", "args": [{"limit": 2, "order": "ascending", "iterator": "$p1.iterator"}]},
    ])
    assert [t["id"] for t in out[0]["ok"]["data"]] == ids[::-1] and out[0]["ok"]["done"] is True
    assert [t["id"] for t in out[1]["ok"]["data"]] == [greplay["id"], replay["id"]]
    assert [t["id"] for t in out[2]["ok"]["data"]] == [recover["id"]]
    assert out[3]["ok"]["data"] == []
    assert [t["id"] for t in out[4]["ok"]["data"]] == ids[:2] and out[4]["ok"]["done"] is False
    assert [t["id"] for t in out[5]["ok"]["data"]] == ids[2:] and out[5]["ok"]["done"] is True
    st, bad = raw(w, "GET", "/api/v1/background-task?status=done", root)
    assert st == 400 and bad["detail"].startswith("Failed to deserialize query string: status: "), bad
    st, bad = raw(w, "GET", "/api/v1/background-task?task=endpoint.nap", root)
    assert st == 400 and bad["detail"].startswith("Failed to deserialize query string: task: "), bad

    # a tenant's token sees its own tasks only: another's is not found
    acme = new_token(cfg, "acme-token", "acme")
    out = svix(w, acme, [
        {"call": "backgroundTask.get", "args": [greplay["id"]]},
        {"call": "backgroundTask.get", "args": [replay["id"]]},
        {"call": "backgroundTask.list", "args": [{}]},
        {"call": "backgroundTask.get", "args": ["qtask_" + "0" * 22]},
    ])
    assert out[0]["status"] == 404 and out[0]["body"]["code"] == "not_found", out[0]
    assert out[1]["ok"]["id"] == replay["id"]
    assert [t["id"] for t in out[2]["ok"]["data"]] == [recover["id"], replay["id"]]
    assert out[3]["status"] == 404


def test_a_task_survives_kill_9_of_its_worker(env, receivers):
    """A replay of 250 messages (three batches): the worker is killed while
    the second batch waits on a row lock; the next worker resumes the task
    after the first batch, and every message reaches the endpoint once."""
    cfg = outbound_config(env)
    w = env.worker(cfg)
    root = new_token(cfg, "root")
    rx, late = receivers(), receivers()
    since = iso(time.time() - 60)
    app = svix(w, root, [{"call": "application.create", "args": [{"name": "Acme", "uid": "acme"}]},
                         {"call": "endpoint.create", "args": ["acme", {"url": rx.url()}]}])[0]["ok"]
    for chunk in range(5):
        out = svix(w, root, [{"parallel": [
            {"call": "message.create", "args": ["acme", {"eventType": "order.paid", "payload": {"n": chunk * 50 + i}}]}
            for i in range(50)]}])
        assert all("ok" in o for o in out[0]["ok"]), out
    rx.wait(250, timeout=60)
    deliveries_settled(env, 250)
    ids = [r["id"] for r in env.db.all("SELECT id::text AS id FROM outbox_events WHERE tenant_id = %s ORDER BY id",
                                       app["id"])]
    assert len(ids) == 250

    # the second batch (messages 100-199) will wait on message 150's row
    blocker = Db(env.db_url)
    blocker.conn.autocommit = False
    try:
        blocker.value("SELECT 1 FROM outbox_events WHERE id = %s FOR UPDATE", ids[150])
        ep = svix(w, root, [{"call": "endpoint.create", "args": ["acme", {"url": late.url(), "uid": "late"}]}])[0]
        st, task = raw(w, "POST", "/api/v1/app/acme/endpoint/late/replay-missing", root, {"since": since})
        assert st == 202 and task["status"] == "running", task
        wait_for(lambda: env.db.value(
            "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
            " AND query LIKE '%%task_runner_replay_insert%%'") == 1, 20, what="the second batch waiting")
        row = env.db.one("SELECT status, batches, data FROM hookd_background_tasks")
        assert (row["status"], row["batches"], row["data"]) == ("running", 1, {"messagesSent": 100}), row
        # the first batch's deliveries are all made before the kill: nothing of it is in flight
        late.wait(100)
        deliveries_settled(env, 350)
        w.kill9()
    finally:
        blocker.conn.rollback()
        blocker.close()

    w2 = env.worker(cfg)
    done = task_finished(w2, root, task)
    assert done["data"] == {"messagesSent": 250}, done
    got = late.wait(250, timeout=30)
    deliveries_settled(env, 500)
    assert sorted(json.loads(r.body)["n"] for r in got) == list(range(250))  # each once
    assert len({r.event_id for r in got}) == 250
    assert env.db.value("SELECT count(*) FROM outbox_deliveries WHERE endpoint_id = hookd_api_uuid('ep', %s)",
                        ep["ok"]["id"]) == 250
    assert env.db.value("SELECT batches FROM hookd_background_tasks") == 3


def test_bulk_replay_filters_and_expunge_all_contents(env, api, receivers):
    cfg, w, root = api
    failing = {"on": True}
    rx = receivers(lambda req: (500, {}, b"no") if failing["on"] and b'"fail"' in req.body else (200, {}, b"ok"))
    since = iso(time.time() - 60)
    paid = "order.paid"
    out = svix(w, root, [
        {"call": "application.create", "args": [{"name": "Acme", "uid": "acme"}]},
        {"call": "application.create", "args": [{"name": "Globex", "uid": "globex"}]},
        {"call": "endpoint.create", "args": ["acme", {"url": rx.url(), "uid": "main"}]},
        {"call": "message.create", "args": ["acme", {"eventType": paid, "payload": {"n": 0}, "channels": ["eu"],
                                                     "tags": ["vip"]}]},
        {"call": "message.create", "args": ["acme", {"eventType": paid, "payload": {"n": 1}}]},
        {"call": "message.create", "args": ["acme", {"eventType": "order.refunded", "payload": {"n": 2},
                                                     "eventId": "evt-2"}]},
        {"call": "message.create", "args": ["acme", {"eventType": paid, "payload": {"n": 3, "fail": True}}]},
        {"call": "message.create", "args": ["globex", {"eventType": paid, "payload": {"n": 9}}]},
    ])
    assert all("ok" in o for o in out), out
    m1, gm = out[4]["ok"], out[7]["ok"]
    wait_for(lambda: env.db.value("SELECT count(*) FROM outbox_deliveries WHERE status = 'SUCCEEDED'") == 3
             and env.db.value("SELECT count(*) FROM outbox_deliveries WHERE status = 'DEAD'") == 1, 30,
             what="3 deliveries succeeded, 1 dead")
    failing["on"] = False
    before = len(rx.got())

    def bulk(body):
        return {"call": "endpoint.bulkReplay", "args": ["acme", "main", {"since": since, **body}]}
    out = svix(w, root, [
        bulk({"eventTypes": [paid], "status": 0}),  # the sent order.paid ones: n 0 and 1
        bulk({"statusCodeClass": 500}),             # the one whose last attempt got a 5xx: n 3
        bulk({"channel": "eu"}),                    # n 0
        bulk({"tag": "vip", "until": iso(time.time() - 30)}),  # nothing before the messages
        bulk({"statusCodeClass": 250}),
        bulk({"channel": "a b"}),
        {"call": "endpoint.bulkReplay", "args": ["acme", "main", {}]},
        {"call": "endpoint.bulkReplay", "args": ["globex", "main", {"since": since}]},
    ])
    tasks = [o["ok"] for o in out[:4]]
    assert all(t["task"] == "endpoint.bulk-replay" for t in tasks), tasks
    assert [task_finished(w, root, t)["data"] for t in tasks] == [
        {"messagesSent": 2}, {"messagesSent": 1}, {"messagesSent": 1}, {"messagesSent": 0}]
    assert out[4]["status"] == 422 and out[4]["body"]["detail"][0]["loc"] == ["body", "statusCodeClass"]
    assert out[5]["status"] == 422 and out[5]["body"]["detail"][0]["loc"] == ["body", "channel"]
    assert out[6]["status"] == 422 and out[7]["status"] == 404
    got = rx.wait(before + 4)
    assert sorted(json.loads(r.body)["n"] for r in got[before:]) == [0, 0, 1, 3]
    deliveries_settled(env, 4)  # the same deliveries, opened again
    assert env.db.value("SELECT count(*) FROM outbox_deliveries WHERE status = 'SUCCEEDED'") == 4

    # bulk-expunge-content (answered at once) and expunge-all-contents (a task): the organization's
    # operations; the other application keeps its content
    acme = new_token(cfg, "acme-token", "acme")
    out = svix(w, acme, [{"call": "message.expungeAllContents", "args": ["acme"]},
                         {"call": "message.bulkExpungeContent", "args": ["acme", {"ids": [m1["id"]]}]}])
    assert out[0]["status"] == 403 and out[1]["status"] == 403, out
    out = svix(w, root, [{"call": "message.bulkExpungeContent", "args": ["acme", {"ids": [
        m1["id"], "evt-2", "msg_nope", gm["id"]]}]}])
    assert out[0]["ok"]["results"] == {m1["id"]: "expunged", "evt-2": "expunged", "msg_nope": "not-found",
                                       gm["id"]: "not-found"}, out
    st, bad = raw(w, "POST", "/api/v1/app/acme/msg/bulk-expunge", root, {"ids": [""]})
    assert st == 422 and bad["detail"][0]["loc"] == ["body", "ids"], bad
    out = svix(w, root, [{"call": "message.expungeAllContents", "args": ["acme"]},
                         {"call": "message.expungeAllContents", "args": ["nobody"]}])
    purge = out[0]["ok"]
    assert purge["task"] == "application.purge_content" and out[1]["status"] == 404, out
    assert task_finished(w, root, purge)["data"] == {"messagesPurged": 2}  # the two not expunged yet
    out = svix(w, root, [{"call": "message.list", "args": ["acme", {"withContent": True}]},
                         {"call": "message.get", "args": ["globex", gm["id"], {"withContent": True}]}])
    assert [m["payload"] for m in out[0]["ok"]["data"]] == [{"expired": True}] * 4
    assert out[1]["ok"]["payload"] == {"n": 9}
