"""One clock: due times are on Postgres's clock, whatever the worker's says.

Each worker here runs under libfaketime (Debian's `faketime`) with its wall
clock 30 s fast or 30 s slow; its monotonic clock stays true
(FAKETIME_DONT_FAKE_MONOTONIC=1), as on a real machine whose clock is merely
set wrong. Postgres, Redis and this test run on the true clock. A deferred
event, a retried event and an outbound retry must each run no earlier than
the due time the previous attempt set (both read on Postgres's clock) and no
later than max_sleep plus a small bound. The offset the worker measured
shows in /metrics, in its heartbeat hash and in its log; a replay scheduled
by the CLI on a skewed machine is due at once, not 30 s off."""
from __future__ import annotations

import glob
import json
import os
import re
import subprocess
import time

import pytest

from hookdtest.paths import HOOKD_BIN
from hookdtest.util import wait_for
from test_engine import post, row
from test_outbound import add_endpoint, emit, outbound_config, statuses, wait_status  # noqa: F401
from test_outbound import receivers  # noqa: F401 - the fixture

SKEWS = {"fast": "+30s", "slow": "-30s"}
# libfaketime is preloaded ahead of an ASan build's runtime (make asan):
# ASan refuses that order unless told it is fine.
FAKETIME_ENV = {"FAKETIME_DONT_FAKE_MONOTONIC": "1",
                "ASAN_OPTIONS": ":".join(filter(None, [os.environ.get("ASAN_OPTIONS"), "verify_asan_link_order=0"]))}
# libfaketime preloaded directly, not through the `faketime` wrapper: the
# wrapper keeps a named semaphore per process id in /dev/shm, and one left by
# a killed run makes a later run with that pid fail ("sem_open: File exists").
FAKETIME_LIB = next(iter(sorted(glob.glob("/usr/lib/*/faketime/libfaketime.so.1"))), "libfaketime.so.1")


def faketime_env(skew: str) -> dict:
    """The environment that runs a process with its wall clock skewed."""
    preload = " ".join(filter(None, [FAKETIME_LIB, os.environ.get("LD_PRELOAD")]))
    return dict(FAKETIME_ENV, LD_PRELOAD=preload, FAKETIME=SKEWS[skew])


MAX_SLEEP_S = 0.2  # the test config's max_sleep
LATE_BOUND_S = MAX_SLEEP_S + 0.5  # max_sleep plus a small bound (a loaded test machine)

# Every change of an inbox row or a delivery row, with Postgres's time: an
# evaluation's transaction time (= its attempt's attempted_at) next to the
# due time the previous evaluation set (OLD.next_attempt_at).
HISTORY_SQL = """
CREATE TABLE clock_history (n bigserial PRIMARY KEY, tbl text, id uuid, tx_at timestamptz, wall_at timestamptz,
  old_due timestamptz, new_due timestamptz, old_status text, new_status text, old_attempts int, new_attempts int,
  old_deferrals int, new_deferrals int);
CREATE FUNCTION clock_history_inbox() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO clock_history (tbl, id, tx_at, wall_at, old_due, new_due, old_status, new_status, old_attempts,
    new_attempts, old_deferrals, new_deferrals)
  VALUES ('inbox', NEW.id, now(), clock_timestamp(), OLD.next_attempt_at, NEW.next_attempt_at, OLD.status,
    NEW.status, OLD.attempts, NEW.attempts, OLD.deferrals, NEW.deferrals);
  RETURN NULL;
END $$;
CREATE TRIGGER clock_history_inbox AFTER UPDATE ON webhook_inbox FOR EACH ROW EXECUTE FUNCTION clock_history_inbox();
CREATE FUNCTION clock_history_delivery() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO clock_history (tbl, id, tx_at, wall_at, new_due, new_status, new_attempts)
  VALUES ('delivery', NEW.id, now(), clock_timestamp(), NEW.next_attempt_at, NEW.status, NEW.attempts);
  RETURN NULL;
END $$;
CREATE TRIGGER clock_history_delivery AFTER INSERT OR UPDATE ON outbox_deliveries FOR EACH ROW
  EXECUTE FUNCTION clock_history_delivery();
"""


