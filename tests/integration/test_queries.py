"""The statements of sql/queries/: every one prepares against the migrated
schema and returns the columns its header declares (tests/tools/query_check,
which reads the table compiled into hookd); the checker and the generator
(scripts/embed.py) refuse what they must refuse."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TOOLS = Path(os.environ.get("HOOKD_TOOLS", ROOT / "build" / "tools"))
QUERY_CHECK = TOOLS / "query_check"
EMBED = ROOT / "scripts" / "embed.py"


def query_check(db_url: str, *args: str) -> subprocess.CompletedProcess:
    if not QUERY_CHECK.exists():
        pytest.fail(f"{QUERY_CHECK} is missing: make {QUERY_CHECK.relative_to(ROOT)}")
    return subprocess.run([str(QUERY_CHECK), db_url, *args], capture_output=True, text=True, timeout=60)


# ---- every statement against the migrated schema ---------------------------

def test_every_statement_prepares_with_its_declared_columns(env):
    r = query_check(env.db_url)
    assert r.returncode == 0, r.stdout + r.stderr
    checked = {line.split()[1] for line in r.stdout.splitlines() if line.startswith("ok ")}
    files = {p.stem for p in (ROOT / "sql" / "queries").glob("*.sql")}
    assert checked == files, "the binary's query table and sql/queries/ differ: rebuild"


def test_a_renamed_column_fails_the_statements_that_use_it(env):
    env.db.all("ALTER TABLE dead_letters RENAME COLUMN reason TO why")
    r = query_check(env.db_url)
    assert r.returncode == 1
    failed = {line.split()[1] for line in r.stdout.splitlines() if line.startswith("FAIL ")}
    assert {"dlq_list", "dlq_show"} <= failed, r.stdout
    assert "column d.reason does not exist" in r.stdout
    assert "ok dlq_count" in r.stdout  # the others still pass


# ---- the checker itself, on statements that are wrong on purpose ------------

def test_checker_accepts_a_matching_header(env):
    r = query_check(env.db_url, "--sql", "SELECT id, status FROM webhook_inbox WHERE id = $1",
                    "--columns", "id,status", "--params", "1")
    assert r.returncode == 0, r.stdout + r.stderr


def test_checker_refuses_an_unknown_column(env):
    r = query_check(env.db_url, "--sql", "SELECT no_such_column FROM webhook_inbox", "--columns", "no_such_column")
    assert r.returncode == 1
    assert 'column "no_such_column" does not exist' in r.stdout


def test_checker_refuses_a_header_that_names_other_columns(env):
    r = query_check(env.db_url, "--sql", "SELECT id, status FROM webhook_inbox", "--columns", "id,state")
    assert r.returncode == 1
    assert "result column 2 is status, the header's '-- columns:' says state" in r.stdout


def test_checker_refuses_a_header_with_too_few_or_too_many_columns(env):
    r = query_check(env.db_url, "--sql", "SELECT id, status FROM webhook_inbox", "--columns", "id")
    assert r.returncode == 1 and "result column 2 is status" in r.stdout
    r = query_check(env.db_url, "--sql", "SELECT id FROM webhook_inbox", "--columns", "id,status")
    assert r.returncode == 1 and "result column 2 is (nothing)" in r.stdout
    r = query_check(env.db_url, "--sql", "UPDATE webhook_inbox SET attempts = 0 RETURNING id")
    assert r.returncode == 1 and "result column 1 is id" in r.stdout


def test_checker_refuses_a_wrong_parameter_count(env):
    r = query_check(env.db_url, "--sql", "SELECT id FROM webhook_inbox WHERE id = $1 AND status = $2",
                    "--columns", "id", "--params", "1")
    assert r.returncode == 1
    assert "takes 2 parameters, the header documents 1" in r.stdout


# ---- the generator (no services needed) ------------------------------------

GOOD = """-- What it does.
-- parameters: $1 = an id
-- columns: id, status
SELECT id, status FROM webhook_inbox WHERE id = $1::uuid;
"""


def embed(tmp_path: Path, name: str, text: str) -> subprocess.CompletedProcess:
    qdir = tmp_path / "sql" / "queries"
    qdir.mkdir(parents=True, exist_ok=True)
    (qdir / name).write_text(text)
    files = sorted(str(p.relative_to(tmp_path)) for p in qdir.glob("*.sql"))
    return subprocess.run([sys.executable, str(EMBED), "--queries", "out/queries.h", "out/embedded", *files],
                          cwd=tmp_path, capture_output=True, text=True, timeout=60)


def test_generator_writes_the_ids_and_column_enums(tmp_path):
    (tmp_path / "out").mkdir()
    r = embed(tmp_path, "inbox_status.sql", GOOD)
    assert r.returncode == 0, r.stderr
    h = (tmp_path / "out" / "queries.h").read_text()
    assert "Q_INBOX_STATUS, /* sql/queries/inbox_status.sql */" in h
    assert "INBOX_STATUS_ID,\n    INBOX_STATUS_STATUS,\n    INBOX_STATUS__NCOLS" in h
    c = (tmp_path / "out" / "embedded.c").read_text()
    assert '"SELECT id, status FROM webhook_inbox WHERE id = $1::uuid",\n        1, 2, cols_inbox_status}' in c


@pytest.mark.parametrize("name, text, why", [
    ("inbox_status.sql", GOOD.replace("$1 = an id", "none"), "documents none, the statement uses [1]"),
    ("inbox_status.sql", GOOD.replace("-- parameters: $1 = an id\n", ""), "no '-- parameters:' line"),
    ("inbox_status.sql", GOOD.replace("-- What it does.\n", ""), "must open with a comment"),
    ("inbox_status.sql", GOOD + "SELECT 1;\n", "more than one statement"),
    ("inbox_status.sql", GOOD.replace("id, status\n", "id, Status\n"), "is not a lower-case column name"),
    ("inbox_status.sql", GOOD.replace("id = $1", "id = $2"), "leave a gap"),
    ("InboxStatus.sql", GOOD, "must be <module>_<what>.sql"),
])
def test_generator_refuses_a_bad_file(tmp_path, name, text, why):
    (tmp_path / "out").mkdir()
    r = embed(tmp_path, name, text)
    assert r.returncode != 0 and why in r.stderr, r.stderr
    assert not (tmp_path / "out" / "queries.h").exists()


def test_generator_refuses_two_files_that_generate_one_name(tmp_path):
    (tmp_path / "out").mkdir()
    embed(tmp_path, "dlq_list.sql", "-- One.\n-- parameters: none\n-- columns: source_id\nSELECT 1 AS source_id\n")
    r = embed(tmp_path, "dlq_list_source.sql", "-- Two.\n-- parameters: none\n-- columns: id\nSELECT 1 AS id\n")
    assert r.returncode != 0 and "DLQ_LIST_SOURCE_ID is also generated by" in r.stderr, r.stderr


def test_literals_and_comments_do_not_count_as_parameters_or_statements(tmp_path):
    (tmp_path / "out").mkdir()
    text = "-- Odd text.\n-- parameters: $1 = x\n-- columns: a\nSELECT '$2; x' || $1 AS a -- $3;\n"
    r = embed(tmp_path, "odd_text.sql", text)
    assert r.returncode == 0, r.stderr
    assert "1, 1, cols_odd_text}" in (tmp_path / "out" / "embedded.c").read_text()


def test_pruning_macros_are_written_out(tmp_path):
    """@in_part, @in_part_of and @since_id become the conditions Postgres
    prunes partitions on; a macro it does not know, or a wrong count of
    arguments, fails the build with the file's name."""
    (tmp_path / "out").mkdir()
    text = ("-- Pruned.\n-- parameters: $1 = an id\n-- columns: id\n"
            "SELECT d.id FROM outbox_deliveries d JOIN attempts a ON @since_id(a.part_at, d.id)"
            " WHERE @in_part(d.part_at, coalesce($1::uuid, f(1, 2))) AND @in_part_of(d.part_at, k.part_at, k.any_at)\n")
    r = embed(tmp_path, "pruned_x.sql", text)
    assert r.returncode == 0, r.stderr
    c = (tmp_path / "out" / "embedded.c").read_text()
    assert ("JOIN attempts a ON (a.part_at = '-infinity' OR a.part_at >= hookd_id_since(d.id))"
            " WHERE (d.part_at IN (hookd_id_part(coalesce($1::uuid, f(1, 2))), '-infinity') OR d.part_at >="
            " hookd_id_any(coalesce($1::uuid, f(1, 2)))) AND (d.part_at IN (k.part_at, '-infinity') OR d.part_at"
            " >= k.any_at)") in c
    for bad, why in (("@in_prt(d.part_at, $1)", "unknown macro @in_prt"),
                     ("@in_part(d.part_at)", "@in_part takes 2 arguments, got 1"),
                     ("@since_id(a.part_at, d.id", "no closing ')'")):
        r = embed(tmp_path, "pruned_x.sql", f"-- Bad.\n-- parameters: $1 = x\n-- columns: id\nSELECT $1 AS id WHERE {bad}\n")
        assert r.returncode != 0 and "pruned_x.sql" in r.stderr and why in r.stderr, r.stderr
