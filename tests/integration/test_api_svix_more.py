"""Svix operations beyond the core resources, driven through the official
SDK (raw HTTP where the SDK lacks the call or to see a field its models
drop): authentication expire-all and logout (portal links and sessions,
tenant-scoped tokens, sessionIds, a grace period), statistics (app usage,
event-type aggregation), event-type OpenAPI import and export, and
environment export and import. Each answer is checked for Svix's shape and
its effect in the database or on later requests."""
from __future__ import annotations

import json
import re

from hookdtest.util import wait_for

from test_api import api, hookd, new_token, raw, receivers, svix  # noqa: F401  (fixtures)
from test_portal import get, open_link, portal  # noqa: F401  (fixture)

TASK_ID = re.compile(r"^qtask_[A-Za-z0-9]{22,27}$")  # 27 once ids are Svix-shaped
DATE_TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$")


def session_ok(w, cookie: str) -> bool:
    status, _, _ = get(w, "/portal/", cookie)
    assert status in (200, 401), status
    return status == 200


def test_expire_all_ends_an_applications_tokens_and_sessions(env, portal):
    cfg, w, root = portal
    acme_tok, globex_tok = new_token(cfg, "acme-1", "acme"), new_token(cfg, "globex-1", "globex")
    out = svix(w, root, [
        {"call": "authentication.appPortalAccess", "args": ["acme", {"sessionId": "user_1"}]},
        {"call": "authentication.appPortalAccess", "args": ["acme", {"sessionId": "user_2"}]},
        {"call": "authentication.appPortalAccess", "args": ["acme", {}]},
        {"call": "authentication.appPortalAccess", "args": ["globex", {}]},
        {"call": "authentication.appPortalAccess", "args": ["acme", {"sessionId": "bad id!"}]},
    ])
    assert out[4]["status"] == 422 and out[4]["body"]["detail"][0]["loc"] == ["body", "sessionId"]
    s1, s2, s3, g = (open_link(w, o["ok"]["url"]) for o in out[:4])
    unopened = svix(w, root, [{"call": "authentication.appPortalAccess", "args": ["acme", {}]}])[0]["ok"]["url"]
    assert all(session_ok(w, s) for s in (s1, s2, s3, g))

    # sessionIds: only those portal sessions end; API tokens have no session
    out = svix(w, root, [{"call": "authentication.expireAll", "args": ["acme", {"sessionIds": ["user_1"]}]},
                         {"call": "application.get", "args": ["acme"], "token": acme_tok}])
    assert out[0] == {"ok": None} and out[1]["ok"]["uid"] == "acme"
    assert not session_ok(w, s1) and session_ok(w, s2) and session_ok(w, s3)

    # a grace period: everything of acme ends in an hour, nothing of globex
    out = svix(w, root, [{"call": "authentication.expireAll", "args": ["acme", {"expiry": 3600}]},
                         {"call": "application.get", "args": ["acme"], "token": acme_tok}])
    assert out[0] == {"ok": None} and out[1]["ok"]["uid"] == "acme"
    assert session_ok(w, s2)
    grace = env.db.value("SELECT min(extract(epoch FROM expires_at - now()))::int FROM hookd_api_tokens "
                         "WHERE tenant_id = (SELECT id FROM hookd_tenants WHERE uid = 'acme')")
    assert 3500 < grace <= 3600
    assert env.db.value("SELECT count(*) FROM hookd_portal_sessions s JOIN hookd_tenants t ON t.id = s.tenant_id "
                        "WHERE t.uid = 'acme' AND s.expires_at > now() + interval '1 hour 1 minute'") == 0
    assert env.db.value("SELECT count(*) FROM hookd_api_tokens WHERE expires_at IS NOT NULL") == 1

    # now: acme's tokens, sessions and unopened links end; globex's and the root's stay
    out = svix(w, root, [{"call": "authentication.expireAll", "args": ["acme", {}]},
                         {"call": "application.get", "args": ["acme"], "token": acme_tok},
                         {"call": "application.get", "args": ["globex"], "token": globex_tok},
                         {"call": "application.get", "args": ["acme"]}])
    assert out[0] == {"ok": None} and out[1]["status"] == 401
    assert out[2]["ok"]["uid"] == "globex" and out[3]["ok"]["uid"] == "acme"
    assert not session_ok(w, s2) and not session_ok(w, s3) and session_ok(w, g)
    status, _, body = get(w, "/portal/" + unopened.split("/portal/", 1)[1])
    assert status == 403 and "expired or was already used" in body
    assert "expired" in hookd(cfg, "token", "list").stdout

    # bad input, scope, unknown application
    out = svix(w, root, [{"call": "authentication.expireAll", "args": ["acme", {"expiry": 259201}]},
                         {"call": "authentication.expireAll", "args": ["acme", {"sessionIds": ["no spaces"]}]},
                         {"call": "authentication.expireAll", "args": ["nope", {}]},
                         {"call": "authentication.expireAll", "args": ["globex", {}], "token": globex_tok}])
    assert out[0]["status"] == 422 and out[0]["body"]["detail"][0]["loc"] == ["body", "expiry"]
    assert out[1]["status"] == 422 and out[1]["body"]["detail"][0]["loc"] == ["body", "sessionIds"]
    assert out[2]["status"] == 404 and out[3]["status"] == 403
    assert session_ok(w, g)


