-- Enables or disables a subscriber by name (no row: no such endpoint).
-- parameters: $1 = name, $2 = true to enable, false to disable
-- columns: id
UPDATE webhook_endpoints
   SET enabled = $2, updated_at = now(),
       disabled_reason = CASE WHEN $2 THEN NULL ELSE 'disabled by an operator' END
 WHERE name = $1
RETURNING id
