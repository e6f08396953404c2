-- The events of a batch of successes processed where none of their
-- deliveries is still open.
-- Each id is looked up in its own partition and _kept only (part_at from the
-- id: hookd_id_keys, sql/0018_ids_carry_partition.sql), never in every one:
-- `= ANY (ARRAY[k.id])` instead of `= k.id` so that the join is a nested
-- loop, whose inner scans are pruned per id (an equality let the planner
-- hash-join the ids to a scan of every partition when they were small). So
-- are the event's open deliveries looked up (they live in its partition or
-- _kept); OFFSET 0 keeps that check a subplan run per event, pruned with its
-- values, not an anti-join that reads every partition.
-- parameters: $1 = event ids (uuid[], binary)
UPDATE outbox_events e SET processed_at = now() FROM hookd_id_keys($1::uuid[]) k
 WHERE e.id = ANY (ARRAY[k.id]) AND @in_part_of(e.part_at, k.part_at, k.any_at)
 AND e.processed_at IS NULL
 AND NOT EXISTS (SELECT 1 FROM outbox_deliveries d WHERE d.event_id = e.id
 AND d.status IN ('PENDING', 'RETRYING') AND @in_part_of(d.part_at, k.part_at, k.any_at) OFFSET 0)
