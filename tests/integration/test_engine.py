"""The deferral and retry engine, end to end: out-of-order events heal,
every order of a lifecycle converges, duplicates and conflicts, a poison
event's four attempts and its dead letter, deferral max age, and the
failures that must cost only time: a flushed Redis, a worker killed while it
holds leases, a Redis outage, and three workers racing over 5,000 events."""
import itertools
import json
import random
import signal
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from hookdtest.client import http, order_event
from hookdtest.signing import SW_SECRET, sign_standard
from hookdtest.util import wait_for

TERMINAL = ("PROCESSED", "QUARANTINED")
LIFECYCLE = ("order.started", "order.paid", "order.shipped")


# ---- helpers ------------------------------------------------------------------

def post(w, msg_id: str, event_type: str, order_id: str, expect: str = "accepted") -> dict:
    """Posts one signed event as the partner 'shop' would. The client waits
    up to a minute: these tests are about what happens to the events, not
    about how fast ingest answers."""
    body = order_event(event_type, order_id)
    ts = int(time.time())
    headers = {"content-type": "application/json", "webhook-id": msg_id, "webhook-timestamp": str(ts),
               "webhook-signature": sign_standard(SW_SECRET, msg_id, ts, body)}
    status, _, body = http("POST", f"{w.url}/v1/inbox/shop", body, headers, timeout=60)
    assert status == 200, (msg_id, status, body)
    answer = json.loads(body)
    assert answer["status"] == expect, (msg_id, answer)
    return answer


def post_orders(workers: list, plan: list[tuple[str, list[tuple[str, str]]]], threads: int = 8) -> None:
    """Posts each order's events in the order given, orders concurrently,
    spreading the events over the workers."""
    def one(k: int, order_id: str, events: list[tuple[str, str]]) -> None:
        for j, (msg_id, event_type) in enumerate(events):
            post(workers[(k + j) % len(workers)], msg_id, event_type, order_id)

    with ThreadPoolExecutor(threads) as pool:
        for f in [pool.submit(one, k, oid, evs) for k, (oid, evs) in enumerate(plan)]:
            f.result()


def lifecycle(order_id: str, order: str = "natural", rnd: random.Random | None = None) -> list[tuple[str, str]]:
    """The four events of one order: started, paid, shipped and a second
    started (its own message id) that must end as a no-op."""
    events = [(f"{order_id}-{t.split('.')[1]}", t) for t in LIFECYCLE] + [(f"{order_id}-started2", "order.started")]
    if order == "reversed":
        events.reverse()
    elif order == "shuffled":
        (rnd or random).shuffle(events)
    return events


def row(env, msg_id: str):
    return env.db.one("SELECT * FROM webhook_inbox WHERE partner_event_id = %s", msg_id)


def entity(env, order_id: str, kind: str = "order"):
    return env.db.one("SELECT state, version FROM hookd_entities WHERE entity_type = %s AND entity_id = %s",
                      kind, order_id)


def attempts_of(env, msg_id: str):
    return env.db.all("SELECT a.* FROM attempts a JOIN webhook_inbox i ON i.id = a.source_id"
                      " WHERE a.source = 'inbox' AND i.partner_event_id = %s ORDER BY a.id", msg_id)


def open_count(env, like: str = "%") -> int:
    return env.db.value("SELECT count(*) FROM webhook_inbox WHERE status NOT IN ('PROCESSED', 'QUARANTINED')"
                        " AND partner_event_id LIKE %s", like)


def wait_terminal(env, msg_ids, timeout: float = 30, what: str = "events to finish"):
    ids = list(msg_ids)
    wait_for(lambda: env.db.value("SELECT count(*) FROM webhook_inbox WHERE partner_event_id = ANY(%s)"
                                  " AND status IN ('PROCESSED', 'QUARANTINED')", ids) == len(ids),
             timeout=timeout, interval=0.1, what=what)


