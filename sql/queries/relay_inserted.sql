-- Only after a conflict in relay_settle (a delivery row that already
-- existed): which of the pass's deliveries went in.
-- Each id is looked up in its own partition and _kept only (part_at from the
-- id: hookd_id_keys, sql/0018_ids_carry_partition.sql), never in every one.
-- parameters: $1 = delivery ids (uuid[], binary)
-- columns: id
SELECT d.id::text AS id FROM hookd_id_keys($1::uuid[]) k
 CROSS JOIN LATERAL (SELECT d.id FROM outbox_deliveries d WHERE d.id = k.id
  AND @in_part_of(d.part_at, k.part_at, k.any_at) OFFSET 0) d
