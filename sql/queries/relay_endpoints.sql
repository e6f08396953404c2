-- The enabled endpoints that the claimed events can reach - the global
-- ones and those of the events' tenants -, one row per event-type filter,
-- grouped by endpoint. KEY SHARE: an endpoint deleted meanwhile waits for
-- the pass to commit, so that the delete's cascade (sql/0007) also removes
-- the rows the pass writes. One lock per endpoint and pass, not per
-- delivery as the foreign key took; only the endpoints of the pass's
-- tenants, not every tenant's. Sorted by tenant (byte order, global
-- endpoints first): engine/core/endpoint_match.c finds a tenant's rows by
-- binary search. channels: the endpoint's (comma-separated; NULL: every message).
-- parameters: $1 = the claimed events' tenant ids (text[], binary)
-- columns: id, name, url, secret, previous_secret, timeout_ms, max_inflight, filter, tenant_id, payload_filter,
--   headers, rate_limit, ordered, channels
SELECT ep.id::text AS id, ep.name, ep.url, ep.secret,
 CASE WHEN ep.previous_secret_expires_at > now() THEN ep.previous_secret END AS previous_secret, ep.timeout_ms,
 ep.max_inflight, f.filter, ep.tenant_id, ep.payload_filter::text AS payload_filter,
 NULLIF(ep.headers, '{}'::jsonb)::text AS headers, ep.rate_limit, ep.ordered,
 array_to_string(ep.channels, ',') AS channels
 FROM webhook_endpoints ep CROSS JOIN LATERAL unnest(ep.event_types) AS f(filter)
 WHERE ep.enabled AND ep.id IN (SELECT id FROM webhook_endpoints WHERE tenant_id IS NULL
                                UNION ALL SELECT id FROM webhook_endpoints WHERE tenant_id = ANY ($1::text[]))
 ORDER BY ep.tenant_id COLLATE "C" NULLS FIRST, ep.id FOR KEY SHARE OF ep
