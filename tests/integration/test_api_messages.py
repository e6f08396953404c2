"""Message creation through the Svix-compatible API under concurrency: the
creations that arrive together are committed as one batch
(engine/api/api_message.c), and each request must still get exactly what
it would get alone — its token checked, its application resolved in the
token's scope, its idempotency key replayed, its eventId unique per
application (409), its body validated, the Svix answer body, and nothing
stored for a refused request. Driven with the real `svix` SDK (which sends
an idempotency-key with every POST) and with raw HTTP for what the SDK
cannot send."""
from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor

from hookdtest.util import wait_for
from test_api import api, new_token, raw, receivers, svix  # noqa: F401  (the api and receivers fixtures)
from test_outbound import outbound_config


def messages(env) -> int:
    return env.db.value("SELECT count(*) FROM outbox_events WHERE tenant_id IS NOT NULL")


def burst(w, reqs: list[tuple[str, str, dict | None, dict]]) -> list[tuple[int, object]]:
    """Sends (path, token, body, headers) requests all at once; their (status, body) in order."""
    with ThreadPoolExecutor(max_workers=len(reqs)) as pool:
        return list(pool.map(lambda q: raw(w, "POST", q[0], q[1], q[2], headers=q[3]), reqs))


def batched(w) -> int:
    """The largest batch the worker's debug log shows."""
    sizes = [int(line.split(" requests=", 1)[1].split()[0]) for line in w.log_path.read_text().splitlines()
             if " event=api.batch " in line]
    return max(sizes, default=0)


def test_concurrent_creations_keep_every_guarantee(env):
    cfg = outbound_config(env, log_level="debug")
    w = env.worker(cfg)
    root = new_token(cfg, "root")
    out = svix(w, root, [{"call": "application.create", "args": [{"name": "Acme", "uid": "acme"}]},
                         {"call": "application.create", "args": [{"name": "Globex", "uid": "globex"}]}])
    assert all("ok" in o for o in out), out
    acme_tok = new_token(cfg, "acme-only", "acme")
    msg = "/api/v1/app/acme/msg"

    def body(n, **kw):
        return dict({"eventType": "invoice.paid", "payload": {"n": n}}, **kw)

    reqs = []
    for i in range(16):  # plain creations, each with its own key and eventId
        reqs.append((msg, root, body(i, eventId=f"e-{i}"), {"idempotency-key": f"k-{i}"}))
    for i in range(4):  # one eventId four times: one message, three 409s
        reqs.append((msg, root, body(100 + i, eventId="dup"), {"idempotency-key": f"dup-{i}"}))
    for i in range(4):  # one idempotency key four times: one message, one answer
        reqs.append((msg, root, body(200), {"idempotency-key": "same-key"}))
    reqs += [(msg, "hk_wrong", body(300), {}),                                          # 401
             ("/api/v1/app/nope/msg", root, body(301), {"idempotency-key": "nope"}),    # 404
             (msg, root, {"eventType": "invoice.paid"}, {"idempotency-key": "bad"}),    # 422: no payload
             (msg, root, body(302, eventType="bad type"), {}),                          # 422
             ("/api/v1/app/globex/msg", acme_tok, body(303), {}),                       # 404: not its tenant
             (msg + "?with_content=false", root, body(304, eventId="quiet"), {}),       # 202 without payload
             ("/api/v1/app/initech/msg", root, body(305, application={"name": "Initech"}), {}),  # app created
             (msg, acme_tok, body(306, eventId="scoped"), {"idempotency-key": "k-0"})]  # another scope: new
    got = burst(w, reqs)
    st = [s for s, _ in got]
    assert st[:16] == [202] * 16, got[:16]
    ids = {b["id"] for _, b in got[:16]}
    assert len(ids) == 16 and all(i.startswith("msg_") and len(i) == 31 for i in ids)
    assert [b["payload"] for _, b in got[:16]] == [{"n": i} for i in range(16)]
    assert [b["eventId"] for _, b in got[:16]] == [f"e-{i}" for i in range(16)]
    assert all(b["eventType"] == "invoice.paid" and b["timestamp"].endswith("Z") for _, b in got[:16])
    assert sorted(st[16:20]) == [202, 409, 409, 409], got[16:20]
    assert all(b["code"] == "conflict" for s, b in got[16:20] if s == 409)
    assert st[20:24] == [202] * 4 and len({b["id"] for _, b in got[20:24]}) == 1, got[20:24]
    assert st[24] == 401 and got[24][1]["code"] == "authentication_failed"
    assert st[25] == 404 and got[25][1]["code"] == "not_found"
    assert st[26] == 422 and got[26][1]["detail"][0]["loc"] == ["body", "payload"]
    assert st[27] == 422 and got[27][1]["detail"][0]["loc"] == ["body", "eventType"]
    assert st[28] == 404
    assert st[29] == 202 and got[29][1]["payload"] == {} and got[29][1]["eventId"] == "quiet"
    assert st[30] == 202, got[30]
    assert st[31] == 202 and got[31][1]["id"] not in ids  # the key is the token's tenant's, not root's
    assert env.db.value("SELECT count(*) FROM hookd_tenants WHERE uid = 'initech'") == 1
    # stored: one message per 202 answer with a new id, eventIds once, keys only for the 202 answers
    created = 16 + 1 + 1 + 1 + 1 + 1
    assert messages(env) == created
    assert env.db.value("SELECT count(*) FROM hookd_message_ids") == 16 + 1 + 1 + 1
    keys = env.db.all("SELECT key, status FROM hookd_idempotency_keys WHERE scope LIKE '%%/msg'")  # not the SDK's
    assert sorted(k["key"] for k in keys) == sorted([f"k-{i}" for i in range(16)] + ["same-key", "k-0"] +
                                                    [f"dup-{i}" for i, (s, _) in enumerate(got[16:20]) if s == 202])
    assert {k["status"] for k in keys} == {202}
    # a stored message reads back as answered
    i, first = next((i, b) for i, (s, b) in enumerate(got) if s == 202)
    assert raw(w, "GET", f"/api/v1/app/acme/msg/{first['id']}", root) == (200, first)
    # the same keys again: the recorded answers, nothing stored
    again = burst(w, reqs[:16] + reqs[20:24])
    assert [b["id"] for _, b in again] == [b["id"] for _, b in got[:16] + got[20:24]]
    assert messages(env) == created
    assert batched(w) > 1  # creations did share a transaction


