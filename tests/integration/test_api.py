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
