"""The admin view at /admin: disabled without a token, the three ways to
authenticate, CSRF on replay, and the whole dead-letter workflow clicked
through in a real headless Chromium — sign in, find the dead letter, read its
attempt history, refuse and then confirm a replay after the config was fixed,
and see the event processed. Pages escape what partners sent."""
import base64
from http.client import HTTPConnection
import re
import shutil
import signal
import tempfile
import time
import urllib.parse
from pathlib import Path

import pytest

from hookdtest.client import deep_payload, http, order_event, post_standard, read_capped
from hookdtest.util import wait_for
from hookdtest.worker import run_hookd

TOKEN = "Adm1n+t0ken/xyz-0123456789"  # '+' and '/' must survive form encoding; 24+ characters
CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
BOGUS_MACHINE = """
[machine bogus]
initial = draft
transition order.bogus = draft -> done
"""
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


# ---- helpers ------------------------------------------------------------------

def admin_config(env, token: str | None = TOKEN, port: int | None = None, extra: str = "",
                 admin_port: int | None = None, hookd: str = "") -> Path:
    """A harness config with `admin_token = token` (and the lines of hookd)
    in [hookd] (the harness's `extra` can only append sections)."""
    cfg = env.config(extra=extra, port=port, **({"admin_port": admin_port} if admin_port else {}))
    text = cfg.read_text()
    assert "[hookd]\n" in text
    if token is not None:
        text = text.replace("[hookd]\n", f"[hookd]\nadmin_token = {token}\n", 1)
    text = text.replace("[hookd]\n", f"[hookd]\n{hookd}", 1)
    cfg.write_text(text)
    return cfg


def fix_config(env, w) -> None:
    """Adds a machine that handles order.bogus to the worker's config file
    and makes it reload (SIGHUP)."""
    cfg = admin_config(env, port=w.port, extra=BOGUS_MACHINE, admin_port=w.admin_port)
    assert cfg == w.config
    before = w.output().count("config.reloaded")
    w.signal(signal.SIGHUP)
    wait_for(lambda: w.output().count("config.reloaded") > before, what="config.reloaded after SIGHUP")
    assert "config.reload_failed" not in w.output()


def dead_letter(env, w, msg_id: str, order_id: str, headers: dict | None = None, **payload) -> dict:
    """Posts an event no machine handles and waits for its dead letter."""
    status, _, body = post_standard(w, "shop", msg_id, order_event("order.bogus", order_id, **payload),
                                    headers=headers)
    assert status == 200, body
    return wait_for(lambda: env.db.one(
        "SELECT d.id::text AS id, d.source_id::text AS source_id, d.replayed_at, d.replay_count, d.attempts"
        " FROM dead_letters d JOIN webhook_inbox i ON i.id = d.source_id"
        " WHERE d.source = 'inbox' AND i.partner_event_id = %s AND i.status = 'QUARANTINED'", msg_id),
        what=f"{msg_id} dead-lettered")


def dl_row(env, dl_id: str) -> dict:
    return env.db.one("SELECT replayed_at, replay_count FROM dead_letters WHERE id = %s", dl_id)


def inbox_status(env, msg_id: str) -> str:
    return env.db.value("SELECT status FROM webhook_inbox WHERE partner_event_id = %s", msg_id)


def raw(method: str, url: str, body: bytes | None = None, headers: dict | None = None, source: str | None = None):
    """(status, headers, body) without following redirects; source: the
    client's address (Linux routes all of 127/8 to lo, so 127.0.0.2 is a
    second client)."""
    u = urllib.parse.urlsplit(url)
    conn = HTTPConnection(u.hostname, u.port, timeout=10, source_address=(source, 0) if source else None)
    try:
        conn.request(method, u.path + (f"?{u.query}" if u.query else ""), body=body, headers=headers or {})
        r = conn.getresponse()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
    finally:
        conn.close()


def bearer(token: str = TOKEN) -> dict:
    return {"Authorization": f"Bearer {token}"}


