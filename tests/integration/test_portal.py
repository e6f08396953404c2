"""The tenants' portal (/portal/), driven by headless Chromium (selenium) and
by plain HTTP for what a browser would never send.

Covered: the link from the API (the SDK's authentication.appPortalAccess and
a raw POST) and from `hookd tenant portal-link`; the link's GET uses nothing
(a scanner's fetch), its page's button opens it once (CSRF-bound to the
page's nonce cookie), it is refused when expired, and leaves the URL; the
session cookie's attributes, Secure when base_url is https; a session that
ends shows "session expired"; a tenant adds an endpoint, sends the catalogue's
example to it (and through the svix SDK's endpoint.sendExample: that endpoint
only), sees it delivered with its attempt, sees a failed message, resends
it, disables and enables the endpoint, reveals and rotates its secret,
recovers dead deliveries since a time, pages through its message log with
filters kept, and sees an endpoint's circuit open and close again; tenant
A's session reads and changes nothing of tenant B's (URL tampering, forged
posts with and without a CSRF token); markup in a description or payload
shows as text, never runs; /admin shows the tenants with the portal's
components. Screenshots of the main pages go to the test's tmp dir (printed)."""
from __future__ import annotations

import http.client
import json
import re
import shutil
import signal
import tempfile
import urllib.parse
from pathlib import Path

import pytest

from hookdtest.util import wait_for

from test_admin import CHROMEDRIVER, CHROMIUM, all_css, by_css, no_alert_open, wait_alert
from test_api import hookd, new_token, raw, svix
from test_outbound import Receiver, outbound_config

ADMIN_TOKEN = "portal-admin-token-0123456789"
XSS_DESC = "<script>window.__owned=1;alert('desc')</script><img src=x onerror=\"alert('img')\">"
XSS_PAYLOAD = {"note": "<script>alert('payload')</script>", "html": "<b onmouseover=alert(1)>x</b>"}


# The catalogue: invoice.paid carries two example payloads (Svix's
# schemas["1"].examples), invoice.failed none.
EXAMPLES = [{"invoiceId": "in_1", "amountDue": 1200, "note": "<i>first</i>"}, {"invoiceId": "in_2", "amountDue": 5}]


def catalogue(w, root: str) -> None:
    for name, schemas in (("invoice.paid", {"1": {"type": "object", "examples": EXAMPLES}}), ("invoice.failed", None)):
        body = {"name": name, "description": f"when {name}", **({"schemas": schemas} if schemas else {})}
        assert raw(w, "POST", "/api/v1/event-type", root, body)[0] == 201


@pytest.fixture
def portal(env):
    cfg = outbound_config(env, hookd_lines=("allow_private_networks = true", f"admin_token = {ADMIN_TOKEN}"),
                          extra="[portal]\ntitle = Acme <Webhooks>\naccent_color = #7c3aed\n")
    w = env.worker(cfg)
    root = new_token(cfg, "root")
    catalogue(w, root)
    for uid in ("acme", "globex"):
        assert raw(w, "POST", "/api/v1/app", root, {"name": uid.title(), "uid": uid})[0] == 201
    return cfg, w, root


def link(w, root, app: str, base: str | None = None) -> str:
    status, body = raw(w, "POST", f"/api/v1/auth/app-portal-access/{app}", root, {})
    assert status == 200, body
    assert body["url"].startswith((base or f"http://127.0.0.1:{w.port}") + "/portal/login?token=")
    assert body["token"] in body["url"]
    return body["url"]


def _answer(r) -> tuple[int, dict, str]:
    """status, headers (lower-case names; every Set-Cookie, one a line), body."""
    headers = {}
    for k, v in r.getheaders():
        k = k.lower()
        headers[k] = headers[k] + "\n" + v if k == "set-cookie" and k in headers else v
    return r.status, headers, r.read().decode()


def get(w, path: str, cookie: str | None = None):
    conn = http.client.HTTPConnection("127.0.0.1", w.port, timeout=10)
    try:
        conn.request("GET", path, headers={"Cookie": f"hookd_portal={cookie}"} if cookie else {})
        return _answer(conn.getresponse())
    finally:
        conn.close()


def post(w, path: str, form: dict, cookie: str | None, raw_cookie: str | None = None):
    """A form post with the session cookie (or raw_cookie: a whole Cookie header)."""
    conn = http.client.HTTPConnection("127.0.0.1", w.port, timeout=10)
    try:
        h = {"Content-Type": "application/x-www-form-urlencoded"}
        if cookie or raw_cookie:
            h["Cookie"] = raw_cookie or f"hookd_portal={cookie}"
        conn.request("POST", path, body=urllib.parse.urlencode(form), headers=h)
        return _answer(conn.getresponse())
    finally:
        conn.close()


