-- Replay through the normal path: a replayed inbox event gets a fresh
-- deferral age (max_age counts from its last replay, not its first receipt).
ALTER TABLE webhook_inbox ADD COLUMN replayed_at timestamptz;
ALTER TABLE outbox_deliveries ADD COLUMN replayed_at timestamptz;
