#!/usr/bin/env bash
# Check that the code's comments carry no history: no issue numbers, no
# session numbers, no helper names in engine/, schedulers/, sql/ and lua/
# (STYLE.md, "Domains and docs": the reason stays, the anecdote goes to the
# commit message). Exits 1 and prints file:line: text for each hit.
#
#   scripts/comment-check.sh [DIR...]     (default: engine schedulers sql lua)
#   scripts/comment-check.sh --self-test  (a bad comment must fail, a good one pass)
#
# `make format-check` runs both.
set -euo pipefail
cd "$(dirname "$0")/.."

PATTERN='issue [0-9]+|session [0-9]+|helper [a-z]'

# Prints each hit under the given paths; returns 1 when there is one.
check() {
    local hits
    hits=$(grep -rniE --binary-files=without-match "$PATTERN" "$@" || true)
    if [ -n "$hits" ]; then
        printf '%s\n' "$hits"
        return 1
    fi
}

self_test() {
    local dir out
    dir=$(mktemp -d)
    trap 'rm -rf "$dir"' RETURN
    mkdir -p "$dir/engine" "$dir/sql"
    printf '/* Claims start after a mark so that an open snapshot\n * cannot slow every claim. */\nint x;\n' >"$dir/engine/good.c"
    printf -- '-- Why the index exists.\nSELECT 1;\n' >"$dir/sql/good.sql"
    if ! check "$dir/engine" "$dir/sql" >/dev/null; then
        echo "comment-check self-test: a clean tree failed" >&2
        return 1
    fi
    printf 'int y;\n/* Raised after Issue 18 showed a storm. */\n' >"$dir/engine/bad.c"
    printf -- 'SELECT 1;\n\n-- as helper b measured in session 9\n' >"$dir/sql/bad.sql"
    if out=$(check "$dir/engine" "$dir/sql"); then
        echo "comment-check self-test: a bad comment passed" >&2
        return 1
    fi
    for want in "$dir/engine/bad.c:2:" "$dir/sql/bad.sql:3:"; do
        if ! grep -qF "$want" <<<"$out"; then
            echo "comment-check self-test: no hit at ${want%:}; got:" >&2
            printf '%s\n' "$out" >&2
            return 1
        fi
    done
    echo "comment-check self-test: passed"
}

if [ "${1:-}" = "--self-test" ]; then
    self_test
    exit $?
fi
dirs=("$@")
[ ${#dirs[@]} -gt 0 ] || dirs=(engine schedulers sql lua)
if ! check "${dirs[@]}" >&2; then
    echo "comment-check: comments name an issue, a session or a helper (pattern: $PATTERN);" \
        "say what the code does and why, and leave the history to the commit message" >&2
    exit 1
fi
echo "comment-check: ${dirs[*]} carry no issue, session or helper words"