def link_path(url: str) -> str:
    return "/portal/" + url.split("/portal/", 1)[1]


def login_form(w, url: str, secure: bool = False) -> tuple[dict, str]:
    """GET the link: its page (the link stays unused) with the form's fields
    and the nonce cookie that the form's CSRF token is bound to."""
    status, headers, body = get(w, link_path(url))
    assert status == 200 and 'id="open-portal"' in body, (status, body)
    nonce = headers["set-cookie"]
    for attr in ("HttpOnly", "SameSite=Strict", "Path=/portal/login"):
        assert attr in nonce
    assert ("Secure" in nonce) == secure
    fields = {k: re.search(rf'name="{k}" value="([^"]+)"', body).group(1) for k in ("token", "csrf")}
    return fields, re.match(r"(hookd_portal_login=[^;]+);", nonce).group(1)


def open_link(w, url: str, secure: bool = False) -> str:
    """The session cookie's value from opening a link (its page, then its button)."""
    form, nonce = login_form(w, url, secure)
    status, headers, _ = post(w, "/portal/login", form, None, nonce)
    assert status == 303 and headers["location"] == "/portal/", (status, headers)
    cookie = headers["set-cookie"]
    for attr in ("HttpOnly", "SameSite=Strict", "Path=/portal;"):
        assert attr in cookie
    assert ("Secure" in cookie) == secure
    assert "hookd_portal_login=; " in cookie  # the nonce is dropped
    return re.search(r"hookd_portal=([^;]+);", cookie).group(1)


def csrf_of(w, cookie: str) -> str:
    status, _, body = get(w, "/portal/", cookie)
    assert status == 200
    return re.search(r'name="csrf" value="([0-9a-f]{64})"', body).group(1)


