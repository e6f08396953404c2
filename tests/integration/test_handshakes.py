"""The public-key presets and the provider handshakes, end to end.

- sendgrid (ECDSA P-256) and discord (Ed25519): requests signed with keys
  made here are first checked by the provider's own verifier
  (@sendgrid/eventwebhook EventWebhook.verifySignature, discord-interactions
  verifyKey; one node process per test), then accepted by hookd with either
  of two configured public keys (rotation); one byte changed, a wrong key, a
  stale timestamp and a missing header are refused with their reasons and
  stored nowhere.
- handshakes, answered on /v1/inbox/{partner} and never stored: Slack
  url_verification (checked with @slack/bolt's verifier too), Zoom
  endpoint.url_validation, Twitch webhook_callback_verification, Discord's
  interaction and webhook-event PINGs, Meta's GET subscription check, X's
  CRC, GitHub's ping, WooCommerce's unsigned webhook_id ping; each refused
  when its signature or verify token is wrong.
- x's CRC answer is, by X's protocol, the signature of a POST of the token:
  an x partner without allow_ips does not load, a CRC check from outside
  its ranges is refused, and a token that is a JSON body is never answered,
  so no answer can be replayed as an event's signature."""
from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
import urllib.parse
from datetime import datetime, timezone

import pytest

from hookdtest.client import http
from hookdtest.worker import run_hookd
from hookdtest.pksign import (DiscordKey, SendgridKey, sdk_accepts, sign_hub256, sign_slack, sign_twitch,
                              sign_zoom)

SG_KEYS = [SendgridKey.new(), SendgridKey.new()]  # both configured: rotation
SG_WRONG = SendgridKey.new()
DC_KEYS = [DiscordKey.new(), DiscordKey.new()]
DC_WRONG = DiscordKey.new()
SLACK_SECRET = "slack-signing-secret-8f2e1c"
ZOOM_SECRET = "zoom-secret-token-77ab31c2"
TWITCH_SECRET = "twitch-eventsub-secret-5e1"
META_SECRET = "meta-app-secret-0c9d2b71e"
META_TOKEN = "meta-verify-token-4417"
X_SECRET = "x-consumer-secret-a6b2f0c9e1d3"
GITHUB_SECRET = "github-secret-3c1d7a9e"
WOO_SECRET = "woo-secret-91b4e27c5d"
JSON = "application/json"

PARTNERS = f"""
[partner sendgrid]
scheme = sendgrid
public_key = {SG_KEYS[0].public}
public_key = {SG_KEYS[1].public}

[partner discord]
scheme = discord
public_key = {DC_KEYS[0].public}
public_key = {DC_KEYS[1].public}

[partner slack]
scheme = slack
secret = {SLACK_SECRET}

[partner zoom]
scheme = zoom
secret = {ZOOM_SECRET}

[partner twitch]
scheme = twitch
secret = {TWITCH_SECRET}

[partner meta]
scheme = meta
secret = {META_SECRET}
verify_token = {META_TOKEN}

[partner meta-fenced]
scheme = meta
secret = {META_SECRET}
verify_token = {META_TOKEN}
allow_ips = 192.0.2.0/24

[partner meta-notoken]
scheme = meta
secret = {META_SECRET}

[partner x]
scheme = x
secret = {X_SECRET}
event_type = json:type
allow_ips = 127.0.0.1, ::1

[partner x-fenced]
scheme = x
secret = {X_SECRET}
event_type = json:type
allow_ips = 192.0.2.0/24

[partner gh]
scheme = github
secret = {GITHUB_SECRET}

[partner woo]
scheme = woocommerce
secret = {WOO_SECRET}
"""


@pytest.fixture
def w(env):
    cfg = env.config(extra=PARTNERS)
    cfg.write_text(cfg.read_text().replace("[hookd]\n", "[hookd]\nroles = ingest\n", 1))
    return env.worker(config=cfg)


def request(w, method: str, partner: str, body: bytes | None = None, headers: dict | None = None,
            query: dict | None = None):
    url = f"{w.url}/v1/inbox/{partner}" + ("?" + urllib.parse.urlencode(query) if query else "")
    return http(method, url, body, headers or {})


