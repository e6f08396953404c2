-- Records the answers of a batch's claimed idempotency keys (same
-- transaction as the messages); a key whose request was refused (status
-- NULL) is removed instead, so that a refused request stores nothing.
-- parameters: $1 = scopes (text[]), $2 = keys (text[]), $3 = HTTP statuses (int[]; NULL: remove the key),
--   $4 = bodies (text[], JSON)
WITH u AS (SELECT * FROM unnest($1::text[], $2::text[], $3::int[], $4::text[]) AS u(s, k, st, b)),
 d AS (DELETE FROM hookd_idempotency_keys h USING u WHERE h.scope = u.s AND h.key = u.k AND u.st IS NULL)
UPDATE hookd_idempotency_keys h SET status = u.st, body = u.b FROM u
 WHERE h.scope = u.s AND h.key = u.k AND u.st IS NOT NULL
