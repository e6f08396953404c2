"""Payloads delivered byte for byte, as Svix delivers them: an API message's
`payload` and hookd_emit_raw's text reach the endpoint exactly as the
application wrote them (spacing, key order, unicode escapes, number
spellings, integers beyond 64 bits), signed over those bytes so that the
Svix SDK's `Webhook.verify` accepts them, on the first attempt and on a
resend (send-example sends its example as stored too); get-raw-payload answers the same text; expunging the content and the
retention pass clear it; hookd_emit (jsonb) keeps working as before."""
from __future__ import annotations

import json

import psycopg2
import psycopg2.errors
import pytest

from hookdtest.util import wait_for
from test_api import api, hookd, raw, receivers, svix  # noqa: F401  (fixtures)
from test_security import apply_roles, as_role

SIG_HEADERS = ("webhook-id", "webhook-timestamp", "webhook-signature")

# What a re-serialisation would change: spacing and newlines, key order,
# unicode escapes (a surrogate pair too), number spellings, an integer no
# 64-bit type holds, a nested member named "payload" and a string holding
# brackets and an escaped quote.
ODD = (b'{ "zeta" :1.0e+2,\n\t"alpha": [1 ,2.50, -0.0],  "big":12345678901234567890,'
       b' "u":"caf\\u00e9 \\ud83d\\ude00 caf\xc3\xa9", "nested": {"payload" : "}]\\""} ,"z":null }')
ODD2 = b'{"b":{"y":1,"x":2},"a":"\\/slash"}'


def message_body(payload: bytes, **fields) -> bytes:
    """A MessageIn whose payload is the given text, not first among its fields."""
    head = json.dumps({"eventType": "raw.test", **fields})[:-1].encode()
    return head + b', "payload" :  ' + payload + b'\n}'


def verify(w, token, secret: str, got) -> list[dict]:
    return svix(w, token, [{"verify": {"secret": secret, "payload": r.body.decode(),
                                       "headers": {k: r.headers[k] for k in SIG_HEADERS}}} for r in got])


def app_with_endpoint(w, root, url: str, **endpoint) -> tuple[str, str]:
    st, _ = raw(w, "POST", "/api/v1/app", root, {"name": "Acme", "uid": "acme"})
    assert st == 201
    st, ep = raw(w, "POST", "/api/v1/app/acme/endpoint", root, {"url": url, **endpoint})
    assert st == 201, ep
    st, sec = raw(w, "GET", f"/api/v1/app/acme/endpoint/{ep['id']}/secret", root)
    assert st == 200
    return ep["id"], sec["key"]