def test_links_sessions_and_isolation(env, portal):
    cfg, w, root = portal
    # the SDK's appPortalAccess answers Svix's AppPortalAccessOut
    out = svix(w, root, [{"call": "authentication.appPortalAccess", "args": ["acme", {}]}])
    assert set(out[0]["ok"]) >= {"url", "token"}
    # the SDK sends an idempotency-key: the answer (with its token) is not kept
    assert env.db.value("SELECT count(*) FROM hookd_idempotency_keys WHERE body LIKE %s",
                        "%" + out[0]["ok"]["token"] + "%") == 0
    a_url = link(w, root, "acme")
    assert env.db.value("SELECT count(*) FROM hookd_portal_links WHERE token_sha256 = %s",
                        a_url.split("token=")[1]) == 0  # stored hashed only
    # [portal] link_ttl (10m) and session_ttl (7d), the defaults
    assert env.db.value("SELECT extract(epoch FROM expires_at - created_at)::int FROM hookd_portal_links "
                        "ORDER BY created_at DESC LIMIT 1") == 600
    a = open_link(w, a_url)
    assert env.db.value("SELECT extract(epoch FROM expires_at - created_at)::int FROM hookd_portal_sessions") == 604800
    # single use
    status, _, body = get(w, link_path(a_url))
    assert status == 403 and "expired or was already used" in body
    # a scanner's GET uses nothing: only the page's button (a POST with the
    # page's nonce cookie) does, once
    scanned = link(w, root, "acme")
    unused = "SELECT used_at IS NULL FROM hookd_portal_links WHERE token_sha256 = encode(sha256(convert_to(%s, 'UTF8')), 'hex')"
    token = scanned.split("token=")[1]
    form, nonce = login_form(w, scanned)
    form2, _ = login_form(w, scanned)  # a second look: still there, with another nonce
    assert form2["token"] == form["token"] == token and form2["csrf"] != form["csrf"]
    assert env.db.value(unused, token) is True
    for cookie in (None, "hookd_portal_login=hkpl_" + "0" * 64):  # no nonce; another page's nonce
        st, _, body = post(w, "/portal/login", form, None, cookie)
        assert st == 403 and "This page has expired" in body
    assert env.db.value(unused, token) is True
    st, h, _ = post(w, "/portal/login", form, None, nonce)
    assert st == 303 and "hookd_portal=hkps_" in h["set-cookie"]
    assert env.db.value(unused, token) is False
    st, _, body = post(w, "/portal/login", form, None, nonce)  # the same click again
    assert st == 403 and "expired or was already used" in body
    # expired
    late = link(w, root, "acme")
    assert env.db.value("WITH u AS (UPDATE hookd_portal_links SET expires_at = now() - interval '1 second' "
                        "WHERE used_at IS NULL RETURNING 1) SELECT count(*) FROM u") == 2  # the SDK's and this one
    status, _, _ = get(w, link_path(late))
    assert status == 403
    # the CLI prints a working link alone on the last line
    r = hookd(cfg, "tenant", "portal-link", "globex")
    b_url = r.stdout.strip().splitlines()[-1]
    assert b_url.startswith("http://") and " " not in b_url
    b = open_link(w, b_url)
    assert hookd(cfg, "tenant", "portal-link", "nobody", ok=False).returncode != 0

    # tenant B's endpoint and message
    b_root = new_token(cfg, "b", "globex")
    rcv = Receiver()
    try:
        st, b_ep = raw(w, "POST", "/api/v1/app/globex/endpoint", b_root, {"url": rcv.url(), "description": "B's"})
        assert st == 201
        st, b_msg = raw(w, "POST", "/api/v1/app/globex/msg", b_root, {"eventType": "invoice.paid", "payload": {}})
        assert st == 202
        # headers on every page
        st, h, body = get(w, "/portal/", a)
        assert st == 200 and "B&#39;s" not in body and b_ep["id"] not in body
        csp = h["content-security-policy"]
        assert "script-src 'self'" in csp and "default-src 'self'" in csp and "unsafe-inline" not in csp
        assert h["x-frame-options"] == "DENY" and h["cache-control"] == "no-store"
        assert "Acme &lt;Webhooks&gt;" in body  # the operator's title, escaped
        # the message log's filters (event type, status, time range) on A's own message
        st, a_msg = raw(w, "POST", "/api/v1/app/acme/msg", root, {"eventType": "invoice.failed", "payload": {}})
        assert st == 202
        for query, shown in (("", True), ("?event_type=invoice.failed", True), ("?event_type=invoice.paid", False),
                             ("?status=none", True), ("?status=delivered", False),
                             ("?since=2000-01-01T00:00&until=2999-01-01T00:00", True),
                             ("?since=2999-01-01T00:00", False), ("?until=2000-01-01T00:00", False)):
            st, _, body = get(w, "/portal/messages" + query, a)
            assert st == 200 and (a_msg["id"] in body) == shown, query
            assert shown or "No messages match" in body
        assert get(w, "/portal/messages?status=bogus", a)[0] == 400
        assert get(w, "/portal/messages?since=not-a-date", a)[0] == 400
        # paging: 60 messages written in one statement (one created_at: the
        # cursor's id breaks the tie), 50 a page, the filters kept
        ids = {r["id"] for r in env.db.all(
            "SELECT hookd_api_id('msg', hookd_emit('Bulk', 'b' || g, 'bulk.x', jsonb_build_object('n', g), 'acme')) AS id "
            "FROM generate_series(1, 60) g")}
        seen_pages = []
        path = "/portal/messages?event_type=bulk.x&status=none"
        while path:
            st, _, body = get(w, path, a)
            assert st == 200
            seen_pages.append(re.findall(r'<a href="/portal/message/([^"]+)">', body))
            older = re.search(r'<a href="([^"]+)" id="older">', body)
            path = older.group(1).replace("&amp;", "&") if older else None
            if path:
                assert "event_type=bulk.x" in path and "status=none" in path and "before=" in path
            assert len(seen_pages) <= 2
        assert [len(p) for p in seen_pages] == [50, 10]
        assert 'id="newest"' in body
        shown = seen_pages[0] + seen_pages[1]
        assert len(set(shown)) == 60 and set(shown) == ids  # every one once, none twice
        assert get(w, "/portal/messages?before=junk", a)[0] == 400
        # A reads nothing of B's by URL
        for path in (f"/portal/endpoint/{b_ep['id']}", f"/portal/endpoint/{b_ep['id']}/secret",
                     f"/portal/message/{b_msg['id']}"):
            st, _, body = get(w, path, a)
            assert st == 404, path
            assert "whsec_" not in body
        st, _, body = get(w, "/portal/messages", a)
        assert st == 200 and b_msg["id"] not in body
        # ... nor changes it with its own valid CSRF token
        a_csrf = csrf_of(w, a)
        for action in ("disable", "delete", "rotate"):
            st, _, _ = post(w, f"/portal/endpoint/{b_ep['id']}/{action}", {"csrf": a_csrf}, a)
            assert st == 404, action
        st, _, _ = post(w, f"/portal/message/{b_msg['id']}/resend", {"csrf": a_csrf, "endpoint": b_ep["id"]}, a)
        assert st == 404
        st, _, _ = post(w, "/portal/endpoint/" + b_ep["id"], {"csrf": a_csrf, "url": "http://127.0.0.1:1/x"}, a)
        assert st == 404
        # B's own forms need B's token: no token, A's token, a wrong one
        for form in ({}, {"csrf": a_csrf}, {"csrf": "0" * 64}):
            st, _, body = post(w, f"/portal/endpoint/{b_ep['id']}/disable", form, b)
            assert st == 403 and "This form has expired" in body
        # no session at all
        st, _, _ = post(w, f"/portal/endpoint/{b_ep['id']}/disable", {"csrf": csrf_of(w, b)}, None)
        assert st == 401
        assert env.db.value("SELECT enabled AND url = %s FROM webhook_endpoints WHERE description = 'B''s'",
                            rcv.url()) is True
        # B's own token works
        st, h, _ = post(w, f"/portal/endpoint/{b_ep['id']}/disable", {"csrf": csrf_of(w, b)}, b)
        assert st == 303 and h["location"].endswith("?done=disabled")
        assert env.db.value("SELECT enabled FROM webhook_endpoints WHERE description = 'B''s'") is False
        # sign out ends the session
        st, h, _ = post(w, "/portal/logout", {"csrf": csrf_of(w, b)}, b)
        assert st == 200 and "Max-Age=0" in h["set-cookie"]
        assert get(w, "/portal/", b)[0] == 401
    finally:
        rcv.stop()

    # the operators' /admin lists the tenants, each with a button that mints a link
    admin = http.client.HTTPConnection("127.0.0.1", int(w.admin_url.rsplit(":", 1)[1]), timeout=10)
    try:
        auth = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
        admin.request("GET", "/admin", headers=auth)
        r = admin.getresponse()
        page = r.read().decode()
        assert r.status == 200 and 'id="tenants"' in page and "globex" in page
        app_id = re.search(r'action="/admin/tenants/(app_[0-9A-Za-z]+)/portal"', page).group(1)
        token = re.search(r'name="csrf" value="([0-9a-f]+)"', page).group(1)
        # the portal's components: its stylesheet and script, its table
        assert '<link rel="stylesheet" href="/admin/app.css">' in page and 'class="bar"' in page
        assert '<div class="scroll"><table id="tenants">' in page
        for form, status in (({}, 403), ({"csrf": token}, 200)):
            admin.request("POST", f"/admin/tenants/{app_id}/portal", body=urllib.parse.urlencode(form),
                          headers=dict(auth, **{"Content-Type": "application/x-www-form-urlencoded"}))
            r = admin.getresponse()
            page = r.read().decode()
            assert r.status == status, page
    finally:
        admin.close()
    url = re.search(r'<pre id="portal-link">([^<]+)</pre>', page).group(1).replace("&amp;", "&")
    assert get(w, "/portal/", open_link(w, url))[0] == 200


