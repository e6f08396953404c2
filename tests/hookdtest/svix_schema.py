"""Checks API answers against the answer schemas of Svix's published OpenAPI
document (tests/fixtures/svix-response-schemas.json, written by
scripts/svix_fixtures.py): required fields, types, nullability, enums, id
patterns and lengths, date-time format, and the list shape
{data, iterator, prevIterator, done}. Returns the problems found; an empty
list is a clean answer."""
from __future__ import annotations

import json
import re
from functools import lru_cache

from hookdtest.paths import ROOT

DATE_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})$")


@lru_cache(maxsize=1)
def fixture() -> dict:
    return json.loads((ROOT / "tests" / "fixtures" / "svix-response-schemas.json").read_text())


def success_statuses(op: str) -> list[int]:
    return fixture()["operations"][op]["statuses"]


def check(op: str, body) -> list[str]:
    """The ways body differs from the answer schema of Svix's operation op."""
    schema = fixture()["operations"][op]["schema"]
    problems: list[str] = []
    if schema is None:
        if body not in (None, {}):
            problems.append(f"{op}: Svix answers no body, got {body!r:.80}")
        return problems
    _check(schema, body, op, problems)
    return problems


def _resolve(schema: dict) -> dict:
    while "$ref" in schema:
        schema = fixture()["components"][schema["$ref"].rsplit("/", 1)[1]]
    return schema


def _type_ok(t: str, v) -> bool:
    return {
        "string": isinstance(v, str),
        "integer": isinstance(v, int) and not isinstance(v, bool),
        "number": isinstance(v, (int, float)) and not isinstance(v, bool),
        "boolean": isinstance(v, bool),
        "object": isinstance(v, dict),
        "array": isinstance(v, list),
        "null": v is None,
    }.get(t, True)


def _check(schema: dict, v, where: str, out: list[str]) -> None:
    schema = _resolve(schema)
    if v is None:
        if not (schema.get("nullable") or "null" in (schema.get("type") or []) or
                any(_resolve(s).get("type") == "null" for s in schema.get("anyOf", []) + schema.get("oneOf", []))):
            out.append(f"{where}: null where Svix has no null")
        return
    for key in ("anyOf", "oneOf"):
        if key in schema:
            if not any(not _errors(s, v, where) for s in schema[key]):
                out.append(f"{where}: matches none of {key}")
            return
    for s in schema.get("allOf", []):
        _check(s, v, where, out)
    t = schema.get("type")
    types = t if isinstance(t, list) else [t] if t else []
    if types and not any(_type_ok(x, v) for x in types):
        out.append(f"{where}: {type(v).__name__} where Svix has {t}")
        return
    if "enum" in schema and v not in schema["enum"]:
        out.append(f"{where}: {v!r} is not one of {schema['enum']}")
    if isinstance(v, str):
        if schema.get("format") == "date-time" and not DATE_TIME.match(v):
            out.append(f"{where}: {v!r} is not an RFC 3339 date-time")
        if "pattern" in schema and not re.search(schema["pattern"], v):
            out.append(f"{where}: {v!r} does not match {schema['pattern']}")
        if len(v) < schema.get("minLength", 0) or len(v) > schema.get("maxLength", 1 << 30):
            out.append(f"{where}: length {len(v)} outside {schema.get('minLength')}..{schema.get('maxLength')}")
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        if "minimum" in schema and v < schema["minimum"] or "maximum" in schema and v > schema["maximum"]:
            out.append(f"{where}: {v} outside {schema.get('minimum')}..{schema.get('maximum')}")
    if isinstance(v, dict):
        props = schema.get("properties", {})
        for name in schema.get("required", []):
            if name not in v:
                out.append(f"{where}: required field {name} missing")
        for name, x in v.items():
            if name in props:
                _check(props[name], x, f"{where}.{name}", out)
            elif isinstance(schema.get("additionalProperties"), dict):
                _check(schema["additionalProperties"], x, f"{where}.{name}", out)
    if isinstance(v, list) and "items" in schema:
        for i, x in enumerate(v):
            _check(schema["items"], x, f"{where}[{i}]", out)


def _errors(schema: dict, v, where: str) -> list[str]:
    out: list[str] = []
    _check(schema, v, where, out)
    return out
