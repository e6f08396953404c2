-- Replays of schemes that sign neither the event id nor a timestamp
-- (github, hmac-sha256, and any partner whose id, type or entity id comes
-- from a header the signature does not cover). Such a captured body could
-- be sent again under a new delivery id, or with another event type header,
-- and would pass both the signature and UNIQUE(partner_name,
-- partner_event_id). For those partners ingest also stores the SHA-256 of
-- the raw body, and this key makes the same body from the same partner a
-- duplicate whatever id or type it arrives with. NULL for the partners whose
-- signature covers id, type and a timestamp (standard-webhooks, stripe with
-- their default fields): their key stays the event id alone. Rows stored
-- before this migration have no digest, so they are not protected.
ALTER TABLE webhook_inbox ADD COLUMN IF NOT EXISTS content_digest bytea;
CREATE UNIQUE INDEX IF NOT EXISTS webhook_inbox_content_digest
    ON webhook_inbox (partner_name, content_digest) WHERE content_digest IS NOT NULL;
