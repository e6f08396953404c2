-- One tenant's endpoints with their deliveries (`hookd status --tenant`):
-- open ones (PENDING, RETRYING), those due now and how overdue the oldest
-- is, dead ones and their open dead letters. Ages on Postgres's clock.
-- parameters: $1 = tenant id
-- columns: name, uid, url, enabled, pending, retrying, due, oldest_overdue_ms, dead, dlq
SELECT e.name, coalesce(e.uid, '') AS uid, e.url, CASE WHEN e.enabled THEN 'yes' ELSE 'no' END AS enabled,
       count(d.id) FILTER (WHERE d.status = 'PENDING') AS pending,
       count(d.id) FILTER (WHERE d.status = 'RETRYING') AS retrying,
       count(d.id) FILTER (WHERE d.next_attempt_at <= now()) AS due,
       coalesce((extract(epoch FROM now() - min(d.next_attempt_at) FILTER (WHERE d.next_attempt_at <= now()))
                 * 1000)::bigint, 0) AS oldest_overdue_ms,
       (SELECT count(*) FROM outbox_deliveries x WHERE x.endpoint_id = e.id AND x.status = 'DEAD') AS dead,
       (SELECT count(*) FROM outbox_deliveries x
          JOIN dead_letters dl ON dl.source = 'delivery' AND dl.source_id = x.id AND dl.replayed_at IS NULL
         WHERE x.endpoint_id = e.id AND x.status = 'DEAD') AS dlq
  FROM webhook_endpoints e
  LEFT JOIN outbox_deliveries d ON d.endpoint_id = e.id AND d.status IN ('PENDING', 'RETRYING')
 WHERE e.tenant_id = $1
 GROUP BY e.id
 ORDER BY e.name