def basic(user: str, password: str) -> dict:
    return {"Authorization": "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()}


def csrf_of(html: bytes | str) -> str:
    text = html.decode() if isinstance(html, bytes) else html
    m = re.search(r'name=csrf value="([0-9a-f]+)"', text)
    assert m, "no csrf field in the detail page"
    return m.group(1)


def replay(w, dl_id: str, headers: dict, csrf: str | None, source: str | None = None):
    body = urllib.parse.urlencode({"csrf": csrf} if csrf is not None else {}).encode()
    h = dict(headers, **{"Content-Type": "application/x-www-form-urlencoded"})
    return raw("POST", f"{w.admin_url}/admin/dlq/{dl_id}/replay", body, h, source=source)


# ---- the browser ------------------------------------------------------------------

@pytest.fixture
def browser():
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        pytest.fail("python3-selenium is not installed (scripts/deps.sh installs it)")
    for path in (CHROMIUM, CHROMEDRIVER):
        if not Path(path).exists():
            pytest.fail(f"{path} is missing (scripts/deps.sh installs chromium and chromium-driver)")
    profile = tempfile.mkdtemp(prefix="hookd-chromium-")
    opts = webdriver.ChromeOptions()
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-quic",
                "--no-first-run", "--disable-background-networking", "--disable-component-update",
                "--disable-sync", f"--user-data-dir={profile}", "--window-size=1280,1000"):
        opts.add_argument(arg)
    opts.binary_location = CHROMIUM
    # leave unexpected dialogs open, so a test can see that one appeared
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


def by_css(driver, css: str, timeout: float = 10):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as EC
    from selenium.webdriver.support.ui import WebDriverWait
    return WebDriverWait(driver, timeout).until(EC.presence_of_element_located((By.CSS_SELECTOR, css)))


def all_css(driver, css: str):
    from selenium.webdriver.common.by import By
    return driver.find_elements(By.CSS_SELECTOR, css)


def wait_alert(driver, timeout: float = 10):
    from selenium.webdriver.support import expected_conditions as EC
    from selenium.webdriver.support.ui import WebDriverWait
    return WebDriverWait(driver, timeout).until(EC.alert_is_present())


def no_alert_open(driver) -> bool:
    from selenium.common.exceptions import NoAlertPresentException
    try:
        text = driver.switch_to.alert.text
    except NoAlertPresentException:
        return True
    raise AssertionError(f"a dialog is open: {text!r}")


def sign_in(driver, w, token: str) -> None:
    driver.get(f"{w.admin_url}/admin/login")
    field = by_css(driver, "input#token")
    field.clear()
    field.send_keys(token)
    by_css(driver, "button#signin").click()


def table_rows(driver, css: str) -> list[list[str]]:
    """The data rows (those with td cells) of a table, as cell texts."""
    from selenium.webdriver.common.by import By
    rows = []
    for tr in all_css(driver, f"{css} tr"):
        cells = tr.find_elements(By.TAG_NAME, "td")
        if cells:
            rows.append([c.text for c in cells])
    return rows


# ---- plain HTTP ------------------------------------------------------------------

def test_admin_is_disabled_without_a_token(env):
    w = env.worker(config=admin_config(env, token=None))
    for path in ("/admin", "/admin/", "/admin/login", "/admin/dlq/00000000-0000-0000-0000-000000000000"):
        status, _, body = w.admin_get(path)
        assert status == 404, (path, status, body)
        assert b"admin_token" in body, body
    status, _, _ = http("GET", f"{w.admin_url}/admin", headers=bearer())
    assert status == 404
    status, _, _ = raw("POST", f"{w.admin_url}/admin/login", urllib.parse.urlencode({"token": TOKEN}).encode(),
                       {"Content-Type": "application/x-www-form-urlencoded"})
    assert status == 404


