-- The events of a batch of successes processed where none of their
-- deliveries is still open.
-- Each id is looked up in its own partition and _kept only (part_at from the
-- id: hookd_id_keys, sql/0018_ids_carry_partition.sql), never in every one.
-- parameters: $1 = event ids (uuid[], binary)
UPDATE outbox_events e SET processed_at = now() FROM hookd_id_keys($1::uuid[]) k
 WHERE e.id = k.id AND (e.part_at IN (k.part_at, '-infinity') OR e.part_at >= k.any_at)
 AND e.processed_at IS NULL
 AND NOT EXISTS (SELECT 1 FROM outbox_deliveries d WHERE d.event_id = e.id
 AND d.status IN ('PENDING', 'RETRYING'))
