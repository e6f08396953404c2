-- Revokes an API token by name (no row: none such, or already revoked).
-- parameters: $1 = name
-- columns: id
UPDATE hookd_api_tokens SET revoked_at = now() WHERE name = $1 AND revoked_at IS NULL RETURNING id::text AS id
