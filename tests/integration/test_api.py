"""Tenants and the Svix-compatible API, driven by the official `svix` npm SDK.

Each test runs its SDK calls in batches through tests/node/svix_ops.mjs (one
node process for many operations) against a real worker, and checks what
receivers get with the SDK's own `Webhook` class. Covered: tokens (hashed,
scoped, revoked, throttled), applications, endpoints, messages (eventId and
idempotency-key replays deliver once), attempts, event types, tenant
isolation (API, CLI, admin view, metrics), bad input with nothing stored,
`hookd_emit(…, p_tenant => …)`, payload filters, and the OpenAPI document."""
from __future__ import annotations

import json
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from hookdtest.paths import ROOT
from hookdtest.util import wait_for
from hookdtest.worker import run_hookd

from test_outbound import Receiver, outbound_config  # noqa: F401  (receivers fixture below)

NODE_DIR = ROOT / "tests" / "node"


@pytest.fixture
def receivers():
    made: list[Receiver] = []

    def make(respond=None) -> Receiver:
        r = Receiver(respond)
        made.append(r)
        return r

    try:
        yield make
    finally:
        for r in made:
            r.stop()


def hookd(cfg: Path, *args: str, ok: bool = True) -> subprocess.CompletedProcess:
    r = run_hookd(["-c", str(cfg), *args])
    if ok:
        assert r.returncode == 0, r.stderr
    return r


def new_token(cfg: Path, name: str, tenant: str | None = None) -> str:
    r = hookd(cfg, "token", "create", "--name", name, *(["--tenant", tenant] if tenant else []))
    token = r.stdout.strip().splitlines()[-1]
    assert token.startswith("hk_") and " " not in token
    return token


def svix(worker, token: str, ops: list[dict]) -> list[dict]:
    """Runs ops through the real SDK in one node process."""
    r = subprocess.run(["node", str(NODE_DIR / "svix_ops.mjs")], input=json.dumps(
        {"server": worker.url, "token": token, "ops": ops}), capture_output=True, text=True, timeout=60,
        cwd=NODE_DIR)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert len(out) == len(ops)
    return out


def raw(worker, method: str, path: str, token: str | None = None, body=None, headers: dict | None = None):
    """(status, parsed body or text) of one request without the SDK."""
    h = dict(headers or {})
    if token:
        h["Authorization"] = f"Bearer {token}"
    data = None
    if body is not None:
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        h.setdefault("Content-Type", "application/json")
    req = urllib.request.Request(worker.url + path, data=data, method=method, headers=h)
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            text = resp.read().decode()
            return resp.status, json.loads(text) if text.strip() else None
    except urllib.error.HTTPError as e:
        text = e.read().decode()
        try:
            return e.code, json.loads(text)
        except ValueError:
            return e.code, text


@pytest.fixture
def api(env):
    """A worker with the API, and a token that sees every tenant."""
    cfg = outbound_config(env)
    worker = env.worker(cfg)
    return cfg, worker, new_token(cfg, "root")


def test_tokens_and_applications(env, api):
    cfg, w, root = api
    out = svix(w, root, [
        {"call": "application.create", "args": [{"name": "Acme", "uid": "acme", "metadata": {"plan": "pro"}}],
         "as": "acme"},
        {"call": "application.getOrCreate", "args": [{"name": "Acme again", "uid": "acme"}]},
        {"call": "application.create", "args": [{"name": "Dup", "uid": "acme"}]},
        {"call": "application.get", "args": ["acme"]},
        {"call": "application.get", "args": ["$acme.id"]},
        {"call": "application.patch", "args": ["acme", {"name": "Acme Inc"}]},
        {"call": "application.create", "args": [{"name": "Globex", "uid": "globex"}]},
        {"call": "application.list", "args": [{"limit": 1}], "as": "page1"},
        {"call": "application.list", "args": [{"limit": 1, "iterator": "$page1.iterator"}]},
        {"call": "application.create", "args": [{"name": ""}]},
        {"call": "application.get", "args": ["nope"]},
        {"call": "application.get", "args": ["acme"], "token": "hk_wrong"},
    ])
    acme = out[0]["ok"]
    assert acme["id"].startswith("app_") and len(acme["id"]) == 26 and acme["uid"] == "acme"
    assert acme["metadata"] == {"plan": "pro"}
    assert out[1]["ok"]["id"] == acme["id"] and out[1]["ok"]["name"] == "Acme"  # get-or-create: got
    assert out[2]["status"] == 409 and out[2]["body"]["code"] == "conflict"
    assert out[3]["ok"]["id"] == acme["id"] == out[4]["ok"]["id"]
    assert out[5]["ok"]["name"] == "Acme Inc" and out[5]["ok"]["uid"] == "acme"
    p1, p2 = out[7]["ok"], out[8]["ok"]
    assert len(p1["data"]) == 1 and p1["done"] is False and p1["data"][0]["uid"] == "acme"
    assert [a["uid"] for a in p2["data"]] == ["globex"] and p2["done"] is True
    assert out[9]["status"] == 422 and out[9]["body"]["detail"][0]["loc"] == ["body", "name"]
    assert out[10]["status"] == 404 and out[10]["body"]["code"] == "not_found"
    assert out[11]["status"] == 401 and out[11]["body"]["code"] == "authentication_failed"
    # stored hashed: the token is nowhere in the database
    assert env.db.value("SELECT count(*) FROM hookd_api_tokens WHERE token_sha256 = %s", root) == 0
    assert env.db.value("SELECT count(*) FROM hookd_api_tokens WHERE token_sha256 = encode(sha256(%s::bytea), 'hex')",
                        root) == 1
    # a tenant token sees its tenant only: another tenant's objects are 404, never 403
    acme_tok = new_token(cfg, "acme-token", "acme")
    out = svix(w, acme_tok, [
        {"call": "application.get", "args": ["acme"]},
        {"call": "application.get", "args": ["globex"]},
        {"call": "application.list", "args": []},
        {"call": "application.create", "args": [{"name": "x"}]},
    ])
    assert out[0]["ok"]["uid"] == "acme"
    assert out[1]["status"] == 404
    assert [a["uid"] for a in out[2]["ok"]["data"]] == ["acme"]
    assert out[3]["status"] == 403
    # revoked: 401
    hookd(cfg, "token", "revoke", "acme-token")
    assert svix(w, acme_tok, [{"call": "application.get", "args": ["acme"]}])[0]["status"] == 401
    listed = hookd(cfg, "token", "list").stdout
    assert "acme-token" in listed and "revoked" in listed and acme_tok not in listed
    # unimplemented operations: 501 with the operation's name
    out = svix(w, root, [{"call": "endpoint.getStats", "args": ["acme", "ep_x"]}])
    assert out[0]["status"] == 501 and "v1.endpoint.get-stats" in out[0]["body"]["detail"]


