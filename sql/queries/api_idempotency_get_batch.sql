-- The answers recorded for some idempotency keys (the ones a batch could
-- not claim).
-- parameters: $1 = scopes (text[]), $2 = keys (text[])
-- columns: scope, key, status, body
SELECT h.scope, h.key, h.status, h.body
  FROM hookd_idempotency_keys h JOIN unnest($1::text[], $2::text[]) AS u(s, k) ON h.scope = u.s AND h.key = u.k