def wait_all_terminal(env, expected: int, timeout: float = 60, what: str = "every event to finish"):
    def done():
        n = env.db.value("SELECT count(*) FROM webhook_inbox")
        return n == expected and open_count(env) == 0
    try:
        wait_for(done, timeout=timeout, interval=0.2, what=what)
    except AssertionError:
        left = env.db.all("SELECT partner_event_id, status, attempts, deferrals, last_error FROM webhook_inbox"
                          " WHERE status NOT IN ('PROCESSED', 'QUARANTINED') ORDER BY received_at LIMIT 10")
        n = env.db.value("SELECT count(*) FROM webhook_inbox")
        raise AssertionError(f"{what}: {n}/{expected} rows, still open (first 10): {left}")


def wait_queues_empty(env, queue: str = "inbox"):
    due, inflight = env.key(f"{{{queue}}}:due"), env.key(f"{{{queue}}}:inflight")
    wait_for(lambda: env.redis.zcard(due) == 0 and env.redis.zcard(inflight) == 0,
             what=f"{queue} due and inflight sets to drain")


def assert_lifecycles_converged(env, order_ids: list[str]):
    """Each order: shipped, version 3, three applied events and one no-op,
    every event evaluated to a final verdict exactly once, and none of these
    healthy events spent any of its retry budget."""
    bad = env.db.all(
        "SELECT e.entity_id, e.state, e.version,"
        "  (SELECT count(*) FROM webhook_inbox i WHERE i.entity_id = e.entity_id AND i.outcome = 'applied') AS applied,"
        "  (SELECT count(*) FROM webhook_inbox i WHERE i.entity_id = e.entity_id AND i.outcome = 'noop') AS noop"
        " FROM hookd_entities e WHERE e.entity_type = 'order' AND e.entity_id = ANY(%s)", order_ids)
    assert len(bad) == len(order_ids), "an order has no entity row"
    wrong = [r for r in bad if (r["state"], r["version"], r["applied"], r["noop"]) != ("shipped", 3, 3, 1)]
    assert not wrong, f"{len(wrong)} orders did not converge, e.g. {wrong[:5]}"
    twice = env.db.all(
        "SELECT i.partner_event_id, count(*) AS n FROM attempts a JOIN webhook_inbox i ON i.id = a.source_id"
        " WHERE i.entity_id = ANY(%s) AND a.outcome IN ('applied', 'noop', 'ignored', 'dead')"
        " GROUP BY i.partner_event_id HAVING count(*) <> 1", order_ids)
    assert not twice, f"events with other than one final verdict: {twice[:5]}"
    finals = env.db.value(
        "SELECT count(*) FROM attempts a JOIN webhook_inbox i ON i.id = a.source_id"
        " WHERE i.entity_id = ANY(%s) AND a.outcome IN ('applied', 'noop')", order_ids)
    assert finals == 4 * len(order_ids)
    failed = env.db.all(
        "SELECT i.partner_event_id, a.outcome, a.error, a.worker_id FROM attempts a"
        " JOIN webhook_inbox i ON i.id = a.source_id"
        " WHERE i.entity_id = ANY(%s) AND a.outcome IN ('retry', 'dead') ORDER BY a.id", order_ids)
    assert not failed, f"{len(failed)} failed attempts of healthy events, e.g. {failed[:5]}"
    assert env.db.value("SELECT coalesce(max(attempts), 0) FROM webhook_inbox WHERE entity_id = ANY(%s)",
                        order_ids) == 0


def subscribe_alerts(env):
    """A pubsub on the alerts channel, subscribed before it returns."""
    channel = env.key("alerts")
    sub = env.redis.pubsub(ignore_subscribe_messages=True)
    sub.subscribe(channel)
    wait_for(lambda: dict(env.redis.pubsub_numsub(channel)).get(channel, 0) >= 1, what="alert subscription")
    return sub


def collect_alerts(sub, n: int, timeout: float = 10) -> list[dict]:
    """Waits for n alert messages, then makes sure no more are coming."""
    alerts = []

    def more():
        m = sub.get_message(timeout=0.1)
        if m:
            alerts.append(json.loads(m["data"]))
        return len(alerts) >= n
    wait_for(more, timeout=timeout, what=f"{n} alert(s)")
    m = sub.get_message(timeout=0.3)
    assert m is None, f"an unexpected extra alert: {m}"
    return alerts


