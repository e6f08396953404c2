"""`hookd status` reads its ages on Postgres's clock, the workers' time base.

The ages it shows (since a worker's last heartbeat, its uptime, how overdue
the oldest due item is) compare "now" with times the workers wrote on
Postgres's clock. Here the CLI runs under libfaketime with its wall clock
30 s fast or slow (the monotonic clock true, as on a machine whose clock is
merely set wrong) while the worker, Postgres and Redis run on the true clock:
the ages must still be the true ones, the measured offset shown, and a
worker that beats every 200 ms must be "live". With Postgres unreachable,
status still answers from Redis and says its ages are on this host's
clock."""
from __future__ import annotations

import json
import time

import pytest

from hookdtest.paths import HOOKD_BIN
from hookdtest.util import free_port, wait_for
from hookdtest.worker import run_hookd
from test_clock import faketime_env

SKEW_MS = 30_000


def status(cfg, skew: str | None, *args: str):
    import os
    import subprocess
    extra = {} if skew is None else faketime_env(skew)
    return subprocess.run([str(HOOKD_BIN), "-c", str(cfg), "status", *args], capture_output=True, text=True,
                          timeout=30, env=dict(os.environ, **extra))


@pytest.mark.parametrize("skew", ["fast", "slow"])
def test_status_ages_are_on_postgres_clock_whatever_the_cli_host_says(env, skew):
    # an ingest-only worker: nothing claims the inbox item below
    cfg = env.config()
    cfg.write_text(cfg.read_text().replace("[hookd]\n", "[hookd]\nroles = ingest\n", 1))
    w = env.worker(config=cfg)
    wait_for(lambda: env.redis.zcard(env.key("workers")) == 1, 10, what="the worker's heartbeat")
    # one due item, overdue by 5 s on Postgres's clock (a row, so a reconcile keeps it)
    rid, due_ms = env.db.all(
        "INSERT INTO webhook_inbox (partner_name, partner_event_id, payload, signature_verified, event_type,"
        " entity_type, entity_id, next_attempt_at) VALUES ('shop', 'status-clock', '{}', true, 'order.started',"
        " 'order', 'o1', clock_timestamp() - interval '5 s')"
        " RETURNING id::text, (extract(epoch FROM next_attempt_at) * 1000)::bigint")[0].values()
    env.redis.zadd(env.key("{inbox}:due"), {rid: due_ms})
    try:
        r = status(cfg, skew, "--json")
        assert r.returncode == 0, r.stderr
        s = json.loads(r.stdout)
        (worker,) = s["workers"]
        assert worker["state"] == "live", worker
        assert 0 <= worker["last_beat_ms_ago"] < 3000, worker
        assert 0 <= worker["uptime_s"] < 120, worker
        overdue = s["queues"]["inbox"]["oldest_overdue_ms"]
        assert 4000 <= overdue < 5000 + 10_000, overdue  # 5 s plus the time this test took, never 30 s off
        clock = s["clock"]
        assert clock["base"] == "postgres" and clock["error"] is None, clock
        want = -SKEW_MS if skew == "fast" else SKEW_MS  # Postgres minus this host
        assert abs(clock["offset_ms"] - want) < 2000, clock
        text = status(cfg, skew)
        assert text.returncode == 0, text.stderr
        assert "CLOCK: ages on Postgres's clock" in text.stdout and " live " in text.stdout, text.stdout
    finally:
        env.redis.delete(env.key("{inbox}:due"))
    assert w.proc.poll() is None


def test_status_without_postgres_answers_from_redis_on_this_hosts_clock(env):
    env.worker()
    wait_for(lambda: env.redis.zcard(env.key("workers")) == 1, 10, what="the worker's heartbeat")
    closed = free_port()  # nothing listens there
    cfg = env.config(database=f"postgresql://postgres@127.0.0.1:{closed}/hookd")
    started = time.monotonic()
    r = status(cfg, None, "--json")
    assert r.returncode == 0, r.stderr
    s = json.loads(r.stdout)
    assert s["clock"]["base"] == "local" and "cannot connect to Postgres" in s["clock"]["error"], s["clock"]
    assert len(s["workers"]) == 1 and s["workers"][0]["state"] == "live", s["workers"]
    text = status(cfg, None)
    assert text.returncode == 0 and "CLOCK: Postgres unreachable" in text.stdout, text.stdout
    assert time.monotonic() - started < 25  # a refused connection is not waited for
    assert run_hookd(["-c", str(cfg), "help", "status"]).returncode == 0
