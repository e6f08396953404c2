#!/usr/bin/env python3
"""sql/schema.sql: the schema that `hookd migrate` makes, in one file.

Reading today's hookd_emit or a table's columns would otherwise mean reading
every migration that touched them. This script migrates an empty database
with a hookd binary (a throw-away PostgreSQL from scripts/services.sh),
dumps its schema with pg_dump and writes it normalised, so that the same
migrations always give the same file:

  - no owners, privileges, comments, tablespaces or security labels (they
    depend on who ran the migrations, not on the migrations);
  - no pg_dump version lines and no \\restrict keys (random per dump);
  - the partitions per time range that retention makes (`<table>_p<time>`)
    left out: their columns and indexes are their parent's, and their names
    and number depend on when the migrations ran; the bounds of the
    `_legacy` and `_far` partitions, the migration's time, are written as
    '<migrate time>', and the clock below which hookd_id_part (sql/0018)
    trusts no id as <migrate time in ms> (so the file is for reading, not
    for loading).

  scripts/schema.py --hookd build/hookd sql/schema.sql          write it
  scripts/schema.py --hookd build/hookd --check sql/schema.sql  exit 1 with
      a diff when the checked-in file is not what the migrations make
  --database URL   dump that (already migrated) database instead

`make schema` and `make schema-check` run it with the built binary. The
output depends on pg_dump's major version: PostgreSQL 15, as the tests use.
"""
from __future__ import annotations

import argparse
import difflib
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SERVICES = ROOT / "scripts" / "services.sh"
PGBIN = Path(os.environ.get("PGBIN", "/usr/lib/postgresql/15/bin"))

HEADER = """\
-- hookd's schema as `hookd migrate` makes it on an empty database: generated
-- by scripts/schema.py (`make schema`) from the migrations sql/NNNN_*.sql,
-- which stay the truth; do not edit. `make schema-check` fails when this file
-- is not what they make. Left out: owners, privileges and the partitions per
-- time range (their parent's columns and indexes); '<migrate time>' and
-- <migrate time in ms> stand for the time the migrations ran.
"""

# A timestamp literal in a partition bound, e.g. '2026-12-04 15:55:07.937623+00'.
BOUND_TIME = re.compile(r"'(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?[+-]\d\d(?::\d\d)?)'")
# The legacy rows' lower bound, a constant of sql/0012 (not a migration time).
FIXED_BOUNDS = {"1970-01-02 00:00:00+00"}
# hookd_id_part's threshold (sql/0018): the migration's time in ms.
ID_PART_SINCE = re.compile(r"(::bit\(48\)::bigint >= )\d+")


def pg_dump() -> str:
    exe = PGBIN / "pg_dump"
    return str(exe) if exe.exists() else "pg_dump"


def dump(url: str) -> str:
    """The schema of the database at url, as pg_dump writes it."""
    cmd = [pg_dump(), "--schema-only", "--schema=public", "--no-owner", "--no-privileges", "--no-comments",
           "--no-tablespaces", "--no-security-labels", "--no-publications", "--no-subscriptions",
           "--exclude-table=public.*_p[0-9]*", url]
    out = subprocess.run(cmd, capture_output=True, text=True, env=dict(os.environ, PGTZ="UTC"))
    if out.returncode != 0:
        sys.exit(f"schema: pg_dump failed: {out.stderr.strip()}")
    return out.stdout


def normalise(text: str) -> str:
    lines = []
    for line in text.splitlines():
        if line.startswith(("\\restrict", "\\unrestrict", "-- Dumped from", "-- Dumped by")):
            continue
        if "FOR VALUES" in line:
            line = BOUND_TIME.sub(lambda m: m.group(0) if m.group(1) in FIXED_BOUNDS else "'<migrate time>'", line)
        line = ID_PART_SINCE.sub(r"\1<migrate time in ms>", line)
        lines.append(line)
    body = "\n".join(lines).strip("\n")
    body = re.sub(r"\n{3,}", "\n\n", body)
    return HEADER + "\n" + body + "\n"


def migrated_dump(hookd: str) -> str:
    """Migrates an empty database in a throw-away PostgreSQL and dumps it."""
    tmp = Path(tempfile.mkdtemp(prefix="hookd-schema-"))
    try:
        subprocess.run([str(SERVICES), "start-pg", str(tmp)], check=True, capture_output=True,
                       env=dict(os.environ, HOOKD_PG_FSYNC="off"))
        url = f"postgresql://postgres@127.0.0.1:{(tmp / 'pg.port').read_text().strip()}/hookd"
        cfg = tmp / "hookd.conf"
        cfg.write_text(f"[hookd]\ndatabase = {url}\nredis = redis://127.0.0.1:1/0\n")
        r = subprocess.run([hookd, "-c", str(cfg), "migrate"], capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit(f"schema: hookd migrate failed: {r.stderr.strip()}")
        return dump(url)
    finally:
        subprocess.run([str(SERVICES), "stop-pg", str(tmp)], capture_output=True)
        shutil.rmtree(tmp, ignore_errors=True)


def main() -> int:
    ap = argparse.ArgumentParser(description="Write or check sql/schema.sql, the schema the migrations make.")
    ap.add_argument("file", type=Path, help="the schema file (sql/schema.sql)")
    ap.add_argument("--hookd", default=str(ROOT / "build" / "hookd"), help="the hookd binary that migrates")
    ap.add_argument("--database", help="dump this migrated database instead of migrating a new one")
    ap.add_argument("--check", action="store_true", help="compare with the file instead of writing it")
    args = ap.parse_args()
    schema = normalise(dump(args.database) if args.database else migrated_dump(args.hookd))
    if not args.check:
        args.file.write_text(schema)
        return 0
    current = args.file.read_text() if args.file.exists() else ""
    if current == schema:
        return 0
    diff = difflib.unified_diff(current.splitlines(keepends=True), schema.splitlines(keepends=True),
                                str(args.file), "what the migrations make")
    sys.stdout.writelines(list(diff)[:200])
    print(f"schema: {args.file} is not what the migrations make; run `make schema` and commit it", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