def post_json(w, partner: str, body: bytes, headers: dict):
    status, h, raw = request(w, "POST", partner, body, dict({"Content-Type": JSON}, **headers))
    try:
        doc = json.loads(raw) if raw else None
    except ValueError:
        doc = None
    return status, h, raw, doc


def rows(env, partner: str | None = None) -> int:
    if partner is None:
        return env.db.value("SELECT count(*) FROM webhook_inbox")
    return env.db.value("SELECT count(*) FROM webhook_inbox WHERE partner_name = %s", partner)


def refused(resp, status: int, *codes: str):
    got, _, raw, doc = resp
    assert got == status and doc and doc["error"] in codes, resp
    return doc


def flip(body: bytes, i: int = 5) -> bytes:
    return body[:i] + bytes([body[i] ^ 0x01]) + body[i + 1:]


# ---- public-key presets -------------------------------------------------------

def sendgrid_body(n: int) -> bytes:
    return json.dumps([{"email": f"user{n}@example.com", "event": "delivered", "sg_event_id": f"sg-{n}",
                        "sg_message_id": f"msg-{n}", "timestamp": 1700000000 + n}]).encode()


def test_sendgrid_signed_accepted_every_tampering_refused(env, w):
    now = int(time.time())
    b1, b2, b3 = sendgrid_body(1), sendgrid_body(2), sendgrid_body(3)
    good1 = SG_KEYS[0].headers(now, b1)
    good2 = SG_KEYS[1].headers(now, b2)
    wrong = SG_WRONG.headers(now, b3)
    stale = SG_KEYS[0].headers(now - 3600, b3)

    def item(key, headers, body):
        return dict(kind="sendgrid", public_key=key.public, body=body,
                    signature=headers["X-Twilio-Email-Event-Webhook-Signature"],
                    timestamp=headers["X-Twilio-Email-Event-Webhook-Timestamp"])
    # the provider's verifier agrees with our signer, and tells tampering apart
    assert sdk_accepts([item(SG_KEYS[0], good1, b1), item(SG_KEYS[1], good2, b2), item(SG_KEYS[0], good1, flip(b1)),
                        item(SG_KEYS[0], wrong, b3)]) == [True, True, False, False]

    refused(post_json(w, "sendgrid", flip(b1), good1), 401, "bad_signature")
    refused(post_json(w, "sendgrid", b3, wrong), 401, "bad_signature")
    refused(post_json(w, "sendgrid", b3, stale), 401, "timestamp", "stale_timestamp")
    ts_changed = dict(good1, **{"X-Twilio-Email-Event-Webhook-Timestamp": str(now + 1)})
    refused(post_json(w, "sendgrid", b1, ts_changed), 401, "bad_signature")
    for missing in good1:
        refused(post_json(w, "sendgrid", b1, {k: v for k, v in good1.items() if k != missing}), 400,
                "missing_signature")
    assert rows(env) == 0, "a refused request left a row"

    assert post_json(w, "sendgrid", b1, good1)[0] == 200
    assert post_json(w, "sendgrid", b2, good2)[0] == 200  # signed with the second key
    assert rows(env, "sendgrid") == 2
    stored = env.db.value("SELECT payload FROM webhook_inbox WHERE partner_name = 'sendgrid' ORDER BY received_at "
                          "LIMIT 1")
    assert stored == json.loads(b1)


