-- A follow-up outbox event of an applied transition (the machine's `emit`),
-- carrying the inbox event's payload as data.
-- parameters: $1 = machine (entity type), $2 = entity id, $3 = emitted event type,
--   $4 = state before ('' when new), $5 = state after, $6 = the inbox event's type,
--   $7 = the inbox event's id
INSERT INTO outbox_events (aggregate_type, aggregate_id, event_type, payload)
 SELECT $1::text, $2::text, $3::text, jsonb_build_object('type', $3::text, 'entity_type', $1::text,
 'entity_id', $2::text, 'from', NULLIF($4::text, ''), 'to', $5::text, 'cause', $6::text,
 'inbox_id', $7::text, 'data', w.payload) FROM webhook_inbox w WHERE w.id = $7::uuid
 AND @in_part(w.part_at, $7::uuid)
