-- Records a token's use (at most once a minute: see api_token_find).
-- parameters: $1 = token id (uuid)
UPDATE hookd_api_tokens SET last_used_at = now() WHERE id = $1::uuid
