#!/usr/bin/env bash
# `systemd-analyze verify` on the units of a package tree, without installing
# it: ROOT is the unpacked package (usr/bin/hookd, lib/systemd/system/*); the
# check runs with --root on a copy that also holds this host's units and
# /bin/kill, so ExecStart=, ExecReload= and the dependencies resolve. Fails on
# any message, not only on errors: verify reports unknown keys and bad values
# as warnings with exit status 0.
#   packaging/verify-units.sh ROOT
set -euo pipefail

src=${1:?usage: verify-units.sh PACKAGE_ROOT}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp -a "$src/." "$tmp/"
rm -rf "$tmp/DEBIAN"
mkdir -p "$tmp/bin" "$tmp/lib/systemd/system"
cp /bin/kill "$tmp/bin/kill"
cp -rn /lib/systemd/system/. "$tmp/lib/systemd/system/"

out=$(systemd-analyze verify --root="$tmp" "$tmp/lib/systemd/system/hookd.service" \
      "$tmp/lib/systemd/system/hookd@.service" 2>&1) || { echo "$out" >&2; exit 1; }
if [ -n "$out" ]; then
    echo "$out" >&2
    exit 1
fi
echo "verify-units: hookd.service and hookd@.service verify" >&2