def test_discord_signed_accepted_pings_answered_tampering_refused(env, w):
    now = int(time.time())
    event = json.dumps({"version": 1, "application_id": "1234", "type": 1,
                        "event": {"type": "APPLICATION_AUTHORIZED", "timestamp": "2024-10-18T14:42:53.064834",
                                  "data": {"user": {"id": "42"}}}}).encode()
    ping_interaction = json.dumps({"id": "1", "application_id": "1234", "type": 1, "token": "t", "version": 1}).encode()
    ping_event = json.dumps({"version": 1, "application_id": "1234", "type": 0}).encode()
    good = DC_KEYS[1].headers(now, event)
    ping1 = DC_KEYS[0].headers(now, ping_interaction)
    ping0 = DC_KEYS[0].headers(now, ping_event)
    wrong = DC_WRONG.headers(now, event)

    def item(key, headers, body):
        return dict(kind="discord", public_key=key.public, body=body, signature=headers["X-Signature-Ed25519"],
                    timestamp=headers["X-Signature-Timestamp"])
    assert sdk_accepts([item(DC_KEYS[1], good, event), item(DC_KEYS[0], ping1, ping_interaction),
                        item(DC_KEYS[0], ping0, ping_event), item(DC_KEYS[1], good, flip(event)),
                        item(DC_KEYS[1], wrong, event)]) == [True, True, True, False, False]

    refused(post_json(w, "discord", flip(event), good), 401, "bad_signature")
    refused(post_json(w, "discord", event, wrong), 401, "bad_signature")
    refused(post_json(w, "discord", event, DC_KEYS[1].headers(now - 3600, event)), 401, "timestamp",
            "stale_timestamp")
    for missing in good:
        refused(post_json(w, "discord", event, {k: v for k, v in good.items() if k != missing}), 400,
                "missing_signature")
    # a PING is answered only after its signature verified
    refused(post_json(w, "discord", ping_interaction, DC_WRONG.headers(now, ping_interaction)), 401, "bad_signature")
    status, h, raw, doc = post_json(w, "discord", ping_interaction, ping1)
    assert status == 200 and doc == {"type": 1} and h["Content-Type"].startswith(JSON), (status, raw)
    status, h, raw, _ = post_json(w, "discord", ping_event, ping0)
    assert status == 204 and raw == b"" and h.get("Content-Type") == JSON, (status, h, raw)
    assert rows(env) == 0

    # stored, and acknowledged as Discord asks: 204 No Content (a duplicate too)
    status, _, raw, _ = post_json(w, "discord", event, good)
    assert status == 204 and raw == b"", (status, raw)
    assert post_json(w, "discord", event, good)[:3:2] == (204, b"")
    assert rows(env, "discord") == 1


# ---- signed POST handshakes ---------------------------------------------------

def test_slack_url_verification(env, w):
    now = int(time.time())
    body = json.dumps({"token": "Jhj5dZrVaK7ZwHHjRyZWjbDl", "challenge": "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P",
                       "type": "url_verification"}).encode()
    good = sign_slack(SLACK_SECRET, now, body)
    bad = sign_slack(SLACK_SECRET + "x", now, body)
    assert sdk_accepts([dict(kind="slack", secret=SLACK_SECRET, body=body, signature=good["X-Slack-Signature"],
                             timestamp=str(now)),
                        dict(kind="slack", secret=SLACK_SECRET, body=body, signature=bad["X-Slack-Signature"],
                             timestamp=str(now))]) == [True, False]
    status, h, raw, doc = post_json(w, "slack", body, good)
    assert status == 200 and doc == {"challenge": "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P"}, raw
    doc = refused(post_json(w, "slack", body, bad), 401, "bad_signature")
    assert "3eZbrw1a" not in json.dumps(doc)
    refused(post_json(w, "slack", body, sign_slack(SLACK_SECRET, now - 3600, body)), 401, "timestamp",
            "stale_timestamp")
    assert rows(env) == 0


def test_zoom_endpoint_url_validation(env, w):
    now = int(time.time())
    body = json.dumps({"payload": {"plainToken": "qgg8vlvZRS6UYooatFL8Aw"}, "event_ts": now * 1000,
                       "event": "endpoint.url_validation"}).encode()
    status, _, raw, doc = post_json(w, "zoom", body, sign_zoom(ZOOM_SECRET, now, body))
    expected = hmac.new(ZOOM_SECRET.encode(), b"qgg8vlvZRS6UYooatFL8Aw", hashlib.sha256).hexdigest()
    assert status == 200 and doc == {"plainToken": "qgg8vlvZRS6UYooatFL8Aw", "encryptedToken": expected}, raw
    doc = refused(post_json(w, "zoom", body, sign_zoom(ZOOM_SECRET + "x", now, body)), 401, "bad_signature")
    assert expected not in json.dumps(doc)
    refused(post_json(w, "zoom", flip(body, 20), sign_zoom(ZOOM_SECRET, now, body)), 401, "bad_signature")
    assert rows(env) == 0


