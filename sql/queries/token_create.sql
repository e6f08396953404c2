-- A new API token, stored as its SHA-256 digest.
-- parameters: $1 = name, $2 = tenant id or NULL, $3 = SHA-256 of the token (hex), $4 = its first characters
-- columns: id
INSERT INTO hookd_api_tokens (name, tenant_id, token_sha256, prefix) VALUES ($1, $2, $3, $4) RETURNING id::text AS id
