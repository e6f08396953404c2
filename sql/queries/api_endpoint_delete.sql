-- Deletes an endpoint (its deliveries go with it: sql/0007's trigger).
-- parameters: $1 = endpoint id (uuid)
-- columns: id
DELETE FROM webhook_endpoints WHERE id = $1::uuid RETURNING id::text AS id
