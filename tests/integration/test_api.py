"""Tenants and the Svix-compatible API, driven by the official `svix` npm SDK.

Each test runs its SDK calls in batches through tests/node/svix_ops.mjs (one
node process for many operations) against a real worker, and checks what
receivers get with the SDK's own `Webhook` class. Covered: tokens (hashed,
scoped, revoked, throttled), applications, endpoints, messages (eventId and
idempotency-key replays deliver once), attempts, event types, tenant
isolation (API, CLI, admin view, metrics), bad input with nothing stored,
`hookd_emit(…, p_tenant => …)`, payload filters, and the OpenAPI document."""
from __future__ import annotations

import http.client
import json
import subprocess
import time
from pathlib import Path

import pytest

from hookdtest.client import http as http_request
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


def svix(worker, token: str, ops: list[dict], sdk: str = "2") -> list[dict]:
    """Runs ops through the real SDK (sdk "2": current, "1": the last 1.x)
    in one node process."""
    r = subprocess.run(["node", str(NODE_DIR / "svix_ops.mjs")], input=json.dumps(
        {"server": worker.url, "token": token, "ops": ops, "sdk": sdk}), capture_output=True, text=True, timeout=60,
        cwd=NODE_DIR)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert len(out) == len(ops)
    return out


def raw(worker, method: str, path: str, token: str | None = None, body=None, headers: dict | None = None):
    """(status, parsed body or text) of one request without the SDK. A server
    that answers before reading the whole body (413) and closes is read too."""
    h = dict(headers or {})
    if token:
        h["Authorization"] = f"Bearer {token}"
    data = None
    if body is not None:
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        h.setdefault("Content-Type", "application/json")
    conn = http.client.HTTPConnection("127.0.0.1", worker.port, timeout=10)
    try:
        try:
            conn.request(method, path, body=data, headers=h)
        except (BrokenPipeError, ConnectionResetError):
            pass  # answered early: the response is in the socket
        resp = conn.getresponse()
        text = resp.read().decode()
    finally:
        conn.close()
    try:
        return resp.status, json.loads(text) if text.strip() else None
    except ValueError:
        return resp.status, text


def task_finished(worker, token: str, started: dict, timeout: float = 30) -> dict:
    """The background task an operation started (its RecoverOut/ReplayOut:
    running), once background-task.get shows it finished."""
    assert started["status"] == "running" and started["id"].startswith("qtask_"), started

    def finished():
        st, task = raw(worker, "GET", f"/api/v1/background-task/{started['id']}", token)
        assert st == 200, (st, task)
        return task if task["status"] != "running" else None
    task = wait_for(finished, timeout, what=f"background task {started['id']} finished")
    assert task["status"] == "finished" and task["task"] == started["task"], task
    return task


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
    assert acme["id"].startswith("app_") and len(acme["id"]) == 31 and acme["uid"] == "acme"
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
    out = svix(w, root, [{"call": "endpoint.transformationPartialUpdate", "args": ["acme", "ep_x", {}]}])
    assert out[0]["status"] == 501 and "v1.endpoint.transformation.patch" in out[0]["body"]["detail"]
    # a message may create its application (Svix's `application` field)
    out = svix(w, root, [
        {"call": "message.create", "args": ["newco", {"eventType": "a.b", "payload": {},
                                                      "application": {"name": "NewCo"}}]},
        {"call": "application.get", "args": ["newco"]},
        {"call": "message.create", "args": ["other", {"eventType": "a.b", "payload": {},
                                                      "application": {"name": "X", "uid": "mismatch"}}]},
    ])
    assert out[0]["ok"]["id"].startswith("msg_") and out[1]["ok"]["name"] == "NewCo"
    assert out[2]["status"] == 422


