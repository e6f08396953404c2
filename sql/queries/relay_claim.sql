-- The oldest unfanned outbox events, locked. (A tenant's message is sent
-- with its API id, `msg_…`, as webhook-id, as Svix does: relay.c computes it,
-- engine/base/api_id.h; legacy_webhook_id: in its former shape, for a
-- message from before sql/0031, hookd_webhook_id.) channels: the message's (comma-separated;
-- sql/0019); deliver_ms: its deliverAt while in the future. (Qualified: a bare `id` in
-- ORDER BY would name the output column id::text, and sort the backlog as
-- text.) Shares its columns with relay_claim_after.
-- payload NULL: the message's payload expired (payload_expires_at passed:
-- its retention ran out, or it was expunged; sql/0020) before it was fanned
-- out, or expires before its deliverAt: it is marked fanned out with no
-- delivery, as Svix's worker makes no attempt for a message whose payload
-- is gone when its task runs (svix-server worker.rs).
-- payload: the bytes the application sent (payload_raw, sql/0030), else
-- the jsonb payload's text; payload filters read it too.
-- parameters: $1 = how many
-- columns: id, event_type, payload, tid, tenant_id, channels, deliver_ms, legacy_webhook_id
SELECT e.id::text AS id, e.event_type,
 CASE WHEN NOT coalesce(e.payload_expires_at <= greatest(now(), e.deliver_at), false) THEN coalesce(e.payload_raw, e.payload::text) END
 AS payload, e.ctid::text AS tid, e.tenant_id,
 array_to_string(e.channels, ',') AS channels,
 CASE WHEN e.deliver_at > now() THEN (extract(epoch FROM e.deliver_at) * 1000)::bigint END AS deliver_ms,
 e.legacy_webhook_id
 FROM outbox_events e WHERE e.fanned_out_at IS NULL
 ORDER BY e.created_at, e.id LIMIT $1 FOR UPDATE SKIP LOCKED
