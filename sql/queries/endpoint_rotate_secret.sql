-- Gives a subscriber a new signing secret; the old one keeps signing for a
-- grace period (no row: no such endpoint).
-- parameters: $1 = name, $2 = new secret (whsec_…), $3 = grace period in ms
-- columns: id
UPDATE webhook_endpoints
   SET previous_secret = secret, secret = $2, updated_at = now(),
       previous_secret_expires_at = now() + $3::bigint * interval '1 millisecond'
 WHERE name = $1
RETURNING id
