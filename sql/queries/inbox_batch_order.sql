-- A claimed batch's events in receipt order, with what creating their
-- entities needs (before the batch transaction: see prepare_batch in
-- engine/inbound/inbox.c).
-- Each id is looked up in its own partition and _kept only (part_at from the
-- id: hookd_id_keys, sql/0018_ids_carry_partition.sql), never in every one.
-- parameters: $1 = the batch's ids (uuid[], binary)
-- columns: id, entity_type, event_type, entity_id, open
SELECT w.id::text AS id, coalesce(w.entity_type, '') AS entity_type, w.event_type, w.entity_id,
 w.status IN ('PENDING', 'DEFERRED', 'RETRYING') AS open
 FROM hookd_id_keys($1::uuid[]) k
 CROSS JOIN LATERAL (SELECT * FROM webhook_inbox w WHERE w.id = k.id
  AND @in_part_of(w.part_at, k.part_at, k.any_at) OFFSET 0) w
 ORDER BY w.received_at, w.id
