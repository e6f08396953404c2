"""Signature headers and delivery settings: every delivery carries Svix's
`svix-id`, `svix-timestamp` and `svix-signature` and the Standard Webhooks
`webhook-*` set with the same values, unless the `signature_headers`
setting says one set; the setting resolves from the endpoint, else its
tenant, else `[hookd]`. A receiver written from Svix's documentation, which
hands the official SDK's `Webhook.verify` only the three `svix-*` headers,
accepts every delivery (SDK 2.x and the last 1.x), on the relay's first
attempt and on a retry. `svix-*` custom headers are refused by the API and
the CLI, and one stored before is dropped at send with a warning. The
inbound `standard-webhooks` preset accepts a request signed under `svix-*`
names and still refuses a bad signature."""
from __future__ import annotations

import json
import time

from hookdtest.client import http
from hookdtest.signing import SW_SECRET, sign_standard
from hookdtest.util import wait_for

from test_api import hookd, new_token, raw, receivers, svix  # noqa: F401  (receivers: a fixture)
from test_outbound import outbound_config, statuses

SVIX = ("svix-id", "svix-timestamp", "svix-signature")
WEBHOOK = ("webhook-id", "webhook-timestamp", "webhook-signature")


def settled(env, n: int):
    wait_for(lambda: env.db.value("SELECT count(*) FROM outbox_deliveries WHERE status = 'SUCCEEDED'") >= n,
             what=f"{n} succeeded deliveries")


def header_set(req) -> str:
    """Which signature headers a request carried: both, svix, webhook or none."""
    has_svix = all(k in req.headers for k in SVIX)
    has_webhook = all(k in req.headers for k in WEBHOOK)
    assert has_svix or not any(k in req.headers for k in SVIX), req.headers
    assert has_webhook or not any(k in req.headers for k in WEBHOOK), req.headers
    return {(True, True): "both", (True, False): "svix", (False, True): "webhook"}.get((has_svix, has_webhook), "none")


def svix_only(secret: str, req, payload: str | None = None) -> dict:
    """A verify op of svix_ops.mjs given only the three svix-* headers."""
    return {"verify": {"secret": secret, "payload": req.body.decode() if payload is None else payload,
                       "headers": {k: req.headers[k] for k in SVIX}}}


def test_svix_sdks_verify_every_delivery_from_the_svix_headers_alone(env, receivers):
    cfg = outbound_config(env)
    w = env.worker(cfg)
    root = new_token(cfg, "root")
    # the second request to the receiver fails once: its delivery is retried through the claim path
    rx = receivers(statuses(200, 500, 200))
    out = svix(w, root, [
        {"call": "application.create", "args": [{"name": "Acme", "uid": "acme"}]},
        {"call": "endpoint.create", "args": ["acme", {"url": rx.url(), "uid": "main"}], "as": "ep"},
        {"call": "endpoint.getSecret", "args": ["acme", "main"]},
        {"call": "message.create", "args": ["acme", {"eventType": "invoice.paid", "payload": {"n": 1}}]},
        {"call": "message.create", "args": ["acme", {"eventType": "invoice.paid", "payload": {"n": 2}}]},
        {"call": "message.create", "args": ["acme", {"eventType": "invoice.paid", "payload": {"n": 3}}]},
    ])
    secret = out[2]["ok"]["key"]
    env.db.value("SELECT hookd_emit('invoice', '4', 'invoice.paid', '{\"n\": 4}'::jsonb, p_tenant => 'acme')")
    got = rx.wait(5)
    settled(env, 4)
    ns = sorted(json.loads(r.body)["n"] for r in got)
    assert sorted(set(ns)) == [1, 2, 3, 4] and len(ns) == 5  # one of them twice: the failed one's retry
    for r in got:  # both sets, the same values
        assert header_set(r) == "both"
        assert [r.headers[k] for k in SVIX] == [r.headers[k] for k in WEBHOOK]
        assert r.headers["svix-id"].startswith("msg_")
    for sdk in ("2", "1"):
        checks = svix(w, root, [svix_only(secret, r) for r in got] + [svix_only(secret, got[0], got[0].body.decode()
                                                                                  + " ")], sdk=sdk)
        assert all("ok" in c for c in checks[:-1]), (sdk, checks)
        assert "error" in checks[-1], (sdk, checks)  # a changed body still fails
    assert raw(w, "GET", f"/api/v1/app/acme/endpoint/{out[1]['ok']['id']}", root)[1]["settings"] == {}