def test_admin_auth_bearer_basic_and_session_cookie(env):
    w = env.worker(config=admin_config(env))
    dl = dead_letter(env, w, "m1", "o1")

    # no credentials: 401 with the sign-in form, and nothing of the DLQ
    status, _, body = http("GET", f"{w.admin_url}/admin")
    assert status == 401
    assert b"id=token" in body and b"id=signin" in body
    assert dl["id"].encode() not in body and b"order.bogus" not in body
    status, _, body = http("GET", f"{w.admin_url}/admin/dlq/{dl['id']}")
    assert status == 401 and b"order.bogus" not in body

    # wrong credentials of every kind
    # (each from its own address: five failures from one address block it)
    for i, headers in enumerate((bearer("wrong"), bearer(TOKEN + "x"), bearer(""), basic("admin", "wrong"),
                                 basic(TOKEN, ""), {"Cookie": "hookd_admin=" + "0" * 64})):
        status, _, body = raw("GET", f"{w.admin_url}/admin", headers=headers, source=f"127.0.0.{10 + i}")
        assert status == 401, (headers, status)
        assert dl["id"].encode() not in body

    # the right bearer token: the list with the dead letter
    status, hdrs, body = http("GET", f"{w.admin_url}/admin", headers=bearer())
    assert status == 200, body
    assert hdrs["Content-Type"].startswith("text/html")
    page = body.decode()
    assert "<table id=dlq>" in page and "<tr class=dead-letter>" in page
    assert f'href="/admin/dlq/{dl["id"]}"' in page and "order.bogus" in page
    assert "<table id=queues>" in page and "<ul id=workers>" in page
    # the live worker shows up once the heartbeat has listed it
    wid = wait_for(lambda: env.redis.zrange(env.key("workers"), 0, -1), what="worker heartbeat")[0]
    wait_for(lambda: f"<li>{wid}</li>" in http("GET", f"{w.admin_url}/admin", headers=bearer())[2].decode(),
             what="the worker in the admin page's worker list")

    # basic auth with the token as the password (any user name)
    for user in ("admin", ""):
        status, _, body = http("GET", f"{w.admin_url}/admin", headers=basic(user, TOKEN))
        assert status == 200, (user, status)
        assert dl["id"].encode() in body

    # the sign-in form: a wrong token is refused, the right one sets a session cookie
    form = {"Content-Type": "application/x-www-form-urlencoded"}
    status, hdrs, body = raw("POST", f"{w.admin_url}/admin/login", urllib.parse.urlencode({"token": "nope"}).encode(), form)
    assert status == 401 and "set-cookie" not in hdrs
    assert b"That token is not right." in body
    status, hdrs, _ = raw("POST", f"{w.admin_url}/admin/login", urllib.parse.urlencode({"token": TOKEN}).encode(), form)
    assert status == 303 and hdrs["location"] == "/admin"
    cookie = hdrs["set-cookie"]
    assert cookie.startswith("hookd_admin=") and "HttpOnly" in cookie and "SameSite=Strict" in cookie
    assert "Secure" not in cookie  # admin_listen is loopback: plain HTTP
    session = cookie.split(";", 1)[0]
    assert TOKEN not in session
    status, _, body = http("GET", f"{w.admin_url}/admin/dlq/{dl['id']}", headers={"Cookie": f"other=1; {session}"})
    assert status == 200 and b"<table id=attempts>" in body


def test_admin_token_from_the_environment(env):
    w = env.worker(config=admin_config(env, token="env:HOOKD_TEST_ADMIN_TOKEN"),
                   env={"HOOKD_TEST_ADMIN_TOKEN": "from-env-token-0123456789"})
    assert http("GET", f"{w.admin_url}/admin", headers=bearer("from-env-token-0123456789"))[0] == 200
    assert http("GET", f"{w.admin_url}/admin", headers=bearer("env:HOOKD_TEST_ADMIN_TOKEN"))[0] == 401
    assert http("GET", f"{w.admin_url}/admin")[0] == 401
    assert "from-env-token-0123456789" not in w.output()


