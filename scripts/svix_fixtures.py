#!/usr/bin/env python3
"""Writes the test fixtures taken from Svix's published OpenAPI document
(svix-webhooks' codegen/lib-openapi.json, the one its SDKs are made from):

    tests/fixtures/svix-operations.json        every operation: method, path, operationId
    tests/fixtures/svix-response-schemas.json  each operation's success statuses and
                                               answer schema, with the components they use

usage: scripts/svix_fixtures.py LIB_OPENAPI_JSON"""
from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
METHODS = ("get", "post", "put", "patch", "delete")


def refs(node, out: set[str]) -> None:
    if isinstance(node, dict):
        r = node.get("$ref")
        if isinstance(r, str) and r.startswith("#/components/schemas/"):
            out.add(r.rsplit("/", 1)[1])
        for v in node.values():
            refs(v, out)
    elif isinstance(node, list):
        for v in node:
            refs(v, out)


def main() -> None:
    spec = json.loads(Path(sys.argv[1]).read_text())
    ops, answers = [], {}
    for path, item in spec["paths"].items():
        for method, op in item.items():
            if method not in METHODS:
                continue
            ops.append({"method": method.upper(), "path": path, "operationId": op["operationId"]})
            ok = sorted(c for c in op["responses"] if c.startswith("2"))
            if ok:
                body = op["responses"][ok[0]].get("content", {}).get("application/json", {}).get("schema")
                answers[op["operationId"]] = {"statuses": [int(c) for c in ok], "schema": body}
    ops.sort(key=lambda o: (o["path"], o["method"]))
    schemas = spec["components"]["schemas"]
    used: set[str] = set()
    todo: set[str] = set()
    refs(answers, todo)
    while todo:
        name = todo.pop()
        if name in used:
            continue
        used.add(name)
        refs(schemas[name], todo)
    source = {"source": "svix/svix-webhooks codegen/lib-openapi.json", "version": spec["info"]["version"]}
    fx = ROOT / "tests" / "fixtures"
    (fx / "svix-operations.json").write_text(json.dumps({**source, "operations": ops}, indent=1) + "\n")
    (fx / "svix-response-schemas.json").write_text(json.dumps(
        {**source, "operations": answers, "components": {n: schemas[n] for n in sorted(used)}}, indent=1) + "\n")


if __name__ == "__main__":
    main()
