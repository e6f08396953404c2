#!/usr/bin/env bash
# Check that commit subjects fit in 72 characters (a body says the rest).
# Exits 1 and names each commit whose subject is longer.
#
#   scripts/commit-check.sh [RANGE]   (a git revision range; default: the
#                                      last 20 commits of HEAD)
#
# Example: scripts/commit-check.sh main..HEAD checks a branch's own commits.
# Older history has longer subjects: give a range that starts after it.
set -euo pipefail
cd "$(dirname "$0")/.."
export LC_ALL=C.UTF-8 # lengths in characters, not bytes

MAX=72
if [ $# -gt 0 ]; then
    range=("$1")
else
    range=(-n 20 HEAD)
fi

log=$(git log --no-merges --format='%h %s' "${range[@]}")
n=0
bad=0
while IFS= read -r line; do
    sha=${line%% *}
    subject=${line#* }
    n=$((n + 1))
    len=${#subject}
    if [ "$len" -gt "$MAX" ]; then
        bad=$((bad + 1))
        printf '%s: subject of %d characters (at most %d): %s\n' "$sha" "$len" "$MAX" "$subject" >&2
    fi
done < <([ -z "$log" ] || printf '%s\n' "$log")

if [ "$bad" -gt 0 ]; then
    echo "commit-check: $bad of $n commits have a subject over $MAX characters" >&2
    exit 1
fi
echo "commit-check: $n commits, every subject at most $MAX characters"