def test_endpoint_setting_beats_tenant_setting_beats_default(env, receivers):
    cfg = outbound_config(env)
    w = env.worker(cfg)
    root = new_token(cfg, "root")
    own, inherits, overrides, plain = receivers(), receivers(), receivers(), receivers()
    svix(w, root, [{"call": "application.create", "args": [{"name": "Globex", "uid": "globex"}]}])
    status, app = raw(w, "POST", "/api/v1/app", root, {"name": "Acme", "uid": "acme",
                                                       "settings": {"signature_headers": "svix"}})
    assert status == 201 and app["settings"] == {"signature_headers": "svix"}, app
    status, body = raw(w, "PATCH", "/api/v1/app/acme", root, {"settings": {"signature_headers": "sviks"}})
    assert status == 422 and body["detail"][0]["loc"] == ["body", "settings"], body
    # the SDK sends and shows Svix's fields only: settings, hookd's, go over plain HTTP
    out = [raw(w, method, f"/api/v1/app/{path}", root, body) for method, path, body in [
        # the endpoint's own setting, in a tenant without one
        ("POST", "globex/endpoint", {"url": own.url(), "uid": "own", "settings": {"signature_headers": "webhook"}}),
        ("POST", "globex/endpoint", {"url": plain.url(), "uid": "plain"}),
        ("POST", "acme/endpoint", {"url": inherits.url(), "uid": "inherits"}),
        ("POST", "acme/endpoint", {"url": overrides.url(), "uid": "overrides",
                                   "settings": {"signature_headers": "webhook"}}),
        ("PATCH", "acme/endpoint/overrides", {"settings": {"signature_headers": "both"}}),
        ("GET", "acme/endpoint/overrides", None),
        ("POST", "acme/endpoint", {"url": own.url(), "settings": {"signature_headers": "all"}}),
        ("PATCH", "acme/endpoint/inherits", {"settings": {"signatureHeaders": "svix"}}),
        ("PUT", "globex/endpoint/own", {"url": own.url(), "uid": "own"}),  # as an SDK's update: kept
    ]]
    assert out[0] == (201, out[0][1]) and out[0][1]["settings"] == {"signature_headers": "webhook"}
    assert out[4][1]["settings"] == {"signature_headers": "both"} == out[5][1]["settings"]
    for status, body in (out[6], out[7]):
        assert status == 422 and body["detail"][0]["loc"] == ["body", "settings"], body
    assert "signature_headers must be both, svix or webhook" in out[6][1]["detail"][0]["msg"]
    assert "no setting is named 'signatureHeaders'" in out[7][1]["detail"][0]["msg"]
    assert out[8][0] == 200 and out[8][1]["settings"] == {"signature_headers": "webhook"}
    assert env.db.value("SELECT count(*) FROM webhook_endpoints") == 4  # the refused one stored nothing
    # the tenant's setting, through the CLI (over what the API set)
    hookd(cfg, "tenant", "update", "acme", "--settings", '{"signature_headers": "webhook"}')
    assert "settings: {\"signature_headers\": \"webhook\"}" in hookd(cfg, "tenant", "show", "acme").stdout
    assert raw(w, "GET", "/api/v1/app/acme", root)[1]["settings"] == {"signature_headers": "webhook"}
    r = hookd(cfg, "tenant", "update", "acme", "--settings", '{"signature_headers": "none"}', ok=False)
    assert r.returncode != 0 and "signature_headers must be both, svix or webhook" in r.stderr
    svix(w, root, [{"call": "message.create", "args": [app, {"eventType": "e", "payload": {"app": app}}]}
                   for app in ("acme", "globex")])
    settled(env, 4)
    assert header_set(own.wait(1)[0]) == "webhook"        # endpoint, over the default
    assert header_set(plain.wait(1)[0]) == "both"         # the default
    assert header_set(inherits.wait(1)[0]) == "webhook"   # tenant, over the default
    assert header_set(overrides.wait(1)[0]) == "both"     # endpoint, over the tenant
    # a patch's null removes the endpoint's own: the tenant's applies again
    status, body = raw(w, "PATCH", "/api/v1/app/acme/endpoint/overrides", root, {"settings": {"signature_headers": None}})
    assert status == 200 and body["settings"] == {}
    svix(w, root, [{"call": "message.create", "args": ["acme", {"eventType": "e", "payload": {"n": 2}}]}])
    assert header_set(overrides.wait(2)[1]) == "webhook"


