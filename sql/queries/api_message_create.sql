-- A message of an application: an outbox event of its tenant (fanned out
-- by the relay like any other), with its eventId claimed per tenant first
-- (a second message with the same eventId: unique violation, 409).
-- channels and tags: JSON arrays of names (a set: sorted, each once) or
-- NULL; deliverAt: no attempt before then (sql/0019); the payload expires
-- after its retention (sql/0020); its text is kept as sent (payload_raw,
-- sql/0030: what every delivery sends). The application is locked FOR KEY SHARE
-- (sql/0025: what the claims' foreign key did): no row when it was deleted
-- meanwhile.
-- parameters: $1 = application id, $2 = event type, $3 = payload (JSON text, stored as sent), $4 = eventId or NULL,
--   $5 = with content (boolean), $6 = channels (JSON array) or NULL, $7 = tags (JSON array) or NULL,
--   $8 = deliverAt (timestamptz) or NULL, $9 = payload retention in hours or NULL (as long as the row)
-- columns: body
WITH lk AS MATERIALIZED (SELECT t.id FROM hookd_tenants t WHERE t.id = $1 FOR KEY SHARE),
 n AS (SELECT hookd_uuid7() AS id FROM lk),
 claim AS (INSERT INTO hookd_message_ids (tenant_id, event_id, message_id)
           SELECT $1, $4, n.id FROM n WHERE $4::text IS NOT NULL RETURNING message_id)
INSERT INTO outbox_events (id, aggregate_type, aggregate_id, event_type, payload, payload_raw, tenant_id,
                           api_event_id, channels, tags, deliver_at, payload_expires_at)
SELECT n.id, 'message', NULL, $2, $3::text::jsonb, $3::text, $1, $4,
       (SELECT array_agg(DISTINCT x ORDER BY x) FROM jsonb_array_elements_text($6::jsonb) x),
       (SELECT array_agg(DISTINCT x ORDER BY x) FROM jsonb_array_elements_text($7::jsonb) x),
       $8::timestamptz, now() + $9::integer * interval '1 hour'
  FROM n LEFT JOIN claim ON true
 WHERE $4::text IS NULL OR claim.message_id IS NOT NULL
RETURNING hookd_api_message(outbox_events, $5::boolean)::text AS body
