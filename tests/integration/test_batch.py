"""Big mixed batches through the inbox's set-based path (engine/inbox_batch.c).

Every test seeds webhook_inbox directly with PENDING rows before its worker
starts: the start-up reconciler puts them all into the due set at once and
the scheduler claims them in batches of up to batch_size, so one batch holds
many entities, several events of one entity, out-of-order events and the
events that enable them, failures, conflicts, machines with their own entity
tables and machines with follow-up outbox events. What must hold is what
holds for single events: each entity ends in the right state with exactly one
applied transition per applied event, every evaluation leaves an attempts
row, deferred events are woken by the apply that enables them, failures and
conflicts end where they should, and contention between workers costs no
attempt.

All attempts rows written by one batch transaction share attempted_at (the
transaction's now()); the set-based path also charges each of them the same
share of the batch's duration. The tests use that to check that the events
they mean to put into one batch really were evaluated together."""
import json
import random
from pathlib import Path

import psycopg2.extras

from hookdtest.util import wait_for

FINAL = ("applied", "noop", "ignored", "dead")


# ---- helpers ------------------------------------------------------------------

def with_hookd_keys(cfg: Path, **keys) -> Path:
    """Adds [hookd] keys the harness template does not carry."""
    lines = "".join(f"{k} = {v}\n" for k, v in keys.items())
    text = cfg.read_text()
    assert "[hookd]\n" in text
    cfg.write_text(text.replace("[hookd]\n", "[hookd]\n" + lines, 1))
    return cfg


def one_batch_config(env, extra: str = "", **overrides) -> Path:
    """A config whose first claim takes everything these tests seed (fewer
    than 1,000 rows: one reconciler page, one ZADD, one claim, one job)."""
    return with_hookd_keys(env.config(extra=extra, **overrides), batch_size=1000, max_inflight=2000)


def ev(msg: str, event_type: str, entity_id, at: int, entity_type: str | None = "order",
       due_ago: int = 0, payload: dict | None = None) -> dict:
    """One inbox row to seed. `at`: receipt time in ms after a base ten
    minutes ago (the receipt order); `due_ago`: next_attempt_at this many ms
    in the past (the claim order)."""
    return dict(msg=msg, type=event_type, entity_id=entity_id, at=at, entity_type=entity_type, due_ago=due_ago,
                payload=payload if payload is not None
                else {"type": event_type, "data": {"order_id": entity_id, "msg": msg}})


def seed(env, events: list[dict]) -> None:
    """Inserts the rows as ingest would have (entity_type = the machine that
    handles the event type, NULL when none does), all PENDING."""
    rows = [(e["msg"], json.dumps(e["payload"]), e["type"], e["entity_type"], e["entity_id"], e["at"], e["due_ago"])
            for e in events]
    with env.db.conn.cursor() as cur:
        psycopg2.extras.execute_values(
            cur,
            "INSERT INTO webhook_inbox (partner_name, partner_event_id, payload, signature_verified, event_type,"
            " entity_type, entity_id, received_at, next_attempt_at) VALUES %s",
            rows,
            template="('shop', %s, %s::jsonb, true, %s, %s, %s,"
                     " now() - interval '10 minutes' + %s * interval '1 millisecond',"
                     " now() - %s * interval '1 millisecond')",
            page_size=1000)
    assert env.db.value("SELECT count(*) FROM webhook_inbox WHERE status = 'PENDING'") >= len(events)


def receipt_times(rnd: random.Random, n: int) -> list[int]:
    """n distinct receipt offsets (ms) in random order."""
    return rnd.sample(range(0, 300_000), n)


def open_rows(env, limit: int = 10):
    return env.db.all("SELECT partner_event_id, status, attempts, deferrals, next_attempt_at - now() AS due_in,"
                      " last_error FROM webhook_inbox WHERE status NOT IN ('PROCESSED', 'QUARANTINED')"
                      " ORDER BY received_at LIMIT %s", limit)


