-- The status of the batch's events inbox_batch_lock_rows could not lock.
-- Each id is looked up in its own partition and _kept only (part_at from the
-- id: hookd_id_keys, sql/0018_ids_carry_partition.sql), never in every one.
-- parameters: $1 = the batch's ids (uuid[], binary)
-- columns: id, status
SELECT w.id::text AS id, w.status FROM hookd_id_keys($1::uuid[]) k
 CROSS JOIN LATERAL (SELECT w.id, w.status FROM webhook_inbox w WHERE w.id = k.id
  AND @in_part_of(w.part_at, k.part_at, k.any_at) OFFSET 0) w
