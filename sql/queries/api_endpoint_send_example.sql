-- Send-example (Svix's v1.endpoint.send-example): a message of the
-- application carrying the example payload, for one endpoint only. The
-- event is written already fanned out, so the relay never sends it to the
-- application's other endpoints; it gets one delivery, PENDING and due now
-- (in the event's partition), when the endpoint takes it ($4: the caller
-- matched the endpoint's state and filters as the relay would), and is
-- processed at once when it gets none. The payload's text is sent as given
-- (payload_raw, sql/0030).
-- parameters: $1 = application id, $2 = event type, $3 = payload (JSON), $4 = endpoint id (uuid) or NULL
-- columns: body, delivery_id
WITH ev AS (
    INSERT INTO outbox_events (id, aggregate_type, aggregate_id, event_type, payload, payload_raw, tenant_id,
                               fanned_out_at, processed_at)
    VALUES (hookd_uuid7(), 'message', NULL, $2, $3::text::jsonb, $3::text, $1, now(),
            CASE WHEN $4::uuid IS NULL THEN now() END)
    RETURNING hookd_api_message(outbox_events, true)::text AS body, id, part_at),
 d AS (INSERT INTO outbox_deliveries (id, event_id, endpoint_id, status, next_attempt_at, part_at)
       SELECT hookd_uuid7_at(ev.part_at), ev.id, $4::uuid, 'PENDING', now(), ev.part_at FROM ev WHERE $4::uuid IS NOT NULL
       RETURNING id)
SELECT ev.body, (SELECT id::text FROM d) AS delivery_id FROM ev
