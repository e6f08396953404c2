-- Replay-missing, one batch, step 1: the next (after the cursor, in id
-- order) of the application's messages created in [since, until) that the
-- endpoint never got a delivery of and that its event-type filters match
-- (globs: '*' is any run of characters). Only messages already fanned out
-- (the relay gives the others to the endpoint anyway), and not expunged.
-- The payload comes only when the endpoint has a payload filter, which the
-- caller applies (payload_filter.h) as the relay would.
-- parameters: $1 = application id, $2 = endpoint id (uuid), $3 = since (timestamptz), $4 = until or NULL,
--   $5 = cursor (the last message id of the previous batch) or NULL, $6 = batch size
-- columns: id, payload, filter
SELECT m.id::text AS id, CASE WHEN e.payload_filter IS NOT NULL THEN m.payload::text END AS payload,
       e.payload_filter::text AS filter
  FROM webhook_endpoints e
  JOIN outbox_events m ON m.tenant_id = $1 AND m.created_at >= $3::timestamptz
                      AND ($4::timestamptz IS NULL OR m.created_at < $4::timestamptz)
                      AND ($5::uuid IS NULL OR m.id > $5::uuid)
 WHERE e.id = $2::uuid AND e.tenant_id = $1 AND m.fanned_out_at IS NOT NULL
   AND NOT hookd_payload_expired(m)
   AND EXISTS (SELECT 1 FROM unnest(e.event_types) f
                WHERE m.event_type LIKE replace(replace(replace(replace(f, '\', '\\'), '%', '\%'), '_', '\_'), '*', '%'))
   AND NOT EXISTS (SELECT 1 FROM outbox_deliveries d WHERE d.event_id = m.id AND d.endpoint_id = e.id
                      AND @in_part(d.part_at, m.id))
 ORDER BY m.id
 LIMIT $6::integer
