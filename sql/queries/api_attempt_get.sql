-- One delivery attempt of a message (of the application the caller
-- resolved the message in), by its API id (atmpt_…).
-- parameters: $1 = message id (uuid), $2 = attempt id (atmpt_…)
-- columns: body
SELECT jsonb_build_object('id', hookd_api_num_id('atmpt', a.id, a.attempted_at), 'msgId', hookd_api_id('msg', d.event_id),
         'endpointId', hookd_api_id('ep', d.endpoint_id), 'url', e.url,
         'response', coalesce(a.response_excerpt, a.error, ''), 'responseStatusCode', coalesce(a.status_code, 0),
         'responseDurationMs', round(a.duration_ms)::bigint,
         'status', CASE WHEN a.outcome = 'succeeded' THEN 0 ELSE 2 END,
         'statusText', CASE WHEN a.outcome = 'succeeded' THEN 'success' ELSE 'fail' END,
         'triggerType', CASE WHEN d.replayed_at IS NOT NULL AND a.attempted_at >= d.replayed_at THEN 1 ELSE 0 END,
         'timestamp', hookd_api_ts(a.attempted_at))::text AS body
  FROM outbox_deliveries d
  JOIN webhook_endpoints e ON e.id = d.endpoint_id
  JOIN attempts a ON a.source = 'delivery' AND a.source_id = d.id AND @since_id(a.part_at, d.id)
   AND a.id = hookd_api_num('atmpt', $2)
 WHERE d.event_id = $1::uuid AND @in_part(d.part_at, $1::uuid)