def wait_all_terminal(env, expected: int, timeout: float, workers=(), what: str = "every event to finish"):
    def done():
        for w in workers:
            w.alive()
        return (env.db.value("SELECT count(*) FROM webhook_inbox WHERE status IN ('PROCESSED', 'QUARANTINED')")
                == expected)
    try:
        wait_for(done, timeout=timeout, interval=0.1, what=what)
    except AssertionError:
        logs = "\n".join(w.output()[-3000:] for w in workers)
        raise AssertionError(f"{what} within {timeout}s: still open (first 10): {open_rows(env)}\n{logs}")
    assert env.db.value("SELECT count(*) FROM webhook_inbox") == expected


def wait_queues_empty(env):
    due, inflight = env.key("{inbox}:due"), env.key("{inbox}:inflight")
    wait_for(lambda: env.redis.zcard(due) == 0 and env.redis.zcard(inflight) == 0,
             what="inbox due and inflight sets to drain")


def row(env, msg: str):
    return env.db.one("SELECT * FROM webhook_inbox WHERE partner_event_id = %s", msg)


def history(env, msg: str) -> list[dict]:
    return env.db.all("SELECT a.* FROM attempts a JOIN webhook_inbox i ON i.id = a.source_id"
                      " WHERE a.source = 'inbox' AND i.partner_event_id = %s ORDER BY a.id", msg)


def entity(env, entity_id: str, kind: str = "order"):
    return env.db.one("SELECT state, version FROM hookd_entities WHERE entity_type = %s AND entity_id = %s",
                      kind, entity_id)


def largest_set_based_batch(env) -> int:
    """The most attempts one transaction wrote with one shared duration: the
    set-based path's fingerprint (per-event evaluations time each event)."""
    return env.db.value("SELECT coalesce(max(n), 0) FROM (SELECT count(*) AS n FROM attempts WHERE source = 'inbox'"
                        " GROUP BY worker_id, attempted_at, duration_ms) g")


def assert_exactly_once(env, kind: str, entity_ids: list[str], state: str, applied: int):
    """Each entity in `state` with version == applied rows == `applied`."""
    got = env.db.all(
        "SELECT e.entity_id, e.state, e.version,"
        "  (SELECT count(*) FROM webhook_inbox i WHERE i.entity_type = e.entity_type AND i.entity_id = e.entity_id"
        "    AND i.outcome = 'applied') AS applied"
        " FROM hookd_entities e WHERE e.entity_type = %s AND e.entity_id = ANY(%s)", kind, entity_ids)
    assert len(got) == len(entity_ids), f"{len(entity_ids) - len(got)} {kind} entities have no row"
    wrong = [r for r in got if (r["state"], r["version"], r["applied"]) != (state, applied, applied)]
    assert not wrong, f"{len(wrong)} {kind} entities are not ({state}, version {applied}, {applied} applied)," \
                      f" e.g. {wrong[:5]}"


def assert_attempt_history_consistent(env, like: str = "%"):
    """Every row: one attempts row per evaluation (its deferrals, its failed
    attempts, and one final verdict that matches the row), nothing else."""
    bad = env.db.all(
        "SELECT i.partner_event_id, i.status, i.outcome, i.deferrals, i.attempts,"
        "  array_agg(a.outcome ORDER BY a.id) AS hist"
        " FROM webhook_inbox i LEFT JOIN attempts a ON a.source = 'inbox' AND a.source_id = i.id"
        " WHERE i.partner_event_id LIKE %s"
        " GROUP BY i.id, i.part_at"  # the primary key (sql/0012_retention.sql)
        " HAVING count(a.id) <> i.deferrals + i.attempts + CASE WHEN i.outcome = 'dead' AND i.attempts > 0"
        "        THEN 0 ELSE 1 END"
        "   OR count(a.id) FILTER (WHERE a.outcome = ANY(%s)) <> 1"
        "   OR bool_or(a.outcome = ANY(%s) AND a.outcome <> i.outcome)"
        "   OR count(a.id) FILTER (WHERE a.outcome = 'deferred') <> i.deferrals",
        like, list(FINAL), list(FINAL))
    assert not bad, f"{len(bad)} rows whose attempt history does not match their row, e.g. {bad[:5]}"


# ---- 1. one worker, many entities, shuffled lifecycles --------------------------

