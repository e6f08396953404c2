"""Svix operations beyond the core resources, driven through the official
SDK (raw HTTP where the SDK lacks the call or to see a field its models
drop): authentication expire-all and logout (portal links and sessions,
tenant-scoped tokens, sessionIds, a grace period), statistics (app usage,
event-type aggregation), event-type OpenAPI import and export, and
environment export and import. Each answer is checked for Svix's shape and
its effect in the database or on later requests."""
from __future__ import annotations

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
    import json
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
    acme_tok = new_token(cfg, "acme-1", svix(w, root, [{"call": "application.create", "args": [{"name": "A"}]}])[0]["ok"]["id"])
    assert raw(w, "POST", "/api/v1/event-type/export/openapi", acme_tok)[0] == 403
    assert svix(w, acme_tok, [{"call": "eventType.importOpenapi", "args": [{"spec": PET_SPEC}]}])[0]["status"] == 403