def with_hookd_keys(cfg: Path, **keys) -> Path:
    """Adds [hookd] keys the harness template does not carry (roles, ...)."""
    lines = "".join(f"{k} = {v}\n" for k, v in keys.items())
    text = cfg.read_text()
    assert "[hookd]\n" in text
    cfg.write_text(text.replace("[hookd]\n", "[hookd]\n" + lines, 1))
    return cfg


def worker_id(env, w) -> str:
    def find():
        for wid in env.redis.zrange(env.key("workers"), 0, -1):
            if env.redis.hget(env.key(f"worker:{wid}"), "pid") == str(w.proc.pid):
                return wid
        return None
    return wait_for(find, what=f"heartbeat of pid {w.proc.pid}")


# ---- healing out-of-order events ----------------------------------------------

def test_shipped_before_paid_heals(env):
    w = env.worker()
    post(w, "heal-shipped", "order.shipped", "o-heal")
    wait_for(lambda: row(env, "heal-shipped")["deferrals"] >= 1, what="shipped deferred")
    assert row(env, "heal-shipped")["status"] == "DEFERRED"
    assert entity(env, "o-heal") == {"state": "draft", "version": 0}
    post(w, "heal-paid", "order.paid", "o-heal")
    post(w, "heal-started", "order.started", "o-heal")
    wait_terminal(env, ["heal-shipped", "heal-paid", "heal-started"])
    assert entity(env, "o-heal") == {"state": "shipped", "version": 3}
    for m in ("heal-started", "heal-paid", "heal-shipped"):
        r = row(env, m)
        assert (r["status"], r["outcome"]) == ("PROCESSED", "applied"), r
        assert r["processed_at"] is not None
    assert row(env, "heal-shipped")["deferrals"] >= 1
    outcomes = [a["outcome"] for a in attempts_of(env, "heal-shipped")]
    assert outcomes[0] == "deferred" and outcomes[-1] == "applied"
    assert set(outcomes[:-1]) == {"deferred"}
    assert all(a["error"] for a in attempts_of(env, "heal-shipped") if a["outcome"] == "deferred")
    wait_queues_empty(env)


def test_an_apply_wakes_deferred_siblings_at_once(env):
    # The defer schedule is an hour: only the wake-up of an applied sibling
    # can bring the deferred event back within this test.
    w = env.worker(defer_schedule="1h", defer_max_age="24h")
    post(w, "wake-shipped", "order.shipped", "o-wake")
    wait_for(lambda: row(env, "wake-shipped")["status"] == "DEFERRED", what="shipped deferred")
    r = row(env, "wake-shipped")
    assert r["deferrals"] == 1
    assert env.db.value("SELECT next_attempt_at - now() > interval '50 minutes' FROM webhook_inbox"
                        " WHERE partner_event_id = 'wake-shipped'")
    post(w, "wake-started", "order.started", "o-wake")
    post(w, "wake-paid", "order.paid", "o-wake")
    wait_terminal(env, ["wake-shipped", "wake-started", "wake-paid"], timeout=20,
                  what="the deferred shipped event woken by its siblings")
    assert row(env, "wake-shipped")["outcome"] == "applied"
    assert entity(env, "o-wake") == {"state": "shipped", "version": 3}


def test_every_order_of_a_lifecycle_converges(env):
    w = env.worker()
    base = lifecycle("X")
    orders = []
    for n, perm in enumerate(itertools.permutations(range(4))):
        oid = f"perm{n:02d}"
        orders.append(oid)
        for i in perm:
            msg, event_type = base[i]
            post(w, msg.replace("X", oid, 1), event_type, oid)
    assert n == 23
    wait_all_terminal(env, 24 * 4, timeout=60)
    assert env.db.value("SELECT count(*) FROM webhook_inbox WHERE status <> 'PROCESSED'") == 0
    assert_lifecycles_converged(env, orders)
    # exactly one of the two 'started' events applied, the other was a no-op
    for oid in orders:
        pair = sorted(row(env, f"{oid}-{s}")["outcome"] for s in ("started", "started2"))
        assert pair == ["applied", "noop"], (oid, pair)
    assert env.db.value("SELECT count(*) FROM dead_letters") == 0


