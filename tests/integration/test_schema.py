"""sql/schema.sql, the schema the migrations make (scripts/schema.py): the
checked-in file is what the binary's migrations make, and the check fails,
naming the difference, when they make something else."""
from __future__ import annotations

import subprocess
import sys

from hookdtest.paths import ROOT

SCRIPT = ROOT / "scripts" / "schema.py"
SCHEMA = ROOT / "sql" / "schema.sql"


def check(url: str, file=SCHEMA) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), "--database", url, "--check", str(file)], capture_output=True,
                          text=True, timeout=120)


def test_the_checked_in_schema_is_what_the_migrations_make(env):
    # the test's database is a copy of one `hookd migrate` made on an empty database
    r = check(env.db_url)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr


def test_the_check_fails_when_the_migrations_make_another_schema(env, tmp_path):
    env.db.all("ALTER TABLE hookd_tenants ADD COLUMN squat text")
    env.db.all("CREATE FUNCTION hookd_extra() RETURNS int LANGUAGE sql AS $$ SELECT 1 $$")
    r = check(env.db_url)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "+    squat text" in r.stdout and "+CREATE FUNCTION public.hookd_extra()" in r.stdout, r.stdout
    assert "is not what the migrations make" in r.stderr
    # written, the file is what the check compares with
    out = tmp_path / "schema.sql"
    w = subprocess.run([sys.executable, str(SCRIPT), "--database", env.db_url, str(out)], capture_output=True,
                       text=True, timeout=120)
    assert w.returncode == 0, w.stderr
    assert check(env.db_url, out).returncode == 0