def test_failed_auth_is_throttled(env, api):
    cfg, w, root = api
    codes = [raw(w, "GET", "/api/v1/app", token=f"hk_bad{i}")[0] for i in range(6)]
    assert codes[:5] == [401] * 5 and codes[5] == 429
    status, headers, _ = http_request("GET", f"{w.url}/api/v1/app", headers={"Authorization": "Bearer hk_bad"})
    assert status == 429 and 0 < int(headers["Retry-After"]) <= 60
    # the right token from the blocked address is never refused
    assert raw(w, "GET", "/api/v1/app", token=root)[0] == 200
    # nor is a request without a token answered other than 401
    assert raw(w, "GET", "/api/v1/app")[0] == 401


def test_requests_without_a_token_are_not_counted(env, api):
    cfg, w, root = api
    assert [raw(w, "GET", "/api/v1/app")[0] for _ in range(10)] == [401] * 10
    assert raw(w, "GET", "/api/v1/app", headers={"Authorization": "Basic eDp5"})[0] == 401
    # nobody is blocked: a wrong token is still 401, the right one works
    assert raw(w, "GET", "/api/v1/app", token="hk_bad")[0] == 401
    assert raw(w, "GET", "/api/v1/app", token=root)[0] == 200


def test_throttle_sees_clients_behind_a_trusted_proxy(env):
    cfg = outbound_config(env, hookd_lines=("trusted_proxies = 127.0.0.1",))
    w = env.worker(cfg)
    root = new_token(cfg, "root")

    def as_client(addr: str, token: str | None) -> int:
        return raw(w, "GET", "/api/v1/app", token=token, headers={"X-Forwarded-For": addr})[0]

    assert [as_client("198.51.100.1", f"hk_bad{i}") for i in range(6)] == [401] * 5 + [429]
    # another client behind the same proxy is not blocked, nor is the proxy
    assert as_client("198.51.100.2", "hk_bad") == 401
    assert as_client("198.51.100.2", root) == 200
    assert raw(w, "GET", "/api/v1/app", token="hk_bad")[0] == 401
    # the blocked client's valid token still works; its wrong ones get 429
    assert as_client("198.51.100.1", root) == 200
    assert as_client("198.51.100.1", "hk_bad") == 429
    assert "client=198.51.100.1 blocked=yes" in w.output()


def test_throttle_ignores_x_forwarded_for_from_an_untrusted_peer(env):
    cfg = outbound_config(env, hookd_lines=("trusted_proxies = 10.0.0.0/8",))
    w = env.worker(cfg)
    codes = [raw(w, "GET", "/api/v1/app", token="hk_bad", headers={"X-Forwarded-For": f"198.51.100.{i}"})[0]
             for i in range(6)]
    assert codes == [401] * 5 + [429]  # one client, 127.0.0.1, whatever it claims


def test_answers_are_never_cached(env, api):
    cfg, w, root = api
    assert raw(w, "POST", "/api/v1/app", root, {"name": "Acme", "uid": "acme"})[0] == 201
    status, ep = raw(w, "POST", "/api/v1/app/acme/endpoint", root, {"url": "https://example.com/hook"})
    assert status == 201, ep
    for method, path, want in (("GET", f"/api/v1/app/acme/endpoint/{ep['id']}/secret", 200),
                               ("POST", "/api/v1/auth/app-portal-access/acme", 200),
                               ("GET", "/api/v1/app/acme", 200)):
        status, headers, body = http_request(method, f"{w.url}{path}", body=b"{}" if method == "POST" else None,
                                     headers={"Authorization": f"Bearer {root}", "Content-Type": "application/json"})
        assert status == want, (path, body)
        assert headers.get("Cache-Control") == "no-store", (path, headers)


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