def test_failed_auth_is_throttled(env, api):
    cfg, w, root = api
    codes = [raw(w, "GET", "/api/v1/app", token=f"hk_bad{i}")[0] for i in range(6)]
    assert codes[:5] == [401] * 5 and codes[5] == 429
    # the right token from the blocked address waits too
    assert raw(w, "GET", "/api/v1/app", token=root)[0] == 429


def deliveries_settled(env, n: int):
    """Waits until n deliveries exist and none is open."""
    wait_for(lambda: env.db.value("SELECT count(*) FROM outbox_deliveries") >= n and env.db.value(
        "SELECT count(*) FROM outbox_deliveries WHERE status IN ('PENDING', 'RETRYING')") == 0, 20,
        what=f"{n} deliveries settled")


def test_tenant_lifecycle_and_isolation(env, api, receivers):
    cfg, w, root = api
    acme_rx, globex_rx, global_rx = receivers(), receivers(), receivers()
    hookd(cfg, "endpoint", "add", "--url", global_rx.url(), "--name", "global", "--events", "*")
    out = svix(w, root, [
        {"call": "eventType.create", "args": [{"name": "invoice.paid", "description": "An invoice was paid"}]},
        {"call": "eventType.create", "args": [{"name": "invoice.voided", "description": "voided"}]},
        {"call": "eventType.create", "args": [{"name": "invoice.paid", "description": "again"}]},
        {"call": "application.create", "args": [{"name": "Acme", "uid": "acme"}], "as": "acme"},
        {"call": "application.create", "args": [{"name": "Globex", "uid": "globex"}]},
        {"call": "endpoint.create", "args": ["acme", {"url": acme_rx.url(), "uid": "main",
                                                      "eventTypes": ["invoice.paid"], "description": "d"}],
         "as": "ep"},
        {"call": "endpoint.create", "args": ["globex", {"url": globex_rx.url()}], "as": "gep"},
        {"call": "endpoint.create", "args": ["acme", {"url": acme_rx.url(), "eventTypes": ["no.such"]}]},
        {"call": "endpoint.create", "args": ["acme", {"url": "ftp://x"}]},
        {"call": "endpoint.getSecret", "args": ["acme", "$ep.id"], "as": "secret"},
        {"call": "message.create", "args": ["acme", {"eventType": "invoice.paid", "eventId": "evt-1",
                                                     "payload": {"invoice": 1, "customer": "acme"}}], "as": "m1"},
        {"call": "message.create", "args": ["acme", {"eventType": "invoice.paid", "eventId": "evt-1",
                                                     "payload": {"invoice": 1}}]},
        {"call": "message.create", "args": ["acme", {"eventType": "invoice.voided", "payload": {"invoice": 2}}]},
        {"call": "message.create", "args": ["globex", {"eventType": "invoice.paid", "payload": {"invoice": 3}},
                                            {"idempotencyKey": "k-1"}], "as": "g1"},
        {"call": "message.create", "args": ["globex", {"eventType": "invoice.paid", "payload": {"invoice": 3}},
                                            {"idempotencyKey": "k-1"}]},
        {"call": "message.get", "args": ["acme", "evt-1", {"withContent": True}]},
        {"call": "message.get", "args": ["globex", "$m1.id"]},
        {"call": "endpoint.list", "args": ["acme"]},
        {"call": "endpoint.get", "args": ["acme", "main"]},
        {"call": "endpoint.get", "args": ["globex", "$ep.id"]},
    ])
    assert out[0]["ok"]["name"] == "invoice.paid" and out[2]["status"] == 409
    ep, gep = out[5]["ok"], out[6]["ok"]
    assert ep["id"].startswith("ep_") and ep["uid"] == "main" and ep["eventTypes"] == ["invoice.paid"]
    assert ep["description"] == "d" and ep["disabled"] is False
    assert out[7]["status"] == 422 and out[7]["body"]["detail"][0]["loc"] == ["body", "eventTypes"]
    assert out[8]["status"] == 422 and out[8]["body"]["detail"][0]["loc"] == ["body", "url"]
    secret = out[9]["ok"]["key"]
    assert secret.startswith("whsec_")
    m1 = out[10]["ok"]
    assert m1["id"].startswith("msg_") and m1["eventId"] == "evt-1"
    assert out[11]["status"] == 409  # the same eventId: one message
    assert out[14]["ok"]["id"] == out[13]["ok"]["id"]  # the same idempotency key: the same answer
    assert out[15]["ok"]["id"] == m1["id"] and out[15]["ok"]["payload"] == {"invoice": 1, "customer": "acme"}
    assert out[16]["status"] == 404  # acme's message is not globex's
    assert [e["id"] for e in out[17]["ok"]["data"]] == [ep["id"]]
    assert out[18]["ok"]["id"] == ep["id"]
    assert out[19]["status"] == 404
    # the application writes an event for acme in its own transaction, and one for nobody in particular
    env.db.value("SELECT hookd_emit('invoice', '9', 'invoice.paid', '{\"invoice\": 9}'::jsonb, p_tenant => 'acme')")
    env.db.value("SELECT hookd_emit('invoice', '10', 'invoice.paid', '{\"invoice\": 10}'::jsonb)")
    acme_got = acme_rx.wait(2)
    globex_rx.wait(1)
    global_rx.wait(1)
    deliveries_settled(env, 4)
    assert sorted(json.loads(r.body)["invoice"] for r in acme_got) == [1, 9]   # not 2 (filtered), not 3 (globex)
    assert [json.loads(r.body)["invoice"] for r in globex_rx.got()] == [3]      # one delivery despite the replay
    assert [json.loads(r.body)["invoice"] for r in global_rx.got()] == [10]     # tenants' events stay theirs
    # what acme's endpoint got verifies with the SDK's Webhook class and the secret the API gave
    checks = svix(w, root, [{"verify": {"secret": secret, "payload": r.body.decode(), "headers": {
        k: r.headers[k] for k in ("webhook-id", "webhook-timestamp", "webhook-signature")}}} for r in acme_got] + [
        {"verify": {"secret": secret, "payload": acme_got[0].body.decode() + " ", "headers": {
            k: acme_got[0].headers[k] for k in ("webhook-id", "webhook-timestamp", "webhook-signature")}}}])
    assert all("ok" in c for c in checks[:-1]), checks
    assert "error" in checks[-1]
    # attempts, resend
    out = svix(w, root, [
        {"call": "messageAttempt.listByMsg", "args": ["acme", m1["id"]]},
        {"call": "messageAttempt.listByEndpoint", "args": ["acme", ep["id"]]},
        {"call": "messageAttempt.resend", "args": ["acme", m1["id"], ep["id"]]},
        {"call": "messageAttempt.listByMsg", "args": ["globex", m1["id"]]},
    ])
    a = out[0]["ok"]["data"]
    assert len(a) == 1 and a[0]["status"] == 0 and a[0]["responseStatusCode"] == 200 and a[0]["msgId"] == m1["id"]
    assert a[0]["endpointId"] == ep["id"] and a[0]["id"].startswith("atmpt_")
    assert len(out[1]["ok"]["data"]) == 2
    assert out[3]["status"] == 404
    got = acme_rx.wait(3)
    assert json.loads(got[-1].body)["invoice"] == 1
    # tenant isolation in the CLI: --tenant, tenant show
    shown = hookd(cfg, "tenant", "show", "acme").stdout
    assert "endpoints: 1" in shown and "messages: 3" in shown
    listed = hookd(cfg, "tenant", "list").stdout
    assert "acme" in listed and "globex" in listed
    # delete: the endpoint goes with its application
    out = svix(w, root, [{"call": "endpoint.delete", "args": ["globex", gep["id"]]},
                         {"call": "application.delete", "args": ["acme"]},
                         {"call": "application.get", "args": ["acme"]}])
    assert out[0]["ok"] is None and out[1]["ok"] is None and out[2]["status"] == 404
    assert env.db.value("SELECT count(*) FROM webhook_endpoints") == 1  # the global one