def test_hookd_section_setting_is_the_last_layer(env, receivers):
    cfg = outbound_config(env, hookd_lines=("allow_private_networks = true", "signature_headers = webhook"))
    env.worker(cfg)
    glob, glob_own, tenant, tenant_own = receivers(), receivers(), receivers(), receivers()
    hookd(cfg, "endpoint", "add", "--url", glob.url(), "--name", "glob")
    hookd(cfg, "endpoint", "add", "--url", glob_own.url(), "--name", "glob-own", "--settings",
          '{"signature_headers": "svix"}')
    assert "settings: {\"signature_headers\": \"svix\"}" in hookd(cfg, "endpoint", "show", "glob-own").stdout
    r = hookd(cfg, "endpoint", "add", "--url", glob.url(), "--name", "bad", "--settings", '{"x": "svix"}', ok=False)
    assert r.returncode != 0 and "--settings: no setting is named 'x'" in r.stderr
    hookd(cfg, "tenant", "add", "acme")
    hookd(cfg, "tenant", "update", "acme", "--settings", '{"signature_headers": "both"}')
    hookd(cfg, "endpoint", "add", "--url", tenant.url(), "--name", "t", "--tenant", "acme")
    hookd(cfg, "endpoint", "add", "--url", tenant_own.url(), "--name", "t-own", "--tenant", "acme", "--settings",
          '{"signature_headers": "svix"}')
    env.db.value("SELECT hookd_emit('invoice', '1', 'invoice.paid', '{\"n\": 1}'::jsonb)")
    env.db.value("SELECT hookd_emit('invoice', '2', 'invoice.paid', '{\"n\": 2}'::jsonb, p_tenant => 'acme')")
    settled(env, 4)
    assert header_set(glob.wait(1)[0]) == "webhook"       # [hookd]
    assert header_set(glob_own.wait(1)[0]) == "svix"      # endpoint, over [hookd]
    assert header_set(tenant.wait(1)[0]) == "both"        # tenant, over [hookd]
    assert header_set(tenant_own.wait(1)[0]) == "svix"    # endpoint, over tenant
    # an update merges; a null removes the endpoint's own
    hookd(cfg, "endpoint", "update", "glob-own", "--settings", '{"signature_headers": null}')
    assert "settings: {}" in hookd(cfg, "endpoint", "show", "glob-own").stdout


def test_svix_custom_headers_are_reserved(env, receivers):
    cfg = outbound_config(env)
    w = env.worker(cfg)
    root = new_token(cfg, "root")
    rx = receivers()
    out = svix(w, root, [
        {"call": "application.create", "args": [{"name": "Acme", "uid": "acme"}]},
        {"call": "endpoint.create", "args": ["acme", {"url": rx.url(), "headers": {"svix-signature": "v1,forged"}}]},
        {"call": "endpoint.create", "args": ["acme", {"url": rx.url(), "uid": "main", "headers": {"X-Ok": "1"}}]},
        {"call": "endpoint.setHeaders", "args": ["acme", "main", {"headers": {"Svix-Id": "forged"}}]},
        {"call": "endpoint.patchHeaders", "args": ["acme", "main", {"headers": {"svix-timestamp": "1"}}]},
        {"call": "endpoint.getSecret", "args": ["acme", "main"]},
    ])
    for bad, name in ((out[1], "svix-signature"), (out[3], "Svix-Id"), (out[4], "svix-timestamp")):
        assert bad["status"] == 422, bad
        detail = bad["body"]["detail"][0]
        assert detail["loc"] == ["body", "headers"]
        assert detail["msg"] == f"{name} is a reserved header: hookd or its HTTP client sets it on every delivery"
    assert env.db.value("SELECT count(*) FROM webhook_endpoints") == 1
    assert env.db.value("SELECT headers::text FROM webhook_endpoints") == '{"X-Ok": "1"}'
    r = hookd(cfg, "endpoint", "add", "--url", rx.url(), "--name", "cli", "--headers", '{"SVIX-ID": "x"}', ok=False)
    assert r.returncode != 0 and "SVIX-ID is a reserved header" in r.stderr
    # stored before the names were reserved: dropped at send, with a warning
    env.db.value("UPDATE webhook_endpoints SET headers = '{\"svix-signature\": \"v1,forged\", \"X-Ok\": \"1\"}' RETURNING 1")
    secret = out[5]["ok"]["key"]
    svix(w, root, [{"call": "message.create", "args": ["acme", {"eventType": "e", "payload": {"n": 1}}]}])
    got = rx.wait(1)[0]
    assert got.headers["x-ok"] == "1" and got.headers["svix-signature"] != "v1,forged"
    assert got.headers["svix-signature"] == got.headers["webhook-signature"]
    assert "ok" in svix(w, root, [svix_only(secret, got)])[0]
    wait_for(lambda: "event=delivery.header_dropped" in w.output() and "header=svix-signature" in w.output(),
             what="the dropped header's warning")