def test_endpoint_operations_and_policies(env, api, receivers):
    cfg, w, root = api
    rx, dead_rx, op_rx = receivers(), receivers(lambda req: (500, {}, b"down")), receivers()
    # the operator's endpoint for operational webhooks
    hookd(cfg, "endpoint", "add", "--url", op_rx.url(), "--name", "ops", "--events", "message.attempt.*,endpoint.*")
    gold = {"$and": [{"customer.tier": "gold"}, {"amount": {"$gt": 100}}]}
    app = svix(w, root, [{"call": "application.create", "args": [{"name": "Acme", "uid": "acme"}]}])[0]["ok"]
    # payloadFilter and filterTypes go in raw: the SDK drops fields it does not know
    st, ep = raw(w, "POST", "/api/v1/app/acme/endpoint", root, {"url": rx.url(), "payloadFilter": gold,
                                                                "someFutureSvixField": True, "headers": {"X-Team": "a"}})
    assert st == 201 and ep["payloadFilter"] == gold, ep
    st, bad = raw(w, "POST", "/api/v1/app/acme/endpoint", root, {"url": rx.url(), "payloadFilter": {"a": {"$re": 1}}})
    assert st == 422 and bad["detail"][0]["loc"] == ["body", "payloadFilter"] and "$re" in bad["detail"][0]["msg"]
    out = svix(w, root, [
        {"call": "endpoint.create", "args": ["acme", {"url": dead_rx.url(), "uid": "dead"}], "as": "dead"},
        {"call": "endpoint.getHeaders", "args": ["acme", ep["id"]]},
        {"call": "endpoint.patchHeaders", "args": ["acme", ep["id"], {"headers": {"Authorization": "Bearer x",
                                                                                  "X-Team": None}}]},
        {"call": "endpoint.getHeaders", "args": ["acme", ep["id"]]},
        {"call": "endpoint.setHeaders", "args": ["acme", ep["id"], {"headers": {"Host": "evil"}}]},
        {"call": "endpoint.patch", "args": ["acme", "dead", {"description": "flaky", "disabled": True}]},
        {"call": "endpoint.get", "args": ["acme", "dead"]},
        {"call": "endpoint.patch", "args": ["acme", "dead", {"disabled": False}]},
        {"call": "endpoint.upsert", "args": ["acme", ep["id"], {"url": rx.url(), "description": "main"}]},
        {"call": "endpoint.getSecret", "args": ["acme", ep["id"]], "as": "old"},
        {"call": "endpoint.rotateSecret", "args": ["acme", ep["id"], {}]},
        {"call": "endpoint.getSecret", "args": ["acme", ep["id"]]},
    ])
    out_dead_id = out[0]["ok"]["id"]
    assert out[1]["ok"] == {"headers": {"X-Team": "a"}, "sensitive": []}
    assert out[3]["ok"] == {"headers": {}, "sensitive": ["Authorization"]}
    assert out[4]["status"] == 422
    assert out[6]["ok"]["disabled"] is True and out[6]["ok"]["description"] == "flaky"
    assert out[7]["ok"]["disabled"] is False
    assert out[8]["ok"]["description"] == "main" and out[8]["ok"].get("eventTypes") is None
    old, new = out[9]["ok"]["key"], out[11]["ok"]["key"]
    assert old != new and new.startswith("whsec_")
    # the PUT kept the payload filter? No: PUT replaces the endpoint (Svix's EndpointUpdate), so set it again
    st, _ = raw(w, "PATCH", f"/api/v1/app/acme/endpoint/{ep['id']}", root, {"payloadFilter": gold})
    assert st == 200
    out = svix(w, root, [
        {"call": "message.create", "args": ["acme", {"eventType": "order.paid", "payload": {
            "customer": {"tier": "gold"}, "amount": 500, "n": 1}}]},
        {"call": "message.create", "args": ["acme", {"eventType": "order.paid", "payload": {
            "customer": {"tier": "gold"}, "amount": 50, "n": 2}}]},
        {"call": "message.create", "args": ["acme", {"eventType": "order.paid", "payload": {
            "customer": {"tier": "silver"}, "amount": 500, "n": 3}}]},
    ])
    got = rx.wait(1)
    dead_rx.wait(12)  # 3 messages x 4 attempts: then dead-lettered
    wait_for(lambda: env.db.value("SELECT count(*) FROM outbox_deliveries WHERE status = 'DEAD'") == 3, 20,
             what="3 dead deliveries")
    assert [json.loads(r.body)["n"] for r in rx.got()] == [1]  # the filter let only n=1 through
    # the operator's DLQ view filters by tenant
    assert len(json.loads(hookd(cfg, "dlq", "list", "--tenant", "acme", "--json").stdout)) == 3
    assert json.loads(hookd(cfg, "dlq", "list", "--tenant", app["id"], "--json").stdout)[0]["source"] == "delivery"
    assert json.loads(hookd(cfg, "dlq", "list", "--tenant", "nobody", "--json").stdout) == []
    # both secrets sign during the rotation's grace period; the new one verifies with the SDK
    hdr = {k: got[0].headers[k] for k in ("webhook-id", "webhook-timestamp", "webhook-signature")}
    checks = svix(w, root, [{"verify": {"secret": new, "payload": got[0].body.decode(), "headers": hdr}},
                            {"verify": {"secret": old, "payload": got[0].body.decode(), "headers": hdr}}])
    assert "ok" in checks[0] and "ok" in checks[1], checks
    # recover: the dead endpoint's failed messages since a time go out again (it answers 200 now)
    dead_rx.respond = lambda req: (200, {}, b"ok")
    out = svix(w, root, [
        {"call": "messageAttempt.listByEndpoint", "args": ["acme", "dead", {"status": 2}]},
        {"call": "endpoint.recover", "args": ["acme", "dead", {"since": "2000-01-01T00:00:00Z"}]},
    ])
    assert len(out[0]["ok"]["data"]) == 12 and all(a["status"] == 2 for a in out[0]["ok"]["data"])
    assert out[1]["ok"]["task"] == "endpoint.recover"
    assert task_finished(w, root, out[1]["ok"])["data"] == {"messagesSent": 3}
    dead_rx.wait(15)
    wait_for(lambda: env.db.value("SELECT count(*) FROM outbox_deliveries WHERE status = 'SUCCEEDED' AND "
                                  "endpoint_id = hookd_api_uuid('ep', %s)", out_dead_id) == 3, 20,
             what="recovered deliveries")
    assert env.db.value("SELECT count(*) FROM dead_letters WHERE replayed_at IS NULL") == 0
    # operational webhooks reached the operator: each dead message failed 4 times, was exhausted, then recovered
    def ops_types():
        return sorted(json.loads(r.body)["type"] for r in op_rx.got())
    want = ["endpoint.disabled"] + ["message.attempt.exhausted"] * 3 + ["message.attempt.failing"] * 3 + [
        "message.attempt.recovered"] * 3
    wait_for(lambda: ops_types() == want, 20, what="operational webhooks")
    exhausted = next(json.loads(r.body) for r in op_rx.got() if b"exhausted" in r.body)
    assert exhausted["data"]["appId"] == app["id"] and exhausted["data"]["appUid"] == "acme"
    assert exhausted["data"]["endpointId"] == out_dead_id and exhausted["data"]["lastAttempt"]["responseStatusCode"] == 500
    # the endpoint's uid is unique in its application
    out = svix(w, root, [{"call": "endpoint.create", "args": ["acme", {"url": rx.url(), "uid": "dead"}]},
                         {"call": "endpoint.delete", "args": ["acme", "dead"]},
                         {"call": "endpoint.get", "args": ["acme", "dead"]}])
    assert out[0]["status"] == 409 and out[1]["ok"] is None and out[2]["status"] == 404
    assert app["uid"] == "acme"


