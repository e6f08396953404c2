"""The API's route table against Svix's published API: every operation is
routed (implemented, or 501 with its operation id, never 404 or 405), an
unknown path is 404 only after authentication, bad query parameters are 400
and validation errors 422 as Svix answers them, with their reason phrases.

tests/fixtures/svix-operations.json lists the operations of Svix's published
OpenAPI document (method, path, operationId), the one its SDKs are made
from."""
from __future__ import annotations

import http.client
import json
import re

import pytest

from hookdtest.paths import ROOT
from hookdtest.worker import run_hookd

from test_api import api, new_token, raw, receivers, svix  # noqa: F401  (fixtures)

SVIX = json.loads((ROOT / "tests" / "fixtures" / "svix-operations.json").read_text())["operations"]


def shape(path: str) -> str:
    """A path with its parameters' names dropped: /api/v1/app/{}/msg."""
    return re.sub(r"\{[^}]+\}", "{}", path)


def concrete(path: str) -> str:
    return re.sub(r"\{[^}]+\}", "x1", path)


def reason(worker, method: str, path: str, token: str | None) -> tuple[int, str, dict | None]:
    conn = http.client.HTTPConnection("127.0.0.1", worker.port, timeout=10)
    try:
        h = {"Authorization": f"Bearer {token}"} if token else {}
        body = b"{}" if method in ("POST", "PUT", "PATCH") else None
        if body:
            h["Content-Type"] = "application/json"
        conn.request(method, path, body=body, headers=h)
        resp = conn.getresponse()
        text = resp.read().decode()
        return resp.status, resp.reason, json.loads(text) if text.strip() else None
    finally:
        conn.close()


def test_the_openapi_document_lists_svix_operations_exactly(env, api):
    cfg, w, root = api
    st, doc = raw(w, "GET", "/api/v1/openapi.json")
    assert st == 200
    ours = {}
    for path, item in doc["paths"].items():
        for method, op in item.items():
            assert op["operationId"] not in ours.values()
            ours[(method.upper(), shape(path))] = op["operationId"]
    theirs = {(o["method"], shape(o["path"])): o["operationId"] for o in SVIX}
    assert ours == theirs


def test_the_route_table_has_each_operation_once():
    items = json.loads(run_hookd(["reference", "api"]).stdout)["items"]
    routes = [(i["method"], i["path"]) for i in items]
    ops = [i["operation"] for i in items]
    assert len(set(routes)) == len(routes), sorted({r for r in routes if routes.count(r) > 1})
    assert len(set(ops)) == len(ops), sorted({o for o in ops if ops.count(o) > 1})
    assert sorted(ops) == sorted(o["operationId"] for o in SVIX)


def test_every_unimplemented_operation_answers_501_with_its_id(env, api):
    cfg, w, root = api
    st, doc = raw(w, "GET", "/api/v1/openapi.json")
    missing = [(m.upper(), p, op) for p, item in doc["paths"].items() for m, op in item.items()
               if op.get("x-hookd-implemented") is False]
    assert len(missing) > 150  # most of Svix's cloud-only API
    for method, path, op in missing:
        st, phrase, body = reason(w, method, concrete(path), root)
        assert (st, phrase) == (501, "Not Implemented"), (method, path, st, body)
        assert body == {"code": "not_implemented",
                        "detail": f"{op['operationId']} is not implemented by hookd"}, (method, path)
        # and nothing is told to a client without a token
        assert reason(w, method, concrete(path), None)[0] == 401, (method, path)
    # the three that collided with message routes are routed by their literal segments
    # (expunge-all-contents to its implementation: no application x1)
    st, _, body = reason(w, "POST", "/api/v1/app/x1/msg/expunge-all-contents", root)
    assert (st, body["detail"]) == (404, "Application not found"), body
    for method, path, op in [("GET", "/api/v1/app/x1/msg/search", None), ("POST", "/api/v1/ingest/nothing", None)]:
        st, _, body = reason(w, method, path, root)
        if op:
            assert st == 501 and op in body["detail"], (path, st, body)


def test_implemented_operations_never_answer_501(env, api):
    cfg, w, root = api
    st, doc = raw(w, "GET", "/api/v1/openapi.json")
    implemented = [(m.upper(), p, op["operationId"]) for p, item in doc["paths"].items() for m, op in item.items()
                   if op.get("x-hookd-implemented", True)]
    assert ("GET", "/api/v1/app", "v1.application.list") in implemented
    assert any(op == "v1.endpoint.set-headers" for _, _, op in implemented)
    assert any(op == "v1.application.upsert" for _, _, op in implemented)
    for method, path, op in implemented:
        st, _, body = reason(w, method, concrete(path), root)
        assert st != 501, (op, body)


