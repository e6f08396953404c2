-- An endpoint's attempts of the last 24 hours: how many, how many
-- succeeded, and its deliveries waiting or dead now.
-- parameters: $1 = tenant id, $2 = endpoint id (ep_…)
-- columns: attempts, succeeded, retrying, dead
SELECT (SELECT count(*) FROM outbox_deliveries d JOIN attempts a ON a.source = 'delivery' AND a.source_id = d.id
          AND @since_id(a.part_at, d.id)
         WHERE d.endpoint_id = e.id AND a.attempted_at > now() - interval '24 hours')::text AS attempts,
       (SELECT count(*) FROM outbox_deliveries d JOIN attempts a ON a.source = 'delivery' AND a.source_id = d.id
          AND @since_id(a.part_at, d.id)
         WHERE d.endpoint_id = e.id AND a.attempted_at > now() - interval '24 hours'
           AND a.outcome = 'succeeded')::text AS succeeded,
       (SELECT count(*) FROM outbox_deliveries d WHERE d.endpoint_id = e.id AND d.status = 'RETRYING')::text AS retrying,
       (SELECT count(*) FROM outbox_deliveries d WHERE d.endpoint_id = e.id AND d.status = 'DEAD')::text AS dead
  FROM webhook_endpoints e WHERE e.tenant_id = $1 AND e.id = hookd_api_uuid('ep', $2)