def test_bad_input_stores_nothing(env, api):
    cfg, w, root = api
    raw(w, "POST", "/api/v1/app", root, {"name": "Acme", "uid": "acme"})
    before = env.db.value("SELECT (SELECT count(*) FROM outbox_events) + (SELECT count(*) FROM webhook_endpoints)"
                          " + (SELECT count(*) FROM hookd_tenants) + (SELECT count(*) FROM hookd_idempotency_keys)")
    cases = [
        ("POST", "/api/v1/app", b"{not json", 422),
        ("POST", "/api/v1/app", b"[1, 2]", 422),
        ("POST", "/api/v1/app", {"name": "x", "uid": "bad uid!"}, 422),
        ("POST", "/api/v1/app", {"name": 7}, 422),
        ("POST", "/api/v1/app/acme/endpoint", {"url": "not a url"}, 422),
        ("POST", "/api/v1/app/acme/endpoint", {"url": "http://example.com/", "rateLimit": -1}, 422),
        ("POST", "/api/v1/app/acme/endpoint", {"url": "http://example.com/", "secret": "whsec_short"}, 422),
        ("POST", "/api/v1/app/acme/endpoint", {"url": "http://example.com/", "filterTypes": ["nope"]}, 422),
        ("POST", "/api/v1/app/acme/msg", {"eventType": "a.b"}, 422),
        ("POST", "/api/v1/app/acme/msg", {"eventType": "a b", "payload": {}}, 422),
        ("POST", "/api/v1/app/acme/msg", {"eventType": "a.b", "payload": "text"}, 422),
        ("POST", "/api/v1/app/nope/msg", {"eventType": "a.b", "payload": {}}, 404),
        ("POST", "/api/v1/app/acme/msg", b"{\"eventType\": \"a.b\", \"payload\": {\"x\": \"" + b"y" * (1 << 20) + b"\"}}",
         413),
        ("GET", "/api/v1/app?limit=0", None, 422),
        ("GET", "/api/v1/app?limit=251", None, 422),
        ("GET", "/api/v1/app?limit=ten", None, 400),
        ("DELETE", "/api/v1/app", None, 405),
        ("GET", "/api/v1/nothing-here", None, 404),
    ]
    for method, path, body, want in cases:
        st, resp = raw(w, method, path, root, body, headers={"idempotency-key": f"k-{path}-{want}"})
        assert st == want, (method, path, st, resp)
        if want == 422:
            assert isinstance(resp["detail"], list) and resp["detail"][0]["loc"], resp
        elif want != 413:
            assert set(resp) == {"code", "detail"}, resp
    # wrong, missing and malformed tokens
    assert raw(w, "GET", "/api/v1/app", "hk_nope")[0] == 401
    assert raw(w, "GET", "/api/v1/app")[0] == 401
    assert raw(w, "GET", "/api/v1/app", headers={"Authorization": "Basic eDp5"})[0] == 401
    after = env.db.value("SELECT (SELECT count(*) FROM outbox_events) + (SELECT count(*) FROM webhook_endpoints)"
                         " + (SELECT count(*) FROM hookd_tenants) + (SELECT count(*) FROM hookd_idempotency_keys)")
    assert after == before