def test_standard_webhooks_preset_accepts_svix_header_names(env):
    cfg = env.config(extra=f"\n[partner sw]\nscheme = standard-webhooks\nsecret = {SW_SECRET}\n")
    w = env.worker(config=cfg)
    now = int(time.time())

    def post(headers: dict, body: bytes):
        status, _, data = http("POST", f"{w.url}/v1/inbox/sw", body, dict(headers, **{"Content-Type":
                                                                                           "application/json"}))
        return status, data

    body = json.dumps({"type": "order.started", "n": 1}).encode()
    status, data = post({"svix-id": "msg_svix_1", "svix-timestamp": str(now),
                         "svix-signature": sign_standard(SW_SECRET, "msg_svix_1", now, body)}, body)
    assert status == 200 and json.loads(data)["status"] == "accepted", data
    assert env.db.value("SELECT count(*) FROM webhook_inbox WHERE partner_event_id = 'msg_svix_1'") == 1
    # a bad signature under svix-* names is refused, and stores nothing
    body2 = json.dumps({"type": "order.started", "n": 2}).encode()
    status, data = post({"svix-id": "msg_svix_2", "svix-timestamp": str(now),
                         "svix-signature": sign_standard(SW_SECRET, "msg_svix_2", now, body)}, body2)
    assert status == 401, data
    status, data = post({"svix-id": "msg_svix_3", "svix-timestamp": str(now - 3600),
                         "svix-signature": sign_standard(SW_SECRET, "msg_svix_3", now - 3600, body)}, body)
    assert status == 401, data  # out of tolerance
    assert env.db.value("SELECT count(*) FROM webhook_inbox") == 1
    # the webhook-* names still work
    status, data = post({"webhook-id": "msg_wh_4", "webhook-timestamp": str(now),
                         "webhook-signature": sign_standard(SW_SECRET, "msg_wh_4", now, body)}, body)
    assert status == 200 and json.loads(data)["status"] == "accepted", data
    assert env.db.value("SELECT count(*) FROM webhook_inbox") == 2
    # the signature header is not kept with the event
    kept = env.db.value("SELECT headers::text FROM webhook_inbox WHERE partner_event_id = 'msg_svix_1'") or ""
    assert "svix-signature" not in kept.lower()


def test_portal_endpoint_form_sets_the_signature_headers(env, receivers):
    from test_portal import csrf_of, get, link, open_link, post
    cfg = outbound_config(env)
    w = env.worker(cfg)
    root = new_token(cfg, "root")
    rx = receivers()
    assert raw(w, "POST", "/api/v1/app", root, {"name": "Acme", "uid": "acme"})[0] == 201
    session = open_link(w, link(w, root, "acme"))
    status, _, page = get(w, "/portal/", session)
    assert status == 200 and '<select name="signature_headers">' in page
    csrf = csrf_of(w, session)
    status, headers, _ = post(w, "/portal/endpoint", {"csrf": csrf, "url": rx.url(), "signature_headers": "svix"},
                              session)
    assert status == 303, headers
    ep = raw(w, "GET", "/api/v1/app/acme/endpoint", root)[1]["data"][0]
    assert ep["settings"] == {"signature_headers": "svix"}
    status, _, page = get(w, f"/portal/endpoint/{ep['id']}", session)
    assert '<option value="svix" selected>' in page
    svix(w, root, [{"call": "message.create", "args": ["acme", {"eventType": "e", "payload": {"n": 1}}]}])
    assert header_set(rx.wait(1)[0]) == "svix"
    # the empty choice takes the application's (here the server's default) again
    assert post(w, f"/portal/endpoint/{ep['id']}", {"csrf": csrf, "url": rx.url(), "signature_headers": ""},
                session)[0] == 303
    assert raw(w, "GET", f"/api/v1/app/acme/endpoint/{ep['id']}", root)[1]["settings"] == {}
