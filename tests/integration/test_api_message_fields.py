"""Svix's message fields deliverAt, payloadRetentionPeriod and
payloadRetentionHours through the real `svix` SDK (and raw HTTP for what the
SDK would not send): their validation (422 with Svix's error body, nothing
stored), deliverAt honoured by replays, and a payload that expires — reads
answer {"expired": true}, resend refuses it, a retry never sends it, and the
retention pass clears its bytes (sql/0020_message_payload_expiry.sql)."""
from __future__ import annotations

import json
import time

from hookdtest.util import wait_for
from test_api import hookd, new_token, raw, receivers, svix, task_finished  # noqa: F401  (the receivers fixture)
from test_outbound import outbound_config


def at(env, seconds: float) -> str:
    """Postgres's now() + seconds, as the SDK sends a date (RFC 3339, ms, Z)."""
    return env.db.value("SELECT to_char((now() + %s * interval '1 second') AT TIME ZONE 'UTC',"
                        " 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"')", seconds)


def messages(env) -> int:
    return env.db.value("SELECT count(*) FROM outbox_events WHERE tenant_id IS NOT NULL")


def msg(n, **kw):
    return {"call": "message.create", "args": ["acme", dict({"eventType": "a.b", "payload": {"n": n}}, **kw)],
            "as": f"m{n}"}


def test_deliver_at_rules_and_replay(env, receivers):
    cfg = outbound_config(env)
    w = env.worker(cfg)
    root = new_token(cfg, "root")
    rx1, rx2 = receivers(), receivers()
    out = svix(w, root, [
        {"call": "application.create", "args": [{"name": "Acme", "uid": "acme"}]},
        {"call": "endpoint.create", "args": ["acme", {"url": rx1.url()}]},
        msg(1, deliverAt=at(env, 30)),              # under a minute ahead
        msg(2, deliverAt=at(env, 25 * 3600)),       # over 24 hours ahead
        msg(3, deliverAt=at(env, -120)),            # past
        msg(4, deliverAt="soon"),
        msg(5, deliverAt="2026-13-01T00:00:00Z"),
        msg(6, deliverAt=at(env, 120)),             # accepted
        msg(7),                                     # now
    ])
    assert "ok" in out[0] and "ok" in out[1], out[:2]
    for o in out[2:7]:
        assert o["status"] == 422, o
        assert o["body"]["detail"][0]["loc"] == ["body", "deliverAt"], o
    later, now_msg = out[7]["ok"], out[8]["ok"]
    assert later["deliverAt"] and now_msg.get("deliverAt") is None
    assert messages(env) == 2  # the refused ones stored nothing
    # the message without deliverAt goes at once; the other waits, PENDING, due at its deliverAt
    assert [json.loads(r.body)["n"] for r in rx1.wait(1)] == [7]
    wait_for(lambda: env.db.value(
        "SELECT count(*) FROM outbox_deliveries d JOIN outbox_events e ON e.id = d.event_id"
        " WHERE e.id = hookd_api_uuid('msg', %s) AND d.status = 'PENDING'"
        " AND abs(extract(epoch FROM d.next_attempt_at - e.deliver_at)) < 1",
        later["id"]) == 1, what="the deliverAt message's delivery waiting for its time")
    # an endpoint created afterwards: replay-missing sends it both; the deliverAt one still at its time
    since = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - 60))
    out = svix(w, root, [{"call": "endpoint.create", "args": ["acme", {"url": rx2.url(), "uid": "late"}]}])
    st, rep = raw(w, "POST", "/api/v1/app/acme/endpoint/late/replay-missing", root, {"since": since})
    assert st == 202 and task_finished(w, root, rep)["data"] == {"messagesSent": 2}, rep
    row = env.db.one(
        "SELECT d.id, d.status, d.attempts, d.next_attempt_at = e.deliver_at AS at_its_time,"
        " (extract(epoch FROM e.deliver_at) * 1000)::bigint AS due_ms"
        " FROM outbox_deliveries d JOIN outbox_events e ON e.id = d.event_id"
        " WHERE e.id = hookd_api_uuid('msg', %s) AND d.endpoint_id = hookd_api_uuid('ep', %s)",
        later["id"], out[0]["ok"]["id"])
    assert row["at_its_time"] and row["status"] == "PENDING" and row["attempts"] == 0, row
    # scheduled in Redis for then, not now
    score = env.redis.zscore(env.key("{delivery}:due"), str(row["id"]))
    assert score is not None and abs(score - row["due_ms"]) < 1000, (score, row["due_ms"])
    assert [json.loads(r.body)["n"] for r in rx2.wait(1)] == [7]
    assert env.db.value("SELECT count(*) FROM attempts a JOIN outbox_deliveries d ON a.source = 'delivery'"
                        " AND a.source_id = d.id WHERE d.event_id = hookd_api_uuid('msg', %s)", later["id"]) == 0


