-- The live API token (not revoked, not expired) whose SHA-256 digest this is, with its tenant ("" for
-- a token that sees every tenant), and whether its last use is older than a
-- minute (then api_token_touch records this one).
-- parameters: $1 = the token's SHA-256, hex
-- columns: id, tenant_id, stale
SELECT id::text AS id, coalesce(tenant_id, '') AS tenant_id,
       (last_used_at IS NULL OR last_used_at < now() - interval '1 minute') AS stale
  FROM hookd_api_tokens WHERE token_sha256 = $1 AND revoked_at IS NULL
   AND (expires_at IS NULL OR expires_at > now())
