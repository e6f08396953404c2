-- The live API token whose SHA-256 digest this is, with its tenant ("" for
-- a token that sees every tenant); its last use is written at most once a
-- minute.
-- parameters: $1 = the token's SHA-256, hex
-- columns: id, tenant_id
WITH k AS (SELECT id, tenant_id, last_used_at FROM hookd_api_tokens WHERE token_sha256 = $1 AND revoked_at IS NULL),
 u AS (UPDATE hookd_api_tokens t SET last_used_at = now() FROM k
        WHERE t.id = k.id AND (k.last_used_at IS NULL OR k.last_used_at < now() - interval '1 minute'))
SELECT id::text AS id, coalesce(tenant_id, '') AS tenant_id FROM k
