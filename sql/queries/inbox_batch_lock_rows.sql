-- Locks a claimed batch's inbox events and reads them (the set-based
-- evaluation); rows it cannot lock are gone, terminal or busy.
-- Each id is looked up in its own partition and _kept only (part_at from the
-- id: hookd_id_keys, sql/0018_ids_carry_partition.sql), never in every one.
-- parameters: $1 = the batch's ids (uuid[], binary)
-- columns: id, partner_name, event_type, entity_type, entity_id, status, attempts, deferrals, age_ms
SELECT w.id::text AS id, w.partner_name, w.event_type, coalesce(w.entity_type, '') AS entity_type, w.entity_id,
 w.status, w.attempts, w.deferrals,
 (extract(epoch FROM now() - coalesce(w.replayed_at, w.received_at)) * 1000)::bigint AS age_ms
 FROM hookd_id_keys($1::uuid[]) k
 CROSS JOIN LATERAL (SELECT * FROM webhook_inbox w WHERE w.id = k.id
  AND @in_part_of(w.part_at, k.part_at, k.any_at) OFFSET 0 FOR UPDATE SKIP LOCKED) w
