-- Revokes the tenant-scoped API token whose digest this is (Svix's logout
-- of an application token); no row for a token that sees every tenant.
-- parameters: $1 = the token's SHA-256, hex
-- columns: id
UPDATE hookd_api_tokens SET revoked_at = now()
 WHERE token_sha256 = $1 AND tenant_id IS NOT NULL AND revoked_at IS NULL
RETURNING id::text AS id