def test_a_payload_postgres_refuses_fails_alone(env):
    """A statement of the batch that fails on one request's content rolls the
    batch back; every request then runs alone, and only the bad one fails."""
    cfg = outbound_config(env, log_level="debug")
    w = env.worker(cfg)
    root = new_token(cfg, "root")
    assert "ok" in svix(w, root, [{"call": "application.create", "args": [{"name": "Acme", "uid": "acme"}]}])[0]
    # a content check Postgres makes and hookd does not (22023: invalid_parameter_value)
    env.db.all("CREATE FUNCTION test_poison() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN"
               " IF NEW.payload ? 'poison' THEN RAISE EXCEPTION 'poisoned' USING ERRCODE = '22023'; END IF;"
               " RETURN NEW; END $$")
    env.db.all("CREATE TRIGGER test_poison AFTER INSERT ON outbox_events FOR EACH ROW EXECUTE FUNCTION test_poison()")
    msg = "/api/v1/app/acme/msg"
    reqs = [(msg, root, {"eventType": "a.b", "eventId": f"e-{i}", "payload": {"n": i}}, {"idempotency-key": f"k-{i}"})
            for i in range(12)]
    reqs.insert(6, (msg, root, {"eventType": "a.b", "eventId": "p", "payload": {"poison": 1}},
                    {"idempotency-key": "kp"}))
    got = burst(w, reqs)
    assert [s for s, _ in got] == [202] * 6 + [422] + [202] * 6, got
    assert messages(env) == 12
    assert env.db.value("SELECT count(*) FROM hookd_message_ids WHERE event_id = 'p'") == 0
    assert env.db.value("SELECT count(*) FROM hookd_idempotency_keys WHERE key = 'kp'") == 0
    assert env.db.value("SELECT count(*) FROM hookd_idempotency_keys WHERE status = 202") == 12


