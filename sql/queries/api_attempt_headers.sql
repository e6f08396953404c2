-- What an attempt's request headers are made from (hookd does not store
-- them; api_attempt.c rebuilds them as delivery.c sends them): the
-- message's webhook-id and the endpoint's custom headers as they are now.
-- parameters: $1 = message id (uuid), $2 = attempt id (atmpt_…)
-- columns: webhook_id, headers
SELECT hookd_api_id('msg', d.event_id) AS webhook_id, e.headers::text AS headers
  FROM outbox_deliveries d
  JOIN webhook_endpoints e ON e.id = d.endpoint_id
  JOIN attempts a ON a.source = 'delivery' AND a.source_id = d.id AND @since_id(a.part_at, d.id)
   AND a.id = hookd_api_num('atmpt', $2)
 WHERE d.event_id = $1::uuid AND @in_part(d.part_at, $1::uuid)