def test_twitch_webhook_callback_verification(env, w):
    ts = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f") + "123Z"  # Twitch sends nanoseconds
    challenge = "pogchamp-kappa-360noscope-vohiyo"
    body = json.dumps({"challenge": challenge, "subscription": {
        "id": "f1c2a387-161a-49f9-a165-0f21d7a4e1c4", "status": "webhook_callback_verification_pending",
        "type": "channel.follow", "version": "2", "condition": {"broadcaster_user_id": "12826"},
        "transport": {"method": "webhook", "callback": "https://example.com/webhooks/callback"},
        "created_at": "2019-11-16T10:11:12.634234626Z"}}).encode()
    good = sign_twitch(TWITCH_SECRET, "e76c6bd4-55c9-4987-8304-da1588d8988b", ts, body,
                       "webhook_callback_verification")
    status, h, raw = request(w, "POST", "twitch", body, dict({"Content-Type": JSON}, **good))
    assert status == 200 and raw == challenge.encode() and h["Content-Type"].startswith("text/plain"), (status, raw)
    bad = sign_twitch(TWITCH_SECRET + "x", "e76c6bd4-55c9-4987-8304-da1588d8988b", ts, body,
                      "webhook_callback_verification")
    status, _, raw = request(w, "POST", "twitch", body, dict({"Content-Type": JSON}, **bad))
    assert status == 401 and challenge.encode() not in raw
    # the message id is signed: another id with the same signature is refused
    moved = dict(good, **{"Twitch-Eventsub-Message-Id": "another-id"})
    assert request(w, "POST", "twitch", body, dict({"Content-Type": JSON}, **moved))[0] == 401
    assert rows(env) == 0


def test_github_ping_is_answered_not_stored(env, w):
    body = json.dumps({"zen": "Design for failure.", "hook_id": 1, "hook": {"type": "Repository"}}).encode()
    h = dict(sign_hub256(GITHUB_SECRET, body), **{"X-GitHub-Event": "ping", "X-GitHub-Delivery": "d-1"})
    status, _, raw, doc = post_json(w, "gh", body, h)
    assert status == 200 and doc == {"status": "pong"}, raw
    refused(post_json(w, "gh", body, dict(h, **sign_hub256(GITHUB_SECRET + "x", body))), 401, "bad_signature")
    assert rows(env) == 0


def test_woocommerce_ping_is_answered_not_stored(env, w):
    form = {"Content-Type": "application/x-www-form-urlencoded"}
    status, _, raw = request(w, "POST", "woo", b"webhook_id=17", form)
    assert status == 200 and raw == b""
    # anything more than the ping is an ordinary request: unsigned, refused
    status, _, _ = request(w, "POST", "woo", b"webhook_id=17&x=1", form)
    assert status in (400, 401, 415)
    assert rows(env) == 0


# ---- GET handshakes -------------------------------------------------------------

def test_meta_subscription_check(env, w):
    q = {"hub.mode": "subscribe", "hub.verify_token": META_TOKEN, "hub.challenge": "1158201444"}
    status, h, raw = request(w, "GET", "meta", query=q)
    assert status == 200 and raw == b"1158201444" and h["Content-Type"].startswith("text/plain"), (status, raw)
    for bad in (dict(q, **{"hub.verify_token": META_TOKEN + "x"}),
                {k: v for k, v in q.items() if k != "hub.verify_token"}):
        status, _, raw = request(w, "GET", "meta", query=bad)
        assert status == 403 and json.loads(raw)["error"] == "bad_verify_token" and b"1158201444" not in raw
    # a partner without verify_token refuses every check
    status, _, raw = request(w, "GET", "meta-notoken", query=q)
    assert status == 403 and json.loads(raw)["error"] == "bad_verify_token"
    # allow_ips holds for handshakes too
    status, _, raw = request(w, "GET", "meta-fenced", query=q)
    assert status == 403 and json.loads(raw)["error"] == "address_not_allowed"
    # a GET that is no subscription check is still a wrong method; so is any GET to other partners
    assert request(w, "GET", "meta")[0] == 405
    assert request(w, "GET", "slack", query=q)[0] == 405
    # the events themselves are signed POSTs
    body = json.dumps({"object": "page", "entry": [{"id": "1", "time": 1700000000, "changes": []}]}).encode()
    refused(post_json(w, "meta", body, sign_hub256(META_SECRET + "x", body)), 401, "bad_signature")
    assert rows(env) == 0


