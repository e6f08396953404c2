-- Claims a batch's idempotency keys in its transaction (see
-- api_idempotency_claim): the keys that were new come back; a key another
-- transaction holds is waited for, then left out. Inserted in key order, so
-- that two batches sharing keys lock them in the same order.
-- parameters: $1 = scopes (text[]), $2 = keys (text[])
-- columns: scope, key
INSERT INTO hookd_idempotency_keys (scope, key)
SELECT s, k FROM unnest($1::text[], $2::text[]) AS u(s, k) ORDER BY s, k
ON CONFLICT (scope, key) DO NOTHING
RETURNING scope, key
