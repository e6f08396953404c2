"""Inbound webhooks (the ingest role): signatures of every scheme and their
tampering, key rotation, duplicates and group commit under concurrency, every
refusal with its status, error code and counter, body limits, secrets kept
out of the log, Postgres outages, kill -9 after an answer, and scheduling
after commit (including a schedule entry Redis lost)."""
from __future__ import annotations

import base64
import hashlib
import hmac
import json
import re
import socket
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor

import pytest

from hookdtest.client import http, order_event
from hookdtest.partners import GENERIC_SECRET, GITHUB_SECRET, PARTNERS, STRIPE_SECRET
from hookdtest.services import Db
from hookdtest.signing import SW_SECRET, sign_github, sign_hmac_hex, sign_standard, sign_stripe
from hookdtest.util import wait_for

SECRETS = {"shop": SW_SECRET, "stripe": STRIPE_SECRET, "github": GITHUB_SECRET, "generic": GENERIC_SECRET}
SCHEMES = ["shop", "stripe", "github", "generic"]  # one partner per scheme
WITH_TIMESTAMP = {"shop", "stripe"}
JSON = "application/json"


# ---- helpers ---------------------------------------------------------------

def with_hookd_keys(cfg, **keys):
    """Adds keys to the [hookd] section of a written config (the harness
    template has no placeholder for them)."""
    lines = "".join(f"{k} = {v}\n" for k, v in keys.items())
    cfg.write_text(cfg.read_text().replace("[hookd]\n", "[hookd]\n" + lines, 1))
    return cfg


def ingest_only(env, extra: str = PARTNERS, **overrides):
    """A worker with only the ingest role: accepted rows stay PENDING, so
    what the ingress stored can be checked as it was stored."""
    return env.worker(config=with_hookd_keys(env.config(extra=extra, **overrides), roles="ingest"))


def event_body(partner: str, event_id: str, order_id: str, event_type: str = "order.started", **extra) -> bytes:
    """The body each partner's config expects to find its fields in."""
    if partner == "stripe":
        doc = {"id": event_id, "type": event_type, "data": {"object": {"metadata": {"order_id": order_id}}}}
    elif partner == "github":
        doc = {"order_id": order_id, "action": event_type}
    elif partner == "generic":
        doc = {"id": event_id, "type": event_type, "data": {"order_id": order_id}}
    else:
        doc = {"type": event_type, "data": {"order_id": order_id}}
    doc.update(extra)
    return json.dumps(doc).encode()


def sign_headers(partner: str, event_id: str, body: bytes, secret: str | None = None, ts: int | None = None,
                 event_type: str = "order.started") -> dict:
    """The headers a correctly signing sender of this partner's scheme sends."""
    secret = SECRETS[partner] if secret is None else secret
    ts = int(time.time()) if ts is None else ts
    h = {"Content-Type": JSON}
    if partner == "stripe":
        h["Stripe-Signature"] = sign_stripe(secret, ts, body)
    elif partner == "github":
        h.update({"X-GitHub-Delivery": event_id, "X-GitHub-Event": event_type,
                  "X-Hub-Signature-256": sign_github(secret, body)})
    elif partner == "generic":
        h["X-Signature"] = sign_hmac_hex(secret, body)
    else:
        h.update({"webhook-id": event_id, "webhook-timestamp": str(ts),
                  "webhook-signature": sign_standard(secret, event_id, ts, body)})
    return h


def wrong_secret(partner: str) -> str:
    """A well-formed secret for the partner's scheme that is not its own."""
    if partner == "shop":
        return "whsec_" + base64.b64encode(b"not-the-partner-s-key-00").decode()
    return SECRETS[partner] + "x"


def post(w, partner: str, body: bytes, headers: dict, method: str = "POST"):
    """(status, headers, parsed JSON body or None)."""
    status, rh, raw = http(method, f"{w.url}/v1/inbox/{partner}", body, headers)
    try:
        doc = json.loads(raw) if raw else None
    except ValueError:
        doc = None
    return status, rh, doc


def count(env) -> int:
    return env.db.value("SELECT count(*) FROM webhook_inbox")


def flip_byte(body: bytes, marker: bytes) -> bytes:
    """body with one bit of the first byte of marker flipped (JSON stays valid)."""
    i = body.index(marker)
    return body[:i] + bytes([body[i] ^ 0x01]) + body[i + 1:]


def stats(env) -> dict:
    return env.redis.hgetall(env.key("stats"))


def metric_rejected(w) -> dict:
    _, _, raw = w.admin_get("/metrics")
    return {m.group(1): int(m.group(2)) for m in
            re.finditer(r'^hookd_rejected_total\{reason="([a-z_]+)"\} (\d+)$', raw.decode(), re.M)}


def assert_accepted(resp):
    status, _, doc = resp
    assert status == 200, resp
    assert doc["status"] == "accepted", doc
    uuid.UUID(doc["id"])  # a real uuid
    return doc["id"]


def assert_rejected(resp, status: int, code: str):
    got, headers, doc = resp
    assert got == status, (resp, code)
    assert headers.get("Content-Type", "").startswith(JSON), headers
    assert doc and doc["error"] == code and isinstance(doc.get("message"), str), doc


