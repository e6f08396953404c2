-- A new signing secret; the previous one keeps signing for 24 hours (as
-- Svix does).
-- parameters: $1 = endpoint id (uuid), $2 = new secret (whsec_…)
-- columns: id
UPDATE webhook_endpoints
   SET previous_secret = secret, secret = $2, previous_secret_expires_at = now() + interval '24 hours',
       updated_at = now()
 WHERE id = $1::uuid
RETURNING id::text AS id