# ---- circuits, send-example, recover, Secure, expiry ------------------------------

BASE = "https://hooks.example.test"


def circuit_of(w, session: str, ep_id: str, page: str = "endpoint") -> str | None:
    """The circuit's data-state shown for the endpoint: on its page, or in its
    row of the endpoints list."""
    st, _, body = get(w, f"/portal/endpoint/{ep_id}" if page == "endpoint" else "/portal/", session)
    assert st == 200, body
    if page == "list":
        body = next((row for row in body.split("<tr>") if f"/portal/endpoint/{ep_id}" in row), "")
    m = re.search(r'class="badge circuit [a-z]+" data-state="([a-z-]+)"', body)
    return m.group(1) if m else None


def test_circuit_send_example_recover_secure_and_expiry(env):
    cfg = outbound_config(env, hookd_lines=("allow_private_networks = true",), circuit="on", retry_schedule="100ms",
                          extra=f"[portal]\nbase_url = {BASE}\n")
    cfg.write_text(cfg.read_text().replace("circuit = on\n", "circuit = on\ncircuit_failures = 3\ncircuit_probe = 2s\n", 1))
    w = env.worker(cfg)
    root = new_token(cfg, "root")
    catalogue(w, root)
    assert raw(w, "POST", "/api/v1/event-type", root, {"name": "report.ready", "description": "r"})[0] == 201
    for uid in ("acme", "globex"):
        assert raw(w, "POST", "/api/v1/app", root, {"name": uid.title(), "uid": uid})[0] == 201
    # base_url is https: both cookies are Secure (checked over plain HTTP)
    a = open_link(w, link(w, root, "acme", BASE), secure=True)

    state = {"down": True, "bad": True}
    one, two, every = Receiver(), Receiver(), Receiver()
    flaky = Receiver(lambda req: (503, {}, b"down") if state["down"] else (200, {}, b"ok"))
    picky = Receiver(lambda req: (400, {}, b"bad") if state["bad"] else (200, {}, b"ok"))
    try:
        eps = {}
        for name, rcv, types in (("one", one, ["invoice.paid"]), ("two", two, ["invoice.paid"]),
                                 ("every", every, None), ("picky", picky, ["report.ready"])):
            st, eps[name] = raw(w, "POST", "/api/v1/app/acme/endpoint", root,
                                {"url": rcv.url(), "description": name, **({"filterTypes": types} if types else {})})
            assert st == 201, eps[name]

        # send-example through the svix SDK: the catalogue's example, to that endpoint only
        g = new_token(cfg, "g", "globex")
        send = "endpoint.sendExample"
        out = svix(w, root, [
            {"call": send, "args": ["acme", eps["one"]["id"], {"eventType": "invoice.paid"}]},
            {"call": send, "args": ["acme", eps["every"]["id"], {"eventType": "invoice.paid", "exampleIndex": 1}]},
            {"call": send, "args": ["acme", eps["every"]["id"], {"eventType": "svix.ping"}]},
            {"call": send, "args": ["acme", eps["one"]["id"], {"eventType": "invoice.failed"}]},
            {"call": send, "args": ["acme", eps["one"]["id"], {"eventType": "no.such.type"}]},
            {"call": send, "args": ["acme", "no-such-endpoint", {"eventType": "invoice.paid"}]},
            {"call": send, "args": ["acme", eps["one"]["id"], {"eventType": "invoice.paid"}], "token": g},
            {"call": send, "args": ["acme", eps["one"]["id"], {"eventType": "invoice.paid", "exampleIndex": 7}]},
        ])
        assert out[0]["ok"]["eventType"] == "invoice.paid" and out[0]["ok"]["payload"] == EXAMPLES[0]
        assert out[0]["ok"]["id"].startswith("msg_")
        assert out[1]["ok"]["payload"] == EXAMPLES[1] and out[2]["ok"]["payload"] == {"success": True}
        assert out[3]["status"] == 400 and out[3]["body"]["code"] == "invalid_scheme", out[3]
        assert [o["status"] for o in out[4:7]] == [404, 404, 404], out[4:7]
        assert out[7]["status"] == 422, out[7]
        assert raw(w, "POST", f"/api/v1/app/acme/endpoint/{eps['one']['id']}/send-example", root, {})[0] == 422
        # one delivery each, to the endpoint named: not to "two" nor "every", which take invoice.paid too
        deliveries = "SELECT array_agg(hookd_api_id('ep', endpoint_id)) FROM outbox_deliveries WHERE event_id = hookd_api_uuid('msg', %s)"
        assert env.db.value(deliveries, out[0]["ok"]["id"]) == [eps["one"]["id"]]
        assert env.db.value(deliveries, out[1]["ok"]["id"]) == [eps["every"]["id"]]
        wait_for(lambda: len(one.requests) == 1 and len(every.requests) == 2, 20, what="the examples delivered")
        assert one.requests[0].json == EXAMPLES[0] and one.requests[0].headers["webhook-id"] == out[0]["ok"]["id"]
        got = sorted(json.dumps(r.json, sort_keys=True) for r in every.requests)
        assert got == sorted(json.dumps(x, sort_keys=True) for x in (EXAMPLES[1], {"success": True}))
        assert two.requests == []

        # the circuit: open while the receiver fails, closed once a probe succeeds
        st, ep = raw(w, "POST", "/api/v1/app/acme/endpoint", root, {"url": flaky.url(), "description": "flaky",
                                                                    "filterTypes": ["invoice.failed"]})
        assert st == 201
        assert circuit_of(w, a, ep["id"]) == "closed"
        for i in range(5):
            assert raw(w, "POST", "/api/v1/app/acme/msg", root, {"eventType": "invoice.failed", "payload": {"i": i}})[0] == 202
        wait_for(lambda: circuit_of(w, a, ep["id"]) == "open", 30, what="the endpoint's page to show the circuit open")
        st, _, body = get(w, f"/portal/endpoint/{ep['id']}", a)
        failures = re.search(r'id="circuit-failures">(\d+) of 3<', body)
        assert failures and int(failures.group(1)) >= 3, body
        assert re.search(r'id="circuit-since">\d{4}-\d\d-\d\d \d\d:\d\d:\d\d<', body)
        assert re.search(r'id="circuit-probe">(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d|now)<', body)
        wait_for(lambda: circuit_of(w, a, ep["id"], "list") == "open", 30, what="the list to show it open")
        assert circuit_of(w, a, eps["one"]["id"], "list") == "closed"
        state["down"] = False
        wait_for(lambda: circuit_of(w, a, ep["id"]) == "closed", 30, what="the circuit closed after a probe")
        st, _, body = get(w, f"/portal/endpoint/{ep['id']}", a)
        assert re.search(r'id="circuit-since">\d{4}-\d\d-\d\d \d\d:\d\d:\d\d<', body)  # an outage, ended
        assert 'id="circuit-failures">0 of 3<' in body

        # recover since a time: the dead deliveries (400s: retried, not the circuit's) go out again
        for i in range(2):
            assert raw(w, "POST", "/api/v1/app/acme/msg", root, {"eventType": "report.ready", "payload": {"r": i}})[0] == 202
        dead = "SELECT count(*) FROM outbox_deliveries WHERE endpoint_id = hookd_api_uuid('ep', %s) AND status = %s"
        wait_for(lambda: env.db.value(dead, eps["picky"]["id"], "DEAD") == 2, 30, what="2 dead deliveries")
        state["bad"] = False
        since = env.db.value("SELECT to_char((now() - interval '1 hour') AT TIME ZONE 'UTC', "
                             "'YYYY-MM-DD\"T\"HH24:MI')")
        st, h, _ = post(w, f"/portal/endpoint/{eps['picky']['id']}/recover", {"csrf": csrf_of(w, a), "since": since}, a)
        assert st == 303 and h["location"].endswith("?done=recovered"), (st, h)
        wait_for(lambda: env.db.value(dead, eps["picky"]["id"], "SUCCEEDED") == 2, 30, what="2 recovered deliveries")
        assert len(picky.requests) == 2 * 4 + 2  # 4 refused attempts each, then the recovered one
    finally:
        for r in (one, two, every, flaky, picky):
            r.stop()

    # a session ends: short session_ttl (a reload; it is fixed into the links minted after it)
    cfg.write_text(cfg.read_text().replace("[portal]\n", "[portal]\nsession_ttl = 4s\n", 1))
    w.signal(signal.SIGHUP)
    last_ttl = "SELECT session_ttl_ms FROM hookd_portal_links ORDER BY created_at DESC LIMIT 1"
    url = wait_for(lambda: (u := link(w, root, "acme", BASE)) and env.db.value(last_ttl) == 4000 and u, 20,
                   what="the reloaded session_ttl")
    short = open_link(w, url, secure=True)
    assert get(w, "/portal/", short)[0] == 200
    wait_for(lambda: get(w, "/portal/", short)[0] == 401, 30, what="the session to expire")
    st, h, body = get(w, "/portal/", short)
    assert "Your session has expired" in body and "Ask for a new link" in body
    assert "hookd_portal=;" in h["set-cookie"] and "Max-Age=0" in h["set-cookie"] and "Secure" in h["set-cookie"]
    st, _, body = get(w, "/portal/")
    assert st == 401 and "You are not signed in" in body


