"""Inbound retry storms: evaluations that fail on an SQL error.

A statement of a batch's set-based evaluation that fails (here: a trigger on
hookd_entities that raises for some entities, as an application's check or
trigger would) fails the whole set. The inbox then isolates the failing
events by bisection, each part tried again as a set in a savepoint, and
records the failed attempts of the whole batch with one statement; before,
it redid the batch event by event with a savepoint around each.

What must hold: the good events of the batch are applied exactly once, each
failing event is retried and dead-lettered exactly at its 4th attempt
(max_attempts = 4), every evaluation is one attempts row and nothing else
is, a statement error that hits every event of a batch ends the same way, a
lock conflict (SQLSTATE 40001) costs no attempt, and a worker killed with
SIGKILL in the middle of such batches loses and doubles nothing.

All attempts rows written by one statement share attempted_at (the
transaction's now()) and duration_ms (the statement's share of the time):
the tests use that to see that failures were recorded per batch."""
from __future__ import annotations

import random
import time

from hookdtest.util import wait_for
from test_batch import (SHIP_MACHINE, SHIPMENTS_TABLE, assert_attempt_history_consistent, entity, ev, history,
                        one_batch_config, row, seed, wait_all_terminal, wait_queues_empty, with_hookd_keys)

RAISE_FOR = """
CREATE TABLE apply_rules (entity_id text PRIMARY KEY, sqlstate text NOT NULL DEFAULT 'P0001');
CREATE FUNCTION apply_check() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE s text;
BEGIN
  SELECT sqlstate INTO s FROM apply_rules WHERE entity_id = NEW.entity_id OR entity_id = '*' LIMIT 1;
  IF s IS NOT NULL THEN
    RAISE EXCEPTION 'apply refused for %%', NEW.entity_id USING ERRCODE = s;
  END IF;
  RETURN NEW;
END $$;
CREATE TRIGGER apply_check BEFORE UPDATE ON hookd_entities FOR EACH ROW EXECUTE FUNCTION apply_check();
"""


def refuse(env, entity_ids: list[str], sqlstate: str = "P0001") -> None:
    env.db.all("INSERT INTO apply_rules (entity_id, sqlstate) SELECT x, %s FROM unnest(%s::text[]) x",
               sqlstate, entity_ids)


def dead_letter(env, msg: str):
    return env.db.one("SELECT d.* FROM dead_letters d JOIN webhook_inbox i ON i.id = d.source_id"
                      " WHERE d.source = 'inbox' AND i.partner_event_id = %s", msg)


def attempt_rows(env) -> int:
    return env.db.value("SELECT count(*) FROM attempts WHERE source = 'inbox'")


def assert_good_applied_once(env, good: list[str]):
    got = env.db.all("SELECT e.entity_id, e.state, e.version, i.status, i.outcome, i.attempts"
                     " FROM hookd_entities e JOIN webhook_inbox i ON i.entity_id = e.entity_id"
                     " WHERE e.entity_id = ANY(%s)", good)
    assert len(got) == len(good)
    wrong = [r for r in got if (r["state"], r["version"], r["status"], r["outcome"], r["attempts"])
             != ("started", 1, "PROCESSED", "applied", 0)]
    assert not wrong, f"{len(wrong)} good events not applied exactly once: {wrong[:5]}"


def assert_quarantined_at_4th(env, msgs: list[str], needle: str):
    for msg in msgs:
        r = row(env, msg)
        assert (r["status"], r["outcome"], r["attempts"]) == ("QUARANTINED", "dead", 4), r
        hist = history(env, msg)
        assert [a["outcome"] for a in hist] == ["retry", "retry", "retry", "dead"], (msg, hist)
        assert all(needle in (a["error"] or "") for a in hist), hist
        dl = dead_letter(env, msg)
        assert dl is not None and (dl["reason"], dl["attempts"]) == ("retries exhausted", 4), dl


