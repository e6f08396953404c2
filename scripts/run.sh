#!/usr/bin/env bash
# `make run`: one worker with examples/hookd.conf on throw-away Postgres and
# Redis, in the foreground until Ctrl-C; everything is stopped afterwards.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=$(mktemp -d /tmp/hookd-run-XXXXXX)
trap 'scripts/services.sh stop "$dir"' EXIT
set -a
. <(scripts/services.sh start "$dir")
set +a
"$HOOKD_BIN" -c examples/hookd.conf migrate
echo "hookd: listening on 127.0.0.1:8080 (Ctrl-C stops the worker and the services)"
"$HOOKD_BIN" -c examples/hookd.conf run || true