def test_bulk_shuffled_lifecycles_apply_exactly_once(env):
    rnd = random.Random(1)
    orders = [f"o{i:03d}" for i in range(300)]
    events = []
    for k, oid in enumerate(orders):
        types = ["order.started", "order.paid", "order.shipped", "order.started"]
        if k % 3 == 0:
            types.append("order.paid")     # a duplicate with its own message id
        if k % 5 == 0:
            types.append("order.shipped")
        for j, (t, at) in enumerate(zip(types, receipt_times(rnd, len(types)))):
            events.append(ev(f"{oid}-{j}", t, oid, at, due_ago=rnd.randrange(0, 5000)))
    seed(env, events)
    w = env.worker()
    wait_all_terminal(env, len(events), timeout=45, workers=[w])

    assert env.db.value("SELECT count(*) FROM webhook_inbox WHERE status <> 'PROCESSED'") == 0
    assert env.db.all("SELECT DISTINCT outcome FROM webhook_inbox ORDER BY 1") == [{"outcome": "applied"},
                                                                                 {"outcome": "noop"}]
    assert_exactly_once(env, "order", orders, "shipped", 3)
    assert env.db.value("SELECT count(*) FROM hookd_entities") == len(orders)
    noops = env.db.value("SELECT count(*) FROM webhook_inbox WHERE outcome = 'noop'")
    assert noops == len(events) - 3 * len(orders)
    assert_attempt_history_consistent(env)
    assert env.db.value("SELECT count(*) FROM attempts WHERE outcome NOT IN ('applied', 'noop', 'deferred')") == 0
    assert env.db.value("SELECT max(attempts) FROM webhook_inbox") == 0
    assert env.db.value("SELECT count(*) FROM dead_letters") == 0
    # the shuffled receipt order made events wait for their precondition,
    # and they healed
    assert env.db.value("SELECT count(*) FROM webhook_inbox WHERE deferrals > 0") > 0
    # and the work went through the set-based path in big batches
    assert largest_set_based_batch(env) >= 50, "no batch of 50+ events was evaluated set-based"
    wait_queues_empty(env)
    w.alive()


# ---- 2. a deferral and its enabling event in one batch ---------------------------

def test_deferred_event_is_woken_by_its_enabler_in_the_same_batch(env):
    # The defer schedule is 30 s: only the wake-up by the apply in the same
    # batch can explain the deferred events finishing within seconds.
    events, fwd, rev = [], [f"w{i:02d}" for i in range(15)], [f"r{i:02d}" for i in range(15)]
    for i, oid in enumerate(fwd):      # started, shipped (must wait), paid (enables it)
        for j, t in enumerate(("order.started", "order.shipped", "order.paid")):
            events.append(ev(f"{oid}-{t.split('.')[1]}", t, oid, 100 * i + j))
    for i, oid in enumerate(rev):      # paid, shipped (both wait), started (enables paid)
        for j, t in enumerate(("order.paid", "order.shipped", "order.started")):
            events.append(ev(f"{oid}-{t.split('.')[1]}", t, oid, 5000 + 100 * i + j))
    seed(env, events)
    w = env.worker(config=one_batch_config(env, defer_schedule="30s", defer_max_age="1h"))
    wait_all_terminal(env, len(events), timeout=15, workers=[w],
                      what="deferred events to be woken by their enablers (the defer schedule is 30 s)")

    # precondition: the first evaluation of every event was one transaction
    firsts = env.db.all("SELECT DISTINCT ON (source_id) attempted_at, duration_ms FROM attempts"
                        " ORDER BY source_id, id")
    assert len({f["attempted_at"] for f in firsts}) == 1, "the seeded events were not evaluated in one batch"
    assert len({f["duration_ms"] for f in firsts}) == 1, "the batch was not evaluated set-based"

    assert env.db.value("SELECT count(*) FROM webhook_inbox WHERE (status, outcome) <> ('PROCESSED', 'applied')") == 0
    assert_exactly_once(env, "order", fwd + rev, "shipped", 3)
    assert_attempt_history_consistent(env)

    def waited_and_woken(msg: str, enabler: str):
        h = history(env, msg)
        assert [a["outcome"] for a in h] == ["deferred", "applied"], (msg, h)
        assert row(env, msg)["deferrals"] == 1
        [applied] = [a for a in history(env, enabler) if a["outcome"] == "applied"]
        # deferred by the same transaction that applied its enabler ...
        assert h[0]["attempted_at"] == applied["attempted_at"], (msg, h[0], applied)
        # ... and evaluated again at once, not after the 30 s defer step
        took = (h[1]["attempted_at"] - h[0]["attempted_at"]).total_seconds()
        assert took < 10, f"{msg} applied {took:.1f} s after its deferral"

    for oid in fwd:
        waited_and_woken(f"{oid}-shipped", f"{oid}-paid")
        assert [a["outcome"] for a in history(env, f"{oid}-started")] == ["applied"]
        assert [a["outcome"] for a in history(env, f"{oid}-paid")] == ["applied"]
    for oid in rev:
        waited_and_woken(f"{oid}-paid", f"{oid}-started")
        waited_and_woken(f"{oid}-shipped", f"{oid}-started")
        assert [a["outcome"] for a in history(env, f"{oid}-started")] == ["applied"]
    wait_queues_empty(env)


