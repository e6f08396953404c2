-- The events of a batch of successes processed where none of their
-- deliveries is still open.
-- Each event is found through a LATERAL lookup per id, so that the ids are
-- always the outer side and each lookup is an index scan in the id's own
-- partition and _kept (part_at from the id: hookd_id_keys,
-- sql/0018_ids_carry_partition.sql); the row is then updated by its
-- (tableoid, ctid). A plain join of the ids to outbox_events lets the
-- planner scan every unprocessed event once per batch whenever the
-- partition's statistics are missing or stale (a partition filled before
-- autoanalyze reached it), which made each batch cost the whole backlog.
-- So are the event's open deliveries looked up (they live in its partition
-- or _kept); OFFSET 0 keeps that check a subplan run per event, pruned with
-- its values, not an anti-join that reads every partition.
-- parameters: $1 = event ids (uuid[], binary)
UPDATE outbox_events e SET processed_at = now()
  FROM (SELECT o.tableoid AS toid, o.ctid AS tid FROM hookd_id_keys($1::uuid[]) k
   CROSS JOIN LATERAL (SELECT e2.tableoid, e2.ctid FROM outbox_events e2 WHERE e2.id = k.id
    AND @in_part_of(e2.part_at, k.part_at, k.any_at) AND e2.processed_at IS NULL
    AND NOT EXISTS (SELECT 1 FROM outbox_deliveries d WHERE d.event_id = e2.id
     AND d.status IN ('PENDING', 'RETRYING') AND @in_part_of(d.part_at, k.part_at, k.any_at) OFFSET 0)
    OFFSET 0) o) t
 WHERE e.tableoid = t.toid AND e.ctid = t.tid
