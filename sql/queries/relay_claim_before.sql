-- relay_claim, but only events up to the relay's mark (relay.c, RESCAN_MS):
-- the stragglers that claims after the mark do not see (the mark itself
-- included: an event fanned out again by hand may be it) - an application
-- transaction that committed later than its created_at, a pass that rolled
-- back. Walks the unfanned index from its start, so it runs at most once a
-- second (again at once while it comes back full), and it never holds a
-- fresh event back: those are after the mark.
-- payload NULL: expired (relay_claim.sql).
-- The event $2 is looked up in its partition and _kept only (part_at from
-- its id, sql/0018_ids_carry_partition.sql). A mark that is gone claims
-- nothing here: relay_claim_after then starts from the oldest event.
-- parameters: $1 = how many, $2 = the id of the mark event
-- columns: id, event_type, payload, tid, tenant_id, channels, deliver_ms, legacy_webhook_id
SELECT e.id::text AS id, e.event_type,
 CASE WHEN NOT coalesce(e.payload_expires_at <= greatest(now(), e.deliver_at), false) THEN coalesce(e.payload_raw, e.payload::text) END
 AS payload, e.ctid::text AS tid, e.tenant_id,
 array_to_string(e.channels, ',') AS channels,
 CASE WHEN e.deliver_at > now() THEN (extract(epoch FROM e.deliver_at) * 1000)::bigint END AS deliver_ms,
 e.legacy_webhook_id
 FROM outbox_events e WHERE e.fanned_out_at IS NULL
 AND (e.created_at, e.id) <= ((SELECT created_at FROM outbox_events WHERE id = $2::uuid
  AND @in_part(part_at, $2::uuid)), $2::uuid)
 ORDER BY e.created_at, e.id LIMIT $1 FOR UPDATE SKIP LOCKED
