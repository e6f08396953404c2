"""Payload retention at its edges: hookd_emit's p_payload_retention
(sql/0026_emit_payload_retention.sql, with every earlier call form kept), and
a message whose payload is gone before its fan-out — expired, expunged, or
expiring before its deliverAt — which gets no delivery, as Svix's worker
makes no attempt for a message without a payload (svix-server worker.rs):
the API then lists no attempt and no attempted destination for it."""
from __future__ import annotations

import json
import threading

import psycopg2
import psycopg2.errors
import pytest

from hookdtest.paths import ROOT
from hookdtest.util import wait_for
from test_api import new_token, raw, receivers, svix  # noqa: F401  (the receivers fixture)
from test_outbound import add_endpoint, outbound_config
from test_security import apply_roles, as_role


def expiry_left(env, event_id: str):
    return env.db.value("SELECT extract(epoch FROM payload_expires_at - created_at) FROM outbox_events"
                        " WHERE id = %s::uuid", event_id)


def test_hookd_emit_payload_retention(env, receivers):
    """Every call form of hookd_emit works on the one function; a retention
    sets the expiry from the transaction's time; a payload expired before the
    relay saw it is fanned out with no delivery; grants carry over."""
    cfg = outbound_config(env)
    env.db.value("INSERT INTO hookd_tenants (id, uid, name) VALUES ('app_acme', 'acme', 'Acme') RETURNING 1")
    # the forms of earlier versions, and the new argument with and without a tenant
    plain = env.db.value("SELECT hookd_emit('order', '1', 'order.paid', '{\"n\": 1}'::jsonb)::text")
    untyped = env.db.value("SELECT hookd_emit('order', '2', 'order.paid', '{\"n\": 2}')::text")
    positional = env.db.value("SELECT hookd_emit('order', '3', 'order.paid', '{\"n\": 3}'::jsonb, 'acme')::text")
    named = env.db.value("SELECT hookd_emit('order', '4', 'order.paid', '{\"n\": 4}'::jsonb, p_tenant => 'acme')::text")
    kept = env.db.value("SELECT hookd_emit('order', '5', 'order.paid', '{\"n\": 5}'::jsonb,"
                        " p_payload_retention => interval '1 hour')::text")
    both = env.db.value("SELECT hookd_emit('order', '6', 'order.paid', '{\"n\": 6}'::jsonb, p_tenant => 'app_acme',"
                        " p_payload_retention => '2 days')::text")
    assert env.db.value("SELECT count(*) FROM pg_proc WHERE proname = 'hookd_emit'") == 1
    for e in (plain, untyped, positional, named):
        assert expiry_left(env, e) is None, e
    assert expiry_left(env, kept) == 3600 and expiry_left(env, both) == 2 * 86400
    assert env.db.value("SELECT count(*) FROM outbox_events WHERE tenant_id = 'app_acme'") == 3
    # bad arguments: an error in the caller's transaction, nothing written
    for bad in ("interval '0'", "interval '-1 hour'"):
        with pytest.raises(psycopg2.errors.InvalidParameterValue):
            env.db.value(f"SELECT hookd_emit('order', '7', 'order.paid', '{{}}'::jsonb, p_payload_retention => {bad})")
    with pytest.raises(psycopg2.errors.ForeignKeyViolation):
        env.db.value("SELECT hookd_emit('order', '7', 'order.paid', '{}'::jsonb, p_tenant => 'nope')")
    assert env.db.value("SELECT count(*) FROM outbox_events") == 6

    # delivered: the retained payload like any other; then one whose retention ran out before its commit
    rx = receivers()
    add_endpoint(cfg, rx.url(), "global")
    w = env.worker(cfg)
    assert sorted(json.loads(r.body)["n"] for r in rx.wait(3)) == [1, 2, 5]
    conn = psycopg2.connect(env.db_url)
    try:
        with conn.cursor() as cur:  # now() is the transaction's start: expired when it commits
            cur.execute("SELECT hookd_emit('order', '8', 'order.paid', '{\"n\": 8}'::jsonb,"
                        " p_payload_retention => interval '1 millisecond')::text")
            gone = cur.fetchone()[0]
            cur.execute("SELECT pg_sleep(0.05)")
        conn.commit()
    finally:
        conn.close()
    after = env.db.value("SELECT hookd_emit('order', '9', 'order.paid', '{\"n\": 9}'::jsonb)::text")
    assert [json.loads(r.body)["n"] for r in rx.wait(4)][3:] == [9]
    wait_for(lambda: env.db.value("SELECT processed_at IS NOT NULL FROM outbox_events WHERE id = %s::uuid", gone),
             what="the expired event fanned out and processed")
    assert env.db.value("SELECT count(*) FROM outbox_deliveries WHERE event_id = %s::uuid", gone) == 0
    assert env.db.value("SELECT count(*) FROM outbox_deliveries WHERE event_id = %s::uuid", after) == 1
    assert all(json.loads(r.body)["n"] != 8 for r in rx.got())
    w.stop()

    # least privilege: the application role emits with a retention, through the one function
    apply_roles(env)
    assert env.db.value("SELECT has_function_privilege('public',"
                        " 'hookd_emit(text, text, text, jsonb, text, interval)', 'EXECUTE')") is False
    conn = psycopg2.connect(as_role(env, "app_user"))
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT hookd_emit('order', '10', 'order.paid', '{}'::jsonb, p_payload_retention => '1 day')")
            app_event = cur.fetchone()[0]
        conn.commit()
    finally:
        conn.close()
    assert expiry_left(env, app_event) == 86400


