"""Retention in operation: ids that carry their partition (a row
is found in its own partition, and in _kept after the pass moved it there),
the pass left to the tables' owner under least privilege ([retention]
interval = off, and one precise warning from a worker that tries anyway), and
a row moved to _kept while a worker waits on its lock (SQLSTATE 40001) recorded
once, with no attempt charged for the collision; on the inbox side, an event
whose row a pass is moving is busy (never waited on, never charged) and is
applied once from _kept after the move commits."""
from __future__ import annotations

import time

import psycopg2

from hookdtest.client import order_event, post_standard
from hookdtest.queries import statement
from hookdtest.util import wait_for
from hookdtest.worker import run_hookd
from test_outbound import Held, add_endpoint, emit, outbound_config  # noqa: F401
from test_outbound import receivers  # noqa: F401 - the fixture
from test_batch import ev, one_batch_config, seed
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


def test_an_inbox_row_being_moved_to_kept_is_busy_then_applied_once(env):
    """The inbox side of the race of a pass with a worker. The inbox locks
    its rows with SKIP LOCKED, so a worker never waits on a move: while the
    move of an event's row into _kept is uncommitted, the worker claims the
    event, cannot lock its row, sees it still PENDING and puts it back due
    soon (busy: no attempt charged, no attempts row). After the move
    commits, the worker finds the row in _kept and applies it once."""
    seed(env, [ev("m-race", "order.started", "race1", 0)])
    rid = env.db.value("SELECT id::text FROM webhook_inbox WHERE partner_event_id = 'm-race'")
    due = env.key("{inbox}:due")
    mover = psycopg2.connect(env.db_url)
    try:
        with mover.cursor() as cur:
            cur.execute("UPDATE webhook_inbox SET part_at = '-infinity' WHERE id = %s", (rid,))
        started_ms = time.time() * 1000
        w = env.worker(config=one_batch_config(env))
        # seeded due in the past; a busy outcome puts it back due after the worker started
        wait_for(lambda: (env.redis.zscore(due, rid) or 0) > started_ms, timeout=20,
                 what="the event claimed, found held by the move and put back as busy")
        held = env.db.one("SELECT status, attempts FROM webhook_inbox WHERE id = %s", rid)
        assert held == {"status": "PENDING", "attempts": 0}, held
        assert env.db.value("SELECT count(*) FROM attempts WHERE source_id = %s", rid) == 0
        mover.commit()
    finally:
        mover.close()
    wait_for(lambda: env.db.value("SELECT status FROM webhook_inbox WHERE id = %s", rid) == "PROCESSED",
             timeout=20, what="the event applied from _kept")
    w.alive()
    done = env.db.one("SELECT part_at = '-infinity' AS kept, attempts, outcome FROM webhook_inbox WHERE id = %s", rid)
    assert done == {"kept": True, "attempts": 0, "outcome": "applied"}, done
    assert [r["outcome"] for r in env.db.all("SELECT outcome FROM attempts WHERE source_id = %s", rid)] == ["applied"]
    assert env.db.one("SELECT state, version FROM hookd_entities WHERE entity_id = 'race1'") == \
        {"state": "started", "version": 1}


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


# ---- every lookup by id of the dlq, API and portal statements is pruned ----

PARENTS = ("webhook_inbox", "outbox_events", "outbox_deliveries", "attempts")


def _scans(db, run) -> dict[str, set[str]]:
    """The partitions of each parent that `run(cursor)` scanned (seq or index
    scans this transaction counted: pg_stat_xact_user_tables), run once to
    plan it and once measured, both rolled back."""
    counts = ("SELECT i.inhparent::regclass::text, s.relname, s.seq_scan + coalesce(s.idx_scan, 0)"
              " FROM pg_stat_xact_user_tables s JOIN pg_inherits i ON i.inhrelid = s.relid")
    for measured in (False, True):
        with db.conn.cursor() as cur:
            cur.execute("BEGIN")
            try:
                # the view's counts are the backend's not yet reported: they may
                # include earlier transactions' (a difference within one transaction)
                cur.execute(counts)
                before = {(p, r): n for p, r, n in cur.fetchall()}
                run(cur)
                cur.execute(counts)
                after = cur.fetchall()
            finally:
                cur.execute("ROLLBACK")
    out: dict[str, set[str]] = {p: set() for p in PARENTS}
    for parent, part, n in after:
        if n > before.get((parent, part), 0):
            out.setdefault(parent, set()).add(part)
    return out


