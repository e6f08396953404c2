-- Locks the outbox events of a batch of successes, in id order (the order
-- delivery_lock_event is taken in, one event after another).
-- Each id is looked up in its own partition and _kept only (part_at from the
-- id: hookd_id_keys, sql/0018_ids_carry_partition.sql), never in every one.
-- parameters: $1 = event ids (uuid[], binary)
-- columns: locked
SELECT 1 AS locked FROM (SELECT * FROM hookd_id_keys($1::uuid[]) ORDER BY id) k
 CROSS JOIN LATERAL (SELECT 1 FROM outbox_events e WHERE e.id = k.id
  AND @in_part_of(e.part_at, k.part_at, k.any_at) OFFSET 0 FOR UPDATE) e
