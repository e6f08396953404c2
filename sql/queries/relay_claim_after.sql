-- relay_claim, starting after the last event of the other lane's pass:
-- walking from the start, a claim would step over that pass's rows, locked,
-- one heap fetch and lock test each. It
-- passes over any older unfanned event (an application transaction that
-- committed late, a pass that rolled back): see BOUNDED_MAX in relay.c.
-- payload NULL: expired (relay_claim.sql).
-- The event $2 is looked up in its partition and _kept only (part_at from
-- its id, sql/0018_ids_carry_partition.sql). An event that is gone (its
-- retention ran out while the relay was idle; a failover to a standby that
-- never had it) starts the claim from the oldest unfanned event, where the
-- relay finds its next mark.
-- parameters: $1 = how many, $2 = the id of the event to start after
-- columns: id, event_type, payload, tid, tenant_id, channels, deliver_ms, legacy_webhook_id
SELECT e.id::text AS id, e.event_type,
 CASE WHEN NOT coalesce(e.payload_expires_at <= greatest(now(), e.deliver_at), false) THEN coalesce(e.payload_raw, e.payload::text) END
 AS payload, e.ctid::text AS tid, e.tenant_id,
 array_to_string(e.channels, ',') AS channels,
 CASE WHEN e.deliver_at > now() THEN (extract(epoch FROM e.deliver_at) * 1000)::bigint END AS deliver_ms,
 e.legacy_webhook_id
 FROM outbox_events e WHERE e.fanned_out_at IS NULL
 AND (e.created_at, e.id) > (coalesce((SELECT created_at FROM outbox_events WHERE id = $2::uuid
  AND @in_part(part_at, $2::uuid)), '-infinity'), $2::uuid)
 ORDER BY e.created_at, e.id LIMIT $1 FOR UPDATE SKIP LOCKED