def test_unknown_paths_and_methods_answer_after_authentication(env, api):
    cfg, w, root = api
    for method, path, want, phrase in [("GET", "/api/v1/nothing-here", 404, "Not Found"),
                                       ("GET", "/api/v1/app/x1/endpoint/x1/nothing", 404, "Not Found"),
                                       ("DELETE", "/api/v1/app", 405, "Method Not Allowed"),
                                       ("POST", "/ingest/api/v1/nothing", 404, "Not Found")]:
        assert reason(w, method, path, None)[0] == 401, path
        assert reason(w, method, path, "hk_wrong")[0] == 401, path
        st, got, body = reason(w, method, path, root)
        assert (st, got) == (want, phrase), (path, st, body)
        assert set(body) == {"code", "detail"}
    st, _, _ = reason(w, "POST", "/ingest/api/v1/source", root)
    assert st == 501
    # health needs no token
    assert reason(w, "GET", "/api/v1/health", None)[0] == 204


@pytest.mark.parametrize("query, status, field", [
    ("limit=abc", 400, "limit"),
    ("limit=-3", 400, "limit"),
    ("order=sideways", 400, "order"),
    ("limit=251", 422, "limit"),
    ("limit=0", 422, "limit"),
])
def test_query_errors_are_svix_statuses(env, api, query, status, field):
    cfg, w, root = api
    st, phrase, body = reason(w, "GET", f"/api/v1/app?{query}", root)
    assert st == status, body
    assert phrase == {400: "Bad Request", 422: "Unprocessable Entity"}[status]
    if status == 400:
        assert body["code"] == "generic_error" and field in body["detail"]
    else:
        assert body["detail"][0]["loc"] == ["query", field]


def test_attempt_list_query_types_are_400(env, api):
    cfg, w, root = api
    raw(w, "POST", "/api/v1/app", root, {"name": "Acme", "uid": "acme"})
    ep = raw(w, "POST", "/api/v1/app/acme/endpoint", root, {"url": "http://example.com/"})[1]["id"]
    for q in ["status=9", "status_code_class=7", "before=yesterday"]:
        st, body = raw(w, "GET", f"/api/v1/app/acme/attempt/endpoint/{ep}?{q}", root)
        assert st == 400 and body["code"] == "generic_error", (q, st, body)


def test_send_example_answers_202_through_both_sdks(env, api, receivers):
    cfg, w, root = api
    rx = receivers()
    ops = [{"call": "application.create", "args": [{"name": "Acme", "uid": "acme"}]},
           {"call": "eventType.create", "args": [{"name": "svix.ping", "description": "ping"}]},
           {"call": "endpoint.create", "args": ["acme", {"url": rx.url(), "uid": "ep1"}]}]
    svix(w, root, ops)
    for sdk in ("1", "2"):
        out = svix(w, root, [{"call": "endpoint.sendExample", "args": ["acme", "ep1", {"eventType": "svix.ping"}]}],
                   sdk=sdk)
        assert "ok" in out[0] and out[0]["ok"]["eventType"] == "svix.ping", out
    st, body = raw(w, "POST", "/api/v1/app/acme/endpoint/ep1/send-example", root, {"eventType": "svix.ping"})
    assert st == 202 and body["id"].startswith("msg_")


def test_a_garbage_iterator_is_422_not_an_empty_page(env, api):
    cfg, w, root = api
    raw(w, "POST", "/api/v1/app", root, {"name": "Acme", "uid": "acme"})
    raw(w, "POST", "/api/v1/app", root, {"name": "Globex", "uid": "globex"})
    for path in ["/api/v1/app?iterator=garbage", "/api/v1/app?iterator=-%21%21", "/api/v1/app?iterator=ep_abc",
                 "/api/v1/app/acme/msg?iterator=app_x", "/api/v1/app/acme/endpoint?iterator=msg_1",
                 "/api/v1/event-type?iterator=no%20spaces"]:
        st, body = raw(w, "GET", path, root)
        assert st == 422 and body["detail"][0]["loc"] == ["query", "iterator"], (path, st, body)
    # a real iterator pages, forwards and back
    st, first = raw(w, "GET", "/api/v1/app?limit=1", root)
    st, second = raw(w, "GET", f"/api/v1/app?limit=1&iterator={first['iterator']}", root)
    assert st == 200 and second["data"][0]["id"] != first["data"][0]["id"]
    st, back = raw(w, "GET", f"/api/v1/app?limit=1&iterator={second['prevIterator']}", root)
    assert st == 200 and back["data"] == first["data"]
