#!/usr/bin/env bash
# Runs each cmocka unit-test binary; prints one summary line; fails if any failed.
set -u
pass=0; fail=0
for t in "$@"; do
  if "$t"; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "unit: FAILED $t" >&2; fi
done
echo "unit test binaries: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
