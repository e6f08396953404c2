-- Storage per table: bytes, estimated rows, the oldest row and the next
-- expiry (epoch ms; NULL when there is none).
-- parameters: $1 = inbox window, $2 = outbox window, $3 = attempts window, $4 = dead_letters window,
--   $5 = dedup window (ms)
-- columns: tbl, bytes, rows_estimate, oldest_ms, next_expiry_ms
SELECT tbl, bytes, rows_estimate, (extract(epoch FROM oldest) * 1000)::bigint AS oldest_ms,
 (extract(epoch FROM next_expiry) * 1000)::bigint AS next_expiry_ms
 FROM hookd_storage($1::bigint, $2::bigint, $3::bigint, $4::bigint, $5::bigint)