# ---- 3. conflicts, failures, ignored conflicts and good events in one batch -------

SUB_MACHINE = """
[machine sub]
initial = new
on_conflict = ignore
transition sub.activated = new -> active
transition sub.cancelled = new, active -> cancelled
"""


def test_mixed_batch_of_conflicts_failures_and_good_events(env):
    rnd = random.Random(3)
    events = []
    good = [f"ok{i:02d}" for i in range(30)]
    for oid in good:
        types = ["order.started", "order.paid", "order.shipped", "order.started"]
        for j, (t, at) in enumerate(zip(types, receipt_times(rnd, 4))):
            events.append(ev(f"{oid}-{j}", t, oid, at))
    # conflicts against entities that are already cancelled ...
    pre_cancelled = [f"cx{i}" for i in range(10)]
    env.db.all("INSERT INTO hookd_entities (entity_type, entity_id, state, version)"
               " SELECT 'order', x, 'cancelled', 1 FROM unnest(%s::text[]) x", pre_cancelled)
    for oid in pre_cancelled:
        events.append(ev(f"{oid}-paid", "order.paid", oid, rnd.randrange(300_000)))
    # ... and against entities cancelled earlier in the same batch
    cancelled_here = [f"cy{i}" for i in range(10)]
    for i, oid in enumerate(cancelled_here):
        for j, t in enumerate(("order.started", "order.cancelled", "order.paid")):
            events.append(ev(f"{oid}-{t.split('.')[1]}", t, oid, 400_000 + 10 * i + j))
    # a machine that ignores its conflicts, both kinds
    subs = [f"s{i}" for i in range(10)]
    for i, sid in enumerate(subs):
        events.append(ev(f"{sid}-cancelled", "sub.cancelled", sid, 500_000 + 10 * i, entity_type="sub"))
        events.append(ev(f"{sid}-activated", "sub.activated", sid, 500_000 + 10 * i + 1, entity_type="sub"))
    pre_subs = [f"ps{i}" for i in range(5)]
    env.db.all("INSERT INTO hookd_entities (entity_type, entity_id, state, version)"
               " SELECT 'sub', x, 'cancelled', 1 FROM unnest(%s::text[]) x", pre_subs)
    for sid in pre_subs:
        events.append(ev(f"{sid}-activated", "sub.activated", sid, rnd.randrange(300_000), entity_type="sub"))
    # failures: an event type no machine handles, events without an entity id
    bogus = [f"bogus{i}" for i in range(3)]
    for i, msg in enumerate(bogus):
        events.append(ev(msg, "order.bogus", f"b{i}", rnd.randrange(300_000), entity_type=None))
    no_id = [f"noid{i}" for i in range(3)]
    for msg in no_id:
        events.append(ev(msg, "order.started", None, rnd.randrange(300_000)))
    seed(env, events)

    w = env.worker(config=one_batch_config(env, extra=SUB_MACHINE, retry_schedule="2s, 200ms, 200ms"))
    # after the first (batch) evaluation the failures wait 2 s for attempt 2
    failing = bogus + no_id
    wait_for(lambda: env.db.value("SELECT count(*) FROM webhook_inbox WHERE partner_event_id = ANY(%s)"
                                  " AND status = 'RETRYING' AND attempts = 1", failing) == len(failing),
             timeout=10, what="the failing events to wait for their second attempt")
    for msg in bogus:
        r = row(env, msg)
        assert "'order.bogus'" in r["last_error"] and r["outcome"] is None, r
    for msg in no_id:
        r = row(env, msg)
        assert "entity id" in r["last_error"] and r["outcome"] is None, r

    wait_all_terminal(env, len(events), timeout=20, workers=[w])
    # precondition: the first evaluation of every event was one set-based batch
    firsts = env.db.all("SELECT DISTINCT ON (source_id) attempted_at, duration_ms FROM attempts"
                        " ORDER BY source_id, id")
    assert len(firsts) == len(events)
    assert len({(f["attempted_at"], f["duration_ms"]) for f in firsts}) == 1, \
        "the seeded events were not evaluated in one set-based batch"

    assert_exactly_once(env, "order", good, "shipped", 3)
    assert env.db.value("SELECT count(*) FROM webhook_inbox WHERE entity_id = ANY(%s)"
                        " AND (status, outcome) NOT IN (('PROCESSED', 'applied'), ('PROCESSED', 'noop'))", good) == 0
    assert env.db.value("SELECT max(attempts) FROM webhook_inbox WHERE entity_id = ANY(%s)", good) == 0

    def dead_letter(msg: str):
        return env.db.one("SELECT d.* FROM dead_letters d JOIN webhook_inbox i ON i.id = d.source_id"
                          " WHERE d.source = 'inbox' AND i.partner_event_id = %s", msg)

    for oid in pre_cancelled + cancelled_here:
        r = row(env, f"{oid}-paid")
        assert (r["status"], r["outcome"], r["attempts"]) == ("QUARANTINED", "dead", 1), r
        dl = dead_letter(f"{oid}-paid")
        assert dl is not None and (dl["reason"], dl["attempts"]) == ("conflict", 1), dl
        assert "cancelled" in dl["last_error"], dl
        assert [a["outcome"] for a in history(env, f"{oid}-paid")] == ["dead"]
    for oid in pre_cancelled:
        assert entity(env, oid) == {"state": "cancelled", "version": 1}
    for oid in cancelled_here:
        assert entity(env, oid) == {"state": "cancelled", "version": 2}
        assert row(env, f"{oid}-cancelled")["outcome"] == "applied"

    for sid in subs + pre_subs:
        r = row(env, f"{sid}-activated")
        assert (r["status"], r["outcome"]) == ("PROCESSED", "ignored"), r
        assert [a["outcome"] for a in history(env, f"{sid}-activated")] == ["ignored"]
        assert entity(env, sid, kind="sub") == {"state": "cancelled", "version": 1}
    for sid in subs:
        assert row(env, f"{sid}-cancelled")["outcome"] == "applied"

    for msg in failing:
        r = row(env, msg)
        assert (r["status"], r["outcome"], r["attempts"]) == ("QUARANTINED", "dead", 4), r
        assert [a["outcome"] for a in history(env, msg)] == ["retry", "retry", "retry", "dead"]
        dl = dead_letter(msg)
        assert dl is not None and (dl["reason"], dl["attempts"]) == ("retries exhausted", 4), dl
    for msg in bogus:
        assert all("no machine handles event type 'order.bogus'" in a["error"] for a in history(env, msg))
    for msg in no_id:
        assert all("entity id" in a["error"] for a in history(env, msg))
    assert env.db.value("SELECT count(*) FROM hookd_entities WHERE entity_id LIKE 'b_'") == 0

    assert env.db.value("SELECT count(*) FROM dead_letters") == len(pre_cancelled) + len(cancelled_here) + \
        len(failing)
    assert env.db.value("SELECT count(*) FROM webhook_inbox WHERE outcome = 'ignored'") == len(subs) + len(pre_subs)
    assert_attempt_history_consistent(env)
    wait_queues_empty(env)