def raw_request(port: int, head: str, body: bytes = b"", timeout: float = 10) -> tuple[int, bytes]:
    """Sends one request over a plain socket and returns (status, response).
    For bodies the server refuses before reading them, where a client that
    insists on writing the whole body first may see a reset instead."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(head.encode())
        try:
            s.sendall(body)
        except OSError:
            pass  # the server answered and closed; the answer is still readable
        chunks = []
        try:
            while chunk := s.recv(65536):
                chunks.append(chunk)
        except ConnectionResetError:
            pass
    resp = b"".join(chunks)
    m = re.match(rb"HTTP/1\.[01] (\d{3})", resp)
    assert m, f"no HTTP status line in {resp[:200]!r}"
    return int(m.group(1)), resp


# ---- signatures --------------------------------------------------------------

@pytest.mark.parametrize("partner", SCHEMES)
def test_signed_request_accepted_and_every_tampering_rejected(env, partner):
    w = ingest_only(env)
    body = event_body(partner, "evt-1", "order-1")
    good = sign_headers(partner, "evt-1", body)

    def rejected(resp, code="bad_signature", status=401):
        assert_rejected(resp, status, code)
        assert count(env) == 0, f"a refused request ({code}) left a row"

    # a flipped body byte
    rejected(post(w, partner, flip_byte(body, b"order-1"), good))
    # the wrong secret (well-formed, but not the partner's)
    rejected(post(w, partner, body, sign_headers(partner, "evt-1", body, secret=wrong_secret(partner))))
    # a captured signature replayed with a new body
    other = event_body(partner, "evt-1", "order-666", event_type="order.cancelled")
    rejected(post(w, partner, other, good))
    if partner == "shop":
        # the signed webhook-id changed: the id is part of what is signed
        rejected(post(w, partner, body, dict(good, **{"webhook-id": "evt-2"})))
        rejected(post(w, partner, body, dict(good, **{"webhook-timestamp": str(int(good["webhook-timestamp"]) - 1)})))
    if partner == "stripe":
        # the t= element changed, the MAC kept
        ts, v1 = re.match(r"t=(\d+),v1=([0-9a-f]+)", good["Stripe-Signature"]).groups()
        rejected(post(w, partner, body, dict(good, **{"Stripe-Signature": f"t={int(ts) - 1},v1={v1}"})))
    if partner in WITH_TIMESTAMP:
        now = int(time.time())
        # correctly signed, but 10 minutes old / 10 minutes ahead (tolerance 5m)
        rejected(post(w, partner, body, sign_headers(partner, "evt-1", body, ts=now - 600)), "timestamp")
        rejected(post(w, partner, body, sign_headers(partner, "evt-1", body, ts=now + 600)), "timestamp")
        # a wrong MAC with an old timestamp is a bad signature, not a clock problem
        stale_wrong = sign_headers(partner, "evt-1", body, secret=wrong_secret(partner), ts=now - 600)
        rejected(post(w, partner, body, stale_wrong))

    # the untampered request is accepted, and stored as it was sent
    row_id = assert_accepted(post(w, partner, body, sign_headers(partner, "evt-1", body)))
    row = env.db.one("SELECT * FROM webhook_inbox")
    assert str(row["id"]) == row_id
    assert row["partner_name"] == partner and row["partner_event_id"] == "evt-1"
    assert row["signature_verified"] is True and row["status"] == "PENDING"
    assert row["event_type"] == "order.started"
    assert row["entity_type"] == "order" and row["entity_id"] == "order-1"
    assert row["payload"] == json.loads(body)
    kept = {k.lower() for k in row["headers"]}
    for h in ("webhook-signature", "stripe-signature", "x-hub-signature-256", "x-signature"):
        assert h not in kept, f"signature header {h} stored with the row"


def test_timestamp_inside_tolerance_is_accepted(env):
    w = ingest_only(env, extra=PARTNERS + "\n[partner strict]\nscheme = stripe\nsecret = strict-secret-0123\n"
                                          "tolerance = 30s\n")
    now = int(time.time())
    body = event_body("stripe", "evt-old", "o1")
    assert_accepted(post(w, "stripe", body, sign_headers("stripe", "evt-old", body, ts=now - 240)))
    assert_accepted(post(w, "shop", body, sign_headers("shop", "evt-ahead", body, ts=now + 240)))
    # the partner's own tolerance applies: 2 minutes is too old for 30s
    strict = event_body("stripe", "evt-strict", "o2")
    resp = post(w, "strict", strict, sign_headers("stripe", "", strict, secret="strict-secret-0123", ts=now - 120))
    assert_rejected(resp, 401, "timestamp")
    assert {r["partner_event_id"] for r in env.db.all("SELECT partner_event_id FROM webhook_inbox")} == \
        {"evt-old", "evt-ahead"}


def test_generic_hmac_accepts_base64_and_sha256_prefix(env):
    w = ingest_only(env)
    for i, fmt in enumerate(("hex", "sha256=hex", "base64", "sha256=base64")):
        body = event_body("generic", f"g-{i}", "o1")
        digest = hmac.new(GENERIC_SECRET.encode(), body, hashlib.sha256).digest()
        value = digest.hex() if fmt.endswith("hex") else base64.b64encode(digest).decode()
        if fmt.startswith("sha256="):
            value = "sha256=" + value
        assert_accepted(post(w, "generic", body, {"Content-Type": JSON, "X-Signature": value}))
    assert count(env) == 4


def test_key_rotation_accepts_any_configured_secret(env):
    old_sw, new_sw = SW_SECRET, "whsec_" + base64.b64encode(b"the-new-standard-webhooks-key!!").decode()
    extra = PARTNERS + f"""