def _executed(db, sql: str, params: list) -> dict[str, set[str]]:
    """The partitions of each parent whose scans `sql` executed at least once
    (EXPLAIN ANALYZE: a node pruned at run time is never executed), rolled back."""
    def nodes(plan):
        yield plan
        for child in plan.get("Plans", []):
            yield from nodes(child)

    with db.conn.cursor() as cur:
        cur.execute("BEGIN")
        try:
            cur.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + sql, params)
            plan = cur.fetchone()[0][0]
            cur.execute("SELECT c.relname, i.inhparent::regclass::text FROM pg_inherits i"
                        " JOIN pg_class c ON c.oid = i.inhrelid")
            parent = dict(cur.fetchall())
        finally:
            cur.execute("ROLLBACK")
    out: dict[str, set[str]] = {p: set() for p in PARENTS}
    for n in nodes(plan["Plan"]):
        rel = n.get("Relation Name")
        if rel in parent and n.get("Actual Loops", 0) > 0 and "Scan" in n["Node Type"]:
            out.setdefault(parent[rel], set()).add(rel)
    return out


def test_id_lookups_of_the_dlq_api_and_portal_statements_prune(env):
    """Each statement below, with a generic plan (run-time pruning, as after
    the fifth execution of a prepared statement), scans at most two
    partitions (the row's and _kept) of each table it looks rows up in by id,
    and no attempts partition that ended before hookd_id_since(source): the
    rows sit in a partition ten days ahead, so the others all count."""
    db = env.db
    assert db.value("SELECT count(*) FROM hookd_partitions('outbox_events')") >= 4
    at = db.value("SELECT now() + interval '10 days'")
    db.all("INSERT INTO hookd_tenants (id, name) VALUES ('app_prune', 'prune')")
    ep = db.value("INSERT INTO webhook_endpoints (name, url, secret, tenant_id) VALUES ('prune',"
                  " 'http://127.0.0.1:9/', 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', 'app_prune') RETURNING id::text")
    # an operator endpoint: the operational trigger then joins each updated delivery to its event
    db.all("INSERT INTO webhook_endpoints (name, url, secret, event_types) VALUES ('prune-ops',"
           " 'http://127.0.0.1:9/', 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', ARRAY['message.attempt.*'])")
    ev = db.value("INSERT INTO outbox_events (id, aggregate_type, aggregate_id, event_type, payload, tenant_id,"
                  " fanned_out_at, processed_at, part_at) VALUES (hookd_uuid7_at(%s), 'order', 'p1', 'order.paid',"
                  " '{}', 'app_prune', %s, %s, date_trunc('milliseconds', %s::timestamptz)) RETURNING id::text",
                  at, at, at, at)
    dl = db.value("INSERT INTO outbox_deliveries (id, event_id, endpoint_id, status, attempts, part_at)"
                  " SELECT hookd_uuid7_at(part_at), id, %s, 'DEAD', 5, part_at FROM outbox_events WHERE id = %s"
                  " RETURNING id::text", ep, ev)
    ib = db.value("INSERT INTO webhook_inbox (id, partner_name, partner_event_id, payload, event_type, status,"
                  " part_at) VALUES (hookd_uuid7_at(%s), 'shop', 'prune-1', '{}', 'order.paid', 'QUARANTINED',"
                  " date_trunc('milliseconds', %s::timestamptz)) RETURNING id::text", at, at)
    for source, sid in (("delivery", dl), ("inbox", ib)):
        db.all("INSERT INTO attempts (source, source_id, outcome, status_code, attempted_at, part_at)"
               " VALUES (%s, %s, 'failed', 500, %s::timestamptz + interval '1 second',"
               " %s::timestamptz + interval '1 second')", source, sid, at, at)
    dead = db.value("INSERT INTO dead_letters (source, source_id, reason, attempts) VALUES"
                    " ('delivery', %s, 'test', 5) RETURNING id::text", dl)
    db.all("INSERT INTO dead_letters (source, source_id, reason, attempts) VALUES ('inbox', %s, 'test', 5)", ib)
    # history in every partition, so that Postgres plans as it would on real
    # tables: an index probe per outer row rather than reading small partitions whole
    for k, when in enumerate(("'-infinity'", "now() - interval '1 day'", "now() + interval '1 hour'",
                              "now() + interval '10 days'", "now() + interval '60 days'")):
        db.all(f"INSERT INTO webhook_inbox (id, partner_name, partner_event_id, payload, event_type, status, part_at)"
               f" SELECT overlay(md5('i{k}-' || g) placing '4' from 13)::uuid, 'fill', 'f{k}-' || g, '{{}}', 'order.paid', 'PROCESSED', {when}"
               f" FROM generate_series(1, 5000) g")
        db.all(f"INSERT INTO outbox_events (id, aggregate_type, aggregate_id, event_type, payload, tenant_id,"
               f" fanned_out_at, processed_at, part_at) SELECT overlay(md5('e{k}-' || g) placing '4' from 13)::uuid, 'order', 'f' || g,"
               f" 'order.paid', '{{}}', NULL, now(), now(), {when} FROM generate_series(1, 5000) g")
        db.all(f"INSERT INTO outbox_deliveries (id, event_id, endpoint_id, status, attempts, part_at)"
               f" SELECT overlay(md5('d{k}-' || g) placing '4' from 13)::uuid,"
               f" overlay(md5('e{k}-' || g) placing '4' from 13)::uuid, gen_random_uuid(), 'SUCCEEDED', 1, {when}"
               f" FROM generate_series(1, 5000) g")
        db.all(f"INSERT INTO attempts (source, source_id, outcome, part_at) SELECT 'delivery',"
               f" overlay(md5('d{k}-' || g) placing '4' from 13)::uuid, 'succeeded', {when} FROM generate_series(1, 5000) g")
    db.all("ANALYZE")
    msg = db.value("SELECT hookd_api_id('msg', %s::uuid)", ev)
    ep_api = db.value("SELECT hookd_api_id('ep', %s::uuid)", ep)
    atmpt = db.value("SELECT hookd_api_num_id('atmpt', id) FROM attempts WHERE source_id = %s", dl)
    since = db.value("SELECT hookd_id_since(%s::uuid)", dl)
    old_attempts = {r["p"] for r in db.all("SELECT part::text AS p FROM hookd_partitions('attempts')"
                                            " WHERE hi <= %s AND lo > '-infinity'", since)}
    assert old_attempts, "the attempts lookups would have nothing to prune"
    I, E, D, A = "webhook_inbox", "outbox_events", "outbox_deliveries", "attempts"
    cases = {
        "dlq_attempts": (["delivery", dl], {A}),
        # (an inbox dead letter's event lookup has no id, NULL: every partition's
        # index is asked for NULL, which reads no page, and the count would see it)
        "dlq_list": (["delivery", None, None, None, 50, None], {E, D}),
        "dlq_list inbox": (["inbox", None, None, None, 50, None], {I, D}),
        "dlq_show": ([dead], {I, E, D}),
        "dlq_lock_delivery_row": ([dl], {D}),
        "dlq_lock_inbox_row": ([ib], {I}),
        "dlq_reopen_event": ([dl], {E, D}),
        "dlq_replay_delivery": ([dl], {D}),
        "dlq_replay_inbox": ([ib], {I}),
        "api_attempt_expunge": ([ev, atmpt], {D, A}),
        "api_attempt_get": ([ev, atmpt], {D, A}),
        "api_attempt_list": (["app_prune", ev, None, None, True, None, "order.paid", None, None, None, None, False,
                              None, 50, False], {E, D, A}),
        "api_attempted_destinations": ([ev, None, 50, False], {D, A}),
        "api_attempted_messages": (["app_prune", ep, None, None, None, None, True, None, None, None, 50, False],
                                   {D, A}),
        "task_runner_recover": ([ep, "-infinity", None, None, 100], {E}),
        "api_endpoint_stats": ([ep, None, None], {A}),
        "api_message_expunge": ([ev], {E, D}),
        "api_message_find": (["app_prune", msg], {E}),
        "api_message_get": (["app_prune", msg, True], {E}),
        "task_runner_replay_candidates": (["app_prune", ep, "-infinity", None, None, 100], {D}),
        "task_runner_replay_insert": (["{" + ev + "}", ep], {E}),
        "portal_endpoint_circuit": (["app_prune", ep_api, 5], {A}),
        "portal_endpoint_health": (["app_prune", ep_api], {A}),
        "portal_message_deliveries": (["app_prune", msg], {E, D}),
        "portal_message_list": (["app_prune", None, None, None, None, 50, None, None], {D}),
        "delivery_record_dead": (["{" + dl + "}", "{5}", "{500}", "{1.5}", "{x}", "{x}", "{0}", "{failed}", "{r}",
                                  "{prune}", "w"], {D}),
        "delivery_finish_event": ([ev], {E, D}),
        "api_attempt_resend": ([ev, ep], {E, D}),
    }
    db.all("SET plan_cache_mode = force_generic_plan")
    problems = []

    def check(name: str, run, tables: set[str]) -> dict:
        scanned = _scans(db, run)
        for t in tables - {A}:
            if len(scanned[t]) > 2:
                problems.append(f"{name}: {t} in {len(scanned[t])} partitions: {sorted(scanned[t])}")
        if A in tables and scanned[A] & old_attempts:
            problems.append(f"{name}: attempts partitions older than the source: {sorted(scanned[A] & old_attempts)}")
        for t in tables:  # the check looked at something
            if not scanned[t]:
                problems.append(f"{name}: {t} not scanned at all (a wrong case?)")
        return scanned

    for name, (params, tables) in cases.items():
        file = name.split()[0]
        name = name.replace(" ", "_")
        sql = statement(file)
        with db.conn.cursor() as cur:  # no parameters: the statement's % signs are its own
            cur.execute(f"PREPARE q_{name} AS {sql}")
        marks = ", ".join(["%s"] * len(params))
        check(name, lambda cur, n=name, p=params, m=marks: cur.execute(f"EXECUTE q_{n}({m})", p), tables)
    # the functions: sql/0017's ordering check and sql/0013's operational trigger
    # sql/0013's operational trigger (sql/0022), once a delivery is updated
    check("operational trigger",
          lambda cur: cur.execute("UPDATE outbox_deliveries SET attempts = attempts + 1 WHERE id = %s AND (part_at IN"
                                  " (hookd_id_part(%s), '-infinity') OR part_at >= hookd_id_any(%s))", (dl, dl, dl)),
          {E, D})
    # the batch of successes' event, open again (the statement passes over processed events)
    with db.conn.cursor() as cur:
        cur.execute(f"PREPARE q_finish_events AS {statement('delivery_finish_events')}")
    part_at = db.value("SELECT part_at FROM outbox_events WHERE id = %s", ev)
    check("delivery_finish_events",
          lambda cur: (cur.execute("UPDATE outbox_events SET processed_at = NULL WHERE id = %s AND part_at = %s",
                                   (ev, part_at)),
                       cur.execute("EXECUTE q_finish_events(%s)", ("{" + ev + "}",))), {E, D})
    # relay_settle finds and updates its events by tuple id, which the scan
    # counts above do not see: the partitions its plan executed, from EXPLAIN
    ops = db.value("SELECT id::text FROM webhook_endpoints WHERE name = 'prune-ops'")
    tid, did = db.one("SELECT ctid::text AS tid, hookd_uuid7_at(part_at)::text AS did FROM outbox_events"
                      " WHERE id = %s", ev).values()
    settle = [f"{{{did}}}", f"{{{ev}}}", f"{{{ops}}}", "{200}", "{1700000000000}", "{1.5}", "{ok}", "{0}",
              f"{{{ev}}}", "w", "{NULL}", f'{{"{tid}"}}']
    with db.conn.cursor() as cur:
        cur.execute(f"PREPARE q_relay_settle AS {statement('relay_settle')}")
    executed = _executed(db, "EXECUTE q_relay_settle(" + ", ".join(["%s"] * len(settle)) + ")", settle)
    for t in (E, D):
        if not executed[t] or len(executed[t]) > 2:
            problems.append(f"relay_settle: {t} in {len(executed[t])} partitions: {sorted(executed[t])}")
    # the measures can fail: a lookup by id alone scans every partition
    control = _scans(db, lambda cur: cur.execute("SELECT * FROM outbox_events WHERE id = %s", (ev,)))
    assert len(control[E]) > 2, control
    control = _executed(db, "SELECT * FROM outbox_events WHERE ctid = %s::tid AND id = %s", [tid, ev])
    assert len(control[E]) > 2, control
    assert not problems, "\n".join(problems)
