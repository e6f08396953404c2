-- Bulk replay, one batch: the next (after the cursor, in id order) of the
-- endpoint's deliveries of the application's messages created in [since,
-- until) that match the filters (Svix's BulkReplayIn: event types, channel,
-- tag, the delivery's status as MessageStatus - 0 succeeded, 2 dead, 3
-- open - and the status code class of its last attempt, 0 for none) are
-- opened again as a resend opens one: PENDING, due now, with a fresh
-- attempt budget, their dead letters marked replayed and their events
-- reopened. Messages whose content was expunged or expired are passed over
-- (they cannot be sent). The batch's rows are locked, so a batch runs once.
-- parameters: $1 = endpoint id (uuid), $2 = application id, $3 = since (timestamptz), $4 = until or NULL,
--   $5 = event types (jsonb array) or NULL, $6 = channel or NULL, $7 = tag or NULL, $8 = status or NULL,
--   $9 = status code class or NULL, $10 = cursor (the last delivery id of the previous batch) or NULL,
--   $11 = batch size
-- columns: ids, last, examined
WITH b AS (SELECT d.id, d.event_id, hookd_payload_expired(m) AS expired
             FROM outbox_deliveries d
             JOIN outbox_events m ON m.id = d.event_id AND @in_part(m.part_at, d.event_id)
            WHERE d.endpoint_id = $1::uuid AND m.tenant_id = $2 AND m.created_at >= $3::timestamptz
              AND ($4::timestamptz IS NULL OR m.created_at < $4::timestamptz)
              AND ($10::uuid IS NULL OR d.id > $10::uuid)
              AND ($5::jsonb IS NULL OR $5::jsonb @> to_jsonb(m.event_type::text))
              AND ($6::text IS NULL OR m.channels @> ARRAY[$6::text])
              AND ($7::text IS NULL OR m.tags @> ARRAY[$7::text])
              AND ($8::integer IS NULL
                   OR (CASE d.status WHEN 'SUCCEEDED' THEN 0 WHEN 'DEAD' THEN 2 ELSE 3 END) = $8::integer)
              AND ($9::integer IS NULL
                   OR (SELECT coalesce(a.status_code / 100 * 100, 0) FROM attempts a
                        WHERE a.source = 'delivery' AND a.source_id = d.id AND @since_id(a.part_at, d.id)
                        ORDER BY a.id DESC LIMIT 1) = $9::integer)
            ORDER BY d.id LIMIT $11::integer FOR UPDATE OF d),
 d AS (UPDATE outbox_deliveries SET status = 'PENDING', attempts = 0, last_error = NULL,
              next_attempt_at = now(), replayed_at = now()
         FROM b
        WHERE outbox_deliveries.id = b.id AND outbox_deliveries.endpoint_id = $1::uuid AND NOT b.expired
        RETURNING outbox_deliveries.id, outbox_deliveries.event_id),
 dl AS (UPDATE dead_letters SET replayed_at = now(), replay_count = replay_count + 1
         WHERE source = 'delivery' AND source_id IN (SELECT id FROM d) AND replayed_at IS NULL),
 ev AS (UPDATE outbox_events e SET processed_at = NULL FROM d
         WHERE e.id = d.event_id AND @in_part(e.part_at, d.event_id))
SELECT (SELECT coalesce(json_agg(id::text), '[]') FROM d)::text AS ids,
       (SELECT id::text FROM b ORDER BY id DESC LIMIT 1) AS last,
       (SELECT count(*) FROM b)::integer AS examined