[partner rotating]
scheme = standard-webhooks
secret = {old_sw}
secret = {new_sw}
entity_id = json:data.order_id

[partner rotating-gh]
scheme = github
secret = gh-old-key-0123456
secret = gh-new-key-0123456
entity_id = json:order_id
"""
    w = ingest_only(env, extra=extra)
    for i, secret in enumerate((old_sw, new_sw)):
        body = order_event("order.started", f"o{i}")
        assert_accepted(post(w, "rotating", body, sign_headers("shop", f"rot-{i}", body, secret=secret)))
    for i, secret in enumerate(("gh-old-key-0123456", "gh-new-key-0123456")):
        body = event_body("github", "", f"o{i}")
        assert_accepted(post(w, "rotating-gh", body, sign_headers("github", f"gh-{i}", body, secret=secret)))
    # a sender mid-rotation sends several signatures; one matching is enough
    body = order_event("order.started", "o9")
    ts = int(time.time())
    both = f"{sign_standard('whsec_' + base64.b64encode(b'retired-key-000').decode(), 'rot-9', ts, body)} " \
           f"{sign_standard(new_sw, 'rot-9', ts, body)}"
    assert_accepted(post(w, "rotating", body, {"Content-Type": JSON, "webhook-id": "rot-9",
                                               "webhook-timestamp": str(ts), "webhook-signature": both}))
    before = count(env)
    # a key that is in neither slot is refused
    body = order_event("order.started", "o3")
    third = "whsec_" + base64.b64encode(b"a-third-key-nobody-configured").decode()
    assert_rejected(post(w, "rotating", body, sign_headers("shop", "rot-3", body, secret=third)), 401, "bad_signature")
    body = event_body("github", "", "o3")
    assert_rejected(post(w, "rotating-gh", body, sign_headers("github", "gh-3", body, secret="gh-other")),
                    401, "bad_signature")
    assert count(env) == before == 5


def test_secret_from_environment(env):
    extra = PARTNERS + """