def start_skewed(env, skew: str, cfg):
    w = env.worker(config=cfg, start=False, env=faketime_env(skew))
    w.start()
    return w


def evaluations(env, msg_id: str) -> list[dict]:
    """The evaluations of one inbox event: updates that charged an attempt or
    a deferral, or finished it."""
    return env.db.all(
        "SELECT h.* FROM clock_history h JOIN webhook_inbox i ON i.id = h.id WHERE h.tbl = 'inbox'"
        " AND i.partner_event_id = %s AND (h.new_attempts <> h.old_attempts OR h.new_deferrals <> h.old_deferrals"
        " OR h.new_status <> h.old_status) ORDER BY h.n", msg_id)


def assert_on_time(pairs, what: str) -> None:
    """pairs: (ran_at, due_at) on Postgres's clock. Never early; never later
    than max_sleep plus the bound."""
    assert pairs, f"no {what} to check"
    for ran, due in pairs:
        early = (due - ran).total_seconds()
        assert early <= 0, f"{what} ran {early * 1000:.1f} ms before its due time {due} (at {ran})"
        late = (ran - due).total_seconds()
        assert late <= LATE_BOUND_S, f"{what} ran {late * 1000:.0f} ms after its due time {due} (at {ran})"


def metric(w, name: str) -> float:
    text = w.metrics()
    m = re.search(rf"^{name} (\S+)$", text, flags=re.M)
    assert m, f"{name} not in /metrics"
    return float(m.group(1))


@pytest.fixture
def history(env):
    env.db.all(HISTORY_SQL)


@pytest.mark.slow
@pytest.mark.parametrize("skew", ["fast", "slow"])
def test_skewed_worker_runs_deferred_and_retried_events_on_postgres_time(env, history, skew):
    cfg = env.config(retry_schedule="1500ms, 1500ms, 1500ms", defer_schedule="2s")
    w = start_skewed(env, skew, cfg)
    expected_ms = -30000 if skew == "fast" else 30000  # Postgres's clock minus the worker's
    offset = metric(w, "hookd_clock_offset_seconds")
    assert abs(offset * 1000 - expected_ms) < 1000, offset
    wait_for(lambda: "clock.offset" in w.output(), what="the large offset logged")
    line = next(ln for ln in w.output().splitlines() if "clock.offset" in ln)
    got_ms = int(re.search(r"offset_ms=(-?\d+)", line).group(1))
    assert abs(got_ms - expected_ms) < 1000, line

    # a retried event (no machine handles its type: four attempts, then the DLQ)
    post(w, "clk-poison", "order.bogus", "o-clk-poison")
    # a deferred event (its entity does not exist yet), healed after three deferrals
    post(w, "clk-paid", "order.paid", "o-clk")
    wait_for(lambda: row(env, "clk-paid")["deferrals"] >= 3, timeout=20, what="three deferrals")
    post(w, "clk-started", "order.started", "o-clk")
    wait_for(lambda: row(env, "clk-paid")["status"] == "PROCESSED", timeout=20, what="the deferred event applied")
    wait_for(lambda: row(env, "clk-poison")["status"] == "QUARANTINED", timeout=20, what="poison dead-lettered")

    deferred = evaluations(env, "clk-paid")
    assert [e["new_status"] for e in deferred][-1] == "PROCESSED"
    assert sum(e["new_deferrals"] > e["old_deferrals"] for e in deferred) >= 3
    # every evaluation after the first: no earlier than the due time the previous one set
    assert_on_time([(e["tx_at"], e["old_due"]) for e in deferred[1:]], "deferred evaluation")
    retried = evaluations(env, "clk-poison")
    assert [e["new_attempts"] for e in retried] == [1, 2, 3, 4]
    assert_on_time([(e["tx_at"], e["old_due"]) for e in retried[1:]], "retry")
    # the evaluations are the attempts in the history (attempted_at = the transaction's time)
    att = env.db.all("SELECT attempted_at FROM attempts a JOIN webhook_inbox i ON i.id = a.source_id"
                     " WHERE i.partner_event_id = 'clk-poison' ORDER BY a.id")
    assert [a["attempted_at"] for a in att] == [e["tx_at"] for e in retried]

    # the offset in the heartbeat hash (and so in `hookd status --json`); the
    # heartbeat's score is on Postgres's clock, so a true-clock reader sees it live
    [(wid, beat)] = env.redis.zrange(env.key("workers"), 0, -1, withscores=True)
    wid = wid.decode() if isinstance(wid, bytes) else wid
    assert abs(int(env.redis.hget(env.key("worker:" + wid), "clock_offset_ms")) - expected_ms) < 1000
    assert abs(beat / 1000 - time.time()) < 5, beat
    st = subprocess.run([HOOKD_BIN, "-c", str(cfg), "status", "--json"], capture_output=True, text=True, timeout=30)
    [shown] = json.loads(st.stdout)["workers"]
    assert shown["state"] == "live" and abs(int(shown["clock_offset_ms"]) - expected_ms) < 1000, shown
    st = subprocess.run([HOOKD_BIN, "-c", str(cfg), "status"], capture_output=True, text=True, timeout=30)
    assert "CLOCK" in st.stdout and f"{shown['clock_offset_ms']}ms" in st.stdout, st.stdout


