"""The tenants' portal (/portal/), driven by headless Chromium (selenium) and
by plain HTTP for what a browser would never send.

Covered: the link from the API (the SDK's authentication.appPortalAccess and
a raw POST) and from `hookd tenant portal-link`; the link opens once, is
refused when expired, and leaves the URL; the session cookie's attributes;
a tenant adds an endpoint, sends an example, sees it delivered with its
attempt, sees a failed message, resends it, disables and enables the
endpoint, reveals and rotates its secret; tenant A's session reads and
changes nothing of tenant B's (URL tampering, forged posts with and without
a CSRF token); markup in a description or payload shows as text, never
runs. Screenshots of the main pages go to the test's tmp dir (printed)."""
from __future__ import annotations

import http.client
import re
import shutil
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


@pytest.fixture
def portal(env):
    cfg = outbound_config(env, hookd_lines=("allow_private_networks = true", f"admin_token = {ADMIN_TOKEN}"),
                          extra="[portal]\ntitle = Acme <Webhooks>\naccent_color = #7c3aed\n")
    w = env.worker(cfg)
    root = new_token(cfg, "root")
    for name in ("invoice.paid", "invoice.failed"):
        assert raw(w, "POST", "/api/v1/event-type", root, {"name": name, "description": f"when {name}"})[0] == 201
    for uid in ("acme", "globex"):
        assert raw(w, "POST", "/api/v1/app", root, {"name": uid.title(), "uid": uid})[0] == 201
    return cfg, w, root


def link(w, root, app: str) -> str:
    status, body = raw(w, "POST", f"/api/v1/auth/app-portal-access/{app}", root, {})
    assert status == 200, body
    assert body["url"].startswith(f"http://127.0.0.1:{w.port}/portal/login?token=")
    assert body["token"] in body["url"]
    return body["url"]


def get(w, path: str, cookie: str | None = None):
    conn = http.client.HTTPConnection("127.0.0.1", w.port, timeout=10)
    try:
        conn.request("GET", path, headers={"Cookie": f"hookd_portal={cookie}"} if cookie else {})
        r = conn.getresponse()
        return r.status, dict((k.lower(), v) for k, v in r.getheaders()), r.read().decode()
    finally:
        conn.close()


def post(w, path: str, form: dict, cookie: str | None):
    conn = http.client.HTTPConnection("127.0.0.1", w.port, timeout=10)
    try:
        h = {"Content-Type": "application/x-www-form-urlencoded"}
        if cookie:
            h["Cookie"] = f"hookd_portal={cookie}"
        conn.request("POST", path, body=urllib.parse.urlencode(form), headers=h)
        r = conn.getresponse()
        return r.status, dict((k.lower(), v) for k, v in r.getheaders()), r.read().decode()
    finally:
        conn.close()


def open_link(w, url: str) -> str:
    """The session cookie's value from opening a link."""
    status, headers, _ = get(w, url.split(str(w.port), 1)[1])
    assert status == 303 and headers["location"] == "/portal/", (status, headers)
    cookie = headers["set-cookie"]
    for attr in ("HttpOnly", "SameSite=Strict", "Path=/portal"):
        assert attr in cookie
    assert "Secure" not in cookie  # plain http here
    return re.match(r"hookd_portal=([^;]+);", cookie).group(1)


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
    status, _, body = get(w, a_url.split(str(w.port), 1)[1])
    assert status == 403 and "expired or was already used" in body
    # expired
    late = link(w, root, "acme")
    assert env.db.value("WITH u AS (UPDATE hookd_portal_links SET expires_at = now() - interval '1 second' "
                        "WHERE used_at IS NULL RETURNING 1) SELECT count(*) FROM u") == 2  # the SDK's and this one
    status, _, _ = get(w, late.split(str(w.port), 1)[1])
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
        assert r.status == 200 and 'id=tenants' in page and "globex" in page
        app_id = re.search(r'action="/admin/tenants/(app_[0-9A-Za-z]+)/portal"', page).group(1)
        token = re.search(r'name=csrf value="([0-9a-f]+)"', page).group(1)
        for form, status in (({}, 403), ({"csrf": token}, 200)):
            admin.request("POST", f"/admin/tenants/{app_id}/portal", body=urllib.parse.urlencode(form),
                          headers=dict(auth, **{"Content-Type": "application/x-www-form-urlencoded"}))
            r = admin.getresponse()
            page = r.read().decode()
            assert r.status == status, page
    finally:
        admin.close()
    url = re.search(r"<pre id=portal-link>([^<]+)</pre>", page).group(1).replace("&amp;", "&")
    assert get(w, "/portal/", open_link(w, url))[0] == 200


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
        by_css(d, "main h1")
        assert d.current_url == f"http://127.0.0.1:{w.port}/portal/"  # the token left the URL
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
        d.find_element(By.CSS_SELECTOR, "#send-example button").click()
        wait_for(lambda: "Example event sent" in secret_text(d, "p.notice.ok"), 10, what="the notice: Example event sent")
        wait_for(lambda: len(rcv.requests) == 1, 20, what="the example delivered")
        assert rcv.requests[0].json["example"] is True
        reload_until("table.attempts td", "Succeeded", "the attempt shown")
        assert "100%" in d.find_element(By.ID, "success-rate").text
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
        wait_for(lambda: any(r.n > before for r in rcv.requests if r.body and b'"example"' in r.body)
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
    finally:
        rcv.stop()
        for p in shots:
            print(f"screenshot: {p}")