def test_replay_needs_the_csrf_token(env):
    w = env.worker(config=admin_config(env))
    dl = dead_letter(env, w, "m1", "o1")
    status, _, body = http("GET", f"{w.admin_url}/admin/dlq/{dl['id']}", headers=bearer())
    assert status == 200
    csrf = csrf_of(body)

    for i, given in enumerate((None, "", "0" * 64, csrf[:-1], csrf + "0")):
        status, _, body = replay(w, dl["id"], bearer(), given, source=f"127.0.0.{20 + i}")
        assert status == 403, (given, status, body)
    # a GET is not a replay either
    assert raw("GET", f"{w.admin_url}/admin/dlq/{dl['id']}/replay", headers=bearer())[0] == 405
    assert w.output().count("admin.csrf_refused") == 5
    r = dl_row(env, dl["id"])
    assert r["replayed_at"] is None and r["replay_count"] == 0
    assert inbox_status(env, "m1") == "QUARANTINED"
    assert "admin.replayed" not in w.output()

    # without credentials even the right csrf token does not replay
    status, _, _ = replay(w, dl["id"], {}, csrf)
    assert status == 401
    assert dl_row(env, dl["id"])["replayed_at"] is None

    # the same request with the right token is accepted: the 403s were about csrf
    status, hdrs, _ = replay(w, dl["id"], bearer(), csrf)
    assert status == 303 and hdrs["location"] == f"/admin?replayed={dl['id']}"
    assert dl_row(env, dl["id"])["replay_count"] == 1


def test_replaying_twice_is_refused(env):
    w = env.worker(config=admin_config(env))
    dl = dead_letter(env, w, "m1", "o1")
    csrf = csrf_of(http("GET", f"{w.admin_url}/admin/dlq/{dl['id']}", headers=bearer())[2])
    fix_config(env, w)

    status, hdrs, _ = replay(w, dl["id"], bearer(), csrf)
    assert status == 303 and hdrs["location"] == f"/admin?replayed={dl['id']}"
    wait_for(lambda: inbox_status(env, "m1") == "PROCESSED", what="the replayed event processed")

    status, _, body = replay(w, dl["id"], basic("admin", TOKEN), csrf)
    assert status == 409, (status, body)
    m = re.search(rb"<p class=err id=error>(.*?)</p>", body)
    assert m and b"already replayed" in m.group(1), body
    r = dl_row(env, dl["id"])
    assert r["replay_count"] == 1 and r["replayed_at"] is not None
    assert w.output().count("admin.replayed") == 1
    # the detail page no longer offers a replay
    status, _, body = http("GET", f"{w.admin_url}/admin/dlq/{dl['id']}", headers=bearer())
    assert status == 200 and b"id=replay" not in body and b"<th>replayed_at</th>" in body


# ---- admin_listen, throttling, sessions, CSP, errors ----------------------

FORM = {"Content-Type": "application/x-www-form-urlencoded"}


def login(w, token: str = TOKEN, source: str | None = None, headers: dict | None = None):
    return raw("POST", f"{w.admin_url}/admin/login", urllib.parse.urlencode({"token": token}).encode(),
               dict(FORM, **(headers or {})), source=source)


def session_of(hdrs: dict) -> str:
    return hdrs["set-cookie"].split(";", 1)[0]


def logout(w, session: str, csrf: str | None):
    body = urllib.parse.urlencode({"csrf": csrf} if csrf is not None else {}).encode()
    return raw("POST", f"{w.admin_url}/admin/logout", body, dict(FORM, Cookie=session))


def test_admin_and_metrics_only_on_admin_listen(env):
    w = env.worker(config=admin_config(env))
    assert w.admin_port and w.admin_port != w.port
    # the public listener: no /admin, no /metrics, whatever the credentials
    for path in ("/admin", "/admin/", "/admin/login", "/admin/app.js", "/metrics"):
        status, _, body = http("GET", f"{w.url}{path}", headers=bearer())
        assert status == 404, (path, status, body)
        assert b"hookd_" not in body and b"<form" not in body
    status, _, _ = raw("POST", f"{w.url}/admin/login", urllib.parse.urlencode({"token": TOKEN}).encode(), FORM)
    assert status == 404
    # admin_listen: both, and the probes on both listeners
    status, _, body = w.admin_get("/metrics")
    assert status == 200 and b"hookd_build_info" in body
    assert w.admin_get("/admin", headers=bearer())[0] == 200
    assert w.admin_get("/admin")[0] == 401
    for url in (w.url, w.admin_url):
        assert http("GET", f"{url}/healthz")[0] == 200
        assert http("GET", f"{url}/readyz")[0] == 200
    assert f"admin_port={w.admin_port}" in w.output()