def test_logout_revokes_an_application_token_only(env, portal):
    cfg, w, root = portal
    tok, other = new_token(cfg, "acme-1", "acme"), new_token(cfg, "acme-2", "acme")
    out = svix(w, root, [{"call": "authentication.logout", "args": [], "token": tok},
                         {"call": "application.get", "args": ["acme"], "token": tok},
                         {"call": "application.get", "args": ["acme"], "token": other},
                         {"call": "authentication.logout", "args": []},
                         {"call": "application.get", "args": ["acme"]}])
    assert out[0] == {"ok": None} and out[1]["status"] == 401
    assert out[2]["ok"]["uid"] == "acme"  # the application's other token stays
    assert out[3]["status"] == 403 and out[4]["ok"]["uid"] == "acme"  # an organization token is not logged out
    listed = {line.split()[0]: line for line in hookd(cfg, "token", "list").stdout.splitlines() if line.strip()}
    assert "revoked" in listed["acme-1"] and "active" in listed["acme-2"]


def test_statistics_app_usage_and_event_types(env, api, receivers):
    cfg, w, root = api
    rx = receivers()
    out = svix(w, root, [
        {"call": "eventType.create", "args": [{"name": "invoice.paid", "description": "paid"}]},
        {"call": "eventType.create", "args": [{"name": "invoice.voided", "description": "voided"}]},
        {"call": "application.create", "args": [{"name": "Acme", "uid": "acme"}], "as": "acme"},
        {"call": "application.create", "args": [{"name": "Globex", "uid": "globex"}], "as": "globex"},
        {"call": "application.create", "args": [{"name": "Initech"}], "as": "initech"},
        {"call": "endpoint.create", "args": ["acme", {"url": rx.url(), "eventTypes": ["invoice.voided",
                                                                                        "invoice.paid"]}]},
        {"call": "endpoint.create", "args": ["acme", {"url": rx.url(), "eventTypes": ["invoice.paid"]}]},
        {"call": "endpoint.create", "args": ["globex", {"url": rx.url()}]},
        {"call": "message.create", "args": ["acme", {"eventType": "invoice.paid", "payload": {}}]},
        {"call": "message.create", "args": ["acme", {"eventType": "invoice.voided", "payload": {}}]},
        {"call": "message.create", "args": ["globex", {"eventType": "invoice.paid", "payload": {}}]},
    ])
    assert all("ok" in o for o in out), out
    acme, globex, initech = out[2]["ok"], out[3]["ok"], out[4]["ok"]
    acme_tok = new_token(cfg, "acme-1", "acme")
    wait_for(lambda: env.db.value("SELECT count(*) FROM outbox_deliveries") == 4, 20, what="4 deliveries")
    since = env.db.value("SELECT hookd_api_ts(now() - interval '1 hour')")
    until = env.db.value("SELECT hookd_api_ts(now() + interval '1 minute')")
    out = svix(w, root, [
        {"call": "statistics.aggregateAppStats", "args": [{"since": since, "until": until}]},
        {"call": "statistics.aggregateAppStats", "args": [{"since": since, "until": until,
                                                           "appIds": ["acme", acme["id"], "nope"]}]},
        {"call": "statistics.aggregateAppStats", "args": [{"since": since, "until": until, "appIds": ["nope"]}]},
        {"call": "statistics.aggregateAppStats", "args": [{"since": "yesterday", "until": until}]},
        {"call": "statistics.aggregateAppStats", "args": [{"since": since, "until": until}], "token": acme_tok},
        {"call": "statistics.aggregateEventTypes", "args": []},
        {"call": "statistics.aggregateEventTypes", "args": [], "token": acme_tok},
    ])
    for o, task in ((out[0], "application.stats"), (out[1], "application.stats"), (out[5], "event-type.aggregate")):
        t = o["ok"]
        assert TASK_ID.match(t["id"]) and t["status"] == "finished" and t["task"] == task, t
        assert DATE_TIME.match(t["updatedAt"])
    assert out[0]["ok"]["unresolvedAppIds"] == [] and out[1]["ok"]["unresolvedAppIds"] == ["nope"]
    assert out[2]["status"] == 422 and out[2]["body"]["detail"][0]["loc"] == ["body", "appIds"]
    assert out[3]["status"] == 422 and out[3]["body"]["detail"][0]["loc"] == ["body", "since"]
    assert out[4]["status"] == 403 and out[6]["status"] == 403
    # the result is in the finished task's data (the SDK's model drops it: read raw)
    st, body = raw(w, "POST", "/api/v1/stats/usage/app", root, {"since": since, "until": until})
    assert st == 202 and body["data"]["appStats"] == [
        {"appId": a["id"], "appUid": a.get("uid"), "messageDestinations": n}
        for a, n in sorted(((acme, 3), (globex, 1), (initech, 0)), key=lambda x: x[0]["id"])]
    st, body = raw(w, "POST", "/api/v1/stats/usage/app", root,
                   {"since": until, "until": until, "appIds": ["globex"]})
    assert st == 202 and body["data"]["appStats"] == [{"appId": globex["id"], "appUid": "globex",
                                                       "messageDestinations": 0}]
    st, body = raw(w, "PUT", "/api/v1/stats/usage/event-types", root)
    assert st == 202 and body["status"] == "finished"
    assert sorted(body["data"]["event_types"], key=lambda x: x["appId"]) == sorted([
        {"appId": acme["id"], "explicitlySubscribedEventTypes": ["invoice.paid", "invoice.voided"],
         "hasCatchAllEndpoint": False},
        {"appId": globex["id"], "explicitlySubscribedEventTypes": [], "hasCatchAllEndpoint": True},
        {"appId": initech["id"], "explicitlySubscribedEventTypes": [], "hasCatchAllEndpoint": False},
    ], key=lambda x: x["appId"])


