-- The payloads of a batch's locked inbox events that routes take and that
-- no evaluation has handed to the outbox yet (routed_at unset), for the
-- routes' payload filters.
-- Each id is looked up in its own partition and _kept only (part_at from the
-- id: hookd_id_keys, sql/0018_ids_carry_partition.sql), never in every one.
-- parameters: $1 = the events' ids (uuid[], binary)
-- columns: id, payload
SELECT w.id::text AS id, w.payload::text AS payload FROM hookd_id_keys($1::uuid[]) k
 CROSS JOIN LATERAL (SELECT w.id, w.payload FROM webhook_inbox w WHERE w.id = k.id
  AND @in_part_of(w.part_at, k.part_at, k.any_at) AND w.routed_at IS NULL OFFSET 0) w
