"""The chaos suite's short form (hookdtest.chaos): every fault kind once
(worker kill -9 and SIGTERM, Redis FLUSHALL / restart / a 4 s outage,
Postgres restart, killed connections and failover to the synchronous standby,
the receiver down for 5 s, a bad config on SIGHUP) under live inbound and
outbound load, then the ledger:
nothing accepted is lost or stuck, no effect happens twice, every outbox event
is delivered or dead-lettered with consistent bodies and valid signatures, and
the Redis counters reconcile with Postgres in a fault-free window.

A second run puts Redis behind Sentinel, all on TLS (rediss+sentinel://),
and injects the faults of that mode: a Sentinel failover and a restart of
the TLS master.

The driver brings its own PostgreSQL, Redis, workers and receiver (it also
runs standalone: `make chaos`), and stops them all."""
import pytest

from hookdtest import chaos


@pytest.mark.slow
def test_chaos_short_run_keeps_the_ledger():
    result = chaos.Chaos(faults=len(chaos.FAULT_KINDS), seed=1, short=True).run()
    failed = [f"{name}: {detail}" for name, ok, detail in result.checks if not ok]
    assert result.error is None, result.error
    assert sorted({f.kind for f in result.faults}) == sorted(chaos.FAULT_KINDS)
    assert result.totals["events in (accepted)"] > 0 and result.totals["outbox events"] > 0
    assert result.lost == 0, failed
    assert result.duplicated == 0, failed
    assert not failed, "\n".join(failed)
    assert result.passed


@pytest.mark.slow
def test_chaos_short_run_on_redis_sentinel_tls_keeps_the_ledger():
    kinds = ["sentinel_failover", "redis_tls_restart"]
    result = chaos.Chaos(faults=len(kinds), seed=1, short=True, kinds=kinds, redis_mode="sentinel-tls").run()
    failed = [f"{name}: {detail}" for name, ok, detail in result.checks if not ok]
    assert result.error is None, result.error
    assert sorted(f.kind for f in result.faults) == sorted(kinds)
    assert result.lost == 0 and result.duplicated == 0, failed
    assert not failed, "\n".join(failed)
    assert result.passed
