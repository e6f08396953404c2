-- A page of delivery attempts of an application, newest first, after the
-- iterator: of one message, or of one endpoint (and optionally one message).
-- status: 0 succeeded, 2 failed (Svix's MessageStatus).
-- parameters: $1 = application id, $2 = message id (uuid) or NULL, $3 = endpoint id (uuid) or NULL,
--   $4 = iterator (atmpt_… id) or NULL, $5 = rows, $6 = status (0 or 2) or NULL
-- columns: body, api_id
SELECT jsonb_build_object('id', hookd_api_num_id('atmpt', a.id), 'msgId', hookd_api_id('msg', d.event_id),
         'endpointId', hookd_api_id('ep', d.endpoint_id), 'url', e.url,
         'response', coalesce(a.response_excerpt, a.error, ''), 'responseStatusCode', coalesce(a.status_code, 0),
         'responseDurationMs', round(a.duration_ms)::bigint,
         'status', CASE WHEN a.outcome = 'succeeded' THEN 0 ELSE 2 END,
         'statusText', CASE WHEN a.outcome = 'succeeded' THEN 'success' ELSE 'fail' END,
         'triggerType', CASE WHEN d.replayed_at IS NOT NULL AND a.attempted_at >= d.replayed_at THEN 1 ELSE 0 END,
         'timestamp', hookd_api_ts(a.attempted_at))::text AS body,
       hookd_api_num_id('atmpt', a.id) AS api_id
  FROM outbox_deliveries d
  JOIN webhook_endpoints e ON e.id = d.endpoint_id AND e.tenant_id = $1
  JOIN attempts a ON a.source = 'delivery' AND a.source_id = d.id
 WHERE ($2::uuid IS NULL OR d.event_id = $2::uuid) AND ($3::uuid IS NULL OR d.endpoint_id = $3::uuid)
   AND ($4::text IS NULL OR a.id < hookd_api_num('atmpt', $4))
   AND ($6::integer IS NULL OR (CASE WHEN a.outcome = 'succeeded' THEN 0 ELSE 2 END) = $6::integer)
 ORDER BY a.id DESC LIMIT $5::integer
