-- A page of delivery attempts of an application, newest first, after the
-- iterator: of one message, or of one endpoint (and optionally one
-- message); paging backwards (a prevIterator), the newer page before it
-- (rows oldest first: api_reply_list turns them round).
-- status: 0 succeeded, 2 failed (Svix's MessageStatus). with content:
-- false answers `response` "{}", as Svix does.
-- parameters: $1 = application id, $2 = message id (uuid) or NULL, $3 = endpoint id (uuid) or NULL,
--   $4 = status (0 or 2) or NULL, $5 = with content (boolean), $6 = iterator (atmpt_… id) or NULL,
--   $7 = rows, $8 = backwards (boolean)
-- columns: body, api_id
WITH a AS NOT MATERIALIZED (
  SELECT a.id, a.outcome, a.status_code, a.response_excerpt, a.error, a.duration_ms, a.attempted_at,
         d.event_id, d.endpoint_id, d.replayed_at, e.url
    FROM outbox_deliveries d
    JOIN webhook_endpoints e ON e.id = d.endpoint_id AND e.tenant_id = $1
    JOIN attempts a ON a.source = 'delivery' AND a.source_id = d.id
   WHERE ($2::uuid IS NULL OR d.event_id = $2::uuid) AND ($3::uuid IS NULL OR d.endpoint_id = $3::uuid)
     AND ($4::integer IS NULL OR (CASE WHEN a.outcome = 'succeeded' THEN 0 ELSE 2 END) = $4::integer)),
 page AS (
  (SELECT * FROM a WHERE NOT $8::boolean AND ($6::text IS NULL OR a.id < hookd_api_num('atmpt', $6))
    ORDER BY a.id DESC LIMIT $7::integer)
  UNION ALL
  (SELECT * FROM a WHERE $8::boolean AND a.id > hookd_api_num('atmpt', $6) ORDER BY a.id LIMIT $7::integer))
SELECT jsonb_build_object('id', hookd_api_num_id('atmpt', a.id), 'msgId', hookd_api_id('msg', a.event_id),
         'endpointId', hookd_api_id('ep', a.endpoint_id), 'url', a.url,
         'response', CASE WHEN $5::boolean THEN coalesce(a.response_excerpt, a.error, '') ELSE '{}' END,
         'responseStatusCode', coalesce(a.status_code, 0),
         'responseDurationMs', round(a.duration_ms)::bigint,
         'status', CASE WHEN a.outcome = 'succeeded' THEN 0 ELSE 2 END,
         'statusText', CASE WHEN a.outcome = 'succeeded' THEN 'success' ELSE 'fail' END,
         'triggerType', CASE WHEN a.replayed_at IS NOT NULL AND a.attempted_at >= a.replayed_at THEN 1 ELSE 0 END,
         'timestamp', hookd_api_ts(a.attempted_at))::text AS body,
       hookd_api_num_id('atmpt', a.id) AS api_id
  FROM page a
