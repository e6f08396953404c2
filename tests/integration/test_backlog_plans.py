"""Statements on the delivery path read what their batch names, however
large the backlog and whatever the planner's statistics say.

A partition filled faster than autoanalyze reaches it has no statistics
(reltuples -1): the planner then believes it nearly empty and may join a
batch's ids to a scan of every unprocessed row, once per batch, so that
each batch costs the whole backlog and retries slow down as it grows."""
from __future__ import annotations

from hookdtest.queries import statement

BACKLOG = 3000


def _nodes(plan):
    yield plan
    for child in plan.get("Plans", []):
        yield from _nodes(child)


def _rows_read(db, sql: str, ids: list[str], parent: str) -> int:
    """Rows the scans of `parent`'s partitions returned or filtered away
    while `sql` ran once on `ids` (EXPLAIN ANALYZE, rolled back)."""
    with db.conn.cursor() as cur:
        cur.execute("BEGIN")
        try:
            cur.execute(f"PREPARE q_backlog AS {sql}")
            cur.execute("EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE q_backlog(%s)", ("{" + ",".join(ids) + "}",))
            plan = cur.fetchone()[0][0]
            cur.execute("SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid"
                        " WHERE i.inhparent = %s::regclass", (parent,))
            parts = {r[0] for r in cur.fetchall()}
        finally:
            cur.execute("ROLLBACK")
    read = 0
    for n in _nodes(plan["Plan"]):
        if n.get("Relation Name") in parts and "Scan" in n["Node Type"]:
            loops = n.get("Actual Loops", 0)
            read += (n.get("Actual Rows", 0) + n.get("Rows Removed by Filter", 0)) * loops
    return read


def test_finishing_a_batch_reads_its_events_not_the_backlog(env):
    db = env.db
    db.value("SELECT count(hookd_emit('order', 'o' || g, 'order.paid', jsonb_build_object('n', g)))"
             " FROM generate_series(1, %s) g", BACKLOG)
    part = db.value("SELECT tableoid::regclass::text FROM outbox_events ORDER BY id DESC LIMIT 1")
    # the partition as autoanalyze has not seen it yet
    db.all("UPDATE pg_class SET reltuples = -1, relpages = 0 WHERE oid = %s::regclass", part)
    db.all("DELETE FROM pg_statistic WHERE starelid = %s::regclass", part)
    ids = [r["id"] for r in db.all("SELECT id::text AS id FROM outbox_events ORDER BY id DESC LIMIT 20")]
    read = _rows_read(db, statement("delivery_finish_events"), ids, "outbox_events")
    assert read <= 2 * len(ids), f"finishing {len(ids)} events read {read} outbox rows of a {BACKLOG} backlog"
