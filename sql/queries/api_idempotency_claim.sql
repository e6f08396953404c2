-- Claims an idempotency key in the request's transaction: a row when the
-- key is new, none when another request holds it (this one waited for that
-- one's commit). Records older than 24 hours are purged by api_idempotency_purge.
-- parameters: $1 = scope, $2 = key
-- columns: claimed
INSERT INTO hookd_idempotency_keys (scope, key) VALUES ($1, $2)
ON CONFLICT (scope, key) DO NOTHING
RETURNING true AS claimed
