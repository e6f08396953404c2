"""Retention in operation (issue 17): ids that carry their partition (a row
is found in its own partition, and in _kept after the pass moved it there),
the pass left to the tables' owner under least privilege ([retention]
interval = off, and one precise warning from a worker that tries anyway), and
a row moved to _kept while a worker waits on its lock (SQLSTATE 40001) recorded
once, with no attempt charged for the collision."""
from __future__ import annotations

import time

import psycopg2

from hookdtest.client import order_event, post_standard
from hookdtest.util import wait_for
from hookdtest.worker import run_hookd
from test_outbound import Held, add_endpoint, emit, outbound_config  # noqa: F401
from test_outbound import receivers  # noqa: F401 - the fixture
from test_retention import old_layout_database
from test_security import apply_roles, as_role


def retention(interval: str, window: str = "1d") -> str:
    return (f"\n[retention]\ninbox = {window}\noutbox = {window}\nattempts = {window}\n"
            f"dead_letters = {window}\ndedup = {window}\ninterval = {interval}\n")


def test_ids_tell_their_partition_and_lookups_prune(env):
    db = env.db
    # the defaults: a version 7 id whose clock is the row's part_at
    eid = emit(env, "order.paid", {"n": 1})
    row = db.one("SELECT id::text AS id, part_at, hookd_id_part(id) AS derived FROM outbox_events WHERE id = %s",
                 eid)
    assert row["id"][14] == "7" and row["derived"] == row["part_at"], row
    # an id that does not tell (version 4, as before migration 0018): found in every partition
    assert db.value("SELECT hookd_id_part(gen_random_uuid())") is None
    assert db.value("SELECT hookd_id_any(gen_random_uuid()) = '-infinity'")
    # a statement's lookup by id visits the row's partition and _kept only
    n_parts = db.value("SELECT count(*) FROM hookd_partitions('outbox_events')")
    assert n_parts >= 4
    plan = "\n".join(r["QUERY PLAN"] for r in db.all(
        "EXPLAIN (ANALYZE, COSTS OFF) SELECT * FROM outbox_events e WHERE e.id = %s::uuid AND"
        " (e.part_at IN (hookd_id_part(%s::uuid), '-infinity') OR e.part_at >= hookd_id_any(%s::uuid))",
        eid, eid, eid))
    assert plan.count("Index Scan") + plan.count("Seq Scan") + plan.count("Bitmap Heap Scan") <= 2, plan
    # moved to _kept (as the pass moves a survivor): still found by the same lookup
    db.all("UPDATE outbox_events SET part_at = '-infinity' WHERE id = %s", eid)
    assert db.value("SELECT count(*) FROM outbox_events e WHERE e.id = %s::uuid AND"
                    " (e.part_at IN (hookd_id_part(%s::uuid), '-infinity') OR e.part_at >= hookd_id_any(%s::uuid))",
                    eid, eid, eid) == 1


