-- The status of the batch's events inbox_batch_lock_rows could not lock.
-- Each id is looked up in its own partition and _kept only (part_at from the
-- id: hookd_id_part, sql/0018_ids_carry_partition.sql), never in every one.
-- parameters: $1 = the batch's ids (uuid[], binary)
-- columns: id, status
SELECT w.id::text AS id, w.status FROM (SELECT DISTINCT unnest($1::uuid[]) AS id) k
 CROSS JOIN LATERAL (SELECT w.id, w.status FROM webhook_inbox w WHERE w.id = k.id
  AND (w.part_at IN (hookd_id_part(k.id), '-infinity') OR w.part_at >= hookd_id_any(k.id)) OFFSET 0) w