def test_grants_of_the_old_forms_carry_over(env):
    """sql/0026 re-creates hookd_emit: a role that could execute an old form
    can execute the new one, and PUBLIC only if it could before. Checked by
    putting old forms with least privilege's grants back and running the
    migration's text again."""
    sig = "hookd_emit(text, text, text, jsonb, text, interval)"
    # as migrated by the harness (PUBLIC's default EXECUTE on the old forms): still public
    assert env.db.value("SELECT has_function_privilege('public', %s, 'EXECUTE')", sig) is True
    env.db.all("DO $$ BEGIN IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'parity_emitter') THEN"
               " CREATE ROLE parity_emitter NOLOGIN; END IF; END $$")
    env.db.all(f"DROP FUNCTION {sig}")
    env.db.all("CREATE FUNCTION hookd_emit(a text, b text, c text, d jsonb) RETURNS uuid LANGUAGE sql"
               " AS 'SELECT NULL::uuid'")
    env.db.all("CREATE FUNCTION hookd_emit(a text, b text, c text, d jsonb, e text) RETURNS uuid LANGUAGE sql"
               " AS 'SELECT NULL::uuid'")
    env.db.all("REVOKE ALL ON FUNCTION hookd_emit(text, text, text, jsonb) FROM PUBLIC")
    env.db.all("REVOKE ALL ON FUNCTION hookd_emit(text, text, text, jsonb, text) FROM PUBLIC")
    env.db.all("GRANT EXECUTE ON FUNCTION hookd_emit(text, text, text, jsonb, text) TO parity_emitter")
    with env.db.conn.cursor() as cur:  # no parameters: the file's % signs are its own
        cur.execute((ROOT / "sql" / "0026_emit_payload_retention.sql").read_text())
    assert env.db.value("SELECT has_function_privilege('parity_emitter', %s, 'EXECUTE')", sig) is True
    assert env.db.value("SELECT has_function_privilege('public', %s, 'EXECUTE')", sig) is False
    assert env.db.value("SELECT count(*) FROM pg_proc WHERE proname = 'hookd_emit'") == 1


