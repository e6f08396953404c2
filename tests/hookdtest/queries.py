"""The text of a statement of sql/queries/ as the build embeds it: the file
with its pruning macros written out (scripts/embed.py), for tests that
prepare or EXPLAIN a statement themselves."""
from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("hookd_embed", ROOT / "scripts" / "embed.py")
_embed = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_embed)


def statement(name: str) -> str:
    """sql/queries/NAME.sql, header included, macros expanded."""
    path = ROOT / "sql" / "queries" / f"{name}.sql"
    return _embed.expand_macros(path.read_text(), str(path))