def test_least_privilege_workers_leave_the_pass_to_the_owner(env):
    apply_roles(env)
    restricted = as_role(env, "hookd_w")
    # a restricted worker that tries passes: one precise warning, then none; its other work goes on
    w = env.worker(config=env.config(database=restricted, defer_max_age="1m", extra=retention("1s")))
    wait_for(lambda: "retention.forbidden" in w.output(), what="the refused pass logged")
    assert post_standard(w, "shop", "lp-1", order_event("order.started", "lp1"))[0] == 200
    wait_for(lambda: env.db.value("SELECT state FROM hookd_entities WHERE entity_id = 'lp1'") == "started",
             what="the event applied by the restricted role")
    wait_for(lambda: 'hookd_table_bytes{table="webhook_inbox"}' in w.metrics(), what="storage measured anyway")
    line = next(x for x in w.output().splitlines() if "retention.forbidden" in x)
    assert "SQLSTATE 42501" in line and "role hookd_w does not own hookd's tables (owner: postgres)" in line, line
    assert "[retention] interval = off" in line and "`hookd retention run` as the tables' owner" in line, line
    # the interval is 1 s: had it kept trying, three more passes would have logged by now (an
    # absence cannot be awaited)
    time.sleep(3)
    out = w.output()
    assert out.count("retention.forbidden") == 1 and "retention.failed" not in out, out[-3000:]
    w.stop()

    # interval = off: no pass, nothing logged; the owner's pass (a timer's) runs
    cfg = env.config(database=restricted, defer_max_age="1m", extra=retention("off"))
    check = run_hookd(["config", "check", str(cfg)])
    assert check.returncode == 0 and "\ninterval = off\n" in check.stdout, check.stdout + check.stderr
    w = env.worker(config=cfg)
    assert post_standard(w, "shop", "lp-2", order_event("order.started", "lp2"))[0] == 200
    wait_for(lambda: env.db.value("SELECT state FROM hookd_entities WHERE entity_id = 'lp2'") == "started",
             what="the event applied")
    wait_for(lambda: 'hookd_table_bytes{table="webhook_inbox"}' in w.metrics(), what="storage measured")
    refused = run_hookd(["-c", str(cfg), "retention", "run"])
    assert refused.returncode != 0 and "does not own hookd's tables" in refused.stderr, refused.stderr
    owner = run_hookd(["-c", str(env.config(defer_max_age="1m", extra=retention("off"))), "retention", "run"])
    assert owner.returncode == 0, owner.stderr
    out = w.output()
    assert "retention.forbidden" not in out and "retention.failed" not in out, out[-3000:]


def test_a_row_moved_to_kept_while_a_worker_waits_on_it_is_recorded_once(env, receivers):  # noqa: F811
    """The race of a pass with a worker, made deterministic: the move of an
    event and its delivery into _kept holds their row locks while the
    delivery role records the delivery's answer; its batch statement waits
    for the event's lock, the move commits, and the statement fails with
    SQLSTATE 40001 (the row moved to another partition). The batch is then
    recorded again row by row, which finds both rows in _kept: one attempt,
    SUCCEEDED, the event processed, the request sent once."""
    rcv = receivers(lambda req: Held(200))
    cfg = outbound_config(env, ("allow_private_networks = true", "first_attempt_window = 0s"), defer_max_age="1m",
                          extra=retention("off"))
    add_endpoint(cfg, rcv.url(), "sink")
    w = env.worker(config=cfg)
    eid = emit(env, "order.paid", {"n": 1})
    rcv.wait(1)  # sent by the delivery role, the answer held
    did = env.db.value("SELECT id::text FROM outbox_deliveries WHERE event_id = %s", eid)
    mover = psycopg2.connect(env.db_url)
    try:
        with mover.cursor() as cur:
            cur.execute("SELECT pg_backend_pid()")
            mover_pid = cur.fetchone()[0]
            cur.execute("UPDATE outbox_events SET part_at = '-infinity' WHERE id = %s", (eid,))
            cur.execute("UPDATE outbox_deliveries SET part_at = '-infinity' WHERE id = %s", (did,))
        rcv.release.set()  # the answer goes; the worker records it and waits for the moved rows' locks
        wait_for(lambda: env.db.value(
            "SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a USING (pid) WHERE NOT l.granted"
            " AND a.pid <> %s AND a.datname = current_database()", mover_pid) > 0,
            what="a worker statement waiting on the moved rows")
        mover.commit()
    finally:
        mover.close()
    wait_for(lambda: env.db.value("SELECT status FROM outbox_deliveries WHERE id = %s", did) == "SUCCEEDED",
             what="the delivery recorded")
    assert "moved to another partition" in w.output(), w.output()[-3000:]
    d = env.db.one("SELECT part_at = '-infinity' AS kept, attempts FROM outbox_deliveries WHERE id = %s", did)
    assert d == {"kept": True, "attempts": 1}, d
    assert [r["outcome"] for r in env.db.all("SELECT outcome FROM attempts WHERE source_id = %s", did)] == \
        ["succeeded"]
    wait_for(lambda: env.db.value("SELECT processed_at IS NOT NULL FROM outbox_events WHERE id = %s", eid),
             what="the event processed")
    assert len(rcv.got()) == 1