def circuit_reads(env, request) -> tuple[int, object]:
    """How many commands on the circuits' Redis keys ran while request() ran
    (MONITOR, read up to a marker command sent after it), and request()'s
    result."""
    marker = env.key("monitor-end")
    with env.redis.monitor() as m:
        result = request()
        env.redis.get(marker)
        seen = []
        while marker not in (c := m.next_command()["command"]):
            seen.append(c)
    return sum(1 for c in seen if f"{env.prefix}:{{delivery}}:circuit:" in c), result


def test_circuits_are_read_only_for_a_valid_session(env):
    """A cookie costs Redis nothing until its session is found valid."""
    # no relay: only the portal reads circuits
    cfg = outbound_config(env, hookd_lines=("roles = ingest", "allow_private_networks = true"), circuit="on")
    w = env.worker(cfg)
    root = new_token(cfg, "root")
    assert raw(w, "POST", "/api/v1/app", root, {"name": "Acme", "uid": "acme"})[0] == 201
    status, ep = raw(w, "POST", "/api/v1/app/acme/endpoint", root, {"url": "http://127.0.0.1:9/hook"})
    assert status == 201, ep
    for cookie in ("hkps_" + "0" * 64, "x"):
        for path in ("/portal/", f"/portal/endpoint/{ep['id']}"):
            n, (status, _, _) = circuit_reads(env, lambda: get(w, path, cookie))
            assert status == 401 and n == 0, (cookie, path, n)
    session = open_link(w, link(w, root, "acme"))
    n, (status, _, body) = circuit_reads(env, lambda: get(w, "/portal/", session))
    assert status == 200 and n == 2 and 'data-state="closed"' in body
    n, (status, _, body) = circuit_reads(env, lambda: get(w, f"/portal/endpoint/{ep['id']}", session))
    assert status == 200 and n == 3 and 'id="circuit"' in body


