-- A page of delivery attempts of an application, newest first, after the
-- iterator: of one message, or of one endpoint (and optionally one
-- message); paging backwards (a prevIterator, or Svix's `after` alone with
-- no iterator: then from the oldest after it), the newer page before it
-- (rows oldest first: api_reply_list turns them round).
-- status: 0 succeeded, 2 failed (Svix's MessageStatus); status code class:
-- 0 (no answer), 100, 200, 300, 400 or 500 (Svix's StatusCodeClass); event
-- types, channel and tag of the message; before and after the attempt's
-- time. with content: false answers `response` "{}", as Svix does; with
-- msg: each attempt carries its message as `msg` (without its payload).
-- parameters: $1 = application id, $2 = message id (uuid) or NULL, $3 = endpoint id (uuid) or NULL,
--   $4 = status (0 to 4) or NULL, $5 = with content (boolean), $6 = status code class or NULL,
--   $7 = event types (comma-separated) or NULL, $8 = before (timestamptz) or NULL, $9 = after or NULL,
--   $10 = channel or NULL, $11 = tag or NULL, $12 = with msg (boolean),
--   $13 = iterator (atmpt_… id) or NULL, $14 = rows, $15 = backwards (boolean)
-- columns: body, api_id
WITH a AS NOT MATERIALIZED (
  SELECT a.id, a.outcome, a.status_code, a.response_excerpt, a.error, a.duration_ms, a.attempted_at,
         d.event_id, d.endpoint_id, d.replayed_at, e.url
    FROM outbox_deliveries d
    JOIN webhook_endpoints e ON e.id = d.endpoint_id AND e.tenant_id = $1
    JOIN attempts a ON a.source = 'delivery' AND a.source_id = d.id AND @since_id(a.part_at, d.id)
   WHERE ($2::uuid IS NULL OR d.event_id = $2::uuid) AND @in_part(d.part_at, $2::uuid)
     AND ($3::uuid IS NULL OR d.endpoint_id = $3::uuid)
     AND ($4::integer IS NULL OR (CASE WHEN a.outcome = 'succeeded' THEN 0 ELSE 2 END) = $4::integer)
     AND ($6::integer IS NULL OR coalesce(a.status_code, 0) BETWEEN $6::integer AND $6::integer + 99)
     AND (($7::text IS NULL AND $10::text IS NULL AND $11::text IS NULL)
          OR EXISTS (SELECT 1 FROM outbox_events m WHERE m.id = d.event_id AND @in_part(m.part_at, d.event_id)
                       AND ($7::text IS NULL OR m.event_type = ANY (string_to_array($7, ',')))
                       AND ($10::text IS NULL OR m.channels @> ARRAY[$10::text])
                       AND ($11::text IS NULL OR m.tags @> ARRAY[$11::text])))
     AND ($8::timestamptz IS NULL OR a.attempted_at < $8::timestamptz)
     AND ($9::timestamptz IS NULL OR a.attempted_at > $9::timestamptz)),
 page AS (
  (SELECT * FROM a WHERE NOT $15::boolean AND ($13::text IS NULL OR a.id < hookd_api_num('atmpt', $13))
    ORDER BY a.id DESC LIMIT $14::integer)
  UNION ALL
  (SELECT * FROM a WHERE $15::boolean AND ($13::text IS NULL OR a.id > hookd_api_num('atmpt', $13))
    ORDER BY a.id LIMIT $14::integer))
SELECT (jsonb_build_object('id', hookd_api_num_id('atmpt', a.id, a.attempted_at), 'msgId', hookd_api_id('msg', a.event_id),
         'endpointId', hookd_api_id('ep', a.endpoint_id), 'url', a.url,
         'response', CASE WHEN $5::boolean THEN coalesce(a.response_excerpt, a.error, '') ELSE '{}' END,
         'responseStatusCode', coalesce(a.status_code, 0),
         'responseDurationMs', round(a.duration_ms)::bigint,
         'status', CASE WHEN a.outcome = 'succeeded' THEN 0 ELSE 2 END,
         'statusText', CASE WHEN a.outcome = 'succeeded' THEN 'success' ELSE 'fail' END,
         'triggerType', CASE WHEN a.replayed_at IS NOT NULL AND a.attempted_at >= a.replayed_at THEN 1 ELSE 0 END,
         'timestamp', hookd_api_ts(a.attempted_at))
       || coalesce(CASE WHEN $12::boolean THEN
            (SELECT jsonb_build_object('msg', hookd_api_message(m, false)) FROM outbox_events m
              WHERE m.id = a.event_id AND @in_part(m.part_at, a.event_id)) END, '{}'::jsonb))::text AS body,
       hookd_api_num_id('atmpt', a.id, a.attempted_at) AS api_id
  FROM page a