# ---- 4. a built-in machine and a machine with its own table in one batch -----------

SHIP_MACHINE = """
[machine ship]
table = shipments
id_column = id
state_column = status
version_column = version
initial = new
create = true
transition ship.packed = new -> packed
transition ship.sent = packed -> sent
transition ship.delivered = sent -> delivered
"""

SHIPMENTS_TABLE = "CREATE TABLE shipments (id text PRIMARY KEY, status text NOT NULL, version int NOT NULL DEFAULT 0)"


def test_builtin_and_user_table_machines_in_one_batch(env):
    rnd = random.Random(4)
    env.db.all(SHIPMENTS_TABLE)
    ships = [f"sh{i:02d}" for i in range(40)]
    env.db.all("INSERT INTO shipments (id, status) SELECT x, 'new' FROM unnest(%s::text[]) x", ships[:20])
    orders = [f"ord{i:02d}" for i in range(40)]
    events = []
    for sid in ships:   # half exist already, half are created in their initial state
        types = ["ship.packed", "ship.sent", "ship.delivered", "ship.sent"]
        for j, (t, at) in enumerate(zip(types, receipt_times(rnd, 4))):
            events.append(ev(f"{sid}-{j}", t, sid, at, entity_type="ship"))
    for oid in orders:
        types = ["order.started", "order.paid", "order.shipped", "order.started"]
        for j, (t, at) in enumerate(zip(types, receipt_times(rnd, 4))):
            events.append(ev(f"{oid}-{j}", t, oid, at))
    seed(env, events)
    w = env.worker(config=one_batch_config(env, extra=SHIP_MACHINE))
    wait_all_terminal(env, len(events), timeout=30, workers=[w])

    firsts = env.db.all("SELECT DISTINCT ON (a.source_id) a.attempted_at, i.entity_type FROM attempts a"
                        " JOIN webhook_inbox i ON i.id = a.source_id ORDER BY a.source_id, a.id")
    assert len({f["attempted_at"] for f in firsts}) == 1, "the seeded events were not evaluated in one batch"
    assert {f["entity_type"] for f in firsts} == {"ship", "order"}

    assert env.db.value("SELECT count(*) FROM webhook_inbox WHERE status <> 'PROCESSED'"
                        " OR outcome NOT IN ('applied', 'noop')") == 0
    assert_exactly_once(env, "order", orders, "shipped", 3)
    got = env.db.all(
        "SELECT s.id, s.status, s.version, (SELECT count(*) FROM webhook_inbox i WHERE i.entity_type = 'ship'"
        "   AND i.entity_id = s.id AND i.outcome = 'applied') AS applied FROM shipments s ORDER BY s.id")
    assert [r["id"] for r in got] == ships
    wrong = [r for r in got if (r["status"], r["version"], r["applied"]) != ("delivered", 3, 3)]
    assert not wrong, f"{len(wrong)} shipments did not end delivered with 3 applied transitions: {wrong[:5]}"
    # the user table's entities stayed out of hookd_entities
    assert env.db.value("SELECT count(*) FROM hookd_entities WHERE entity_type = 'ship'") == 0
    assert env.db.value("SELECT count(*) FROM hookd_entities") == len(orders)
    assert env.db.value("SELECT count(*) FROM webhook_inbox WHERE outcome = 'noop'") == len(ships) + len(orders)
    assert env.db.value("SELECT max(attempts) FROM webhook_inbox") == 0
    assert_attempt_history_consistent(env)
    wait_queues_empty(env)