# ---- the browser ----------------------------------------------------------------

@pytest.fixture
def browser():
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    for path in (CHROMIUM, CHROMEDRIVER):
        if not Path(path).exists():
            pytest.fail(f"{path} is missing (scripts/deps.sh installs chromium and chromium-driver)")
    profile = tempfile.mkdtemp(prefix="hookd-chromium-")
    opts = webdriver.ChromeOptions()
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--no-first-run", "--disable-background-networking", "--disable-component-update",
                "--disable-sync", f"--user-data-dir={profile}", "--window-size=1280,1000"):
        opts.add_argument(arg)
    opts.binary_location = CHROMIUM
    opts.set_capability("unhandledPromptBehavior", "ignore")
    driver = None
    try:
        driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=opts)
        driver.set_page_load_timeout(30)
        yield driver
    finally:
        if driver is not None:
            driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def secret_text(d, css: str = "#secret") -> str:
    """An element's text (the revealed secret by default); "" while the page is
    being replaced (a stale reference or no element yet is a page in
    mid-update, not a failure: the callers await the text)."""
    from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException
    from selenium.webdriver.common.by import By
    try:
        return d.find_element(By.CSS_SELECTOR, css).text
    except (StaleElementReferenceException, NoSuchElementException):
        return ""