def test_sdk_burst_delivers_each_message_once(env, api, receivers):
    """The SDK's own automatic idempotency keys, sent at once, and what the
    receiver gets verified with the SDK's Webhook class."""
    cfg, w, root = api
    rx = receivers()
    out = svix(w, root, [
        {"call": "application.create", "args": [{"name": "Acme", "uid": "acme"}]},
        {"call": "endpoint.create", "args": ["acme", {"url": rx.url()}], "as": "ep"},
        {"call": "endpoint.getSecret", "args": ["acme", "$ep.id"]},
        {"parallel": [{"call": "message.create", "args": ["acme", {"eventType": "a.b", "eventId": f"e-{i % 20}",
                                                                   "payload": {"n": i % 20}}]} for i in range(30)]},
    ])
    secret = out[2]["ok"]["key"]
    burst_out = out[3]["ok"]
    ok = [o["ok"] for o in burst_out if "ok" in o]
    # (the SDK asks with_content=false: the answers carry no payload)
    assert sorted(m["eventId"] for m in ok) == sorted(f"e-{i}" for i in range(20)), burst_out
    assert all(m["payload"] == {} for m in ok)
    assert all(o["status"] == 409 for o in burst_out if "ok" not in o)
    got = rx.wait(20)
    assert sorted(json.loads(r.body)["n"] for r in got) == list(range(20))
    checks = svix(w, root, [{"verify": {"secret": secret, "payload": r.body.decode(), "headers": {
        k: r.headers[k] for k in ("webhook-id", "webhook-timestamp", "webhook-signature")}}} for r in got])
    assert all("ok" in c for c in checks), checks
    assert {r.headers["webhook-id"] for r in got} == {m["id"] for m in ok}


