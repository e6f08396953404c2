-- An endpoint that answered 410 Gone: disabled, with the reason.
-- parameters: $1 = endpoint name
UPDATE webhook_endpoints SET enabled = false, updated_at = now(),
 disabled_reason = 'the endpoint answered 410 Gone' WHERE name = $1