def test_x_crc(env, w):
    token = "9b4507b3-9d4e-4d4b-a3d3-a1f2f2d2a8b0"
    status, h, raw = request(w, "GET", "x", query={"crc_token": token})
    mac = hmac.new(X_SECRET.encode(), token.encode(), hashlib.sha256).digest()
    assert status == 200 and h["Content-Type"].startswith(JSON), (status, raw)
    assert json.loads(raw) == {"response_token": "sha256=" + base64.b64encode(mac).decode()}
    assert request(w, "GET", "x", query={"crc_token": ""})[0] == 400
    assert rows(env) == 0


def x_signature(body: bytes) -> str:
    """X-Twitter-Webhooks-Signature of a POST of body: also the CRC answer for the token body."""
    return "sha256=" + base64.b64encode(hmac.new(X_SECRET.encode(), body, hashlib.sha256).digest()).decode()


def test_x_without_allow_ips_does_not_load(env):
    section = f"\n[partner x]\nscheme = x\nsecret = {X_SECRET}\nevent_type = json:type\n"
    for extra, words in (("", "[partner x] scheme x needs allow_ips: its CRC check (GET ?crc_token=T) answers "
                              "HMAC-SHA256(secret, T), which is the X-Twitter-Webhooks-Signature of a POST of T"),
                         ("allow_ips = 0.0.0.0/0, ::/0\n", "[partner x] scheme x needs allow_ips narrower than every "
                                                          "address")):
        cfg = env.config(extra=section + extra)
        r = run_hookd(["config", "check", str(cfg)])
        assert r.returncode != 0 and words in r.stderr, r.stderr
        r = run_hookd(["-c", str(cfg), "run"], timeout=20)
        assert r.returncode != 0 and words in r.stderr, r.stderr
    assert run_hookd(["config", "check", str(env.config(extra=section + "allow_ips = 192.0.2.0/24\n"))]).returncode == 0


def test_x_crc_answers_nothing_that_signs_an_event(env, w):
    event = json.dumps({"for_user_id": "2244994945", "type": "tweet_create_events"}, separators=(",", ":"))
    # outside the partner's ranges: refused before anything is computed, and so is the POST
    status, _, raw = request(w, "GET", "x-fenced", query={"crc_token": "9b4507b3-9d4e-4d4b-a3d3-a1f2f2d2a8b0"})
    assert status == 403 and json.loads(raw)["error"] == "address_not_allowed" and b"response_token" not in raw
    forged = x_signature(event.encode())
    status, _, raw = request(w, "POST", "x-fenced", event.encode(),
                             {"Content-Type": JSON, "X-Twitter-Webhooks-Signature": forged})
    assert status == 403 and json.loads(raw)["error"] == "address_not_allowed"
    # inside them: a token that is a JSON body (an object, a number) is not answered
    for token in (event, "12345"):
        status, _, raw = request(w, "GET", "x", query={"crc_token": token})
        assert status == 400 and json.loads(raw)["error"] == "bad_body" and b"response_token" not in raw, raw
        assert x_signature(token.encode()).encode() not in raw
    # and what it does answer signs no event: the token is no JSON body
    token = "9b4507b3-9d4e-4d4b-a3d3-a1f2f2d2a8b0"
    status, _, raw = request(w, "GET", "x", query={"crc_token": token})
    answer = json.loads(raw)["response_token"]
    assert status == 200 and answer == x_signature(token.encode())
    status, _, raw = request(w, "POST", "x", token.encode(),
                             {"Content-Type": JSON, "X-Twitter-Webhooks-Signature": answer})
    assert status == 400 and json.loads(raw)["error"] == "bad_body", raw
    assert rows(env) == 0