# ---- 5. follow-up outbox events written by a bulk batch -----------------------------

PARCEL_MACHINE = """
[machine parcel]
initial = new
transition parcel.packed = new -> packed
transition parcel.sent = packed -> sent
transition parcel.delivered = sent -> delivered
emit parcel.sent = parcel.notify_sent
emit parcel.delivered = parcel.notify_delivered
"""


def test_bulk_batch_emits_one_outbox_event_per_applied_transition(env):
    rnd = random.Random(5)
    parcels = [f"p{i:03d}" for i in range(150)]
    events = []
    for pid in parcels:
        types = ["parcel.packed", "parcel.sent", "parcel.delivered", "parcel.sent"]
        for j, (t, at) in enumerate(zip(types, receipt_times(rnd, 4))):
            msg = f"{pid}-{j}"
            events.append(ev(msg, t, pid, at, entity_type="parcel", due_ago=rnd.randrange(0, 3000),
                             payload={"type": t, "data": {"order_id": pid, "msg": msg, "n": rnd.random()}}))
    seed(env, events)
    w = env.worker(config=with_hookd_keys(env.config(extra=PARCEL_MACHINE), roles="inbox"))
    wait_all_terminal(env, len(events), timeout=30, workers=[w])
    assert largest_set_based_batch(env) >= 50, "no batch of 50+ events was evaluated set-based"

    assert env.db.value("SELECT count(*) FROM webhook_inbox WHERE status <> 'PROCESSED'") == 0
    assert_exactly_once(env, "parcel", parcels, "delivered", 3)
    assert env.db.value("SELECT count(*) FROM outbox_events") == 2 * len(parcels)
    per = env.db.all("SELECT aggregate_id, event_type, count(*) AS n FROM outbox_events"
                     " GROUP BY 1, 2 HAVING count(*) <> 1")
    assert not per, f"outbox events not exactly once per transition: {per[:5]}"
    # each one is exactly the applied event's follow-up, in its transaction
    mismatched = env.db.all(
        "SELECT o.aggregate_id, o.event_type, o.payload, i.partner_event_id, i.outcome"
        " FROM outbox_events o JOIN webhook_inbox i ON i.id::text = o.payload->>'inbox_id'"
        " WHERE o.aggregate_type IS DISTINCT FROM 'parcel' OR o.aggregate_id IS DISTINCT FROM i.entity_id"
        "  OR i.outcome <> 'applied'"
        "  OR o.event_type <> CASE i.event_type WHEN 'parcel.sent' THEN 'parcel.notify_sent'"
        "                      WHEN 'parcel.delivered' THEN 'parcel.notify_delivered' END"
        "  OR o.payload->>'type' IS DISTINCT FROM o.event_type"
        "  OR o.payload->>'entity_type' IS DISTINCT FROM 'parcel'"
        "  OR o.payload->>'entity_id' IS DISTINCT FROM i.entity_id"
        "  OR o.payload->>'cause' IS DISTINCT FROM i.event_type"
        "  OR (o.payload->>'from', o.payload->>'to') IS DISTINCT FROM"
        "     (CASE i.event_type WHEN 'parcel.sent' THEN ('packed'::text, 'sent'::text)"
        "                        WHEN 'parcel.delivered' THEN ('sent'::text, 'delivered'::text) END)"
        "  OR o.payload->'data' IS DISTINCT FROM i.payload"
        "  OR o.created_at IS DISTINCT FROM i.processed_at")
    assert not mismatched, f"{len(mismatched)} outbox events do not match their inbox event: {mismatched[:3]}"
    linked = env.db.value("SELECT count(*) FROM outbox_events o JOIN webhook_inbox i"
                          " ON i.id::text = o.payload->>'inbox_id'")
    assert linked == 2 * len(parcels), "outbox events whose inbox_id names no inbox event"
    # no follow-ups for the transition without emit, nor for no-ops
    assert env.db.value("SELECT count(*) FROM webhook_inbox i WHERE (i.event_type = 'parcel.packed'"
                        " OR i.outcome = 'noop') AND EXISTS (SELECT 1 FROM outbox_events o"
                        " WHERE o.payload->>'inbox_id' = i.id::text)") == 0
    assert_attempt_history_consistent(env)
    wait_queues_empty(env)