@pytest.mark.slow
@pytest.mark.parametrize("skew", ["fast", "slow"])
def test_skewed_worker_retries_an_outbound_delivery_on_postgres_time(env, history, receivers, skew):  # noqa: F811
    rcv = receivers(statuses(500, 500, 200))
    cfg = outbound_config(env, extra="\n[retry endpoint:skewed]\nschedule = 1500ms, 1500ms, 1500ms\n")
    ep = add_endpoint(cfg, rcv.url(), "skewed")
    start_skewed(env, skew, cfg)
    event_id = emit(env, "order.paid", {"id": "o-clk"})
    d = wait_status(env, event_id, ep, "SUCCEEDED", timeout=30)
    got = rcv.got()
    assert len(got) == 3 and d["attempts"] == 3
    hist = env.db.all("SELECT extract(epoch FROM wall_at)::float8 AS at, extract(epoch FROM new_due)::float8 AS due,"
                      " new_status, new_attempts FROM clock_history WHERE tbl = 'delivery' AND id = %s ORDER BY n",
                      d["id"])
    pairs = []
    for req in got[1:]:
        # the due time set by the last change of the row before the request arrived (the failure's retry)
        before = [h for h in hist if h["at"] < req.at and h["new_status"] in ("PENDING", "RETRYING")]
        assert before, (req.at, hist)
        assert before[-1]["new_attempts"] == req.n - 1, (req.n, hist)
        due = before[-1]["due"]
        pairs.append((req.at, due))
    for at, due in pairs:
        assert at >= due, f"retry sent {(due - at) * 1000:.1f} ms before it was due"
        assert at - due <= LATE_BOUND_S, f"retry sent {(at - due) * 1000:.0f} ms after it was due"


@pytest.mark.parametrize("skew", ["fast", "slow"])
def test_replay_from_a_skewed_cli_is_due_now(env, skew):
    cfg = env.config(retry_schedule="100ms, 100ms, 100ms")
    w = env.worker(config=cfg)
    post(w, "clk-replay", "order.bogus", "o-clk-replay")
    wait_for(lambda: row(env, "clk-replay")["status"] == "QUARANTINED", timeout=20, what="dead-lettered")
    dl = env.db.value("SELECT id::text FROM dead_letters")
    w.stop()  # nothing claims it: the score the CLI writes stays in Redis to be read
    r = subprocess.run([HOOKD_BIN, "-c", str(cfg), "dlq", "replay", dl],
                       capture_output=True, text=True, env=dict(os.environ, **faketime_env(skew)), timeout=60)
    assert r.returncode == 0, r.stderr
    inbox_id = env.db.value("SELECT id::text FROM webhook_inbox WHERE partner_event_id = 'clk-replay'")
    score = env.redis.zscore(env.key("{inbox}:due"), inbox_id)
    assert score is not None
    assert abs(score / 1000 - time.time()) < 2, f"scheduled {score / 1000 - time.time():+.1f} s from now"
