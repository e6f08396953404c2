-- Records the answer given under an idempotency key (same transaction as
-- the operation).
-- parameters: $1 = scope, $2 = key, $3 = HTTP status, $4 = body (JSON text or NULL)
UPDATE hookd_idempotency_keys SET status = $3::integer, body = $4 WHERE scope = $1 AND key = $2
