#!/usr/bin/env bash
# Installs the pinned npm packages of tests/node (the Svix SDK, provider
# signers and verifiers, the BullMQ and pg-boss peers of the benchmark) from
# its lockfile, only when node_modules is missing or older than the lockfile.
set -euo pipefail
cd "$(dirname "$0")/../tests/node"
if ! command -v npm >/dev/null 2>&1; then
  echo "node-deps: installing nodejs and npm" >&2
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq >/dev/null
  $SUDO apt-get install -y -qq --no-install-recommends nodejs npm >/dev/null
fi
stamp=node_modules/.hookd-stamp
if [ -f "$stamp" ] && [ "$stamp" -nt package-lock.json ]; then
  exit 0
fi
echo "node-deps: npm ci in tests/node" >&2
npm ci --no-audit --no-fund --loglevel=error >/dev/null
touch "$stamp"
