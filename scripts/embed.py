#!/usr/bin/env python3
"""Embeds hookd's data files into the binary, and generates the query table.

usage: embed.py [--queries QUERIES_H] OUT_BASENAME FILE...
                (writes OUT_BASENAME.c and .h, and QUERIES_H)

Migrations (sql/NNNN_*.sql) and Lua scripts (lua/*.lua) become entries
{path, data, len} of embedded_files[], in the order given (the Makefile sorts
them, so migrations apply in file order).

Statements (sql/queries/<module>_<what>.sql, one statement per file) become
the query table instead: QUERIES_H declares `enum query_id` (Q_DLQ_LIST for
dlq_list.sql, ..., Q__COUNT), one enum of result columns per statement that
has a result (DLQ_LIST_ID, ..., DLQ_LIST__NCOLS), and query_sql(); the
table itself (query_defs[]) goes into OUT_BASENAME.c. docs/queries.md
describes the file format; a file that breaks it fails the build with
file:line and why.

A statement names the partition-pruning conditions through three macros,
expanded here so that Postgres sees the conditions written out (its
planner prunes partitions only on conditions it can see):

    @in_part(COL, ID)          the partition a uuid id names, or _kept:
        (COL IN (hookd_id_part(ID), '-infinity') OR COL >= hookd_id_any(ID))
    @in_part_of(COL, PART, ANY) the same from a part_at and any_at at hand:
        (COL IN (PART, '-infinity') OR COL >= ANY)
    @since_id(COL, ID)         attempts at or after the time an id carries:
        (COL = '-infinity' OR COL >= hookd_id_since(ID))
"""
import io
import os
import re
import sys

NAME_RE = re.compile(r"^[a-z][a-z0-9]*_[a-z0-9_]+$")
COLUMN_RE = re.compile(r"^[a-z_][a-z0-9_]*$")
KEY_RE = re.compile(r"^--\s*(parameters|columns):(.*)$")


class QueryError(Exception):
    pass