def test_failing_events_among_good_ones_are_isolated_and_recorded_per_batch(env):
    env.db.all(RAISE_FOR)
    rnd = random.Random(18)
    good = [f"g{i:03d}" for i in range(200)]
    bad = [f"bad{i}" for i in range(10)]
    refuse(env, bad)
    ids = good + bad
    events = [ev(f"m-{oid}", "order.started", oid, at) for oid, at in zip(ids, rnd.sample(range(300_000), len(ids)))]
    seed(env, events)
    w = env.worker(config=one_batch_config(env, retry_schedule="200ms, 200ms, 200ms"))
    wait_all_terminal(env, len(events), timeout=30, workers=[w])

    assert_good_applied_once(env, good)
    bad_msgs = [f"m-{oid}" for oid in bad]
    assert_quarantined_at_4th(env, bad_msgs, "apply refused for bad")
    for oid in bad:  # created by the batch in its initial state, never moved
        assert entity(env, oid) == {"state": "draft", "version": 0}
    # one attempts row per evaluation, nothing else
    assert attempt_rows(env) == len(good) + 4 * len(bad)
    assert env.db.value("SELECT count(*) FROM dead_letters") == len(bad)
    assert_attempt_history_consistent(env)
    # the first batch: one transaction; its failures recorded by one statement
    # (one shared duration), its good events in a few sets, not one by one
    firsts = env.db.all("SELECT DISTINCT ON (a.source_id) a.attempted_at, a.duration_ms, a.outcome"
                        " FROM attempts a ORDER BY a.source_id, a.id")
    assert len(firsts) == len(events)
    assert len({f["attempted_at"] for f in firsts}) == 1, "the seeded events were not evaluated in one batch"
    assert len({f["duration_ms"] for f in firsts if f["outcome"] == "retry"}) == 1, \
        "the failed first attempts were not recorded together"
    sets = env.db.all("SELECT count(*) AS n FROM attempts WHERE outcome = 'applied' GROUP BY attempted_at, duration_ms")
    assert max(s["n"] for s in sets) >= 10 and len(sets) <= len(good) // 3, \
        f"the good events went in {len(sets)} sets of at most {max(s['n'] for s in sets)}"
    assert "inbox.record_failed" not in w.output()
    wait_queues_empty(env)


def test_a_statement_error_that_hits_every_event_quarantines_each_at_its_4th_attempt(env):
    env.db.all(RAISE_FOR)
    refuse(env, ["*"])
    ids = [f"all{i:02d}" for i in range(40)]
    events = [ev(f"m-{oid}", "order.started", oid, i) for i, oid in enumerate(ids)]
    seed(env, events)
    w = env.worker(config=one_batch_config(env, retry_schedule="100ms, 100ms, 100ms"))
    wait_all_terminal(env, len(events), timeout=30, workers=[w])
    assert_quarantined_at_4th(env, [f"m-{oid}" for oid in ids], "apply refused for all")
    assert attempt_rows(env) == 4 * len(ids)
    assert env.db.value("SELECT count(*) FROM dead_letters WHERE reason = 'retries exhausted'") == len(ids)
    assert env.db.value("SELECT count(*) FROM hookd_entities WHERE state <> 'draft'") == 0
    # each round of failures was recorded by one statement
    rounds = env.db.all("SELECT attempted_at, duration_ms, count(*) AS n FROM attempts GROUP BY 1, 2")
    assert max(r["n"] for r in rounds) == len(ids), rounds
    assert_attempt_history_consistent(env)
    wait_queues_empty(env)


def test_a_serialization_failure_is_busy_and_costs_no_attempt(env):
    env.db.all(RAISE_FOR)
    ids = [f"s{i:02d}" for i in range(30)]
    conflicted = ids[::3]
    refuse(env, conflicted, sqlstate="40001")
    events = [ev(f"m-{oid}", "order.started", oid, i) for i, oid in enumerate(ids)]
    seed(env, events)
    w = env.worker(config=one_batch_config(env, retry_schedule="100ms, 100ms, 100ms"))
    good = [oid for oid in ids if oid not in conflicted]
    wait_for(lambda: env.db.value("SELECT count(*) FROM webhook_inbox WHERE status = 'PROCESSED'") == len(good),
             timeout=20, what="the events without a conflict to be applied")
    # the conflicted ones keep coming back (busy, due again in ~100 ms) ...
    deadline = time.monotonic() + 1.5
    while time.monotonic() < deadline:
        w.alive()
        time.sleep(0.1)
    # ... without being charged an attempt or leaving an attempts row
    got = env.db.all("SELECT status, attempts FROM webhook_inbox WHERE entity_id = ANY(%s)", conflicted)
    assert all((r["status"], r["attempts"]) == ("PENDING", 0) for r in got), got
    assert env.db.value("SELECT count(*) FROM attempts a JOIN webhook_inbox i ON i.id = a.source_id"
                        " WHERE i.entity_id = ANY(%s)", conflicted) == 0
    env.db.all("DELETE FROM apply_rules")
    wait_all_terminal(env, len(events), timeout=20, workers=[w])
    assert_good_applied_once(env, ids)
    assert attempt_rows(env) == len(ids)
    assert_attempt_history_consistent(env)
    wait_queues_empty(env)