# ---- duplicates and conflicts -------------------------------------------------

def test_duplicate_message_is_stored_and_applied_once(env):
    w = env.worker()
    first = post(w, "dup-1", "order.started", "o-dup")
    post(w, "dup-1", "order.started", "o-dup", expect="duplicate")
    wait_terminal(env, ["dup-1"])
    # and again after it was processed
    post(w, "dup-1", "order.started", "o-dup", expect="duplicate")
    assert env.db.value("SELECT count(*) FROM webhook_inbox WHERE partner_event_id = 'dup-1'") == 1
    assert str(row(env, "dup-1")["id"]) == first["id"]
    assert entity(env, "o-dup") == {"state": "started", "version": 1}
    wait_queues_empty(env)
    assert [a["outcome"] for a in attempts_of(env, "dup-1")] == ["applied"]


def test_paid_after_cancelled_is_a_conflict_in_the_dlq(env):
    w = env.worker()
    sub = subscribe_alerts(env)
    try:
        # cancelled first, then paid (started is settled before cancelled is
        # sent: two events of one order that arrive together may be evaluated
        # in either order, and cancelled is also a draft's transition)
        post(w, "cx-started", "order.started", "o-cx")
        wait_terminal(env, ["cx-started"])
        post(w, "cx-cancelled", "order.cancelled", "o-cx")
        wait_terminal(env, ["cx-cancelled"])
        post(w, "cx-paid", "order.paid", "o-cx")
        # paid first (deferred: draft can still become started), then cancelled
        post(w, "cy-paid", "order.paid", "o-cy")
        wait_for(lambda: row(env, "cy-paid")["status"] == "DEFERRED", what="paid deferred on a draft order")
        post(w, "cy-cancelled", "order.cancelled", "o-cy")
        wait_terminal(env, ["cx-paid", "cy-paid", "cy-cancelled"])
        for oid, paid in (("o-cx", "cx-paid"), ("o-cy", "cy-paid")):
            r = row(env, paid)
            assert (r["status"], r["outcome"]) == ("QUARANTINED", "dead"), r
            dl = env.db.one("SELECT * FROM dead_letters WHERE source = 'inbox' AND source_id = %s", r["id"])
            assert dl is not None and dl["reason"] == "conflict", dl
            assert "cancelled" in dl["last_error"]
            assert entity(env, oid)["state"] == "cancelled"
        assert entity(env, "o-cx") == {"state": "cancelled", "version": 2}
        assert entity(env, "o-cy") == {"state": "cancelled", "version": 1}
        assert row(env, "cy-cancelled")["outcome"] == "applied"
        assert [a["outcome"] for a in attempts_of(env, "cy-paid")][-1] == "dead"
        alerts = collect_alerts(sub, 2)
        assert {a["id"] for a in alerts} == {str(row(env, "cx-paid")["id"]), str(row(env, "cy-paid")["id"])}
        assert all(a["event_type"] == "order.paid" and a["source"] == "inbox" for a in alerts)
    finally:
        sub.close()


SUB_MACHINE = """
[machine sub]
initial = new
on_conflict = ignore
transition sub.activated = new -> active
transition sub.cancelled = new, active -> cancelled
"""


