-- A delivery answered 2xx: SUCCEEDED (recorded one by one).
-- parameters: $1 = delivery id, $2 = attempts, $3 = HTTP status, $4 = answered at (epoch ms)
UPDATE outbox_deliveries SET status = 'SUCCEEDED', attempts = $2, last_status_code = $3,
 last_error = NULL, delivered_at = to_timestamp($4::bigint / 1000.0) WHERE id = $1
 AND @in_part(part_at, $1::uuid)