def test_api_message_is_delivered_as_sent(env, api, receivers):
    cfg, w, root = api
    rx, gold_rx = receivers(), receivers()
    ep, secret = app_with_endpoint(w, root, rx.url())
    st, _ = raw(w, "POST", "/api/v1/app/acme/endpoint", root,
                {"url": gold_rx.url(), "payloadFilter": {"nested.payload": "}]\""}})
    assert st == 201
    st, m1 = raw(w, "POST", "/api/v1/app/acme/msg", root, message_body(ODD, eventId="odd-1"))
    assert st == 202, m1
    st, m2 = raw(w, "POST", "/api/v1/app/acme/msg", root, message_body(ODD2))
    assert st == 202, m2
    got = rx.wait(2)
    bodies = {r.headers["webhook-id"]: r.body for r in got}
    assert bodies == {m1["id"]: ODD, m2["id"]: ODD2}
    assert all("ok" in c for c in verify(w, root, secret, got)), got
    # the payload filter reads the same payload: only the message it matches
    assert [r.body for r in gold_rx.wait(1)] == [ODD]

    # the API's answers still carry the payload as JSON (an integer beyond 64 bits as a string of its
    # digits, as hookd reads such numbers elsewhere); get-raw-payload the text as sent
    assert m2["payload"] == json.loads(ODD2)
    assert m1["payload"] == {**json.loads(ODD), "big": "12345678901234567890"}
    assert isinstance(m1["payload"]["alpha"][0], int)
    st, one = raw(w, "GET", "/api/v1/app/acme/msg/odd-1", root)
    assert st == 200 and one["payload"] == m1["payload"]
    for ref in (m1["id"], "odd-1"):
        assert raw(w, "GET", f"/api/v1/app/acme/msg/{ref}/raw", root) == (200, {"payload": ODD.decode()})
    assert raw(w, "GET", f"/api/v1/app/acme/msg/{m2['id']}/raw", root) == (200, {"payload": ODD2.decode()})
    assert raw(w, "GET", "/api/v1/app/acme/msg/msg_nope/raw", root)[0] == 404

    # a resend sends the same bytes, signed again
    st, _ = raw(w, "POST", f"/api/v1/app/acme/msg/{m1['id']}/endpoint/{ep}/resend", root, {})
    assert st == 202
    again = rx.wait(3)[2]
    assert again.body == ODD and "ok" in verify(w, root, secret, [again])[0]

    # send-example: the example as hookd writes it (compact, as Svix's server serialises it), sent as stored
    st, ex = raw(w, "POST", f"/api/v1/app/acme/endpoint/{ep}/send-example", root, {"eventType": "svix.ping"})
    assert st in (200, 202), ex
    ping = rx.wait(4)[3]
    assert ping.body == b'{"success":true}' and "ok" in verify(w, root, secret, [ping])[0]
    assert raw(w, "GET", f"/api/v1/app/acme/msg/{ex['id']}/raw", root) == (200, {"payload": '{"success":true}'})

    # expunging the content clears the raw text with the payload
    assert raw(w, "DELETE", f"/api/v1/app/acme/msg/{m1['id']}/content", root)[0] == 204
    assert env.db.value("SELECT payload_raw IS NULL AND payload = 'null'::jsonb FROM outbox_events"
                        " WHERE id = hookd_api_uuid('msg', %s)", m1["id"]) is True
    assert raw(w, "GET", f"/api/v1/app/acme/msg/{m1['id']}/raw", root) == (200, {"payload": '{"expired": true}'})
    assert env.db.value("SELECT payload_raw FROM outbox_events WHERE id = hookd_api_uuid('msg', %s)",
                        m2["id"]) == ODD2.decode()


def test_big_integers_elsewhere_and_bad_payloads_are_refused(env, api):
    cfg, w, root = api
    st, _ = raw(w, "POST", "/api/v1/app", root, {"name": "Acme", "uid": "acme"})
    assert st == 201
    # a number too big outside the payload is still refused, the payload's own checks still apply
    st, err = raw(w, "POST", "/api/v1/app/acme/msg", root,
                  message_body(b'{"n": 12345678901234567890}', payloadRetentionHours=12345678901234567890))
    assert st == 422 and err["detail"][0]["loc"] == ["body"], err
    st, err = raw(w, "POST", "/api/v1/app/acme/msg", root, message_body(b'[12345678901234567890]'))
    assert st == 422 and err["detail"][0]["loc"] == ["body", "payload"], err
    st, err = raw(w, "POST", "/api/v1/app/acme/msg", root,
                  message_body(b'{"n": 12345678901234567890, "n": 1}'))
    assert st == 422 and err["detail"][0]["loc"] == ["body"], err
    # a NUL byte, which JSON has no place for (jansson would skip it between tokens)
    st, err = raw(w, "POST", "/api/v1/app/acme/msg", root, message_body(b'{"n": 1\x00}'))
    assert st == 422 and "NUL byte" in err["detail"][0]["msg"], err
    # a big integer with the other fields typed as before
    st, ok = raw(w, "POST", "/api/v1/app/acme/msg", root,
                 message_body(b'{"n":12345678901234567890}', payloadRetentionHours=2))
    assert st == 202 and ok["payload"] == {"n": "12345678901234567890"}, ok
    assert env.db.value("SELECT payload_raw FROM outbox_events WHERE id = hookd_api_uuid('msg', %s)",
                        ok["id"]) == '{"n":12345678901234567890}'
    # a message that creates its application runs alone, not in a batch: its text is kept too
    st, made = raw(w, "POST", "/api/v1/app/other/msg", root,
                   message_body(ODD2, application={"name": "Other", "uid": "other"}))
    assert st == 202, made
    assert raw(w, "GET", f"/api/v1/app/other/msg/{made['id']}/raw", root) == (200, {"payload": ODD2.decode()})
    assert env.db.value("SELECT count(*) FROM outbox_events") == 2