def test_conflict_is_ignored_when_the_machine_says_so(env):
    w = env.worker(extra=SUB_MACHINE)
    post(w, "sub-cancelled", "sub.cancelled", "s1")
    wait_terminal(env, ["sub-cancelled"])
    post(w, "sub-activated", "sub.activated", "s1")
    wait_terminal(env, ["sub-activated"])
    r = row(env, "sub-activated")
    assert (r["status"], r["outcome"]) == ("PROCESSED", "ignored"), r
    assert env.db.value("SELECT count(*) FROM dead_letters") == 0
    assert entity(env, "s1", kind="sub") == {"state": "cancelled", "version": 1}
    assert [a["outcome"] for a in attempts_of(env, "sub-activated")] == ["ignored"]
    # the order machine keeps dead-lettering its conflicts
    post(w, "ord-cancelled", "order.cancelled", "o-s")
    wait_terminal(env, ["ord-cancelled"])
    post(w, "ord-paid", "order.paid", "o-s")
    wait_terminal(env, ["ord-paid"])
    assert row(env, "ord-paid")["status"] == "QUARANTINED"


# ---- poison events and the DLQ -----------------------------------------------

def test_poison_event_takes_four_attempts_then_dead_letters(env):
    # long enough that the events behind it finish while it still waits
    waits_ms = [500, 1000, 2000]
    w = env.worker(retry_schedule=", ".join(f"{ms}ms" for ms in waits_ms))
    sub = subscribe_alerts(env)
    try:
        post(w, "poison", "order.bogus", "o-poison")
        # events right behind it, and more while it waits between attempts
        behind = [f"b{i}" for i in range(10)]
        post_orders([w], [(oid, lifecycle(oid, "shuffled", random.Random(i))) for i, oid in enumerate(behind[:5])])
        wait_for(lambda: row(env, "poison")["attempts"] >= 1, what="the poison event's first failure")
        post_orders([w], [(oid, lifecycle(oid, "reversed")) for oid in behind[5:]])

        wait_for(lambda: row(env, "poison")["status"] == "QUARANTINED", timeout=20, what="poison dead-lettered")
        r = row(env, "poison")
        assert (r["attempts"], r["outcome"]) == (4, "dead")
        assert "order.bogus" in r["last_error"]

        hist = attempts_of(env, "poison")
        assert [a["outcome"] for a in hist] == ["retry", "retry", "retry", "dead"]
        assert all("no machine handles event type 'order.bogus'" in a["error"] for a in hist), hist
        # each retry waited at least its configured step (jitter is 0%)
        for prev, nxt, wait_ms in zip(hist, hist[1:], waits_ms):
            gap_ms = (nxt["attempted_at"] - prev["attempted_at"]).total_seconds() * 1000
            assert gap_ms >= wait_ms - 5, (gap_ms, wait_ms)

        dl = env.db.one("SELECT * FROM dead_letters WHERE source = 'inbox' AND source_id = %s", r["id"])
        assert dl is not None
        assert (dl["reason"], dl["attempts"], dl["replayed_at"]) == ("retries exhausted", 4, None)
        assert "order.bogus" in dl["last_error"]

        [alert] = collect_alerts(sub, 1)
        assert alert["source"] == "inbox" and alert["id"] == str(r["id"])
        assert alert["event_type"] == "order.bogus" and alert["attempts"] == 4
        assert alert["partner"] == "shop" and "order.bogus" in alert["reason"]
        assert "dlq.dead_letter" in w.output()

        # the poison event did not hold up anything behind it
        wait_all_terminal(env, 1 + 4 * len(behind))
        assert_lifecycles_converged(env, behind)
        late = env.db.all("SELECT partner_event_id, processed_at, deferrals FROM webhook_inbox"
                          " WHERE entity_id = ANY(%s) AND processed_at >= %s", behind, dl["dead_at"])
        assert not late, f"events behind the poison event waited for its dead letter at {dl['dead_at']}: {late}"
        assert env.db.value("SELECT count(*) FROM dead_letters") == 1
    finally:
        sub.close()


