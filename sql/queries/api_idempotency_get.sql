-- The answer recorded for an idempotency key.
-- parameters: $1 = scope, $2 = key
-- columns: status, body
SELECT status, body FROM hookd_idempotency_keys WHERE scope = $1 AND key = $2