def test_payload_gone_before_fan_out_gets_no_delivery(env, receivers):
    """Svix's worker makes no attempt for a message whose payload is gone when
    its task runs: a message expunged before its fan-out, and one whose
    payload expires before its deliverAt, get no delivery; attempts and
    attempted destinations list nothing; the next message goes as usual."""
    api_cfg = outbound_config(env, hookd_lines=("allow_private_networks = true", "roles = ingest"))
    api_w = env.worker(api_cfg)  # the API without a relay: nothing is fanned out yet
    root = new_token(api_cfg, "root")
    rx = receivers()
    out = svix(api_w, root, [
        {"call": "application.create", "args": [{"name": "Acme", "uid": "acme"}]},
        {"call": "endpoint.create", "args": ["acme", {"url": rx.url(), "uid": "main"}]},
        {"call": "message.create", "args": ["acme", {"eventType": "a.b", "payload": {"n": 1}}]},
    ])
    expunged = out[2]["ok"]
    st, _ = raw(api_w, "DELETE", f"/api/v1/app/acme/msg/{expunged['id']}/content", root)
    assert st == 204
    assert env.db.value("SELECT count(*) FROM outbox_deliveries") == 0
    # a payload kept 1 h, due in 2 h: never sendable
    at = env.db.value("SELECT to_char((now() + interval '2 hours') AT TIME ZONE 'UTC',"
                      " 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"')")
    out = svix(api_w, root, [{"call": "message.create", "args": ["acme", {
        "eventType": "a.b", "payload": {"n": 2}, "deliverAt": at, "payloadRetentionHours": 1}]}])
    late = out[0]["ok"]
    # the relay starts; a message after them is delivered
    env.worker(outbound_config(env, hookd_lines=("allow_private_networks = true", "roles = relay")))
    out = svix(api_w, root, [{"call": "message.create", "args": ["acme", {"eventType": "a.b", "payload": {"n": 3}}]}])
    assert [json.loads(r.body)["n"] for r in rx.wait(1)] == [3]
    wait_for(lambda: env.db.value(
        "SELECT count(*) FROM outbox_events WHERE id IN (hookd_api_uuid('msg', %s), hookd_api_uuid('msg', %s))"
        " AND fanned_out_at IS NOT NULL AND processed_at IS NOT NULL", expunged["id"], late["id"]) == 2,
        what="both fanned out and processed")
    for m in (expunged, late):
        assert env.db.value("SELECT count(*) FROM outbox_deliveries WHERE event_id = hookd_api_uuid('msg', %s)",
                            m["id"]) == 0
    got = svix(api_w, root, [
        {"call": "messageAttempt.listByMsg", "args": ["acme", expunged["id"]]},
        {"call": "messageAttempt.listAttemptedDestinations", "args": ["acme", expunged["id"]]},
        {"call": "messageAttempt.listByMsg", "args": ["acme", late["id"]]},
        {"call": "messageAttempt.listAttemptedDestinations", "args": ["acme", late["id"]]},
        {"call": "message.get", "args": ["acme", late["id"], {"withContent": True}]},
    ])
    for o in got[:4]:
        assert o["ok"]["data"] == [] and o["ok"]["done"] is True, o
    assert got[4]["ok"]["payload"] == {"n": 2}  # still readable until it expires; only never sent
    assert len(rx.got()) == 1


def head_fails(seen: list[int]):
    """A receiver's answer for an ordered aggregate: 500 to the head (n = 0),
    200 to the rest; every n received is appended to seen, in order."""
    def respond(req):
        n = json.loads(req.body)["n"]
        seen.append(n)
        return (500, {}, b"down") if n == 0 else (200, {}, b"ok")
    return respond


def test_ordered_head_whose_payload_expires_holds_nothing(env, receivers):
    """An ordered endpoint's head, retrying, whose hookd_emit retention runs
    out: it ends DEAD with no further attempt and a closed dead letter, so
    its aggregate's successors go on, in order, without an operator."""
    cfg = outbound_config(env, retry_schedule="2s, 2s, 2s")
    seen: list[int] = []
    rx = receivers(head_fails(seen))
    add_endpoint(cfg, rx.url(), "ordered", "*", "--ordered")
    env.worker(cfg)
    head = env.db.value("SELECT hookd_emit('order', 'a', 'order.paid', '{\"n\": 0}'::jsonb,"
                        " p_payload_retention => interval '1 hour')::text")
    env.db.value("SELECT count(*) FROM (SELECT hookd_emit('order', 'a', 'order.paid', jsonb_build_object('n', n))"
                 " FROM generate_series(1, 2) n) x")
    rx.wait(1)  # the head's first attempt failed; its retry is 2 s away: its payload expires meanwhile
    env.db.value("UPDATE outbox_events SET payload_expires_at = now() WHERE id = %s::uuid RETURNING 1", head)
    wait_for(lambda: [n for n in list(seen) if n] == [1, 2], 30, what="the successors, in order")
    assert seen.count(0) == 1
    row = env.db.one("SELECT d.status, d.attempts, d.last_error, dl.reason, dl.skipped_at IS NOT NULL AS closed"
                     " FROM outbox_deliveries d JOIN dead_letters dl ON dl.source = 'delivery' AND dl.source_id = d.id"
                     " WHERE d.event_id = %s::uuid", head)
    assert row == {"status": "DEAD", "attempts": 1, "last_error": "the message's payload expired",
                   "reason": "payload expired", "closed": True}, row
    assert env.db.value("SELECT count(*) FROM attempts a JOIN outbox_deliveries d ON a.source = 'delivery'"
                        " AND a.source_id = d.id WHERE d.event_id = %s::uuid", head) == 1


def test_expunge_waits_for_a_fan_out_in_progress(env):
    """An expunge that comes while a relay pass holds the message's event
    (claimed, its delivery written, not committed yet) waits for that pass
    (api_message_lock.sql) and then closes the delivery the pass wrote: it is
    never sent with the payload the user deleted."""
    cfg = outbound_config(env, hookd_lines=("allow_private_networks = true", "roles = ingest"))
    w = env.worker(cfg)  # no relay: the pass below is played by hand
    root = new_token(cfg, "root")
    out = svix(w, root, [
        {"call": "application.create", "args": [{"name": "Acme", "uid": "acme"}]},
        {"call": "endpoint.create", "args": ["acme", {"url": "http://127.0.0.1:9/hook"}]},
        {"call": "message.create", "args": ["acme", {"eventType": "a.b", "payload": {"n": 1}}]},
    ])
    m = out[2]["ok"]
    conn = psycopg2.connect(env.db_url)
    try:
        with conn.cursor() as cur:  # as relay_claim and relay_settle do, in one transaction
            cur.execute("SELECT 1 FROM outbox_events WHERE id = hookd_api_uuid('msg', %s) FOR UPDATE", (m["id"],))
            cur.execute("INSERT INTO outbox_deliveries (id, event_id, endpoint_id, status, part_at)"
                        " SELECT hookd_uuid7_at(e.part_at), e.id, ep.id, 'PENDING', e.part_at"
                        " FROM outbox_events e, webhook_endpoints ep WHERE e.id = hookd_api_uuid('msg', %s)",
                        (m["id"],))
            cur.execute("UPDATE outbox_events SET fanned_out_at = now() WHERE id = hookd_api_uuid('msg', %s)",
                        (m["id"],))
        answer = {}
        t = threading.Thread(target=lambda: answer.update(
            status=raw(w, "DELETE", f"/api/v1/app/acme/msg/{m['id']}/content", root)[0]))
        t.start()
        wait_for(lambda: env.db.value("SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
                                      " AND query LIKE '%%api_message_%%'") == 1,
                 what="the expunge waiting for the pass")
        conn.commit()
        t.join(15)
    finally:
        conn.close()
    assert answer.get("status") == 204, answer
    assert env.db.one("SELECT status, last_error FROM outbox_deliveries WHERE event_id = hookd_api_uuid('msg', %s)",
                      m["id"]) == {"status": "DEAD", "last_error": "payload expunged"}


def test_expunged_dead_head_lets_its_successors_go(env, receivers):
    """An ordered endpoint's dead head expunged through the API: its dead
    letter is skipped and the successors held behind it go on, in order
    (scheduled at once after the expunge commits, api_message_ordered_next;
    the hold's 5 s check would release them too, later)."""
    cfg = outbound_config(env)
    w = env.worker(cfg)
    root = new_token(cfg, "root")
    seen: list[int] = []
    rx = receivers(head_fails(seen))
    assert raw(w, "POST", "/api/v1/app/", root, {"name": "Acme", "uid": "acme"})[0] == 201
    st, _ = raw(w, "POST", "/api/v1/app/acme/endpoint/", root, {"url": rx.url(), "ordered": True})
    assert st == 201
    head = env.db.value("SELECT hookd_emit('order', 'a', 'order.paid', '{\"n\": 0}'::jsonb, p_tenant => 'acme')::text")
    env.db.value("SELECT count(*) FROM (SELECT hookd_emit('order', 'a', 'order.paid', jsonb_build_object('n', n),"
                 " p_tenant => 'acme') FROM generate_series(1, 2) n) x")
    wait_for(lambda: env.db.value("SELECT count(*) FROM dead_letters WHERE replayed_at IS NULL") == 1, 30,
             what="the head dead-lettered")
    assert [n for n in seen if n] == []
    msg = env.db.value("SELECT hookd_api_id('msg', %s::uuid)", head)
    assert raw(w, "DELETE", f"/api/v1/app/acme/msg/{msg}/content", root)[0] == 204
    wait_for(lambda: [n for n in list(seen) if n] == [1, 2], 30, what="the successors, in order")
    assert env.db.value("SELECT count(*) FROM dead_letters WHERE skipped_at IS NOT NULL") == 1