def test_deferral_past_max_age_is_dead_lettered(env):
    w = env.worker(defer_schedule="200ms, 400ms", defer_max_age="1500ms")
    post(w, "lonely-shipped", "order.shipped", "o-lonely")
    wait_for(lambda: row(env, "lonely-shipped")["status"] == "QUARANTINED", timeout=20,
             what="deferral to run out of time")
    r = row(env, "lonely-shipped")
    assert r["outcome"] == "dead" and r["deferrals"] >= 2, r
    assert "precondition never met" in r["last_error"]
    dl = env.db.one("SELECT * FROM dead_letters WHERE source = 'inbox' AND source_id = %s", r["id"])
    assert dl is not None and dl["reason"] == "precondition never met", dl
    hist = [a["outcome"] for a in attempts_of(env, "lonely-shipped")]
    assert hist[-1] == "dead" and set(hist[:-1]) == {"deferred"} and len(hist) == r["deferrals"] + 1
    # it waited for its precondition for most of max_age (the last wait would overshoot it)
    lived = env.db.value("SELECT extract(epoch FROM d.dead_at - i.received_at) FROM dead_letters d"
                         " JOIN webhook_inbox i ON i.id = d.source_id WHERE i.partner_event_id = 'lonely-shipped'")
    assert float(lived) >= 1.5 - 0.4 - 0.05
    assert entity(env, "o-lonely") == {"state": "draft", "version": 0}


# ---- failures that must cost only time ----------------------------------------

def test_flushed_redis_loses_nothing(env):
    w = env.worker(retry_schedule="500ms, 500ms, 500ms")
    rnd = random.Random(7)
    orders = [f"f{i:03d}" for i in range(120)]
    plan = [(oid, lifecycle(oid, "shuffled", rnd)) for oid in orders]
    post_orders([w], plan[:60])
    env.redis.flushall()
    post_orders([w], plan[60:])
    # poison events (distinct entities: no sibling will ever wake them),
    # flushed while they wait for their next attempt: nothing but the
    # reconciler can bring them back
    poison = [str(post(w, f"fpoison{i}", "order.bogus", f"fp{i}")["id"]) for i in range(5)]
    due = env.key("{inbox}:due")
    wait_for(lambda: all(env.redis.zscore(due, p) is not None for p in poison)
             and open_count(env, "fpoison%") == 5
             and env.db.value("SELECT min(attempts) FROM webhook_inbox WHERE partner_event_id LIKE 'fpoison%%'") >= 1,
             what="poison events waiting in the due set")
    env.redis.flushall()
    env.redis.script_flush()
    assert open_count(env, "fpoison%") == 5
    wait_all_terminal(env, 120 * 4 + 5, timeout=60)
    assert_lifecycles_converged(env, orders)
    for i in range(5):
        r = row(env, f"fpoison{i}")
        assert (r["status"], r["attempts"]) == ("QUARANTINED", 4), r
        assert [a["outcome"] for a in attempts_of(env, f"fpoison{i}")] == ["retry", "retry", "retry", "dead"]
    assert env.db.value("SELECT count(*) FROM dead_letters WHERE reason = 'retries exhausted'") == 5
    wait_queues_empty(env)
    w.alive()