# ---- 6. two workers contending on the same entities --------------------------------

def test_two_workers_on_one_bulk_set_apply_exactly_once_without_charged_attempts(env):
    rnd = random.Random(6)
    orders = [f"c{i:03d}" for i in range(200)]
    types = ["order.started"] * 3 + ["order.paid"] * 3 + ["order.shipped"] * 4
    events = []
    for oid in orders:
        for j, (t, at) in enumerate(zip(types, receipt_times(rnd, len(types)))):
            events.append(ev(f"{oid}-{j}", t, oid, at, due_ago=rnd.randrange(0, 3000)))
    assert len(events) == 2000
    seed(env, events)
    workers = [env.worker(config=with_hookd_keys(env.config(), roles="inbox"), wait_ready=False) for _ in range(2)]
    for w in workers:
        w.wait_ready()
    wait_all_terminal(env, len(events), timeout=60, workers=workers)

    assert env.db.value("SELECT count(*) FROM webhook_inbox WHERE status <> 'PROCESSED'") == 0
    assert_exactly_once(env, "order", orders, "shipped", 3)
    assert env.db.value("SELECT count(*) FROM webhook_inbox WHERE outcome = 'noop'") == 7 * len(orders)
    # lock contention is "busy": due again soon, never a failed attempt
    charged = env.db.all("SELECT partner_event_id, attempts, last_error FROM webhook_inbox WHERE attempts <> 0")
    assert not charged, f"{len(charged)} valid events were charged failed attempts, e.g. {charged[:5]}"
    failed = env.db.all("SELECT source_id, outcome, error FROM attempts WHERE outcome NOT IN"
                        " ('applied', 'noop', 'deferred')")
    assert not failed, f"{len(failed)} failed attempts of valid events, e.g. {failed[:5]}"
    assert env.db.value("SELECT count(*) FROM dead_letters") == 0
    assert_attempt_history_consistent(env)
    # both workers did part of it, in big set-based batches
    assert env.db.value("SELECT count(DISTINCT worker_id) FROM attempts") == 2, "one worker did everything"
    # and they contended: most entities had events evaluated by both
    shared = env.db.value("SELECT count(*) FROM (SELECT i.entity_id FROM attempts a JOIN webhook_inbox i"
                          " ON i.id = a.source_id GROUP BY 1 HAVING count(DISTINCT a.worker_id) = 2) x")
    assert shared >= len(orders) // 4, f"only {shared} entities were worked on by both workers"
    assert largest_set_based_batch(env) >= 50, "no batch of 50+ events was evaluated set-based"
    wait_queues_empty(env)
    for w in workers:
        w.alive()