def test_admin_listen_off(env):
    cfg = admin_config(env)
    cfg.write_text(re.sub(r"(?m)^admin_listen = .*$", "admin_listen = off", cfg.read_text()))
    w = env.worker(config=cfg)
    assert w.admin_port is None
    assert "admin_listen=off" in w.output()
    for path in ("/admin", "/metrics"):
        assert w.get(path)[0] == 404
    assert w.get("/healthz")[0] == 200


def test_short_admin_token_is_refused(env):
    short = "x" * 23
    cfg = admin_config(env, token=short)
    r = run_hookd(["config", "check", str(cfg)])
    assert r.returncode != 0, r.stdout
    assert "admin_token must be at least 24 characters (it has 23)" in r.stderr, r.stderr
    assert short not in r.stdout + r.stderr
    r = run_hookd(["-c", str(cfg), "run"], timeout=20)
    assert r.returncode != 0 and "admin_token must be at least 24 characters" in r.stderr
    # 24 is enough
    assert run_hookd(["config", "check", str(admin_config(env, token="y" * 24))]).returncode == 0


def test_brute_force_is_throttled_per_address(env):
    w = env.worker(config=admin_config(env))
    url = f"{w.admin_url}/admin"
    for i in range(5):
        status, hdrs, _ = raw("GET", url, headers=bearer(f"guess-{i}"), source="127.0.0.1")
        assert status == 401, (i, status)
        assert "retry-after" not in hdrs
    # the 6th attempt: 429 with Retry-After, answered at once (the connection is not held)
    t0 = time.monotonic()
    status, hdrs, body = raw("GET", url, headers=bearer("guess-5"), source="127.0.0.1")
    assert status == 429, status
    assert time.monotonic() - t0 < 1.0
    assert 1 <= int(hdrs["retry-after"]) <= 60
    assert b"Too many failed attempts" in body
    # blocked means blocked: even the right token, the login form and basic auth
    assert raw("GET", url, headers=bearer(), source="127.0.0.1")[0] == 429
    assert login(w, source="127.0.0.1")[0] == 429
    assert raw("GET", url, headers=basic("admin", TOKEN), source="127.0.0.1")[0] == 429
    # another address is not affected
    status, _, body = raw("GET", url, headers=bearer(), source="127.0.0.2")
    assert status == 200 and b"<table id=dlq>" in body
    # every failure logged with the client's address and its kind
    out = w.output()
    assert len(re.findall(r"admin\.auth_failed.*client=127\.0\.0\.1 method=bearer", out)) == 5, out[-3000:]
    assert re.search(r"admin\.client_blocked.*client=127\.0\.0\.1", out)
    status, _, _ = login(w, "wrong-login-token", source="127.0.0.3")
    assert status == 401
    status, _, _ = raw("GET", url, headers=basic("admin", "wrong"), source="127.0.0.4")
    assert status == 401
    w.wait_ready()
    out = w.output()
    assert re.search(r"admin\.login_failed.*client=127\.0\.0\.3 method=login", out)
    assert re.search(r"admin\.auth_failed.*client=127\.0\.0\.4 method=basic", out)
    assert "guess-" not in out and TOKEN not in out and "wrong-login-token" not in out


