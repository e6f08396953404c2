-- Claimed deliveries with their event and endpoint, in the order of the
-- ids asked for. One primary-key probe per row, whatever the planner
-- believes about the tables' sizes (OFFSET 0 keeps each lookup its own
-- subquery): with statistics from an empty outbox it once joined by
-- scanning every event per delivery. blocked_ms: for an ordered endpoint,
-- how long the delivery waits behind its aggregate's earlier ones
-- (hookd_delivery_blocked_ms, sql/0017); NULL: it may be sent. ordered: its
-- success releases the aggregate's next delivery (delivery_ordered_next).
-- Each id is looked up in its own partition and _kept only (part_at from the
-- id: hookd_id_part, sql/0018_ids_carry_partition.sql), never in every one;
-- its event in the delivery's partition (a delivery takes its event's
-- part_at) or _kept (an event kept past expiry, moved before its deliveries).
-- payload NULL: the message's payload expired or was expunged (sql/0020):
-- it is not sent. settings, tenant_settings: the endpoint's and its
-- tenant's delivery settings (engine/core/settings.h; NULL: none given). payload: the bytes the
-- application sent (payload_raw, sql/0030), else the jsonb payload's text.
-- parameters: $1 = delivery ids (uuid[], binary)
-- columns: id, status, event_id, payload, name, url, secret, previous_secret, enabled,
--   timeout_ms, max_inflight, attempts, endpoint_id, headers, rate_limit,
--   blocked_ms, webhook_id, ordered, settings, tenant_settings
SELECT d.id::text AS id, d.status, ev.id::text AS event_id,
 CASE WHEN NOT hookd_payload_expired(ev) THEN coalesce(ev.payload_raw, ev.payload::text) END AS payload, ep.name, ep.url,
 ep.secret,
 CASE WHEN ep.previous_secret_expires_at > now() THEN ep.previous_secret END AS previous_secret,
 ep.enabled, ep.timeout_ms, ep.max_inflight, d.attempts, ep.id::text AS endpoint_id,
 NULLIF(ep.headers, '{}'::jsonb)::text AS headers, ep.rate_limit,
 CASE WHEN ep.ordered AND d.status IN ('PENDING', 'RETRYING') THEN hookd_delivery_blocked_ms(ep.id, ev.id) END
 AS blocked_ms,
  hookd_webhook_id(ev) AS webhook_id,
  ep.ordered, NULLIF(ep.settings, '{}'::jsonb)::text AS settings,
  (SELECT NULLIF(t.settings, '{}'::jsonb)::text FROM hookd_tenants t WHERE t.id = ep.tenant_id) AS tenant_settings
 FROM unnest($1::uuid[]) AS k(id)
 CROSS JOIN LATERAL (SELECT hookd_id_part(k.id) AS pa OFFSET 0) kp
 CROSS JOIN LATERAL (SELECT * FROM outbox_deliveries d WHERE d.id = k.id
  AND @in_part_of(d.part_at, kp.pa, CASE WHEN kp.pa IS NULL THEN '-infinity'::timestamptz END)
  OFFSET 0) d
 CROSS JOIN LATERAL (SELECT * FROM outbox_events e WHERE e.id = d.event_id AND e.part_at IN (d.part_at, '-infinity')
  OFFSET 0) ev
 LEFT JOIN LATERAL (SELECT * FROM webhook_endpoints WHERE id = d.endpoint_id OFFSET 0) ep
 ON true
