-- Locks an inbox event whose evaluation failed and reads its attempts (no
-- row: another worker took it meanwhile).
-- parameters: $1 = inbox id
-- columns: attempts
SELECT attempts FROM webhook_inbox WHERE id = $1 FOR UPDATE SKIP LOCKED