def test_killed_worker_leases_are_taken_over(env):
    cfg = dict(lease="2s")
    ingest = env.worker(config=with_hookd_keys(env.config(**cfg), roles="ingest"))
    a = env.worker(config=with_hookd_keys(env.config(**cfg), roles="inbox"))
    a_id = worker_id(env, a)
    inflight = env.key("{inbox}:inflight")
    due = env.key("{inbox}:due")
    rnd = random.Random(11)
    orders = [f"k{i:03d}" for i in range(150)]
    plan = [(oid, lifecycle(oid, ("natural", "reversed", "shuffled")[i % 3], rnd)) for i, oid in enumerate(orders)]
    held: list[str] = []
    a.signal(signal.SIGSTOP)
    try:
        post_orders([ingest], plan)
        wait_for(lambda: env.redis.zcard(due) == 600, what="all 600 events scheduled")
        # let A claim, then freeze it while it holds leases, then kill it
        for _ in range(20):
            a.signal(signal.SIGCONT)
            deadline = time.monotonic() + 5
            while env.redis.zcard(inflight) == 0 and time.monotonic() < deadline:
                pass
            a.signal(signal.SIGSTOP)
            held = env.redis.zrange(inflight, 0, -1)
            if held:
                break
        assert held, "worker A never held a lease"
    finally:
        a.kill9()
    done_by_a = env.db.value("SELECT count(*) FROM webhook_inbox WHERE status IN ('PROCESSED', 'QUARANTINED')")
    assert done_by_a < 600, "worker A finished everything before it was killed: nothing to take over"

    b = env.worker(config=with_hookd_keys(env.config(**cfg), roles="inbox"))
    b_id = worker_id(env, b)
    wait_all_terminal(env, 600, timeout=60)
    assert env.db.value("SELECT count(*) FROM webhook_inbox WHERE status <> 'PROCESSED'") == 0
    assert_lifecycles_converged(env, orders)
    # what A held when it died was finished by B, after B reaped the leases
    by_b = env.db.value("SELECT count(DISTINCT source_id) FROM attempts WHERE source_id::text = ANY(%s)"
                        " AND worker_id = %s", held, b_id)
    assert by_b > 0, "no event that A held was evaluated by B"
    assert env.db.value("SELECT count(*) FROM attempts WHERE worker_id NOT IN (%s, %s)", a_id, b_id) == 0
    assert "sched.reaped" in b.output()
    wait_queues_empty(env)


@pytest.mark.slow
def test_three_workers_apply_5000_events_exactly_once(env):
    workers = [env.worker() for _ in range(3)]
    rnd = random.Random(5000)
    orders = [f"big{i:04d}" for i in range(1250)]
    plan = [(oid, lifecycle(oid, ("natural", "reversed", "shuffled", "natural")[i % 4], rnd))
            for i, oid in enumerate(orders)]
    post_orders(workers, plan, threads=12)
    assert env.db.value("SELECT count(*) FROM webhook_inbox") == 5000
    wait_all_terminal(env, 5000, timeout=180)
    assert env.db.value("SELECT count(*) FROM webhook_inbox WHERE status <> 'PROCESSED'") == 0
    assert_lifecycles_converged(env, orders)
    assert env.db.value("SELECT count(*) FROM webhook_inbox WHERE outcome = 'applied'") == 3 * 1250
    assert env.db.value("SELECT sum(version) FROM hookd_entities WHERE entity_type = 'order'") == 3 * 1250
    assert env.db.value("SELECT count(*) FROM dead_letters") == 0
    ids = {worker_id(env, w) for w in workers}
    active = {r["worker_id"] for r in env.db.all("SELECT DISTINCT worker_id FROM attempts")}
    assert active <= ids and len(active) == 3, f"not all three workers evaluated events: {active}"
    wait_queues_empty(env)
    for w in workers:
        w.alive()


@pytest.mark.slow
def test_redis_outage_loses_nothing(env, services):
    w = env.worker()
    rnd = random.Random(10)
    before = [f"rb{i:02d}" for i in range(30)]
    during = [f"rd{i:02d}" for i in range(30)]
    post_orders([w], [(oid, lifecycle(oid, "shuffled", rnd)) for oid in before])
    services.stop_redis()
    try:
        started = time.monotonic()
        # accepted while Redis is down: Postgres is the truth
        post_orders([w], [(oid, lifecycle(oid, "shuffled", rnd)) for oid in during], threads=2)
        post(w, "rpoison", "order.bogus", "rp")
        # the outage itself is what this test is about: keep Redis down ~10 s
        time.sleep(max(0.0, 10 - (time.monotonic() - started)))
        assert w.get("/readyz")[0] == 503
    finally:
        services.start_redis()
    wait_all_terminal(env, 60 * 4 + 1, timeout=60)
    assert_lifecycles_converged(env, before + during)
    r = row(env, "rpoison")
    assert (r["status"], r["attempts"]) == ("QUARANTINED", 4)
    assert [a["outcome"] for a in attempts_of(env, "rpoison")] == ["retry", "retry", "retry", "dead"]
    wait_queues_empty(env)
    wait_for(w.ready, what="ready again")