def test_channels_tags_and_deliver_at(env, api, receivers):
    """Svix's channels (an endpoint with channels gets only messages carrying
    one of them; a message without channels goes only to endpoints without),
    tags (stored, returned, the list's `tag` filter) and deliverAt (its
    delivery waits for it; test_api_message_fields.py has its rules), through
    the SDK."""
    cfg, w, root = api
    rx_all, rx_a, rx_ab = receivers(), receivers(), receivers()
    later = env.db.value("SELECT to_char((now() + interval '65 seconds') AT TIME ZONE 'UTC',"
                         " 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"')")

    def m(n, **kw):
        return {"call": "message.create", "args": ["acme", dict({"eventType": "a.b", "payload": {"n": n}}, **kw)],
                "as": f"m{n}"}

    out = svix(w, root, [
        {"call": "application.create", "args": [{"name": "Acme", "uid": "acme"}]},
        {"call": "endpoint.create", "args": ["acme", {"url": rx_all.url()}], "as": "all"},
        {"call": "endpoint.create", "args": ["acme", {"url": rx_a.url(), "channels": ["project_a"]}], "as": "a"},
        {"call": "endpoint.create", "args": ["acme", {"url": rx_ab.url(), "channels": ["project_b", "project_a"]}]},
        {"call": "endpoint.create", "args": ["acme", {"url": rx_a.url(), "channels": []}]},
        {"call": "endpoint.create", "args": ["acme", {"url": rx_a.url(), "channels": ["no space"]}]},
        m(1, channels=["project_a"], tags=["t1", "t2"]),
        m(2, channels=["project_b"], tags=["t2"]),
        m(3),
        m(4, channels=["other"]),
        m(5, deliverAt=later, tags=["later"]),
        m(6, channels=[]),
        m(7, tags=["a", "b", "c", "d", "e", "f"]),
        m(8, channels=["bad/channel"]),
        m(9, deliverAt="soon"),
        {"call": "message.list", "args": ["acme", {"tag": "t2"}]},
        {"call": "message.list", "args": ["acme", {"tag": "t1"}]},
        {"call": "message.list", "args": ["acme", {"channel": "project_b"}]},
        {"call": "message.get", "args": ["acme", "$m1.id"]},
        {"call": "endpoint.get", "args": ["acme", "$a.id"]},
        {"call": "endpoint.get", "args": ["acme", "$all.id"]},
    ])
    assert all("ok" in o for o in out[:4]), out[:4]
    assert out[2]["ok"]["channels"] == ["project_a"] and sorted(out[3]["ok"]["channels"]) == ["project_a", "project_b"]
    assert out[4]["status"] == 422 and out[4]["body"]["detail"][0]["loc"] == ["body", "channels"]
    assert out[5]["status"] == 422 and out[5]["body"]["detail"][0]["loc"] == ["body", "channels"]
    msgs = {n: out[5 + n]["ok"] for n in range(1, 6)}
    assert all(msgs.values()), out[6:11]
    assert msgs[1]["channels"] == ["project_a"] and sorted(msgs[1]["tags"]) == ["t1", "t2"]
    assert msgs[3].get("channels") is None and msgs[3].get("tags") is None
    assert msgs[5]["deliverAt"] and msgs[5]["tags"] == ["later"]
    for n, field in ((6, "channels"), (7, "tags"), (8, "channels"), (9, "deliverAt")):
        assert out[5 + n]["status"] == 422 and out[5 + n]["body"]["detail"][0]["loc"] == ["body", field], out[5 + n]
    assert [x["id"] for x in out[15]["ok"]["data"]] == [msgs[2]["id"], msgs[1]["id"]]
    assert [x["id"] for x in out[16]["ok"]["data"]] == [msgs[1]["id"]]
    assert [x["id"] for x in out[17]["ok"]["data"]] == [msgs[2]["id"]]
    assert out[18]["ok"]["channels"] == ["project_a"] and sorted(out[18]["ok"]["tags"]) == ["t1", "t2"]
    assert out[19]["ok"]["channels"] == ["project_a"] and out[20]["ok"].get("channels") is None
    assert messages(env) == 5  # the refused ones stored nothing
    # Svix's matching: no channels on the endpoint = every message; channels = an overlap needed
    got_all = rx_all.wait(4, timeout=30)
    assert sorted(json.loads(r.body)["n"] for r in got_all) == [1, 2, 3, 4]
    assert sorted(json.loads(r.body)["n"] for r in rx_ab.wait(2)) == [1, 2]
    assert [json.loads(r.body)["n"] for r in rx_a.wait(1)] == [1]
    # deliverAt (at least a minute ahead, as Svix requires): its delivery waits, PENDING, due then, unattempted
    wait_for(lambda: env.db.value(
        "SELECT count(*) FROM outbox_deliveries d JOIN outbox_events e ON e.id = d.event_id"
        " WHERE e.deliver_at IS NOT NULL AND d.status = 'PENDING'"
        " AND abs(extract(epoch FROM d.next_attempt_at - e.deliver_at)) < 1"
        " AND d.attempts = 0") == 1, what="the deliverAt message's delivery waiting for its time")
    assert env.db.value(
        "SELECT count(*) FROM attempts a JOIN outbox_deliveries d ON a.source = 'delivery' AND a.source_id = d.id"
        " JOIN outbox_events e ON e.id = d.event_id WHERE e.deliver_at IS NOT NULL") == 0
    # what the endpoints got verifies with the SDK
    secret = svix(w, root, [{"call": "endpoint.getSecret", "args": ["acme", out[1]["ok"]["id"]]}])[0]["ok"]["key"]
    checks = svix(w, root, [{"verify": {"secret": secret, "payload": r.body.decode(), "headers": {
        k: r.headers[k] for k in ("webhook-id", "webhook-timestamp", "webhook-signature")}}} for r in got_all])
    assert all("ok" in c for c in checks), checks
    # an endpoint's channels removed (null): it takes every message again
    out = svix(w, root, [{"call": "endpoint.patch", "args": ["acme", out[2]["ok"]["id"], {"channels": None}]},
                         m(10)])
    assert out[0]["ok"].get("channels") is None and "ok" in out[1]
    assert sorted(json.loads(r.body)["n"] for r in rx_a.wait(2)) == [1, 10]


def test_upgrade_to_0025_keeps_claims_and_their_cascade(env):
    """Migration 0025 replaces the eventId claims' foreign key (an RI check
    and lock per message) by one FOR KEY SHARE lock of the batch's
    applications per statement and delete/truncate triggers. On a database
    that had claims before it: an old eventId still answers 409; a deleted
    application takes its claims with it; a creation that meets a delete of
    its application in progress waits for it and answers 404, storing
    nothing; TRUNCATE empties the claims."""
    import threading

    import psycopg2
    from hookdtest.services import Db
    from hookdtest.worker import run_hookd
    from test_retention import old_layout_database
    name = old_layout_database(env, before="0025")
    url = env.services.db_url(name)
    db = Db(url)
    db.all("INSERT INTO hookd_tenants (id, uid, name) VALUES ('app_old', 'old', 'Old'), ('app_gone', 'gone', 'Gone'),"
           " ('app_race', 'race', 'Race')")
    db.all("INSERT INTO hookd_message_ids (tenant_id, event_id, message_id) SELECT t, 'pre', hookd_uuid7()"
           " FROM unnest(ARRAY['app_old', 'app_gone']) t")
    cfg = outbound_config(env, database=url)
    r = run_hookd(["-c", str(cfg), "migrate"])
    assert r.returncode == 0 and "0025_message_ids_no_fk" in r.stdout, (r.stdout, r.stderr)
    assert db.value("SELECT count(*) FROM pg_constraint WHERE conrelid = 'hookd_message_ids'::regclass"
                    " AND contype = 'f'") == 0
    w = env.worker(config=cfg)
    root = new_token(cfg, "root")

    def create(app, event_id, key=None):
        return (f"/api/v1/app/{app}/msg", root, {"eventType": "a.b", "payload": {"e": event_id}, "eventId": event_id},
                {"idempotency-key": key} if key else {})

    got = burst(w, [create("old", "pre"), create("old", "pre", "k1"), create("old", "new", "k2"),
                    create("gone", "pre")])
    assert [s for s, _ in got] == [409, 409, 202, 409], got
    st, _ = raw(w, "DELETE", "/api/v1/app/gone", root)
    assert st == 204
    assert db.value("SELECT count(*) FROM hookd_message_ids WHERE tenant_id = 'app_gone'") == 0
    assert db.value("SELECT count(*) FROM hookd_message_ids WHERE tenant_id = 'app_old'") == 2
    assert raw(w, "POST", *create("gone", "pre")[:3])[0] == 404
    # a delete in progress: the creation waits for it, then finds no application
    other = psycopg2.connect(url)
    try:
        other.cursor().execute("DELETE FROM hookd_tenants WHERE id = 'app_race'")
        answer = {}
        t = threading.Thread(target=lambda: answer.update(r=raw(w, "POST", *create("race", "r1", "kr")[:3],
                                                                headers={"idempotency-key": "kr"})))
        t.start()
        wait_for(lambda: db.value("SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
                                  " AND query LIKE '-- api_message_batch%%'") >= 1,
                 what="the batch waiting for the delete")
        other.commit()
        t.join(20)
    finally:
        other.close()
    assert answer["r"][0] == 404, answer
    assert db.value("SELECT count(*) FROM hookd_message_ids WHERE tenant_id = 'app_race'") == 0
    assert db.value("SELECT count(*) FROM outbox_events WHERE tenant_id = 'app_race'") == 0
    assert db.value("SELECT count(*) FROM hookd_idempotency_keys WHERE key = 'kr'") == 0
    db.all("TRUNCATE hookd_tenants CASCADE")
    assert db.value("SELECT count(*) FROM hookd_message_ids") == 0
    w.stop()
    db.close()
