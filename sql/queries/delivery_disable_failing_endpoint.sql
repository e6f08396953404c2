-- An endpoint whose circuit stayed open for circuit_disable_after (Svix: an
-- endpoint failing for 5 days): disabled, with the reason and since when it
-- failed (failing_since, sql/0021). The operational trigger writes
-- endpoint.disabled (with failSince) in this transaction; no row when it
-- was disabled already (by another worker, or by hand), so the webhook goes
-- out once.
-- parameters: $1 = endpoint name, $2 = when its circuit opened (epoch ms), $3 = the window, e.g. 5d (text)
-- columns: id
UPDATE webhook_endpoints SET enabled = false, updated_at = now(), failing_since = to_timestamp($2::bigint / 1000.0),
 disabled_reason = 'failing since ' || to_char(to_timestamp($2::bigint / 1000.0) AT TIME ZONE 'UTC',
  'YYYY-MM-DD"T"HH24:MI:SS"Z"') || ': its circuit stayed open for circuit_disable_after (' || $3 || ')'
 WHERE name = $1 AND enabled
 RETURNING id::text AS id