def test_openapi_document(env, api):
    cfg, w, root = api
    st, doc = raw(w, "GET", "/api/v1/openapi.json")
    assert st == 200 and doc["openapi"].startswith("3.0")
    schemas = doc["components"]["schemas"]
    ops = {}

    def check_refs(node):
        if isinstance(node, dict):
            ref = node.get("$ref")
            if ref:
                assert ref.startswith("#/components/schemas/") and ref.rsplit("/", 1)[1] in schemas, ref
            for v in node.values():
                check_refs(v)
        elif isinstance(node, list):
            for v in node:
                check_refs(v)

    check_refs(doc)
    for path, item in doc["paths"].items():
        assert path.startswith("/api/v1/") or path.startswith("/ingest/api/v1/")
        templated = {p[1:-1] for p in path.split("/") if p.startswith("{")}
        for method, op in item.items():
            assert method in ("get", "post", "put", "patch", "delete")
            assert op["operationId"] not in ops
            ops[op["operationId"]] = (method, path)
            declared = {p["name"] for p in op["parameters"] if p["in"] == "path"}
            assert declared == templated, (path, declared)
            assert op["responses"] and all(code.isdigit() for code in op["responses"])
    for name, s in schemas.items():
        assert s.get("type") == "object", name
        for req in s.get("required", []):
            assert req in s["properties"], (name, req)
    # the operations answered 501 are marked so (test_api_routes.py walks them)
    unimplemented = {op["operationId"] for item in doc["paths"].values() for op in item.values()
                     if op.get("x-hookd-implemented") is False}
    assert "v1.endpoint.transformation.patch" in unimplemented and "v1.message.create" not in unimplemented
    assert len(ops) - len(unimplemented) == 66  # with health, app-portal-access and send-example
    assert not {"v1.message.precheck", "v1.message-attempt.count-by-endpoint",
                "v1.message-attempt.get-headers"} & unimplemented