def test_tenant_uses_its_portal(env, portal, browser, tmp_path):
    from selenium.webdriver.common.by import By
    cfg, w, root = portal
    d = browser
    shots = []

    def shot(name: str, width: int = 1280) -> None:
        d.set_window_size(width, 1000)
        path = tmp_path / f"portal-{name}.png"
        d.save_screenshot(str(path))
        shots.append(path)
        d.set_window_size(1280, 1000)

    def reload_until(css: str, text: str, what: str) -> None:
        def seen():
            d.refresh()
            return any(text in e.text for e in all_css(d, css))
        wait_for(seen, 30, what=what)

    failing = {"on": False}
    rcv = Receiver(lambda req: (500, {}, b"down for maintenance") if failing["on"] else (200, {}, b"thanks"))
    try:
        d.get(link(w, root, "acme"))
        by_css(d, "#open-portal")
        shot("login")
        d.find_element(By.ID, "open-portal").click()  # the link is used by the click, not by the GET
        wait_for(lambda: d.current_url == f"http://127.0.0.1:{w.port}/portal/", 10, what="the portal")
        by_css(d, "main h1")
        cookie = [c for c in d.get_cookies() if c["name"] == "hookd_portal"][0]
        assert cookie["httpOnly"] is True and cookie["sameSite"] == "Strict"
        assert "No endpoints yet" in d.find_element(By.CSS_SELECTOR, "p.empty").text
        shot("empty")

        # add an endpoint (description with markup), subscribed to invoice.paid
        form = d.find_element(By.ID, "add-endpoint")
        form.find_element(By.NAME, "url").send_keys(rcv.url())
        form.find_element(By.NAME, "description").send_keys(XSS_DESC)
        form.find_element(By.CSS_SELECTOR, "input[value='invoice.paid']").click()
        form.find_element(By.CSS_SELECTOR, "button.primary").click()
        wait_for(lambda: "Endpoint created" in secret_text(d, "p.notice.ok"), 10, what="the notice: Endpoint created")
        assert no_alert_open(d)
        cell = d.find_element(By.XPATH, "//tbody/tr/td[2]")
        assert cell.text == XSS_DESC  # shown as text
        assert d.execute_script("return window.__owned === undefined")
        shot("endpoints")
        shot("endpoints-phone", 390)

        # send an example: delivered, with its attempt
        d.find_element(By.CSS_SELECTOR, "a.url").click()
        by_css(d, "#send-example")
        assert d.find_element(By.CSS_SELECTOR, "p.description").text == XSS_DESC
        # the catalogue's types this endpoint takes: invoice.paid (with its example)
        options = {o.get_attribute("value"): o.is_enabled() for o in all_css(d, "#send-example option")}
        assert options == {"invoice.paid": True}, options
        d.find_element(By.CSS_SELECTOR, "#send-example button").click()
        wait_for(lambda: "Example sent to this endpoint" in secret_text(d, "p.notice.ok"), 10,
                 what="the notice: Example sent")
        wait_for(lambda: len(rcv.requests) == 1, 20, what="the example delivered")
        assert rcv.requests[0].json == EXAMPLES[0]
        reload_until("table.attempts td", "Succeeded", "the attempt shown")
        assert "100%" in d.find_element(By.ID, "success-rate").text
        # the harness's config has `circuit = off`: the page says so (the other states: the test above)
        assert d.find_element(By.CSS_SELECTOR, "#circuit .badge.circuit").text == "Off"
        assert no_alert_open(d)
        shot("endpoint")
        endpoint_url = d.current_url

        # a failed message, seen in the log with a filter, then resent
        failing["on"] = True
        d.find_element(By.CSS_SELECTOR, "#send-example button").click()
        wait_for(lambda: len(rcv.requests) >= 2, 20, what="the failing attempt")
        d.get(f"http://127.0.0.1:{w.port}/portal/messages?status=failed")
        reload_until("#messages td", "failed", "the failed message listed")
        assert len(all_css(d, "#messages tbody tr")) == 1
        shot("messages-failed")
        d.find_element(By.CSS_SELECTOR, "#messages tbody a").click()
        by_css(d, "#deliveries")
        assert "500" in d.find_element(By.CSS_SELECTOR, "table.attempts").text
        assert "down for maintenance" in d.find_element(By.CSS_SELECTOR, "table.attempts").text
        failing["on"] = False
        before = len(rcv.requests)
        d.find_element(By.CSS_SELECTOR, "#deliveries button").click()
        wait_for(lambda: "Message sent again" in secret_text(d, "p.notice.ok"), 10, what="the notice: Message sent again")
        wait_for(lambda: any(r.n > before for r in rcv.requests if r.body and b'"invoiceId"' in r.body)
                 and rcv.requests[-1].n > before, 20, what="the resend delivered")
        reload_until("table.attempts td", "Succeeded", "the resent attempt")
        shot("message")
        d.get(f"http://127.0.0.1:{w.port}/portal/messages")
        reload_until("#messages td", "delivered", "both messages listed")
        shot("messages")

        # disable, enable
        d.get(endpoint_url)
        d.find_element(By.XPATH, "//button[text()='Disable']").click()
        wait_for(lambda: "Endpoint disabled" in secret_text(d, "p.notice.ok"), 10, what="the notice: Endpoint disabled")
        assert d.find_element(By.CSS_SELECTOR, "section.card .badge").text == "Disabled"
        assert env.db.value("SELECT enabled FROM webhook_endpoints WHERE url = %s", rcv.url()) is False
        d.find_element(By.XPATH, "//button[text()='Enable']").click()
        wait_for(lambda: "Endpoint enabled" in secret_text(d, "p.notice.ok"), 10, what="the notice: Endpoint enabled")

        # reveal, rotate (confirmed), reveal again: another secret
        d.find_element(By.CSS_SELECTOR, "button[data-reveal]").click()
        wait_for(lambda: secret_text(d).startswith("whsec_"), 10, what="the secret")
        first = secret_text(d)
        d.find_element(By.XPATH, "//button[text()='Rotate secret']").click()
        wait_alert(d).accept()
        wait_for(lambda: "Signing secret rotated" in secret_text(d, "p.notice.ok"), 10, what="the notice: Signing secret rotated")
        d.find_element(By.CSS_SELECTOR, "button[data-reveal]").click()
        wait_for(lambda: secret_text(d).startswith("whsec_") and secret_text(d) != first, 10, what="the new secret")

        # a payload with markup shows as text
        st, msg = raw(w, "POST", "/api/v1/app/acme/msg", root, {"eventType": "invoice.paid", "payload": XSS_PAYLOAD})
        assert st == 202
        d.get(f"http://127.0.0.1:{w.port}/portal/message/{msg['id']}")
        pre = by_css(d, "#payload").text
        assert "<script>alert('payload')</script>" in pre and "<b onmouseover=alert(1)>x</b>" in pre
        assert not all_css(d, "main b")
        assert no_alert_open(d)
        shot("message-markup")

        # the operators' /admin: the tenants with their portal links, in the portal's components
        d.get(f"{w.admin_url}/admin/login")
        by_css(d, "input#token").send_keys(ADMIN_TOKEN)
        by_css(d, "button#signin").click()
        assert "Acme" in by_css(d, "table#tenants").text
        assert by_css(d, "header.bar .title").text == "hookd admin"
        shot("admin")

        # a session that ends (session_ttl 3s, reloaded: links minted after it)
        cfg.write_text(cfg.read_text().replace("[portal]\n", "[portal]\nsession_ttl = 3s\n", 1))
        w.signal(signal.SIGHUP)
        last_ttl = "SELECT session_ttl_ms FROM hookd_portal_links ORDER BY created_at DESC LIMIT 1"
        short = wait_for(lambda: (u := link(w, root, "acme")) and env.db.value(last_ttl) == 3000 and u, 20,
                         what="the reloaded session_ttl")
        d.get(short)
        by_css(d, "#open-portal").click()
        wait_for(lambda: d.current_url == f"http://127.0.0.1:{w.port}/portal/", 10, what="the portal")
        reload_until("main h1", "Your session has expired", "the session-expired page")
        assert "Ask for a new link" in by_css(d, "p.notice.error").text
        assert not [c for c in d.get_cookies() if c["name"] == "hookd_portal"]  # dropped
        shot("session-expired")
    finally:
        rcv.stop()
        for p in shots:
            print(f"screenshot: {p}")
