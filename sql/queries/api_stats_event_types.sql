-- Svix's event-type aggregation: per application, the event types its
-- endpoints name in their filters (each once, sorted; '*' is not one) and
-- whether one of them takes every type ('*' or no filter).
-- parameters: none
-- columns: body
SELECT coalesce(jsonb_agg(jsonb_build_object('appId', t.id, 'explicitlySubscribedEventTypes', x.types,
                                             'hasCatchAllEndpoint', x.catch_all) ORDER BY t.id), '[]') AS body
  FROM hookd_tenants t
 CROSS JOIN LATERAL (
    SELECT coalesce((SELECT jsonb_agg(DISTINCT f ORDER BY f)
                       FROM webhook_endpoints e, unnest(e.event_types) f
                      WHERE e.tenant_id = t.id AND f <> '*'), '[]') AS types,
           EXISTS (SELECT 1 FROM webhook_endpoints e
                    WHERE e.tenant_id = t.id AND ('*' = ANY (e.event_types) OR cardinality(e.event_types) = 0))
               AS catch_all) x