def test_kill9_in_the_middle_of_isolating_failures_loses_and_doubles_nothing(env):
    env.db.all(RAISE_FOR)
    # slow refusals: a batch spends seconds isolating its failing events
    env.db.all("CREATE OR REPLACE FUNCTION apply_check() RETURNS trigger LANGUAGE plpgsql AS $$"
               " DECLARE s text; BEGIN"
               "  SELECT sqlstate INTO s FROM apply_rules WHERE entity_id = NEW.entity_id LIMIT 1;"
               "  IF s IS NOT NULL THEN PERFORM pg_sleep(0.02);"
               "   RAISE EXCEPTION 'apply refused for %%', NEW.entity_id USING ERRCODE = s; END IF;"
               "  RETURN NEW; END $$")
    rnd = random.Random(99)
    good = [f"k{i:03d}" for i in range(400)]
    bad = [f"kbad{i:02d}" for i in range(40)]
    refuse(env, bad)
    ids = good + bad
    events = [ev(f"m-{oid}", "order.started", oid, at) for oid, at in zip(ids, rnd.sample(range(300_000), len(ids)))]
    seed(env, events)
    cfg = with_hookd_keys(env.config(retry_schedule="300ms, 300ms, 300ms", lease="2s"), batch_size=100)
    a = env.worker(config=cfg)
    # some batches committed, the others still being isolated
    wait_for(lambda: env.db.value("SELECT count(*) FROM attempts") > 0, timeout=20, interval=0.02,
             what="a first batch to commit")
    a.kill9()
    done_by_a = env.db.value("SELECT count(*) FROM webhook_inbox WHERE status IN ('PROCESSED', 'QUARANTINED')")
    assert done_by_a < len(events), "worker A finished everything before it was killed"
    b = env.worker(config=cfg)
    wait_all_terminal(env, len(events), timeout=90, workers=[b])
    assert_good_applied_once(env, good)
    assert_quarantined_at_4th(env, [f"m-{oid}" for oid in bad], "apply refused for kbad")
    assert attempt_rows(env) == len(good) + 4 * len(bad)
    assert env.db.value("SELECT count(*) FROM dead_letters") == len(bad)
    assert env.db.value("SELECT count(*) FROM outbox_events") == 0
    assert_attempt_history_consistent(env)
    wait_queues_empty(env)


def test_user_table_and_builtin_refusals_in_one_batch(env):
    """A machine with its own table goes event by event inside the batch:
    its refused events are found in their own savepoints while the batch is
    isolating, the built-in machine's by the robust pass; the failures of the
    batch are recorded per batch, not per event."""
    env.db.all(RAISE_FOR)
    env.db.all(SHIPMENTS_TABLE)
    env.db.all("CREATE FUNCTION ship_check() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN"
               " IF NEW.id LIKE 'shbad%%' THEN RAISE EXCEPTION 'shipment refused: %%', NEW.id; END IF;"
               " RETURN NEW; END $$")
    env.db.all("CREATE TRIGGER ship_check BEFORE UPDATE ON shipments FOR EACH ROW EXECUTE FUNCTION ship_check()")
    rnd = random.Random(7)
    ships = [f"sh{i:02d}" for i in range(40)] + [f"shbad{i}" for i in range(4)]
    orders = [f"o{i:02d}" for i in range(40)] + [f"obad{i}" for i in range(4)]
    refuse(env, [o for o in orders if "bad" in o])
    times = iter(rnd.sample(range(300_000), len(ships) + len(orders)))
    events = [ev(f"m-{s}", "ship.packed", s, next(times), entity_type="ship") for s in ships]
    events += [ev(f"m-{o}", "order.started", o, next(times)) for o in orders]
    seed(env, events)
    w = env.worker(config=one_batch_config(env, extra=SHIP_MACHINE, retry_schedule="200ms, 200ms, 200ms"))
    wait_all_terminal(env, len(events), timeout=30, workers=[w])
    good_ships = [s for s in ships if "bad" not in s]
    assert env.db.value("SELECT count(*) FROM shipments WHERE status = 'packed' AND version = 1") == len(good_ships)
    assert env.db.value("SELECT count(*) FROM shipments WHERE status = 'new' AND id LIKE 'shbad%%'") == 4
    assert_good_applied_once(env, [o for o in orders if "bad" not in o])
    assert_quarantined_at_4th(env, [f"m-{s}" for s in ships if "bad" in s], "shipment refused: shbad")
    assert_quarantined_at_4th(env, [f"m-{o}" for o in orders if "bad" in o], "apply refused for obad")
    assert attempt_rows(env) == len(events) + 3 * 8
    assert_attempt_history_consistent(env)
    firsts = env.db.all("SELECT DISTINCT ON (a.source_id) a.attempted_at, a.duration_ms, a.outcome"
                        " FROM attempts a ORDER BY a.source_id, a.id")
    assert len({f["attempted_at"] for f in firsts}) == 1, "the seeded events were not evaluated in one batch"
    # two statements at most: the built-in refusals become failures in the
    # robust pass's own verdicts, the user-table ones in the batch's record
    durations = [f["duration_ms"] for f in firsts if f["outcome"] == "retry"]
    assert len(durations) == 8 and len(set(durations)) <= 2, \
        f"the batch's failed first attempts were not recorded per batch: {durations}"
    wait_queues_empty(env)