def strip_literals(sql: str) -> str:
    """The statement without its string literals, quoted identifiers and
    comments, so that $n and ; inside them do not count."""
    token = re.compile(r"--[^\n]*|/\*.*?\*/|'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"", re.S)
    return token.sub(lambda m: " " if m.group(0)[0] in "-/" else m.group(0)[0] * 2, sql)


MACROS = {
    "in_part": (2, "({0} IN (hookd_id_part({1}), '-infinity') OR {0} >= hookd_id_any({1}))"),
    "in_part_of": (3, "({0} IN ({1}, '-infinity') OR {0} >= {2})"),
    "since_id": (2, "({0} = '-infinity' OR {0} >= hookd_id_since({1}))"),
}
MACRO_RE = re.compile(r"@([a-z_]+)\(")


def macro_args(text: str, start: int, where: str) -> tuple[list, int]:
    """The comma-separated arguments of a macro call whose '(' is just before
    start (commas inside parentheses or quotes belong to an argument), and
    the index after its ')'."""
    args, depth, quote, cur, i = [], 0, None, "", start
    while i < len(text):
        ch = text[i]
        if quote:
            cur += ch
            if ch == quote:
                quote = None
        elif ch in "'\"":
            quote, cur = ch, cur + ch
        elif ch == "(":
            depth, cur = depth + 1, cur + ch
        elif ch == ")" and depth:
            depth, cur = depth - 1, cur + ch
        elif ch == ")":
            return args + [cur.strip()], i + 1
        elif ch == "," and not depth:
            args, cur = args + [cur.strip()], ""
        else:
            cur += ch
        i += 1
    raise QueryError(f"{where}: a macro call has no closing ')'")


def expand_macros(body: str, where: str) -> str:
    """body with every @macro(...) written out (MACROS)."""
    out, pos = "", 0
    for m in MACRO_RE.finditer(body):
        if m.start() < pos:
            continue
        name = m.group(1)
        if name not in MACROS:
            raise QueryError(f"{where}: unknown macro @{name} (known: {', '.join('@' + k for k in MACROS)})")
        nargs, template = MACROS[name]
        args, end = macro_args(body, m.end(), where)
        if len(args) != nargs or not all(args):
            raise QueryError(f"{where}: @{name} takes {nargs} arguments, got {len(args)}")
        out += body[pos:m.start()] + template.format(*(expand_macros(a, where) for a in args))
        pos = end
    return out + body[pos:]


def parse_query(path: str, text: str) -> dict:
    """One statement file -> {name, path, sql, nparams, columns}."""
    name = os.path.basename(path)[:-4]
    if not NAME_RE.match(name):
        raise QueryError(f"{path}:1: the file name must be <module>_<what>.sql in lower case (got {name}.sql)")
    lines = text.split("\n")
    described, keys, key, n = False, {}, None, 0
    for n, line in enumerate(lines, 1):
        if not line.startswith("--"):
            break
        m = KEY_RE.match(line)
        if m:
            key = m.group(1)
            if key in keys:
                raise QueryError(f"{path}:{n}: '{key}:' given twice")
            keys[key] = m.group(2).strip()
        elif key and re.match(r"^--\s{2,}\S", line):  # an indented line continues the key above
            keys[key] += " " + line[2:].strip()
        else:
            key = None
            described = described or bool(line[2:].strip())
    else:
        n += 1
    body = "\n".join(lines[n - 1:]).strip()
    if not described:
        raise QueryError(f"{path}:1: the header must open with a comment saying what the statement does")
    if "parameters" not in keys:
        raise QueryError(f"{path}:1: the header has no '-- parameters:' line (write 'none' if there are none)")
    body = expand_macros(body.rstrip().rstrip(";").rstrip(), path)
    bare = strip_literals(body)
    if not bare.strip():
        raise QueryError(f"{path}:{n}: no statement after the header")
    if ";" in bare:
        raise QueryError(f"{path}: more than one statement (one statement per file)")
    used = {int(x) for x in re.findall(r"\$(\d+)", bare)}
    nparams = max(used, default=0)
    documented = {int(x) for x in re.findall(r"\$(\d+)", keys["parameters"])}
    if keys["parameters"].lower() == "none":
        documented = set()
    if used != set(range(1, nparams + 1)):
        raise QueryError(f"{path}: parameters {sorted(used)} leave a gap (Postgres needs $1..$n all used)")
    if documented != used:
        raise QueryError(f"{path}:1: '-- parameters:' documents {sorted(documented) or 'none'}, "
                         f"the statement uses {sorted(used) or 'none'}")
    columns = []
    if "columns" in keys:
        columns = [c.strip() for c in keys["columns"].split(",")]
        for c in columns:
            if not COLUMN_RE.match(c):
                raise QueryError(f"{path}:1: '{c}' in '-- columns:' is not a lower-case column name")
        if len(set(columns)) != len(columns):
            raise QueryError(f"{path}:1: a column is listed twice in '-- columns:'")
    return {"name": name, "path": path, "sql": f"-- {name}\n{body}", "nparams": nparams, "columns": columns}


def c_string(s: str, indent: str = "    ") -> str:
    """s as C string literals, one per line of s."""
    out = []
    for line in s.encode().split(b"\n"):
        lit = ""
        for b in line:
            ch = chr(b)
            lit += "\\" + ch if ch in '"\\' else ch if 32 <= b < 127 and ch != "?" else f"\\{b:03o}"
        out.append(f'{indent}"{lit}\\n"')
    out[-1] = out[-1][:-3] + '"'
    return "\n".join(out)


def queries_h_text(queries: list) -> str:
    """The text of queries.h; QueryError when two files generate one name."""
    names = {}

    def claim(sym: str, where: str) -> None:
        if sym in names:
            raise QueryError(f"{where}: the generated name {sym} is also generated by {names[sym]}")
        names[sym] = where

    h = io.StringIO()
    h.write("/* Generated by scripts/embed.py from sql/queries/NAME.sql: do not edit.\n"
            " * One statement per file; docs/queries.md says how to add one. */\n")
    h.write("#ifndef HOOKD_QUERIES_H\n#define HOOKD_QUERIES_H\n\n")
    h.write("enum query_id {\n")
    for q in queries:
        sym = "Q_" + q["name"].upper()
        claim(sym, q["path"])
        h.write(f"    {sym}, /* {q['path']} */\n")
    h.write("    Q__COUNT\n};\n\n")
    h.write("/* The result columns of each statement that has a result, in order:\n"
            " * PQgetvalue(res, row, DLQ_LIST_ID). tests/tools/query_check checks each\n"
            " * list against what Postgres describes. */\n")
    for q in queries:
        if not q["columns"]:
            continue
        up = q["name"].upper()
        h.write(f"enum {{ /* {q['path']} */\n")
        for c in q["columns"]:
            claim(f"{up}_{c.upper()}", q["path"])
            h.write(f"    {up}_{c.upper()},\n")
        claim(f"{up}__NCOLS", q["path"])
        h.write(f"    {up}__NCOLS\n}};\n")
    h.write("\nstruct query_def {\n"
            "    const char *name;            /* \"dlq_list\" */\n"
            "    const char *path;            /* \"sql/queries/dlq_list.sql\" */\n"
            "    const char *sql;             /* static storage, \"-- name\\n\" + the statement */\n"
            "    int nparams;                 /* $1..$nparams */\n"
            "    int ncolumns;                /* 0: no result columns */\n"
            "    const char *const *columns;  /* ncolumns names, as Postgres describes them */\n"
            "};\n")
    h.write("extern const struct query_def query_defs[Q__COUNT];\n\n")
    h.write("/* The text of a statement, for db_exec / db_exec_prepared. */\n"
            "static inline const char *query_sql(enum query_id id)\n{\n    return query_defs[id].sql;\n}\n")
    h.write("\n#endif\n")
    return h.getvalue()


def write_queries_c(c, queries: list) -> None:
    c.write('\n/* The statements of sql/queries/ (see queries.h). */\n#include "queries.h"\n')
    for q in queries:
        if q["columns"]:
            cols = ", ".join(f'"{x}"' for x in q["columns"])
            c.write(f"static const char *const cols_{q['name']}[] = {{{cols}}};\n")
    c.write("const struct query_def query_defs[Q__COUNT] = {\n")
    for q in queries:
        cols = f"cols_{q['name']}" if q["columns"] else "0"
        c.write(f'    [Q_{q["name"].upper()}] = {{"{q["name"]}", "{q["path"]}",\n')
        c.write(c_string(q["sql"], "        ") + ",\n")
        c.write(f'        {q["nparams"]}, {len(q["columns"])}, {cols}}},\n')
    c.write("};\n")


def main() -> None:
    args = sys.argv[1:]
    queries_h = None
    if args[:1] == ["--queries"]:
        queries_h, args = args[1], args[2:]
    out, paths = args[0], args[1:]
    files = [p for p in paths if not (queries_h and p.startswith("sql/queries/"))]
    queries = []
    try:
        for p in paths:
            if p not in files:
                queries.append(parse_query(p, open(p, encoding="utf-8").read()))
        header = queries_h_text(queries) if queries_h else None
    except (QueryError, UnicodeDecodeError) as e:
        sys.exit(f"embed.py: {e}")
    with open(out + ".h", "w") as h:
        h.write("/* Generated by scripts/embed.py: do not edit. */\n")
        h.write("#ifndef HOOKD_EMBEDDED_H\n#define HOOKD_EMBEDDED_H\n#include <stddef.h>\n")
        h.write("struct embedded_file { const char *path; const char *data; size_t len; };\n")
        h.write("extern const struct embedded_file embedded_files[];\n")
        h.write("extern const size_t embedded_nfiles;\n#endif\n")
    with open(out + ".c", "w") as c:
        c.write('/* Generated by scripts/embed.py: do not edit. */\n#include "embedded.h"\n')
        for i, path in enumerate(files):
            data = open(path, "rb").read()
            body = ",".join(str(b) for b in data)
            c.write(f"static const char f{i}[] = {{{body}{',' if data else ''}0}};\n")
        c.write("const struct embedded_file embedded_files[] = {\n")
        for i, path in enumerate(files):
            size = os.path.getsize(path)
            c.write(f'  {{"{path}", f{i}, {size}}},\n')
        c.write("  {0, 0, 0}\n};\n")
        c.write(f"const size_t embedded_nfiles = {len(files)};\n")
        if queries_h:
            write_queries_c(c, queries)
    if queries_h:
        with open(queries_h, "w") as h:
            h.write(header)


if __name__ == "__main__":
    main()
