-- Locks the inbox row of a dead letter being replayed; its status must still be
-- QUARANTINED.
-- parameters: $1 = inbox row id (uuid)
-- columns: status
SELECT status FROM webhook_inbox WHERE id = $1::uuid AND (part_at IN (hookd_id_part($1::uuid), '-infinity') OR part_at >= hookd_id_any($1::uuid)) FOR UPDATE