# ---- 4b. a deferral woken in the same batch, for a machine with its own table -------

def test_user_table_deferred_event_is_woken_by_its_enabler_in_the_same_batch(env):
    # As test 2, for a machine whose entities live in the application's
    # table (the per-event path inside the batch transaction): delivered
    # arrives between packed and sent, waits, and sent's apply in the same
    # batch must bring it back at once, not after the 30 s defer step.
    env.db.all(SHIPMENTS_TABLE)
    ships = [f"u{i:02d}" for i in range(10)]
    env.db.all("INSERT INTO shipments (id, status) SELECT x, 'new' FROM unnest(%s::text[]) x", ships)
    events = []
    for i, sid in enumerate(ships):
        for j, t in enumerate(("ship.packed", "ship.delivered", "ship.sent")):
            events.append(ev(f"{sid}-{t.split('.')[1]}", t, sid, 100 * i + j, entity_type="ship"))
    seed(env, events)
    w = env.worker(config=one_batch_config(env, extra=SHIP_MACHINE, defer_schedule="30s", defer_max_age="1h"))
    try:
        wait_all_terminal(env, len(events), timeout=12, workers=[w],
                          what="deferred events of a user-table machine to be woken (the defer schedule is 30 s)")
    except AssertionError:
        due = env.key("{inbox}:due")
        stuck = env.db.all("SELECT id::text, partner_event_id, status, next_attempt_at <= now() AS due_in_pg"
                           " FROM webhook_inbox WHERE status = 'DEFERRED' ORDER BY received_at LIMIT 3")
        for s in stuck:
            score = env.redis.zscore(due, s["id"])
            s["redis_due_in_s"] = None if score is None else round(score / 1000 - env.db.value(
                "SELECT extract(epoch FROM now())::float"), 1)
        raise AssertionError(f"deferred siblings not woken within the batch; Postgres says due, Redis says"
                             f" later: {stuck}")
    firsts = env.db.all("SELECT DISTINCT ON (source_id) attempted_at FROM attempts ORDER BY source_id, id")
    assert len({f["attempted_at"] for f in firsts}) == 1, "the seeded events were not evaluated in one batch"
    for sid in ships:
        h = history(env, f"{sid}-delivered")
        assert [a["outcome"] for a in h] == ["deferred", "applied"], (sid, h)
    got = env.db.all("SELECT status, version FROM shipments ORDER BY id")
    assert got == [{"status": "delivered", "version": 3}] * len(ships)