def test_payload_retention(env, receivers):
    cfg = outbound_config(env, retry_schedule="2s, 2s, 2s")
    w = env.worker(cfg)
    root = new_token(cfg, "root")
    rx, flaky = receivers(), receivers(lambda req: (500, {}, b"no"))
    out = svix(w, root, [
        {"call": "application.create", "args": [{"name": "Acme", "uid": "acme"}]},
        {"call": "endpoint.create", "args": ["acme", {"url": rx.url(), "uid": "main"}]},
        msg(1, payloadRetentionPeriod=4),
        msg(2, payloadRetentionPeriod=91),
        msg(3, payloadRetentionHours=0),
        msg(4, payloadRetentionHours=2161),
        msg(5, payloadRetentionPeriod=5, payloadRetentionHours=1),
        msg(6, payloadRetentionHours=1),
        msg(7, payloadRetentionPeriod=5),
        {"call": "message.create", "args": ["acme", {"eventType": "a.b", "payload": {"expired": True}}],
         "as": "m8"},  # a payload that happens to equal what an expired one reads as
    ])
    assert "ok" in out[0] and "ok" in out[1], out[:2]
    # Svix's validator: MessageIn's range(min = 5, max = 90) on the days, named as the server names it
    for o in out[2:4]:
        assert o["status"] == 422 and o["body"]["detail"] == [
            {"loc": ["body", "payload_retention_period"], "msg": "Validation error", "type": "value_error"}], o
    for o in out[4:7]:
        assert o["status"] == 422 and o["body"]["detail"][0]["loc"] == ["body", "payloadRetentionHours"], o
    st, body = raw(w, "POST", "/api/v1/app/acme/msg", root,
                   {"eventType": "a.b", "payload": {}, "payloadRetentionPeriod": "ten"})
    assert st == 422 and body["detail"][0]["loc"] == ["body", "payloadRetentionPeriod"], body
    short, days, plain = out[7]["ok"], out[8]["ok"], out[9]["ok"]
    assert messages(env) == 3  # the refused ones stored nothing
    expiry = {r["id"]: r["left"] for r in env.db.all(
        "SELECT hookd_api_id('msg', id) AS id, extract(epoch FROM payload_expires_at - now()) AS left"
        " FROM outbox_events WHERE tenant_id IS NOT NULL")}
    assert 3500 < expiry[short["id"]] <= 3600 and 5 * 86400 - 100 < expiry[days["id"]] <= 5 * 86400
    assert expiry[plain["id"]] is None  # Svix's 90 days outlive [retention] outbox (30 days): nothing to do
    got = rx.wait(3)
    assert sorted(json.dumps(json.loads(r.body), sort_keys=True) for r in got) == sorted(
        ['{"n": 6}', '{"n": 7}', '{"expired": true}'])
    # an hour later (this message's clock moved forward rather than waiting): its payload reads as expired
    env.db.value("UPDATE outbox_events SET payload_expires_at = now() - interval '1 second'"
                 " WHERE id = hookd_api_uuid('msg', %s) RETURNING 1", short["id"])
    out = svix(w, root, [
        {"call": "message.get", "args": ["acme", short["id"], {"withContent": True}]},
        {"call": "message.get", "args": ["acme", plain["id"], {"withContent": True}]},
        {"call": "message.list", "args": ["acme", {"withContent": True}]},
        {"call": "messageAttempt.resend", "args": ["acme", short["id"], "main"]},
        {"call": "messageAttempt.resend", "args": ["acme", plain["id"], "main"]},
    ])
    assert out[0]["ok"]["payload"] == {"expired": True} and out[1]["ok"]["payload"] == {"expired": True}
    listed = {m["id"]: m["payload"] for m in out[2]["ok"]["data"]}
    assert listed[short["id"]] == {"expired": True} and listed[days["id"]] == {"n": 7}
    assert out[3]["status"] == 400 and out[3]["body"]["code"] == "missing_payload", out[3]
    assert "ok" in out[4], out[4]  # a user's own {"expired": true} is a payload like any other
    assert len(rx.wait(4)) == 4
    # the retention pass (this one, or the worker's own, whichever runs first) clears the expired payload's
    # bytes, once; reads are unchanged
    # (while the worker's own pass holds the pass's lock, `retention run` does nothing: run it again)
    r = wait_for(lambda: (lambda out: None if "another retention pass is running" in out.stdout else out)(
        hookd(cfg, "retention", "run")), 60, interval=0.5, what="a retention pass of our own")
    assert " expired payloads cleared" in r.stdout, r.stdout
    assert env.db.value("SELECT payload = 'null'::jsonb FROM outbox_events WHERE id = hookd_api_uuid('msg', %s)",
                        short["id"]) is True
    assert wait_for(lambda: "0 expired payloads cleared" in hookd(cfg, "retention", "run").stdout, 60, interval=0.5,
                    what="a second pass of our own, which finds nothing to clear")
    assert svix(w, root, [{"call": "message.get", "args": ["acme", short["id"], {"withContent": True}]}])[0]["ok"]["payload"] == {
        "expired": True}
    assert env.db.value("SELECT count(*) FROM outbox_events WHERE payload = 'null'::jsonb") == 1
    # a message whose payload expires while it is being retried is not sent again: its delivery ends
    out = svix(w, root, [
        {"call": "application.create", "args": [{"name": "Globex", "uid": "globex"}]},
        {"call": "endpoint.create", "args": ["globex", {"url": flaky.url()}]},
        {"call": "message.create", "args": ["globex", {"eventType": "a.b", "payload": {"n": 9},
                                                       "payloadRetentionHours": 1}]},
    ])
    m = out[2]["ok"]
    flaky.wait(1)
    env.db.value("UPDATE outbox_events SET payload_expires_at = now() WHERE id = hookd_api_uuid('msg', %s)"
                 " RETURNING 1", m["id"])
    wait_for(lambda: env.db.value(
        "SELECT status FROM outbox_deliveries WHERE event_id = hookd_api_uuid('msg', %s)", m["id"]) == "DEAD",
        30, what="the expired message's delivery ended")
    assert env.db.value("SELECT last_error FROM outbox_deliveries WHERE event_id = hookd_api_uuid('msg', %s)",
                        m["id"]) == "the message's payload expired"
    assert len(flaky.got()) == 1  # the one attempt before it expired
    # ... and no attempt is counted or listed for what was never sent (Svix's worker makes none); its dead
    # letter is closed (a replay could only die the same way; it holds no ordered successor)
    assert env.db.value("SELECT attempts FROM outbox_deliveries WHERE event_id = hookd_api_uuid('msg', %s)",
                        m["id"]) == 1
    assert env.db.value("SELECT count(*) FROM attempts a JOIN outbox_deliveries d ON a.source = 'delivery'"
                        " AND a.source_id = d.id WHERE d.event_id = hookd_api_uuid('msg', %s)", m["id"]) == 1
    assert env.db.value("SELECT count(*) FROM dead_letters dl JOIN outbox_deliveries d ON dl.source = 'delivery'"
                        " AND dl.source_id = d.id WHERE d.event_id = hookd_api_uuid('msg', %s)"
                        " AND dl.reason = 'payload expired' AND dl.skipped_at IS NOT NULL", m["id"]) == 1


