-- How many attempts of an endpoint match Svix's attempt filters (those of
-- api_attempt_list), counted up to a ceiling: at most ceiling + 1 rows are
-- read, and approximated tells that there are more than the count given.
-- parameters: $1 = application id, $2 = endpoint id (uuid), $3 = status (0 to 4) or NULL,
--   $4 = status code class or NULL, $5 = event types (comma-separated) or NULL,
--   $6 = before (timestamptz) or NULL, $7 = after or NULL, $8 = channel or NULL, $9 = tag or NULL,
--   $10 = ceiling
-- columns: count, approximated
WITH a AS (
  SELECT 1
    FROM outbox_deliveries d
    JOIN webhook_endpoints e ON e.id = d.endpoint_id AND e.tenant_id = $1
    JOIN attempts a ON a.source = 'delivery' AND a.source_id = d.id AND @since_id(a.part_at, d.id)
   WHERE d.endpoint_id = $2::uuid
     AND ($3::integer IS NULL OR (CASE WHEN a.outcome = 'succeeded' THEN 0 ELSE 2 END) = $3::integer)
     AND ($4::integer IS NULL OR coalesce(a.status_code, 0) BETWEEN $4::integer AND $4::integer + 99)
     AND (($5::text IS NULL AND $8::text IS NULL AND $9::text IS NULL)
          OR EXISTS (SELECT 1 FROM outbox_events m WHERE m.id = d.event_id AND @in_part(m.part_at, d.event_id)
                       AND ($5::text IS NULL OR m.event_type = ANY (string_to_array($5, ',')))
                       AND ($8::text IS NULL OR m.channels @> ARRAY[$8::text])
                       AND ($9::text IS NULL OR m.tags @> ARRAY[$9::text])))
     AND ($6::timestamptz IS NULL OR a.attempted_at < $6::timestamptz)
     AND ($7::timestamptz IS NULL OR a.attempted_at > $7::timestamptz)
   LIMIT $10::integer + 1)
SELECT least(count(*), $10::integer) AS count, count(*) > $10::integer AS approximated FROM a
