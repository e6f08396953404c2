#!/usr/bin/env bash
# Check that every C file of the tree is formatted as .clang-format says,
# without changing any file. Exits 1 and names each file that differs (with
# the diff clang-format would apply, unless -q), 2 when clang-format is missing.
#
#   scripts/format-check.sh [-q] [FILE...]     (default: every C file of the tree)
#
# `make format` applies the same style in place. CI installs Debian's
# `clang-format` package (version 14); CLANG_FORMAT=clang-format-15 picks
# another binary.
set -euo pipefail
cd "$(dirname "$0")/.."

CLANG_FORMAT=${CLANG_FORMAT:-clang-format}
quiet=0
if [ "${1:-}" = "-q" ]; then
    quiet=1
    shift
fi

if ! command -v "$CLANG_FORMAT" >/dev/null 2>&1; then
    echo "format-check: '$CLANG_FORMAT' not found; install it (Debian: apt-get install clang-format)" >&2
    exit 2
fi
if [ ! -f .clang-format ]; then
    echo "format-check: no .clang-format at the repository root" >&2
    exit 2
fi

if [ $# -gt 0 ]; then
    files=("$@")
else
    shopt -s nullglob
    files=(engine/base/*.[ch] engine/io/*.[ch] engine/core/*.[ch] schedulers/*.[ch]
           engine/shared/*.[ch] engine/inbound/*.[ch] engine/outbound/*.[ch] engine/api/*.[ch]
           engine/portal/*.[ch] engine/ops/*.[ch] engine/cli/*.[ch] tests/unit/*.[ch] tests/tools/*.[ch] tests/fuzz/*.[ch])
fi

tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
bad=()
for f in "${files[@]}"; do
    # --style=file reads .clang-format; the diff shows what `make format` would change.
    if ! "$CLANG_FORMAT" --style=file "$f" >"$tmp"; then
        echo "format-check: $CLANG_FORMAT failed on $f" >&2
        exit 2
    fi
    if ! cmp -s "$f" "$tmp"; then
        bad+=("$f")
        [ "$quiet" = 1 ] || diff -u --label "$f" --label "$f (formatted)" "$f" "$tmp" || true
    fi
done

if [ ${#bad[@]} -gt 0 ]; then
    echo "format-check: ${#bad[@]} of ${#files[@]} files differ from .clang-format ($("$CLANG_FORMAT" --version | sed 's/.*version //')):" >&2
    printf '  %s\n' "${bad[@]}" >&2
    echo "run 'make format' to fix them" >&2
    exit 1
fi
echo "format-check: ${#files[@]} files match .clang-format"