def test_hookd_emit_raw_and_hookd_emit(env, api, receivers):
    cfg, w, root = api
    rx = receivers()
    ep, secret = app_with_endpoint(w, root, rx.url())
    raw_id = env.db.value("SELECT hookd_emit_raw('order', '1', 'raw.test', %s, p_tenant => 'acme')::text",
                          ODD.decode())
    typed = env.db.value("SELECT hookd_emit('order', '2', 'raw.test', %s::jsonb, 'acme')::text", ODD2.decode())
    untyped = env.db.value("SELECT hookd_emit('order', '3', 'raw.test', '{\"n\":  3}', 'acme')::text")
    got = rx.wait(3)
    by_id = {r.headers["webhook-id"]: r.body for r in got}
    msg = {e: env.db.value("SELECT hookd_api_id('msg', %s::uuid)", e) for e in (raw_id, typed, untyped)}
    assert by_id[msg[raw_id]] == ODD
    # hookd_emit's jsonb: delivered as Postgres writes the value, as before
    assert by_id[msg[typed]] == b'{"a": "/slash", "b": {"x": 2, "y": 1}}'
    assert by_id[msg[untyped]] == b'{"n": 3}'
    assert all("ok" in c for c in verify(w, root, secret, got)), got
    assert raw(w, "GET", f"/api/v1/app/acme/msg/{msg[raw_id]}/raw", root) == (200, {"payload": ODD.decode()})
    assert raw(w, "GET", f"/api/v1/app/acme/msg/{msg[typed]}/raw", root) == (
        200, {"payload": '{"a": "/slash", "b": {"x": 2, "y": 1}}'})

    # not JSON, NULL, an unknown tenant, a bad retention: an error in the caller's transaction, nothing written
    for bad, error in (("'{\"a\": }'", psycopg2.errors.InvalidTextRepresentation),
                       ("'{\"a\": 1} x'", psycopg2.errors.InvalidTextRepresentation),
                       ("NULL", psycopg2.errors.NullValueNotAllowed)):
        with pytest.raises(error) as e:
            env.db.value(f"SELECT hookd_emit_raw('order', '4', 'raw.test', {bad})")
        assert "hookd_emit_raw" in str(e.value)
    with pytest.raises(psycopg2.errors.ForeignKeyViolation):
        env.db.value("SELECT hookd_emit_raw('order', '4', 'raw.test', '{}', p_tenant => 'nope')")
    with pytest.raises(psycopg2.errors.InvalidParameterValue):
        env.db.value("SELECT hookd_emit_raw('order', '4', 'raw.test', '{}', p_payload_retention => interval '0')")
    assert env.db.value("SELECT count(*) FROM outbox_events") == 3

    # the retention pass clears the raw text of an expired payload with its jsonb
    gone = env.db.value("SELECT hookd_emit_raw('order', '5', 'raw.test', '{ \"k\" : 1 }',"
                        " p_payload_retention => interval '1 hour')::text")
    env.db.value("UPDATE outbox_events SET payload_expires_at = now() - interval '1 second'"
                 " WHERE id = %s::uuid RETURNING 1", gone)
    wait_for(lambda: (lambda out: None if "another retention pass is running" in out.stdout else out)(
        hookd(cfg, "retention", "run")), 60, interval=0.5, what="a retention pass of our own")
    assert env.db.value("SELECT payload_raw IS NULL AND payload = 'null'::jsonb FROM outbox_events"
                        " WHERE id = %s::uuid", gone) is True


def test_hookd_emit_raw_least_privilege(env):
    """The application role may call hookd_emit_raw (least_privilege.sql),
    PUBLIC may not once the roles are applied; and the migration gives it
    whoever may execute hookd_emit."""
    sig = "hookd_emit_raw(text, text, text, text, text, interval)"
    assert env.db.value("SELECT has_function_privilege('public', %s, 'EXECUTE')", sig) is True
    apply_roles(env)
    assert env.db.value("SELECT has_function_privilege('public', %s, 'EXECUTE')", sig) is False
    conn = psycopg2.connect(as_role(env, "app_user"))
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT hookd_emit_raw('order', '1', 'raw.test', '{\"a\":1 }')::text")
            made = cur.fetchone()[0]
        conn.commit()
    finally:
        conn.close()
    assert env.db.value("SELECT payload_raw FROM outbox_events WHERE id = %s::uuid", made) == '{"a":1 }'