[partner envgh]
scheme = github
secret = env:HOOKD_TEST_INGEST_SECRET
entity_id = json:order_id
"""
    w = env.worker(config=env.config(extra=extra), env={"HOOKD_TEST_INGEST_SECRET": "from-the-environment-77"})
    body = event_body("github", "", "o1")
    # the literal text of the config value is not the key
    resp = post(w, "envgh", body, sign_headers("github", "e-1", body, secret="env:HOOKD_TEST_INGEST_SECRET"))
    assert_rejected(resp, 401, "bad_signature")
    assert count(env) == 0
    row_id = assert_accepted(post(w, "envgh", body, sign_headers("github", "e-1", body,
                                                                  secret="from-the-environment-77")))
    assert env.db.value("SELECT partner_event_id FROM webhook_inbox WHERE id = %s", row_id) == "e-1"


# ---- concurrency -------------------------------------------------------------

def test_concurrent_duplicates_store_one_row(env):
    w = env.worker(extra=PARTNERS)
    body = order_event("order.started", "o-dup")
    headers = sign_headers("shop", "dup-1", body)
    n = 10
    barrier = threading.Barrier(n)

    def deliver(_):
        barrier.wait()
        return post(w, "shop", body, headers)

    with ThreadPoolExecutor(n) as pool:
        answers = list(pool.map(deliver, range(n)))
    assert all(a[0] == 200 for a in answers), answers
    statuses = sorted(a[2]["status"] for a in answers)
    assert statuses == ["accepted"] + ["duplicate"] * (n - 1), statuses
    accepted_id = next(a[2]["id"] for a in answers if a[2]["status"] == "accepted")
    rows = env.db.all("SELECT id::text AS id FROM webhook_inbox"
                      " WHERE partner_name = 'shop' AND partner_event_id = 'dup-1'")
    assert [r["id"] for r in rows] == [accepted_id]
    assert count(env) == 1
    wait_for(lambda: stats(env).get("ingested") == "1" and stats(env).get("duplicate") == str(n - 1),
             what="ingested=1 and duplicate=9 in the stats hash")
    # and a late repeat, after the commit, is a duplicate too
    status, _, doc = post(w, "shop", body, headers)
    assert (status, doc) == (200, {"status": "duplicate"})
    assert count(env) == 1


def test_many_concurrent_distinct_events_all_stored(env):
    w = ingest_only(env)
    n, threads = 200, 8
    bodies = {f"gc-{i}": order_event("order.started", f"o-{i}", seq=i) for i in range(n)}

    def deliver(event_id):
        body = bodies[event_id]
        return event_id, post(w, "shop", body, sign_headers("shop", event_id, body))

    with ThreadPoolExecutor(threads) as pool:
        answers = dict(pool.map(deliver, bodies))
    ids = {eid: assert_accepted(resp) for eid, resp in answers.items()}
    assert len(set(ids.values())) == n
    rows = env.db.all("SELECT id::text AS id, partner_event_id, payload, status FROM webhook_inbox")
    assert len(rows) == n
    for r in rows:
        assert ids[r["partner_event_id"]] == r["id"]
        assert r["payload"] == json.loads(bodies[r["partner_event_id"]])
        assert r["status"] == "PENDING"
    wait_for(lambda: stats(env).get("ingested") == str(n), what=f"ingested={n} in the stats hash")


def test_text_beyond_ascii_is_stored_exactly_as_sent(env):
    """Rows go to Postgres as binary arrays (ingest.c): what a partner sends
    outside plain ASCII - accents, CJK, an emoji, JSON escapes, quotes and
    backslashes, an order id with a comma and braces - comes back the same,
    in the payload and in the extracted entity id."""
    w = ingest_only(env)
    order_id = 'ordre-é{1,2}"\\'
    doc = {"type": "order.started", "data": {"order_id": order_id},
           "note": "Grüße aus Köln, 東京 🚚 \"quoted\" back\\slash\nnewline\ttab \u00e9"}
    body = json.dumps(doc, ensure_ascii=False).encode()
    assert_accepted(post(w, "shop", body, sign_headers("shop", "evt-utf8", body)))
    row = env.db.one("SELECT payload, entity_id FROM webhook_inbox WHERE partner_event_id = 'evt-utf8'")
    assert row["payload"] == doc
    assert row["entity_id"] == order_id


BIG_NUMBERS = ["9223372036854775808", "-9223372036854775809", "1e400", "1e-400", "-1.5E+999", "9" * 400]


@pytest.mark.parametrize("partner", SCHEMES)
def test_numbers_jansson_cannot_hold_are_accepted_and_stored_as_sent(env, partner):
    """Integers beyond int64 and reals beyond a double are valid JSON that
    jsonb stores; refusing them with 400 would lose a
    signed event for good. Each is accepted, and the stored payload equals
    the body as sent, compared as jsonb in Postgres (Python's float would
    round them)."""
    w = ingest_only(env)
    for i, num in enumerate(BIG_NUMBERS):
        event_id = f"big-{i}"
        body = event_body(partner, event_id, f"o-{i}").replace(b"}", f', "amount": {num}}}'.encode(), 1)
        body = body[:-1] + f', "nested": [{num}, {{"n": {num}}}]}}'.encode()
        row_id = assert_accepted(post(w, partner, body, sign_headers(partner, event_id, body)))
        same = env.db.value("SELECT payload = %s::jsonb FROM webhook_inbox WHERE id = %s", body.decode(), row_id)
        assert same is True, (num, body)
    assert count(env) == len(BIG_NUMBERS)


def test_a_big_number_as_event_id_is_kept_exactly(env):
    """An event id that is a number beyond int64 is read as its exact digits,
    never rounded or clamped (two distinct ids must stay distinct)."""
    w = ingest_only(env)
    for num in ("18446744073709551616", "18446744073709551617", "1e400"):
        body = f'{{"id": {num}, "type": "order.started", "data": {{"order_id": "o1"}}}}'.encode()
        assert_accepted(post(w, "generic", body, sign_headers("generic", "", body)))
    ids = sorted(r["partner_event_id"] for r in env.db.all("SELECT partner_event_id FROM webhook_inbox"))
    assert ids == ["18446744073709551616", "18446744073709551617", "1e400"]


def test_a_migration_under_a_running_worker_does_not_make_it_refuse_events(env):
    """The batch INSERT is a prepared statement on each ingest connection. A
    schema change underneath it (here: a column of its RETURNING list changes
    type, as a rolling upgrade's migration may do) makes Postgres refuse the
    old plan ("cached plan must not change result type"); hookd prepares it
    again instead of answering 400 (which senders do not retry) or 503."""
    w = ingest_only(env)

    def send(i: int):
        body = event_body("shop", f"mig-{i}", f"order-{i}")
        return post(w, "shop", body, sign_headers("shop", f"mig-{i}", body))

    with ThreadPoolExecutor(8) as pool:  # every ingest connection prepares the statement
        for resp in pool.map(send, range(40)):
            assert_accepted(resp)
    env.db.all("ALTER TABLE webhook_inbox ALTER COLUMN partner_event_id TYPE varchar(300)")
    with ThreadPoolExecutor(8) as pool:
        for resp in pool.map(send, range(40, 80)):
            assert_accepted(resp)
    assert count(env) == 80


def test_a_database_fault_that_is_not_the_senders_is_a_503_not_a_400(env):
    """An INSERT Postgres refuses for a reason other than the row's content
    (here the table is missing: SQLSTATE 42P01) must not answer 400, which
    senders take as final: 503 with Retry-After, and the retry is stored."""
    w = ingest_only(env)
    body = event_body("shop", "fault-1", "order-1")
    warm = event_body("shop", "warm", "order-0")  # the statement is prepared on this connection
    assert_accepted(post(w, "shop", warm, sign_headers("shop", "warm", warm)))
    env.db.all("ALTER TABLE webhook_inbox RENAME TO webhook_inbox_away")
    try:
        status, headers, doc = post(w, "shop", body, sign_headers("shop", "fault-1", body))
        assert (status, doc["error"]) == (503, "unavailable"), (status, doc)
        assert headers.get("Retry-After") == "5"
    finally:
        env.db.all("ALTER TABLE webhook_inbox_away RENAME TO webhook_inbox")
    assert_accepted(post(w, "shop", body, sign_headers("shop", "fault-1", body)))
    assert count(env) == 2


# ---- refusals ------------------------------------------------------------------

def test_every_bad_input_is_refused_with_its_code_and_counted(env):
    w = env.worker(extra=PARTNERS)
    body = order_event("order.started", "o1")
    now = int(time.time())

    def shop(b=body, event_id="bad-1", **changes):
        h = sign_headers("shop", event_id, b)
        for k, v in changes.items():
            k = k.replace("_", "-")
            if v is None:
                h.pop(k, None)
            else:
                h[k] = v
        return h

    not_json = b"this is {not json"
    no_type = json.dumps({"data": {"order_id": "o1"}}).encode()
    stripe_no_id = json.dumps({"type": "order.started", "data": {"object": {"metadata": {"order_id": "o1"}}}}).encode()
    gh_body = event_body("github", "", "o1")
    gh_no_event = {k: v for k, v in sign_headers("github", "gh-1", gh_body).items() if k != "X-GitHub-Event"}
    cases = [
        # (what, partner, body, headers, method, status, code)
        ("unknown partner", "nobody", body, shop(), "POST", 404, "unknown_partner"),
        ("no webhook-signature", "shop", body, shop(webhook_signature=None), "POST", 400, "missing_signature"),
        ("no webhook-timestamp", "shop", body, shop(webhook_timestamp=None), "POST", 400, "missing_signature"),
        ("no Stripe-Signature", "stripe", body, {"Content-Type": JSON}, "POST", 400, "missing_signature"),
        ("no X-Hub-Signature-256", "github", gh_body, {"Content-Type": JSON, "X-GitHub-Delivery": "g"}, "POST",
         400, "missing_signature"),
        ("no X-Signature", "generic", body, {"Content-Type": JSON}, "POST", 400, "missing_signature"),
        ("webhook-signature garbage", "shop", body, shop(webhook_signature="garbage"), "POST", 400,
         "malformed_signature"),
        ("webhook-timestamp not a number", "shop", body, shop(webhook_timestamp="yesterday"), "POST", 400,
         "malformed_signature"),
        ("Stripe-Signature without t=", "stripe", body, {"Content-Type": JSON, "Stripe-Signature": "v1=" + "0" * 64},
         "POST", 400, "malformed_signature"),
        ("X-Hub-Signature-256 sha1", "github", gh_body, {"Content-Type": JSON, "X-GitHub-Delivery": "g",
                                                        "X-Hub-Signature-256": "sha1=" + "0" * 40}, "POST", 400,
         "malformed_signature"),
        ("X-Signature too short", "generic", body, {"Content-Type": JSON, "X-Signature": "abcd"}, "POST", 400,
         "malformed_signature"),
        ("wrong signature", "shop", body, shop(webhook_signature=sign_standard(SW_SECRET, "bad-1", now, b"{}")),
         "POST", 401, "bad_signature"),
        ("old timestamp", "shop", body, sign_headers("shop", "bad-1", body, ts=now - 3600), "POST", 401,
         "timestamp"),
        ("body not JSON", "shop", not_json, shop(b=not_json), "POST", 400, "bad_body"),
        ("no event type", "shop", no_type, shop(b=no_type), "POST", 400, "bad_body"),
        ("no event id", "stripe", stripe_no_id, sign_headers("stripe", "", stripe_no_id), "POST", 400, "bad_body"),
        ("no X-GitHub-Event", "github", gh_body, gh_no_event, "POST", 400, "bad_body"),
        ("GET", "shop", None, {}, "GET", 405, "method"),
        ("PUT", "shop", body, shop(), "PUT", 405, "method"),
        ("text/plain", "shop", body, shop(content_type="text/plain"), "POST", 415, "content_type"),
        ("form", "shop", body, shop(content_type="application/x-www-form-urlencoded"), "POST", 415,
         "content_type"),
    ]
    expected: dict[str, int] = {}
    for what, partner, b, h, method, status, code in cases:
        resp = post(w, partner, b, h, method=method)
        assert resp[0] == status, (what, resp)
        assert_rejected(resp, status, code)
        if code == "method":
            assert resp[1].get("Allow") == "POST", (what, resp[1])
        assert count(env) == 0, f"{what}: a refused request left a row"
        expected[code] = expected.get(code, 0) + 1

    # the worker's own counters, and the cluster-wide hash once flushed
    metrics = metric_rejected(w)
    for code, n in expected.items():
        assert metrics.get(code) == n, (code, metrics)
    want = dict({f"rejected_{c}": str(n) for c, n in expected.items()}, rejected=str(len(cases)))
    wait_for(lambda: all(stats(env).get(k) == v for k, v in want.items()),
             what=f"rejection counters {want} in {env.key('stats')}")
    assert "ingested" not in stats(env)

    # still serving: the same request, well-formed, is accepted (charset parameter and all)
    h = sign_headers("shop", "good-1", body)
    h["Content-Type"] = "application/json; charset=utf-8"
    assert_accepted(post(w, "shop", body, h))
    assert count(env) == 1


def test_body_limits(env):
    extra = PARTNERS + f"""
[partner small]
scheme = standard-webhooks
secret = {SW_SECRET}
max_body = 1KiB

[partner big]
scheme = standard-webhooks
secret = {SW_SECRET}
max_body = 8KiB
"""
    w = env.worker(config=with_hookd_keys(env.config(extra=extra), max_body="4KiB", roles="ingest"))

    def sized(n: int, event_id: str) -> bytes:
        b = order_event("order.started", event_id, pad="")
        return order_event("order.started", event_id, pad="x" * (n - len(b)))

    # under the partner's own limit: fine; over it (but under the global one): 413 JSON
    ok = sized(1000, "s-ok")
    assert_accepted(post(w, "small", ok, sign_headers("shop", "s-ok", ok)))
    over = sized(2000, "s-over")
    assert_rejected(post(w, "small", over, sign_headers("shop", "s-over", over)), 413, "too_large")
    # a partner may allow more than the global limit
    large = sized(6000, "b-ok")
    assert_accepted(post(w, "big", large, sign_headers("shop", "b-ok", large)))
    assert_rejected(post(w, "shop", large, sign_headers("shop", "shop-over", large)), 413, "too_large")
    assert {r["partner_event_id"] for r in env.db.all("SELECT partner_event_id FROM webhook_inbox")} == \
        {"s-ok", "b-ok"}
    wait_for(lambda: stats(env).get("rejected_too_large") == "2", what="rejected_too_large=2 in the stats hash")
    assert metric_rejected(w)["too_large"] == 2
    # larger than every limit: refused before it is read
    huge = sized(64 * 1024, "huge")
    for partner in ("big", "shop"):
        h = sign_headers("shop", "huge", huge)
        head = f"POST /v1/inbox/{partner} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: {len(huge)}\r\n" + \
               "".join(f"{k}: {v}\r\n" for k, v in h.items()) + "Connection: close\r\n\r\n"
        status, _ = raw_request(w.port, head, huge)
        assert status == 413, partner
    assert count(env) == 2
    w.wait_ready()  # and the worker survived it


def assert_not_logged(w, needles):
    out = w.output()
    for s in needles:
        assert s not in out, f"{s!r} appears in the worker's log:\n" + \
            "\n".join(line for line in out.splitlines() if s in line)


def test_secrets_and_bodies_never_logged(env):
    w = env.worker(extra=PARTNERS, log_level="debug")
    marker = "MARKER-7f3a9c-do-not-log"
    body = order_event("order.started", "o1", note=marker)
    good = sign_headers("shop", "log-1", body)
    wrong = sign_headers("shop", "log-1", body, secret=wrong_secret("shop"))
    assert_rejected(post(w, "shop", body, wrong), 401, "bad_signature")
    # the same for the other schemes
    gh = event_body("github", "", "o1", note=marker)
    assert_rejected(post(w, "github", gh, sign_headers("github", "log-2", gh, secret="nope")), 401, "bad_signature")
    st = event_body("stripe", "log-3", "o1", note=marker)
    assert_rejected(post(w, "stripe", st, sign_headers("stripe", "log-3", st, secret="nope")), 401, "bad_signature")
    # and an accepted one, logged at debug level
    assert_accepted(post(w, "shop", body, good))
    wait_for(lambda: w.output().count("ingest.rejected") >= 3 and "ingest.accepted" in w.output(),
             what="the rejections and the acceptance logged")
    assert "reason=bad_signature" in w.output()
    assert_not_logged(w, [marker, SW_SECRET, SW_SECRET.removeprefix("whsec_"), STRIPE_SECRET, GITHUB_SECRET,
                          GENERIC_SECRET, good["webhook-signature"].split(",", 1)[1],
                          wrong["webhook-signature"].split(",", 1)[1]])


def test_unparseable_body_never_logged(env):
    # Signed by the partner but not JSON: the refusal is logged, the body is not.
    # (Letters only, under 20: jansson's "near '...'" quotes such a token whole.)
    w = env.worker(extra=PARTNERS)
    marker = "CONFIDENTIALBODY"
    for i, broken in enumerate((f"{marker} and more", f'{{"type": "order.started", "card": {marker}}}')):
        broken = broken.encode()
        assert_rejected(post(w, "shop", broken, sign_headers("shop", f"nj-{i}", broken)), 400, "bad_body")
    wait_for(lambda: w.output().count("reason=bad_body") >= 2, what="the refusals logged")
    assert count(env) == 0
    assert_not_logged(w, [marker])


def test_nul_byte_in_a_signed_body_is_refused(env):
    # jansson skips a NUL after a number; the stored text would be cut short.
    w = env.worker(extra=PARTNERS)
    body = b'{"type": "order.started", "data": {"order_id": 42\x00, "x": 1}}'
    assert_rejected(post(w, "shop", body, sign_headers("shop", "nul-1", body)), 400, "bad_body")
    assert count(env) == 0


def test_malformed_header_names_are_not_kept(env):
    # "Authorization :" (a blank before the colon) must not smuggle a credential
    # into the headers kept for the DLQ view.
    w = env.worker(extra=PARTNERS)
    import socket
    body = order_event("order.started", "o-hdr")
    headers = sign_headers("shop", "hdr-1", body)
    req = (f"POST /v1/inbox/shop HTTP/1.1\r\nHost: x\r\nContent-Length: {len(body)}\r\n"
           + "".join(f"{k}: {v}\r\n" for k, v in headers.items())
           + "Authorization : Bearer sekrit-token\r\nConnection: close\r\n\r\n").encode() + body
    with socket.create_connection(("127.0.0.1", w.port), timeout=10) as s:
        s.sendall(req)
        answer = b""
        while chunk := s.recv(4096):
            answer += chunk
    assert b" 200 " in answer.split(b"\r\n", 1)[0]
    kept = env.db.value("SELECT headers::text FROM webhook_inbox WHERE partner_event_id = 'hdr-1'")
    assert kept and "sekrit-token" not in kept and "webhook-id" in kept


def test_credential_headers_are_stored_redacted(env):
    """[hookd] redact_headers: headers matching its
    globs are stored as "<redacted>", so neither `hookd dlq show` nor the
    admin view (which read the stored row) can show them; the list is
    configurable and replaces the default."""
    secrets = {"X-Api-Key": "key-5f1e", "X-Auth-Token": "tok-77c0", "Authorization": "Bearer bearer-9a2b",
               "Cookie": "sid=cookie-41d8", "X-Twilio-Signature": "twilio-sig-0c3e",
               "X-Shopify-Hmac-Sha256": "shopify-mac-2b9d", "X-Gitlab-Token": "gitlab-tok-6e0a"}
    plain = {"X-Custom-Trace": "trace-123", "User-Agent": "partner/1.0"}

    def send(w, event_id):
        body = event_body("shop", event_id, "o1")
        assert_accepted(post(w, "shop", body, dict(sign_headers("shop", event_id, body), **secrets, **plain)))
        return env.db.one("SELECT headers, headers::text AS text FROM webhook_inbox WHERE partner_event_id = %s",
                          event_id)

    row = send(ingest_only(env), "red-1")
    for value in secrets.values():
        assert value.split()[-1].split("=")[-1] not in row["text"], row["text"]
    kept = row["headers"]
    for name in secrets:
        if name not in ("Authorization", "Cookie"):  # credentials hookd leaves out entirely
            assert kept[name.lower()] == "<redacted>", kept
    assert "authorization" not in kept and "cookie" not in kept
    assert kept["x-custom-trace"] == "trace-123" and kept["user-agent"] == "partner/1.0"

    cfg = with_hookd_keys(env.config(extra=PARTNERS), roles="ingest", redact_headers="x-custom-*")
    row = send(env.worker(config=cfg), "red-2")
    assert row["headers"]["x-custom-trace"] == "<redacted>"
    assert row["headers"]["user-agent"] == "partner/1.0"


# ---- failures around the commit ----------------------------------------------

def test_postgres_down_answers_503_and_stores_nothing(env, services):
    w = env.worker(extra=PARTNERS)
    body = order_event("order.started", "o-pg")
    headers = sign_headers("shop", "pg-1", body, ts=int(time.time()) + 30)  # still fresh after the restart
    services.stop_pg()
    try:
        resp = post(w, "shop", body, headers)
        assert_rejected(resp, 503, "unavailable")
        assert int(resp[1]["Retry-After"]) > 0
        # also while the worker already knows Postgres is gone
        wait_for(lambda: w.get("/readyz")[0] == 503, what="not ready without Postgres")
        resp = post(w, "shop", body, headers)
        assert_rejected(resp, 503, "unavailable")
        assert "Retry-After" in resp[1]
    finally:
        services.start_pg()
    w.wait_ready()
    env.db.close()  # the test's own connection died with the server
    env.db = Db(env.db_url)
    assert count(env) == 0, "a 503 left a row"
    row_id = assert_accepted(post(w, "shop", body, headers))
    assert env.db.value("SELECT partner_event_id FROM webhook_inbox WHERE id = %s", row_id) == "pg-1"
    wait_for(lambda: metric_rejected(w).get("unavailable") == 2, what="unavailable counted")


# An insert whose connection is lost mid-statement is retried once on a new
# connection (ingest.c, work_batch). What the retry finds already stored is
# the request's own row only if it has the id the request gave it: the first
# attempt may have committed before the connection broke (then: accepted),
# or the row may be an earlier request's (then: duplicate, not a second
# "accepted" and a second count of ingested).

def backend_waiting(env, wait_event: str, other_than=()) -> int | None:
    """The pid of the backend of this test's database whose ingest insert
    (sql/queries/ingest_insert.sql) waits on wait_event (a lock: 'relation'; its commit: 'SyncRep'), if any."""
    return env.db.value("SELECT pid FROM pg_stat_activity WHERE datname = current_database()"
                        " AND query LIKE '-- ingest_insert%%'"
                        " AND wait_event = %s AND NOT pid = ANY(%s)", wait_event, list(other_than) or [0])


def post_in_background(w, body: bytes, headers: dict):
    """Posts to the shop partner on a thread; .result() is post()'s answer."""
    pool = ThreadPoolExecutor(1)
    fut = pool.submit(post, w, "shop", body, headers)
    pool.shutdown(wait=False)
    return fut


@pytest.mark.valgrind
def test_a_duplicate_whose_insert_is_retried_on_a_new_connection_is_still_a_duplicate(env):
    """Under `make valgrind`, also the leak check of the retry path."""
    w = ingest_only(env)
    body = order_event("order.started", "o-rt")
    headers = sign_headers("shop", "rt-1", body)
    first = assert_accepted(post(w, "shop", body, headers))
    # The repeat's insert is held on a lock, its backend terminated there
    # (lost mid-statement), and the retry held again until the lock goes.
    locker = Db(env.db_url)
    try:
        locker.conn.autocommit = False
        locker.all("LOCK TABLE hookd_dedup IN SHARE MODE")
        answer = post_in_background(w, body, headers)
        pid = wait_for(lambda: backend_waiting(env, "relation"), what="the repeat's insert waiting on the lock")
        assert env.db.value("SELECT pg_terminate_backend(%s)", pid)
        wait_for(lambda: backend_waiting(env, "relation", other_than=[pid]),
                 what="the insert retried on a new connection, waiting on the lock")
        locker.conn.rollback()
    finally:
        locker.close()
    status, _, doc = answer.result(timeout=20)
    assert (status, doc) == (200, {"status": "duplicate"})
    assert env.db.value("SELECT array_agg(id::text) FROM webhook_inbox") == [first]
    wait_for(lambda: stats(env).get("duplicate") == "1", what="duplicate=1 in the stats hash")
    assert stats(env).get("ingested") == "1", stats(env)


def test_a_request_whose_commit_landed_before_the_connection_was_lost_is_accepted_once(env):
    w = ingest_only(env)
    # A synchronous standby that never comes: a commit is written locally and
    # then waits for it, so its backend can be terminated after the commit.
    env.db.all("ALTER SYSTEM SET synchronous_standby_names = 'nobody'")
    try:
        env.db.all("SELECT pg_reload_conf()")
        sent = 0
        while True:  # until the server applies the setting, a request is answered without waiting
            assert sent < 50, "no commit waited for the standby"
            sent += 1
            body = order_event("order.started", f"o-sr-{sent}")
            headers = sign_headers("shop", f"sr-{sent}", body)
            answer = post_in_background(w, body, headers)
            pid = wait_for(lambda: backend_waiting(env, "SyncRep") or answer.done(),
                           what="the insert's commit waiting for the standby, or answered")
            if pid is not True:
                break
            assert_accepted(answer.result())
        assert env.db.value("SELECT pg_terminate_backend(%s)", pid)
    finally:
        env.db.all("ALTER SYSTEM RESET synchronous_standby_names")
        env.db.all("SELECT pg_reload_conf()")
    row_id = assert_accepted(answer.result(timeout=20))
    assert env.db.value("SELECT id::text FROM webhook_inbox WHERE partner_event_id = %s", f"sr-{sent}") == row_id
    assert count(env) == sent
    wait_for(lambda: stats(env).get("ingested") == str(sent), what=f"ingested={sent} in the stats hash")
    assert stats(env).get("duplicate") is None, stats(env)
    # and a repeat now is a duplicate, as always
    status, _, doc = post(w, "shop", body, headers)
    assert (status, doc) == (200, {"status": "duplicate"})


def test_accepted_rows_survive_kill9(env):
    w = ingest_only(env)
    bodies = {f"k-{i}": order_event("order.started", f"o{i}") for i in range(20)}

    def deliver(event_id):
        return event_id, post(w, "shop", bodies[event_id], sign_headers("shop", event_id, bodies[event_id]))

    with ThreadPoolExecutor(4) as pool:
        answers = dict(pool.map(deliver, bodies))
    w.kill9()  # right after the last 200
    ids = {eid: assert_accepted(resp) for eid, resp in answers.items()}
    rows = {r["partner_event_id"]: r["id"]
            for r in env.db.all("SELECT id::text AS id, partner_event_id FROM webhook_inbox")}
    assert rows == ids


def test_accepted_row_is_processed(env):
    w = env.worker(extra=PARTNERS)
    body = order_event("order.started", "o-proc")
    row_id = assert_accepted(post(w, "shop", body, sign_headers("shop", "proc-1", body)))
    wait_for(lambda: env.db.value("SELECT status FROM webhook_inbox WHERE id = %s", row_id) == "PROCESSED",
             what="the new row PROCESSED")
    assert env.db.value("SELECT state FROM hookd_entities WHERE entity_type = 'order' AND entity_id = 'o-proc'") \
        == "started"
    # the other schemes' rows go the same way
    st = event_body("stripe", "proc-2", "o-proc", event_type="order.paid")
    row_id = assert_accepted(post(w, "stripe", st, sign_headers("stripe", "proc-2", st)))
    wait_for(lambda: env.db.value("SELECT status FROM webhook_inbox WHERE id = %s", row_id) == "PROCESSED",
             what="the stripe row PROCESSED")
    assert env.db.value("SELECT state FROM hookd_entities WHERE entity_id = 'o-proc'") == "paid"


def test_lost_schedule_entry_is_reconciled(env):
    # The ingress commits and schedules; then the schedule entry is lost.
    a = env.worker(config=with_hookd_keys(env.config(extra=PARTNERS, reconcile_interval="1h"), roles="ingest"))
    body = order_event("order.started", "o-lost")
    row_id = assert_accepted(post(a, "shop", body, sign_headers("shop", "lost-1", body)))
    due = env.key("{inbox}:due")
    wait_for(lambda: env.redis.zscore(due, row_id) is not None, what="the row scheduled after commit")
    env.redis.delete(due)
    assert env.db.value("SELECT status FROM webhook_inbox WHERE id = %s", row_id) == "PENDING"
    # A worker that processes finds it through the reconciler, not the lost entry.
    env.worker(config=with_hookd_keys(env.config(), roles="inbox"))
    wait_for(lambda: env.db.value("SELECT status FROM webhook_inbox WHERE id = %s", row_id) == "PROCESSED",
             what="the unscheduled row PROCESSED via the reconciler")


def test_redis_down_while_posting_is_reconciled(env, services):
    w = env.worker(extra=PARTNERS)
    body = order_event("order.started", "o-redis")
    services.stop_redis()
    try:
        wait_for(lambda: w.get("/readyz")[0] == 503, what="the worker noticing Redis is gone")
        # Postgres is the truth: the request is still accepted and stored
        row_id = assert_accepted(post(w, "shop", body, sign_headers("shop", "redis-1", body)))
        assert env.db.value("SELECT status FROM webhook_inbox WHERE id = %s", row_id) == "PENDING"
    finally:
        services.start_redis()
    wait_for(lambda: env.db.value("SELECT status FROM webhook_inbox WHERE id = %s", row_id) == "PROCESSED",
             what="the row processed after Redis came back")
    assert env.db.value("SELECT state FROM hookd_entities WHERE entity_id = 'o-redis'") == "started"
