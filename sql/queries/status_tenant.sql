-- One tenant for `hookd status --tenant`: who it is, and its events the
-- relay has not fanned out yet (how many, how old the oldest is, on
-- Postgres's clock).
-- parameters: $1 = tenant id
-- columns: id, uid, name, unfanned, oldest_unfanned_ms
SELECT t.id, coalesce(t.uid, '') AS uid, t.name,
       (SELECT count(*) FROM outbox_events m WHERE m.tenant_id = t.id AND m.fanned_out_at IS NULL) AS unfanned,
       coalesce((SELECT (extract(epoch FROM now() - min(m.created_at)) * 1000)::bigint FROM outbox_events m
                  WHERE m.tenant_id = t.id AND m.fanned_out_at IS NULL), 0) AS oldest_unfanned_ms
  FROM hookd_tenants t WHERE t.id = $1