def test_cli_tenants_endpoints_and_emit(env, api, receivers):
    cfg, w, root = api
    rx_a, rx_b = receivers(), receivers()
    hookd(cfg, "tenant", "add", "acme", "--name", "Acme Inc")
    hookd(cfg, "tenant", "add", "beta")
    assert "a tenant with that uid exists" in hookd(cfg, "tenant", "add", "acme", ok=False).stderr
    assert "no tenant 'nope'" in hookd(cfg, "endpoint", "add", "--url", rx_a.url(), "--tenant", "nope",
                                       ok=False).stderr
    assert "--filter" in hookd(cfg, "endpoint", "add", "--url", rx_a.url(), "--tenant", "acme", "--filter",
                               '{"a": {"$bogus": 1}}', ok=False).stderr
    hookd(cfg, "endpoint", "add", "--url", rx_a.url(), "--name", "acme-hook", "--tenant", "acme",
          "--events", "order.*", "--filter", '{"total": {"$gt": 10}}')
    hookd(cfg, "endpoint", "add", "--url", rx_b.url(), "--name", "beta-hook", "--tenant", "beta")
    listed = hookd(cfg, "endpoint", "list", "--tenant", "acme").stdout
    assert "acme-hook" in listed and "beta-hook" not in listed and "tenant=acme" in listed
    for tenant, total in (("acme", 5), ("acme", 50), ("beta", 7)):
        env.db.value("SELECT hookd_emit('order', '1', 'order.paid', %s::jsonb, p_tenant => %s)",
                     json.dumps({"total": total}), tenant)
    rx_a.wait(1)
    rx_b.wait(1)
    deliveries_settled(env, 2)
    assert [json.loads(r.body)["total"] for r in rx_a.got()] == [50]
    assert [json.loads(r.body)["total"] for r in rx_b.got()] == [7]
    # the API sees the CLI's tenant and endpoint; the metrics name no tenant's endpoint
    out = svix(w, root, [{"call": "endpoint.list", "args": ["acme"]}])
    assert [e["url"] for e in out[0]["ok"]["data"]] == [rx_a.url()]
    metrics = w.metrics()
    assert rx_a.url() not in metrics and str(rx_a.port) not in metrics
    # deleting a tenant takes its endpoints and tokens with it
    new_token(cfg, "acme-tok", "acme")
    hookd(cfg, "tenant", "delete", "acme")
    assert "acme" not in hookd(cfg, "tenant", "list").stdout
    assert env.db.value("SELECT count(*) FROM webhook_endpoints WHERE name = 'acme-hook'") == 0
    assert "acme-tok" not in hookd(cfg, "token", "list").stdout


def test_rate_limit_script_paces_every_worker_alike(env):
    """lua/ratelimit.lua: one key per endpoint that every worker asks, so the
    pace holds across the cluster: a burst of `rate` within a second, then
    one per 1000/rate ms, whichever worker asks."""
    script = env.redis.register_script((ROOT / "lua" / "ratelimit.lua").read_text())
    key = env.key("ratelimit:{ep1}")

    def take(now, max_wait=10_000, rate=5):
        reserved, wait = script(keys=[key], args=[rate, now, max_wait])
        return bool(reserved), int(wait)

    now = 1_000_000
    # two workers asking in turn at the same instant share one budget
    waits = [take(now)[1] for _ in range(10)]
    assert waits == [0, 0, 0, 0, 0, 200, 400, 600, 800, 1000]
    # a caller that will not wait that long reserves nothing
    assert take(now, max_wait=100) == (False, 1200)
    assert take(now) == (True, 1200)
    # after the reservations have passed, the budget is back
    assert take(now + 10_000)[1] == 0
    assert env.redis.pttl(key) > 0  # the key expires by itself
    other = env.key("ratelimit:{ep2}")
    assert script(keys=[other], args=[1, now, 0]) == [1, 0]
    assert script(keys=[other], args=[1, now, 0]) == [0, 1000]
