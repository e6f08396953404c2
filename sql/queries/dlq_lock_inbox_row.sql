-- Locks the inbox row of a dead letter being replayed; its status must still be
-- QUARANTINED.
-- parameters: $1 = inbox row id (uuid)
-- columns: status
SELECT status FROM webhook_inbox WHERE id = $1::uuid AND @in_part(part_at, $1::uuid) FOR UPDATE
