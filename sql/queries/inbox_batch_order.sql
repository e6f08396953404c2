-- A claimed batch's events in receipt order, with what creating their
-- entities needs (before the batch transaction: see prepare_batch in
-- engine/roles/inbox.c).
-- parameters: $1 = the batch's ids (uuid[], binary)
-- columns: id, entity_type, event_type, entity_id, open
SELECT id::text AS id, coalesce(entity_type, '') AS entity_type, event_type, entity_id,
 status IN ('PENDING', 'DEFERRED', 'RETRYING') AS open
 FROM webhook_inbox WHERE id = ANY($1::uuid[]) ORDER BY received_at, id