PET_SPEC = {
    "openapi": "3.1.0", "info": {"title": "Webhook Example", "version": "1.0.0"},
    "webhooks": {
        "pet.new": {"post": {
            "description": "A new pet", "x-svix-group-name": "pet", "x-svix-feature-flags": ["beta"],
            "requestBody": {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/Pet"}}}},
            "responses": {"200": {"description": "ok"}}}},
        "pet.gone": {"post": {"summary": "A pet left", "deprecated": True, "responses": {"200": {"description": "ok"}}}},
    },
    "components": {"schemas": {
        "Pet": {"type": "object", "required": ["id"], "properties": {"id": {"type": "integer"},
                                                                     "tag": {"$ref": "#/components/schemas/Tag"}}},
        "Tag": {"type": "string"}}},
}
PET_SCHEMA = {"type": "object", "required": ["id"], "properties": {"id": {"type": "integer"}, "tag": {"type": "string"}}}


def test_event_type_openapi_import_and_export(env, api):
    cfg, w, root = api
    out = svix(w, root, [
        {"call": "eventType.create", "args": [{"name": "pet.new", "description": "old", "archived": True}]},
        {"call": "eventType.create", "args": [{"name": "user.signup", "description": "kept unless replaceAll"}]},
        {"call": "eventType.importOpenapi", "args": [{"spec": PET_SPEC, "dryRun": True}]},
        {"call": "eventType.get", "args": ["pet.new"]},
        {"call": "eventType.importOpenapi", "args": [{"specRaw": json.dumps(PET_SPEC)}]},
        {"call": "eventType.get", "args": ["pet.new"]},
        {"call": "eventType.get", "args": ["pet.gone"]},
        {"call": "eventType.get", "args": ["user.signup"]},
        {"call": "eventType.importOpenapi", "args": [{"spec": PET_SPEC, "replaceAll": True}]},
        {"call": "eventType.get", "args": ["user.signup"]},
        {"call": "eventType.importOpenapi", "args": [{}]},
        {"call": "eventType.importOpenapi", "args": [{"spec": PET_SPEC, "specRaw": "{}"}]},
        {"call": "eventType.importOpenapi", "args": [{"specRaw": "openapi: 3.1.0"}]},
        {"call": "eventType.importOpenapi", "args": [{"spec": {"webhooks": {"bad name!": {"post": {}}}}}]},
        {"call": "eventType.importOpenapi", "args": [{"spec": {"webhooks": {"a.b": {"post": {"requestBody": {
            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Nope"}}}}}}}}}]},
        {"call": "eventType.importOpenapi", "args": [{"spec": {"openapi": "3.1.0"}}]},
    ])
    dry = out[2]["ok"]["data"]
    assert dry["modified"] == [] and sorted(dry["toModify"], key=lambda x: x["name"]) == [
        {"name": "pet.gone", "description": "A pet left", "deprecated": True, "schemas": None},
        {"name": "pet.new", "description": "A new pet", "deprecated": False, "schemas": {"1": PET_SCHEMA},
         "groupName": "pet", "featureFlags": ["beta"]}]
    assert out[3]["ok"]["description"] == "old" and out[3]["ok"]["archived"] is True  # dry run: nothing changed
    assert sorted(out[4]["ok"]["data"]["modified"]) == ["pet.gone", "pet.new"]
    new, gone = out[5]["ok"], out[6]["ok"]
    assert new["description"] == "A new pet" and new["archived"] is False and new["schemas"] == {"1": PET_SCHEMA}
    assert new["groupName"] == "pet" and new["featureFlags"] == ["beta"]
    assert gone["deprecated"] is True and gone["schemas"] is None
    assert out[7]["ok"]["archived"] is False
    assert sorted(out[8]["ok"]["data"]["modified"]) == ["pet.gone", "pet.new", "user.signup"]
    assert out[9]["ok"]["archived"] is True  # replaceAll archived what the spec lacks
    for o in out[10:13]:
        assert o["status"] == 400, o
    for o in out[13:16]:
        assert o["status"] == 422 and o["body"]["detail"][0]["loc"] == ["body", "spec"], o
    # export: the live types as a document that import takes back
    st, task = raw(w, "POST", "/api/v1/event-type/export/openapi", root)
    assert st == 202 and TASK_ID.match(task["id"]) and task["status"] == "finished" and task["task"] == "sdk.generate"
    spec = task["data"]["spec"]
    assert spec["openapi"] == "3.1.0" and sorted(spec["webhooks"]) == ["pet.gone", "pet.new"]
    post = spec["webhooks"]["pet.new"]["post"]
    assert post["requestBody"]["content"]["application/json"]["schema"] == PET_SCHEMA
    assert post["x-svix-group-name"] == "pet" and post["x-svix-feature-flags"] == ["beta"]
    assert spec["webhooks"]["pet.gone"]["post"]["deprecated"] is True
    out = svix(w, root, [{"call": "eventType.importOpenapi", "args": [{"spec": spec, "dryRun": True}]}])
    assert sorted(out[0]["ok"]["data"]["toModify"], key=lambda x: x["name"]) == sorted(
        dry["toModify"], key=lambda x: x["name"])
    app = svix(w, root, [{"call": "application.create", "args": [{"name": "A"}]}])[0]["ok"]
    acme_tok = new_token(cfg, "acme-1", app["id"])
    assert raw(w, "POST", "/api/v1/event-type/export/openapi", acme_tok)[0] == 403
    assert svix(w, acme_tok, [{"call": "eventType.importOpenapi", "args": [{"spec": PET_SPEC}]}])[0]["status"] == 403


OPERATIONAL_TYPES = ["endpoint.disabled", "message.attempt.exhausted", "message.attempt.failing",
                     "message.attempt.recovered"]


def test_operational_webhook_endpoints(env, api, receivers):
    cfg, w, root = api
    cli_rx, api_rx, rx = receivers(), receivers(), receivers()
    # the operator's endpoint from the CLI is one of them
    hookd(cfg, "endpoint", "add", "--url", cli_rx.url(), "--name", "ops-cli", "--events", "endpoint.*")
    app = svix(w, root, [{"call": "application.create", "args": [{"name": "Acme", "uid": "acme"}]}])[0]["ok"]
    acme_tok = new_token(cfg, "acme-1", "acme")
    ops = "operationalWebhook.endpoint."
    out = svix(w, root, [
        {"call": ops + "create", "args": [{"url": api_rx.url(), "uid": "ops", "description": "pager",
                                           "metadata": {"team": "sre"}}], "as": "ep"},
        {"call": ops + "create", "args": [{"url": api_rx.url(), "uid": "ops"}]},
        {"call": ops + "create", "args": [{"url": "ftp://x"}]},
        {"call": ops + "list", "args": [{}]},
        {"call": ops + "get", "args": ["ops"]},
        {"call": ops + "get", "args": ["$ep.id"]},
        {"call": ops + "getSecret", "args": ["ops"], "as": "old"},
        {"call": ops + "rotateSecret", "args": ["ops", {}]},
        {"call": ops + "getSecret", "args": ["ops"], "as": "secret"},
        {"call": ops + "setHeaders", "args": ["ops", {"headers": {"X-Ops": "1", "Authorization": "Bearer t"}}]},
        {"call": ops + "getHeaders", "args": ["ops"]},
        {"call": ops + "upsert", "args": ["ops2", {"url": api_rx.url(), "eventTypes": ["message.attempt.exhausted"]}]},
        {"call": ops + "upsert", "args": ["ops2", {"url": rx.url(), "description": "moved",
                                                   "eventTypes": ["message.attempt.exhausted"]}]},
        {"call": ops + "delete", "args": ["ops2"]},
        {"call": ops + "get", "args": ["ops2"]},
        {"call": ops + "list", "args": [{}], "token": acme_tok},
        {"call": ops + "get", "args": ["ops"], "token": acme_tok},
        {"call": "endpoint.get", "args": ["acme", "$ep.id"]},  # not an application's endpoint
    ])
    ep = out[0]["ok"]
    assert ep["id"].startswith("ep_") and ep["uid"] == "ops" and ep["description"] == "pager"
    assert ep["eventTypes"] == OPERATIONAL_TYPES and ep["metadata"] == {"team": "sre"} and ep["disabled"] is False
    assert DATE_TIME.match(ep["createdAt"]) and DATE_TIME.match(ep["updatedAt"])
    assert out[1]["status"] == 409 and out[2]["status"] == 422
    listed = out[3]["ok"]
    assert listed["done"] is True and {e["url"] for e in listed["data"]} == {cli_rx.url(), api_rx.url()}
    assert [e["eventTypes"] for e in listed["data"] if e["url"] == cli_rx.url()] == [["endpoint.*"]]
    assert out[4]["ok"]["id"] == ep["id"] == out[5]["ok"]["id"]
    secret = out[8]["ok"]["key"]
    assert out[6]["ok"]["key"] != secret and secret.startswith("whsec_")
    assert out[9] == {"ok": None} and out[10]["ok"] == {"headers": {"X-Ops": "1"}, "sensitive": ["Authorization"]}
    assert out[11]["ok"]["uid"] == "ops2" and out[11]["ok"]["eventTypes"] == ["message.attempt.exhausted"]
    assert out[12]["ok"]["id"] == out[11]["ok"]["id"] and out[12]["ok"]["url"] == rx.url()
    assert out[12]["ok"]["description"] == "moved"
    assert out[13] == {"ok": None} and out[14]["status"] == 404
    assert out[15]["status"] == 403 and out[16]["status"] == 403 and out[17]["status"] == 404
    assert env.db.value("SELECT count(*) FROM webhook_endpoints WHERE tenant_id IS NULL") == 2
    # both receive hookd's operational webhooks: an application's endpoint disabled
    out = svix(w, root, [{"call": "endpoint.create", "args": ["acme", {"url": rx.url(), "uid": "main"}]},
                         {"call": "endpoint.patch", "args": ["acme", "main", {"disabled": True}]}])
    assert out[1]["ok"]["disabled"] is True
    got_api, got_cli = api_rx.wait(1), cli_rx.wait(1)
    for got in (got_api, got_cli):
        body = json.loads(got[0].body)
        assert body["type"] == "endpoint.disabled" and body["data"]["appId"] == app["id"]
    assert got_api[0].headers["x-ops"] == "1" and got_api[0].headers["authorization"] == "Bearer t"
    hdr = {k: got_api[0].headers[k] for k in ("webhook-id", "webhook-timestamp", "webhook-signature")}
    check = svix(w, root, [{"verify": {"secret": secret, "payload": got_api[0].body.decode(), "headers": hdr}}])
    assert "ok" in check[0], check  # signed with the endpoint's secret, as the SDK verifies


def test_environment_export_and_import(env, api):
    cfg, w, root = api
    out = svix(w, root, [
        {"call": "eventType.create", "args": [{"name": "invoice.paid", "description": "paid",
                                               "schemas": {"1": {"type": "object"}}}]},
        {"call": "environment.export", "args": []},
        {"call": "environment.import", "args": [{"eventTypes": [
            {"name": "invoice.paid", "description": "changed"},
            {"name": "user.signup", "description": "new", "groupName": "user"}], "settings": {"x": 1}}]},
        {"call": "eventType.get", "args": ["invoice.paid"]},
        {"call": "eventType.get", "args": ["user.signup"]},
        {"call": "environment.import", "args": [{"eventTypes": [{"name": "bad name!", "description": "x"}]}]},
    ])
    exp = out[1]["ok"]
    assert [t["name"] for t in exp["eventTypes"]] == ["invoice.paid"] and exp["connectors"] == []
    assert exp["eventTypes"][0]["schemas"] == {"1": {"type": "object"}} and DATE_TIME.match(exp["createdAt"])
    assert out[2] == {"ok": None}
    assert out[3]["ok"]["description"] == "changed" and out[3]["ok"]["schemas"] == {"1": {"type": "object"}}
    assert out[4]["ok"]["groupName"] == "user" and out[5]["status"] == 422
    st, body = raw(w, "POST", "/api/v1/environment/import", root, {"connectors": [{"name": "c"}]})
    assert st == 422 and body["detail"][0]["loc"] == ["body", "connectors"]
    app = svix(w, root, [{"call": "application.create", "args": [{"name": "A"}]}])[0]["ok"]
    tok = new_token(cfg, "a-1", app["id"])
    assert raw(w, "POST", "/api/v1/environment/export", tok)[0] == 403
