"""Security: hookd runs with the least-privilege role that sql/roles ships,
applications can only emit, and `config check` never prints a secret."""
import subprocess
from pathlib import Path

import psycopg2
import pytest

from hookdtest.client import http, order_event, post_standard
from hookdtest.paths import ROOT
from hookdtest.services import Db
from hookdtest.util import wait_for
from hookdtest.worker import run_hookd

ROLES_SQL = ROOT / "sql" / "roles" / "least_privilege.sql"


def apply_roles(env):
    env.db.all(ROLES_SQL.read_text())
    env.db.all("DO $$ BEGIN IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'hookd_w') THEN"
               " CREATE ROLE hookd_w LOGIN IN ROLE hookd_worker; END IF;"
               " IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'app_user') THEN"
               " CREATE ROLE app_user LOGIN IN ROLE hookd_app; END IF; END $$")


def as_role(env, role: str) -> str:
    return env.db_url.replace("postgres@", f"{role}@")


def test_worker_runs_with_least_privilege(env):
    apply_roles(env)
    w = env.worker(database=as_role(env, "hookd_w"))
    for t in ("order.shipped", "order.paid", "order.started"):
        assert post_standard(w, "shop", t, order_event(t, "o1"))[0] == 200
    assert post_standard(w, "shop", "poison", order_event("order.bogus", "o2"))[0] == 200
    wait_for(lambda: env.db.value("SELECT state FROM hookd_entities WHERE entity_id = 'o1'") == "shipped",
             what="events applied by the restricted role")
    wait_for(lambda: env.db.value("SELECT count(*) FROM dead_letters") == 1, what="dead letter by the restricted role")
    assert "permission denied" not in w.output()
    # and the role cannot do what a worker never needs (it may insert endpoints
    # since migration 0013: workers serve the Svix-compatible API on listen)
    conn = psycopg2.connect(as_role(env, "hookd_w"))
    conn.autocommit = True
    try:
        with conn.cursor() as cur:
            for sql in ("DELETE FROM webhook_inbox", "DROP TABLE attempts", "DELETE FROM dead_letters",
                        "TRUNCATE outbox_events", "ALTER TABLE webhook_endpoints ADD COLUMN x int"):
                with pytest.raises(psycopg2.errors.InsufficientPrivilege):
                    cur.execute(sql)
    finally:
        conn.close()


def test_application_role_can_only_emit(env):
    apply_roles(env)
    conn = psycopg2.connect(as_role(env, "app_user"))
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT hookd_emit('order', '1', 'order.paid', '{}'::jsonb)")
            assert cur.fetchone()[0]
        conn.commit()
        with conn.cursor() as cur:
            with pytest.raises(psycopg2.errors.InsufficientPrivilege):
                cur.execute("SELECT * FROM webhook_inbox")
        conn.rollback()
        with conn.cursor() as cur:
            with pytest.raises(psycopg2.errors.InsufficientPrivilege):
                cur.execute("SELECT secret FROM webhook_endpoints")
    finally:
        conn.close()
    assert env.db.value("SELECT count(*) FROM outbox_events") == 1


def test_config_check_redacts_secrets(env, tmp_path):
    cfg = env.config(extra="[partner gh]\nscheme = github\nsecret = env:GH_SECRET\n"
                           "[partner st]\nscheme = stripe\nsecret = whsec_literal_stripe_secret\n")
    text = cfg.read_text().replace("[hookd]\n", "[hookd]\nadmin_token = admin-token-value-0123456789\n", 1)
    text = text.replace(env.db_url, env.db_url.replace("postgres@", "postgres:db-password-value@"))
    cfg.write_text(text)
    r = subprocess.run([str(Path(run_hookd.__globals__["HOOKD_BIN"])), "config", "check", str(cfg)],
                       capture_output=True, text=True, env={"GH_SECRET": "github-secret-value", "PATH": "/usr/bin"})
    assert r.returncode == 0, r.stderr
    for secret in ("github-secret-value", "whsec_literal_stripe_secret", "admin-token-value", "db-password-value",
                   "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"):
        assert secret not in r.stdout
    assert "secret = env:GH_SECRET" in r.stdout
    assert "admin_token = <redacted>" in r.stdout
    assert "postgres:<redacted>@" in r.stdout


@pytest.mark.parametrize("conninfo", [
    "host=127.0.0.1 port=5432 dbname=hookd user=hookd password = pw-spaced-value",
    "host=127.0.0.1 dbname=hookd password='pw quoted value' user=hookd",
    "password=pw\\'escaped\\'value host=127.0.0.1",
])
def test_config_check_redacts_libpq_keyword_passwords(env, conninfo):
    """A keyword/value connection string is read as libpq reads it (blanks
    around '=', quoted values) and its password is never printed, whole or
    in part."""
    cfg = env.config(database=conninfo)
    r = run_hookd(["config", "check", str(cfg)])
    assert r.returncode == 0, r.stderr
    [line] = [l for l in r.stdout.splitlines() if l.startswith("database =")]
    assert "password=<redacted>" in line and "host='127.0.0.1'" in line, line
    for fragment in ("pw-spaced", "spaced-value", "pw quoted", "quoted value", "escaped", "value'"):
        assert fragment not in r.stdout, (fragment, line)


def test_logged_values_cannot_forge_lines_or_fields(env):
    """A partner name from the URL (percent-decoded), an event type and an
    entity id from a signed body: whatever they hold, each stays one value of
    one log line."""
    w = env.worker(log_level="debug")
    status, _, _ = http("POST", w.url + "/v1/inbox/shop%0Ats=2026-01-01T00:00:00Z%20level=error%20event=forged",
                        b"{}", {"Content-Type": "application/json"})
    assert status == 404
    evil = 'o1"\nts=2026-01-01T00:00:00Z level=error event=forged2 x="'
    assert post_standard(w, "shop", "e1", order_event("order.bogus\nevent=forged3", evil))[0] == 200
    wait_for(lambda: "ingest.accepted" in w.output() and "inbox.retry" in w.output(),
             what="the signed event accepted and its evaluation retried, both logged")
    lines = w.output().splitlines()
    assert all(l.startswith("ts=") for l in lines if l), [l for l in lines if not l.startswith("ts=")]
    assert not any("event=forged" in l.split(" ", 3)[2] for l in lines if l.count(" ") >= 3)
    rejected = [l for l in lines if "event=ingest.rejected" in l]
    assert rejected and "unknown partner 'shop\\nts=2026-01-01T00:00:00Z level=error" in rejected[0], rejected
