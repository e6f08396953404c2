-- The enabled endpoints that the claimed events can reach - the global
-- ones and those of the events' tenants -, one row per endpoint, whatever
-- its number of event-type filters: event_types is the endpoint's filters
-- as a JSON array of strings (globs), which engine/core/endpoint_match.c
-- reads once per endpoint and pass, as it parses payload_filter once.
-- KEY SHARE: an endpoint deleted meanwhile waits for the pass to commit, so
-- that the delete's cascade (sql/0007) also removes the rows the pass
-- writes. One lock per endpoint and pass, not per delivery as the foreign
-- key took; only the endpoints of the pass's tenants, not every tenant's.
-- Sorted by tenant (byte order, global endpoints first): endpoint_match.c
-- finds a tenant's rows by binary search. channels: the endpoint's
-- (comma-separated; NULL: every message). settings, tenant_settings: the
-- endpoint's and its tenant's delivery settings (engine/core/settings.h;
-- NULL: none given). Each arm reads and locks its
-- endpoint rows itself (a locking clause is not allowed on a UNION, hence
-- the subqueries); joining the two arms' ids back to the table by primary
-- key instead costs a hash of the ids and an index probe per endpoint.
-- parameters: $1 = the claimed events' tenant ids (text[], binary)
-- columns: id, name, url, secret, previous_secret, timeout_ms, max_inflight, event_types, tenant_id,
--   payload_filter, headers, rate_limit, ordered, channels, settings, tenant_settings
SELECT ep.id::text AS id, ep.name, ep.url, ep.secret,
 CASE WHEN ep.previous_secret_expires_at > now() THEN ep.previous_secret END AS previous_secret, ep.timeout_ms,
 ep.max_inflight, array_to_json(ep.event_types)::text AS event_types, ep.tenant_id,
 ep.payload_filter::text AS payload_filter, NULLIF(ep.headers, '{}'::jsonb)::text AS headers, ep.rate_limit,
 ep.ordered, array_to_string(ep.channels, ',') AS channels, NULLIF(ep.settings, '{}'::jsonb)::text AS settings,
 (SELECT NULLIF(t.settings, '{}'::jsonb)::text FROM hookd_tenants t WHERE t.id = ep.tenant_id) AS tenant_settings
 FROM (SELECT * FROM (SELECT * FROM webhook_endpoints WHERE tenant_id IS NULL AND enabled FOR KEY SHARE) g
       UNION ALL
       SELECT * FROM (SELECT * FROM webhook_endpoints WHERE tenant_id = ANY ($1::text[]) AND enabled
                      FOR KEY SHARE) t) ep
 ORDER BY ep.tenant_id COLLATE "C" NULLS FIRST, ep.id