def test_one_refused_transition_among_several_of_one_entity(env):
    """Two transitions of one entity in a batch, the second refused: the
    robust pass cannot say which event's apply it was (one UPDATE per
    entity), so those events are bisected; the first applies, the second is
    retried and dead-lettered at its 4th attempt."""
    env.db.all("CREATE FUNCTION paid_check() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN"
               " IF NEW.entity_id LIKE 'multi%%' AND NEW.state = 'paid' THEN"
               "  RAISE EXCEPTION 'payment refused for %%', NEW.entity_id; END IF;"
               " RETURN NEW; END $$")
    env.db.all("CREATE TRIGGER paid_check BEFORE UPDATE ON hookd_entities FOR EACH ROW EXECUTE FUNCTION paid_check()")
    multi = [f"multi{i}" for i in range(5)]
    good = [f"ok{i:02d}" for i in range(40)]
    events = []
    for i, oid in enumerate(multi):
        events.append(ev(f"m-{oid}-started", "order.started", oid, 10 * i))
        events.append(ev(f"m-{oid}-paid", "order.paid", oid, 10 * i + 1))
    events += [ev(f"m-{oid}", "order.started", oid, 1000 + i) for i, oid in enumerate(good)]
    seed(env, events)
    w = env.worker(config=one_batch_config(env, retry_schedule="200ms, 200ms, 200ms"))
    wait_all_terminal(env, len(events), timeout=30, workers=[w])
    assert_good_applied_once(env, good)
    for oid in multi:
        assert entity(env, oid) == {"state": "started", "version": 1}
        r = row(env, f"m-{oid}-started")
        assert (r["status"], r["outcome"], r["attempts"]) == ("PROCESSED", "applied", 0), r
    assert_quarantined_at_4th(env, [f"m-{oid}-paid" for oid in multi], "payment refused for multi")
    assert attempt_rows(env) == len(good) + len(multi) + 4 * len(multi)
    assert_attempt_history_consistent(env)
    wait_queues_empty(env)


def test_a_failure_outside_the_entity_update_is_bisected(env):
    """A statement the robust pass does not cover fails (here: the verdict's
    own UPDATE of webhook_inbox, refused for some events when they would
    become PROCESSED): the batch is bisected down to those events, the good
    ones still apply, the refused ones are retried and dead-lettered at
    their 4th attempt."""
    env.db.all("CREATE FUNCTION processed_check() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN"
               " IF NEW.partner_event_id LIKE 'wbad%%' AND NEW.status = 'PROCESSED' THEN"
               "  RAISE EXCEPTION 'verdict refused for %%', NEW.partner_event_id; END IF;"
               " RETURN NEW; END $$")
    env.db.all("CREATE TRIGGER processed_check BEFORE UPDATE ON webhook_inbox FOR EACH ROW"
               " EXECUTE FUNCTION processed_check()")
    rnd = random.Random(5)
    good = [f"w{i:02d}" for i in range(60)]
    bad = [f"wb{i}" for i in range(3)]
    times = iter(rnd.sample(range(300_000), len(good) + len(bad)))
    events = [ev(f"m-{oid}", "order.started", oid, next(times)) for oid in good]
    events += [ev(f"wbad-{oid}", "order.started", oid, next(times)) for oid in bad]
    seed(env, events)
    w = env.worker(config=one_batch_config(env, retry_schedule="200ms, 200ms, 200ms"))
    wait_all_terminal(env, len(events), timeout=30, workers=[w])
    assert_good_applied_once(env, good)
    assert_quarantined_at_4th(env, [f"wbad-{oid}" for oid in bad], "verdict refused for wbad")
    for oid in bad:  # each apply was rolled back with its verdict
        assert entity(env, oid) == {"state": "draft", "version": 0}
    assert attempt_rows(env) == len(good) + 4 * len(bad)
    assert_attempt_history_consistent(env)
    firsts = env.db.all("SELECT DISTINCT ON (a.source_id) a.duration_ms, a.outcome FROM attempts a"
                        " ORDER BY a.source_id, a.id")
    assert len({f["duration_ms"] for f in firsts if f["outcome"] == "retry"}) == 1, \
        "the batch's failed first attempts were not recorded together"
    wait_queues_empty(env)