def test_a_key_recorded_while_the_batch_runs_is_replayed(env):
    """The batch statement reads the idempotency records in its snapshot; a
    key another transaction holds uncommitted is met only when the statement
    records its own answer. It waits for it, finds it taken, aborts (nothing
    of the batch stays), and the request runs alone: the recorded answer is
    replayed, and no message is stored."""
    import threading
    import psycopg2
    cfg = outbound_config(env)
    w = env.worker(cfg)
    root = new_token(cfg, "root")
    assert svix(w, root, [{"call": "application.create", "args": [{"name": "Acme", "uid": "acme"}]}])[0]["ok"]
    first = {"id": "msg_first", "eventType": "a.b", "payload": {"n": 0}, "timestamp": "2026-12-03T00:00:00.000000Z"}
    other = psycopg2.connect(env.db.url)
    try:
        cur = other.cursor()
        cur.execute("INSERT INTO hookd_idempotency_keys (scope, key, status, body) VALUES (%s, 'K', 202, %s)",
                    ("* POST /api/v1/app/acme/msg", json.dumps(first)))
        answer = {}
        t = threading.Thread(target=lambda: answer.update(r=raw(
            w, "POST", "/api/v1/app/acme/msg", root, {"eventType": "a.b", "payload": {"n": 1}, "eventId": "e1"},
            headers={"idempotency-key": "K"})))
        t.start()
        wait_for(lambda: env.db.value("SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
                                      " AND query LIKE '-- api_message_batch%%'") >= 1,
                 what="the batch waiting for the key")
        other.commit()
        t.join(20)
    finally:
        other.close()
    st, body = answer["r"]
    assert st == 202 and body == first, (st, body)
    assert messages(env) == 0 and env.db.value("SELECT count(*) FROM hookd_message_ids") == 0
    assert "api.batch_alone" in w.log_path.read_text()
