-- One endpoint as the API shows it, with its secret and headers.
-- parameters: $1 = endpoint id (uuid)
-- columns: body, secret, headers
SELECT hookd_api_endpoint(e)::text AS body, e.secret, e.headers::text AS headers
  FROM webhook_endpoints e WHERE e.id = $1::uuid
