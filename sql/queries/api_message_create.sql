-- A message of an application: an outbox event of its tenant (fanned out
-- by the relay like any other), with its eventId claimed per tenant first
-- (a second message with the same eventId: unique violation, 409).
-- parameters: $1 = application id, $2 = event type, $3 = payload (JSON), $4 = eventId or NULL,
--   $5 = with content (boolean)
-- columns: body
WITH n AS (SELECT hookd_uuid7() AS id),
 claim AS (INSERT INTO hookd_message_ids (tenant_id, event_id, message_id)
           SELECT $1, $4, n.id FROM n WHERE $4::text IS NOT NULL RETURNING message_id)
INSERT INTO outbox_events (id, aggregate_type, aggregate_id, event_type, payload, tenant_id, api_event_id)
SELECT n.id, 'message', NULL, $2, $3::jsonb, $1, $4 FROM n LEFT JOIN claim ON true
 WHERE $4::text IS NULL OR claim.message_id IS NOT NULL
RETURNING hookd_api_message(outbox_events, $5::boolean)::text AS body