def test_sessions_are_random_expire_and_log_out(env):
    w = env.worker(config=admin_config(env, hookd="admin_session_timeout = 3s\n"))
    status, hdrs, _ = login(w)
    assert status == 303
    cookie = hdrs["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie and "Path=/admin" in cookie
    assert "Max-Age=3" in cookie and "Secure" not in cookie
    a = session_of(hdrs)
    status, hdrs, _ = login(w, headers={"X-Forwarded-Proto": "https"})
    assert "; Secure" in hdrs["set-cookie"]  # behind a TLS proxy
    b = session_of(hdrs)
    assert a != b and re.fullmatch(r"hookd_admin=[0-9a-f]{64}", a)

    # a CSRF token per session, on the page's logout form
    pages = {s: http("GET", f"{w.admin_url}/admin", headers={"Cookie": s}) for s in (a, b)}
    assert all(p[0] == 200 for p in pages.values())
    csrf_a, csrf_b = csrf_of(pages[a][2]), csrf_of(pages[b][2])
    assert csrf_a != csrf_b
    # bearer pages carry no logout form
    assert b"id=logout" not in http("GET", f"{w.admin_url}/admin", headers=bearer())[2]

    # logging out needs the session's own CSRF token
    assert logout(w, a, csrf_b)[0] == 403
    assert logout(w, a, None)[0] == 403
    assert http("GET", f"{w.admin_url}/admin", headers={"Cookie": a})[0] == 200
    status, hdrs, _ = logout(w, a, csrf_a)
    assert status == 303 and hdrs["location"] == "/admin/login"
    assert hdrs["set-cookie"].startswith("hookd_admin=;") and "Max-Age=0" in hdrs["set-cookie"]
    status, hdrs, _ = raw("GET", f"{w.admin_url}/admin", headers={"Cookie": a})
    assert status == 401 and "Max-Age=0" in hdrs["set-cookie"]  # the browser forgets it
    assert http("GET", f"{w.admin_url}/admin", headers={"Cookie": b})[0] == 200

    # expiry: 3 s after sign-in, however recently it was used
    wait_for(lambda: http("GET", f"{w.admin_url}/admin", headers={"Cookie": b})[0] == 401, timeout=6,
             interval=0.5, what="session b expired")


def test_token_change_ends_sessions(env):
    w = env.worker(config=admin_config(env))
    status, hdrs, _ = login(w)
    s = session_of(hdrs)
    assert http("GET", f"{w.admin_url}/admin", headers={"Cookie": s})[0] == 200
    new = "another-admin-token-0123456789"
    admin_config(env, token=new, port=w.port, admin_port=w.admin_port)
    before = w.output().count("config.reloaded")
    w.signal(signal.SIGHUP)
    wait_for(lambda: w.output().count("config.reloaded") > before, what="config.reloaded")
    assert http("GET", f"{w.admin_url}/admin", headers={"Cookie": s})[0] == 401
    assert http("GET", f"{w.admin_url}/admin", headers=bearer(new))[0] == 200


def test_csp_has_no_unsafe_inline(env):
    w = env.worker(config=admin_config(env))
    dl = dead_letter(env, w, "m1", "o1")
    for path, headers in (("/admin/login", {}), ("/admin", bearer()), (f"/admin/dlq/{dl['id']}", bearer())):
        status, hdrs, body = http("GET", f"{w.admin_url}{path}", headers=headers)
        assert status == 200, (path, status)
        csp = hdrs["Content-Security-Policy"]
        assert "unsafe-inline" not in csp and "unsafe-eval" not in csp, csp
        assert "script-src 'self'" in csp and "style-src 'self'" in csp and "frame-ancestors 'none'" in csp
        page = body.decode()
        # nothing inline the CSP would have to allow
        assert "<style" not in page and " style=" not in page, path
        assert re.findall(r"<script[^>]*>", page) == ['<script src="/admin/app.js" defer>'], path
        assert not re.search(r"\son[a-z]+=", page), path
    status, hdrs, body = w.admin_get("/admin/app.js")
    assert status == 200 and hdrs["Content-Type"].startswith("text/javascript") and b"data-confirm" in body
    status, hdrs, body = w.admin_get("/admin/app.css")
    assert status == 200 and hdrs["Content-Type"].startswith("text/css") and b"font:" in body


def test_database_errors_are_not_shown(env):
    w = env.worker(config=admin_config(env))
    dl = dead_letter(env, w, "m1", "o1")
    # operator-worded errors are still shown
    status, _, body = http("GET", f"{w.admin_url}/admin/dlq/not-a-uuid", headers=bearer())
    assert status == 404 and b"is not a dead letter id" in body
    env.db.all("ALTER TABLE dead_letters RENAME TO dead_letters_hidden")
    try:
        for path in ("/admin", f"/admin/dlq/{dl['id']}"):
            status, _, body = http("GET", f"{w.admin_url}{path}", headers=bearer())
            assert status == 503, (path, status, body)
            page = body.decode()
            for leak in ("dead_letters", "relation", "ERROR", "does not exist", "SELECT"):
                assert leak not in page, (leak, page)
            ref = re.search(r"<code id=ref>([0-9a-f]{8})</code>", page)
            assert ref, page
            # the log has it, under the same reference
            line = wait_for(lambda: next((l for l in w.output().splitlines()
                                          if "admin.error" in l and f"ref={ref.group(1)}" in l), None),
                            what="admin.error in the log")
            assert "dead_letters" in line, line
    finally:
        env.db.all("ALTER TABLE dead_letters_hidden RENAME TO dead_letters")


def test_a_deeply_nested_dead_letter_gives_a_bounded_page_and_its_download(env):
    """A partner's payload nested 2,040 deep: indented, its page was 250 MB."""
    w = env.worker(config=admin_config(env))
    body = b'{"type": "order.bogus", "data": {"order_id": "o-deep", "nest": ' + deep_payload() + b"}}"
    assert post_standard(w, "shop", "m-deep", body)[0] == 200
    dl = wait_for(lambda: env.db.one("SELECT d.id::text AS id, i.payload::text AS payload FROM dead_letters d"
                                     " JOIN webhook_inbox i ON i.id = d.source_id WHERE i.partner_event_id = 'm-deep'"),
                  what="m-deep dead-lettered")
    status, headers, page = read_capped(w.admin_port, f"/admin/dlq/{dl['id']}", bearer(), 1 << 20)
    assert status == 200
    size = int(headers["content-length"])
    assert size < 6 * 64 * 1024 + 32 * 1024, f"the page has {size} bytes"
    assert len(page) == size
    assert b"only its first 64 KiB are here" in page
    href = f"/admin/dlq/{dl['id']}/payload"
    assert f'href="{href}"'.encode() in page
    status, headers, data = read_capped(w.admin_port, href, bearer(), 4 << 20)
    assert status == 200 and headers["content-type"] == "application/json"
    assert headers["content-disposition"] == f'attachment; filename="dead-letter-{dl["id"]}.json"'
    assert data.decode() == dl["payload"]
    # the download is the admin's, like the page
    assert read_capped(w.admin_port, href, {}, 4096)[0] == 401
    assert read_capped(w.admin_port, href, bearer("not-the-token-0123456789"), 4096)[0] == 401


# ---- in the browser --------------------------------------------------------------

def test_dead_letter_workflow_in_the_browser(env, browser, tmp_path):
    driver = browser
    w = env.worker(config=admin_config(env))
    dl = dead_letter(env, w, "m1", "o1")

    # not signed in: the sign-in form
    driver.get(f"{w.admin_url}/admin")
    assert by_css(driver, "input#token").get_attribute("type") == "password"
    assert by_css(driver, "button#signin").text == "Sign in"
    assert not all_css(driver, "table#dlq")

    # a wrong token: an error, still no list
    sign_in(driver, w, "not-the-token")
    assert "That token is not right." in by_css(driver, "p.err").text
    assert not all_css(driver, "table#dlq")
    assert driver.get_cookie("hookd_admin") is None

    # the right token: the list with the dead letter
    sign_in(driver, w, TOKEN)
    by_css(driver, "table#dlq")
    assert urllib.parse.urlsplit(driver.current_url).path == "/admin"
    cookie = driver.get_cookie("hookd_admin")
    assert cookie and cookie["httpOnly"]
    rows = table_rows(driver, "table#dlq")
    assert len(rows) == 1, rows
    assert rows[0][0] == dl["id"] and rows[0][1] == "inbox" and rows[0][2] == "shop"
    assert rows[0][3] == "order.bogus" and rows[0][4].endswith("o1") and rows[0][5] == "4"
    assert by_css(driver, "table#queues") and by_css(driver, "ul#workers")

    # its detail page: attempt history and payload
    [link] = [a for a in all_css(driver, "tr.dead-letter a") if a.text == dl["id"]]
    link.click()
    by_css(driver, "table#attempts")
    assert urllib.parse.urlsplit(driver.current_url).path == f"/admin/dlq/{dl['id']}"
    attempts = table_rows(driver, "table#attempts")
    assert [a[0] for a in attempts] == ["1", "2", "3", "4"], attempts
    assert [a[2] for a in attempts] == ["retry", "retry", "retry", "dead"], attempts
    assert all("order.bogus" in a[5] for a in attempts), attempts
    payload = by_css(driver, "pre#payload").text
    assert '"order.bogus"' in payload and '"o1"' in payload
    csrf = by_css(driver, "input[name=csrf]").get_attribute("value")
    assert re.fullmatch(r"[0-9a-f]{64}", csrf)

    # Replay, but dismiss the confirmation: nothing happens
    by_css(driver, "button#replay").click()
    alert = wait_alert(driver)
    assert "Replay" in alert.text
    alert.dismiss()
    assert no_alert_open(driver)
    # (chromedriver waits for a navigation the dismissed dialog might have started)
    assert urllib.parse.urlsplit(driver.current_url).path == f"/admin/dlq/{dl['id']}", driver.current_url
    assert all_css(driver, "button#replay") and not all_css(driver, "p#flash")
    assert dl_row(env, dl["id"])["replayed_at"] is None
    assert inbox_status(env, "m1") == "QUARANTINED"

    # fix the config, then Replay and confirm
    fix_config(env, w)
    by_css(driver, "button#replay").click()
    wait_alert(driver).accept()
    flash = by_css(driver, "p#flash")
    assert dl["id"] in flash.text and "back in the queue" in flash.text
    u = urllib.parse.urlsplit(driver.current_url)
    assert u.path == "/admin" and urllib.parse.parse_qs(u.query) == {"replayed": [dl["id"]]}
    assert table_rows(driver, "table#dlq") == []
    assert dl["id"] not in by_css(driver, "table#dlq").text
    assert by_css(driver, "p#count").text == "0 open dead letters"

    wait_for(lambda: inbox_status(env, "m1") == "PROCESSED", what="the replayed event processed")
    assert env.db.value("SELECT state FROM hookd_entities WHERE entity_id = 'o1'") == "done"
    r = dl_row(env, dl["id"])
    assert r["replay_count"] == 1 and r["replayed_at"] is not None
    assert w.output().count("admin.replayed") == 1

    shot = tmp_path / "admin-after-replay.png"
    assert driver.save_screenshot(str(shot))
    assert shot.read_bytes()[:8] == PNG_MAGIC and shot.stat().st_size > 1000

    # the detail page now shows the replay and offers none
    driver.get(f"{w.admin_url}/admin/dlq/{dl['id']}")
    by_css(driver, "table#attempts")
    assert not all_css(driver, "button#replay")
    assert "replayed_at" in by_css(driver, "table#entry").text

    # replaying again with the browser's session and the form's csrf token is refused
    status, _, body = replay(w, dl["id"], {"Cookie": f"hookd_admin={cookie['value']}"}, csrf)
    assert status == 409, (status, body)
    assert b"already replayed" in body and b"id=error" in body
    assert dl_row(env, dl["id"])["replay_count"] == 1


def test_pages_escape_what_partners_sent(env, browser):
    driver = browser
    w = env.worker(config=admin_config(env))
    script = "<script>alert(1)</script>"
    img = "<img src=x onerror=alert(2)>"
    dl = dead_letter(env, w, "m-xss", "o-xss", headers={"x-note": img}, note=script)

    # over plain HTTP: the markup arrives escaped
    status, _, body = http("GET", f"{w.admin_url}/admin/dlq/{dl['id']}", headers=bearer())
    assert status == 200
    assert b"&lt;script&gt;alert(1)&lt;/script&gt;" in body and script.encode() not in body
    assert b"&lt;img src=x onerror=alert(2)&gt;" in body and img.encode() not in body

    # in the browser: shown as text, never run
    sign_in(driver, w, TOKEN)
    by_css(driver, "table#dlq")
    driver.get(f"{w.admin_url}/admin/dlq/{dl['id']}")
    assert no_alert_open(driver)
    by_css(driver, "pre#payload")
    assert driver.execute_script("return document.readyState") == "complete"
    assert no_alert_open(driver)
    assert script in by_css(driver, "pre#payload").text
    assert img in driver.find_element("tag name", "body").text
    source = driver.page_source
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in source and script not in source
    # the one script is the page's own, from /admin/app.js
    assert driver.execute_script("return Array.from(document.scripts).map(s => s.src)") == [
        f"{w.admin_url}/admin/app.js"]
    assert driver.execute_script("return document.images.length") == 0
