-- Message payloads that expire (Svix's payloadRetentionPeriod,
-- in days, and payloadRetentionHours), and the batch's retry signal.
--
-- payload_expires_at  when the message's payload stops being readable.
--            NULL: it lives as long as its row (the partition's retention,
--            [retention] outbox_events). Set only when a message asks for a
--            shorter life than that; an expunge (DELETE …/msg/{id}/content)
--            sets it to the moment of the expunge. From that moment every
--            read answers what Svix answers for a message without content
--            (hookd_api_message: {"expired": true}), resend refuses it, and
--            replay and recover pass it by — no write is needed for that.
--            The bytes go later, in bounded batches of the retention pass
--            (engine/core/retention.c, retention_expire_payloads.sql): the
--            payload becomes JSON null, which no API payload can be (Svix
--            requires an object), so "expired" is never confused with a
--            payload a user sent (a {"expired": true} marker could be).
-- The partial index holds only the payloads still to clear: a row leaves it
-- when its payload is cleared, and ordinary messages (no expiry) never enter
-- it, so the pass costs nothing when no message asked for a short life.
ALTER TABLE outbox_events ADD COLUMN payload_expires_at timestamptz;
CREATE INDEX outbox_events_payload_expiry ON outbox_events (payload_expires_at)
    WHERE payload_expires_at IS NOT NULL AND payload <> 'null'::jsonb;

-- What 0013-0019 marked as expunged ({"expired": true} in an API message)
-- becomes an expiry, with the bytes cleared at once.
UPDATE outbox_events SET payload = 'null'::jsonb, payload_expires_at = coalesce(processed_at, created_at)
 WHERE tenant_id IS NOT NULL AND payload = '{"expired": true}'::jsonb;

-- Whether the message's payload has expired (or was expunged).
CREATE FUNCTION hookd_payload_expired(m outbox_events) RETURNS boolean LANGUAGE sql STABLE AS $$
    SELECT coalesce(m.payload_expires_at <= now(), false) $$;

CREATE OR REPLACE FUNCTION hookd_api_message(m outbox_events, with_content boolean) RETURNS jsonb
    LANGUAGE sql STABLE AS $$
    SELECT jsonb_build_object('id', hookd_api_id('msg', m.id), 'eventId', m.api_event_id,
        'eventType', m.event_type,
        'payload', CASE WHEN NOT with_content THEN '{}'::jsonb
                        WHEN hookd_payload_expired(m) THEN '{"expired": true}'::jsonb ELSE m.payload END,
        'channels', to_jsonb(m.channels), 'tags', to_jsonb(m.tags), 'deliverAt', hookd_api_ts(m.deliver_at),
        'timestamp', hookd_api_ts(m.created_at)) $$;

-- A batch of message creations (sql/queries/api_message_batch.sql) found an
-- idempotency key that another transaction recorded after its snapshot:
-- the statement is aborted (serialization_failure) and its requests run one
-- by one.
CREATE FUNCTION hookd_api_batch_retry() RETURNS text LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    RAISE EXCEPTION 'an idempotency key of the batch was recorded meanwhile' USING ERRCODE = '40001';
END
$$;