def test_upgrade_from_0017_keeps_rows_whose_ids_do_not_tell_their_partition(env, receivers):  # noqa: F811
    """A database at migration 0017 holds rows whose ids carry no part_at
    (random inbox and event ids, delivery ids from the relay's clock with
    their event's part_at): after `hookd migrate` (0018) they are found by
    every lookup (no pruning for them) and processed and delivered."""
    import base64
    from hookdtest.services import Db
    name = old_layout_database(env, before="0018")
    db = Db(env.services.db_url(name))
    rcv = receivers()
    secret = "whsec_" + base64.b64encode(b"s" * 32).decode()
    db.all("INSERT INTO webhook_endpoints (name, url, secret) VALUES ('sink', %s, %s)", rcv.url(), secret)
    db.all("INSERT INTO webhook_inbox (partner_name, partner_event_id, payload, event_type, entity_type, entity_id)"
           " SELECT 'shop', 'pre-' || g, jsonb_build_object('type', 'order.started', 'data',"
           " jsonb_build_object('order_id', 'pre' || g)), 'order.started', 'order', 'pre' || g"
           " FROM generate_series(1, 20) g")
    db.all("INSERT INTO hookd_dedup (partner_name, partner_event_id, inbox_id)"
           " SELECT partner_name, partner_event_id, id FROM webhook_inbox")
    # an event already fanned out, its delivery PENDING with a 0013-style id (the relay's clock, not part_at)
    eid = db.value("INSERT INTO outbox_events (aggregate_type, aggregate_id, event_type, payload, fanned_out_at,"
                   " part_at) VALUES ('order', 'o1', 'order.paid', '{}', now(), now() - interval '3 seconds')"
                   " RETURNING id::text")
    did = db.value("INSERT INTO outbox_deliveries (id, event_id, endpoint_id, status, part_at)"
                   " SELECT hookd_uuid7(), e.id, (SELECT id FROM webhook_endpoints), 'PENDING', e.part_at"
                   " FROM outbox_events e WHERE e.id = %s RETURNING id::text", eid)
    fresh = db.value("SELECT hookd_emit('order', 'o2', 'order.paid', '{}')::text")  # not fanned out yet
    assert db.value("SELECT count(*) FROM webhook_inbox WHERE id::text LIKE '________-____-4%%'") == 20

    cfg = outbound_config(env, ("allow_private_networks = true",), database=env.services.db_url(name),
                          defer_max_age="1m", extra=retention("1m"))
    r = run_hookd(["-c", str(cfg), "migrate"])
    assert r.returncode == 0, r.stderr
    assert "0018_ids_carry_partition" in r.stdout
    assert db.value("SELECT hookd_id_part(%s::uuid)", did) is None  # older than the migration: does not tell
    w = env.worker(config=cfg)
    wait_for(lambda: db.value("SELECT count(*) FROM webhook_inbox WHERE status = 'PROCESSED'") == 20,
             what="the inbox rows of 0017 processed")
    wait_for(lambda: db.value("SELECT status FROM outbox_deliveries WHERE id = %s", did) == "SUCCEEDED",
             what="the delivery of 0017 delivered")
    wait_for(lambda: db.value("SELECT count(*) FROM outbox_deliveries WHERE event_id = %s AND status = 'SUCCEEDED'",
                              fresh) == 1, what="the event of 0017 fanned out and delivered")
    # new rows: ids that tell their partition
    new = db.value("SELECT hookd_emit('order', 'o3', 'order.paid', '{}')::text")
    wait_for(lambda: db.value("SELECT count(*) FROM outbox_deliveries WHERE event_id = %s AND status = 'SUCCEEDED'",
                              new) == 1, what="a new event delivered")
    assert db.value("SELECT bool_and(hookd_id_part(d.id) = d.part_at AND hookd_id_part(e.id) = e.part_at)"
                    " FROM outbox_deliveries d JOIN outbox_events e ON e.id = d.event_id WHERE e.id = %s", new)
    assert "retention.failed" not in w.output()
    db.close()
