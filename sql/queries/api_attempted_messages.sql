-- A page of the messages an endpoint was attempted with (Svix's "list
-- attempted messages"), newest first, after the iterator; paging backwards
-- (a prevIterator, or Svix's `after` alone with no iterator: then from the
-- oldest after it), the newer page before it (rows oldest first:
-- api_reply_list turns them round). Filters: status, event types, channel,
-- tag, created before and after a time. A message is listed once its delivery
-- to the endpoint has an attempt; its status is the delivery's: 0 success
-- (SUCCEEDED), 2 fail (DEAD), 3 sending (open, with `nextAttempt`).
-- parameters: $1 = application id, $2 = endpoint id (uuid), $3 = status (0 to 4) or NULL,
--   $4 = event types (comma-separated) or NULL, $5 = before (timestamptz) or NULL, $6 = after or NULL,
--   $7 = with content (boolean), $8 = channel or NULL, $9 = tag or NULL,
--   $10 = iterator (msg_… id) or NULL, $11 = rows, $12 = backwards (boolean)
-- columns: body, api_id
WITH m AS NOT MATERIALIZED (
  SELECT m AS msg, m.id, m.created_at, d.next_attempt_at,
         CASE d.status WHEN 'SUCCEEDED' THEN 0 WHEN 'DEAD' THEN 2 ELSE 3 END AS status
    FROM outbox_events m
    JOIN outbox_deliveries d ON d.event_id = m.id AND d.endpoint_id = $2::uuid AND @in_part(d.part_at, m.id)
   WHERE m.tenant_id = $1
     AND EXISTS (SELECT 1 FROM attempts a WHERE a.source = 'delivery' AND a.source_id = d.id
                 AND @since_id(a.part_at, d.id))
     AND ($3::integer IS NULL OR (CASE d.status WHEN 'SUCCEEDED' THEN 0 WHEN 'DEAD' THEN 2 ELSE 3 END) = $3::integer)
     AND ($4::text IS NULL OR m.event_type = ANY (string_to_array($4, ',')))
     AND ($5::timestamptz IS NULL OR m.created_at < $5::timestamptz)
     AND ($6::timestamptz IS NULL OR m.created_at > $6::timestamptz)
     AND ($8::text IS NULL OR m.channels @> ARRAY[$8::text])
     AND ($9::text IS NULL OR m.tags @> ARRAY[$9::text])),
 it AS (SELECT created_at, id FROM outbox_events WHERE id = hookd_api_uuid('msg', $10)
                 AND @in_part(part_at, hookd_api_uuid('msg', $10))),
 page AS (
  (SELECT * FROM m WHERE NOT $12::boolean AND ($10::text IS NULL OR (m.created_at, m.id) < (SELECT * FROM it))
    ORDER BY m.created_at DESC, m.id DESC LIMIT $11::integer)
  UNION ALL
  (SELECT * FROM m WHERE $12::boolean AND ($10::text IS NULL OR (m.created_at, m.id) > (SELECT * FROM it))
    ORDER BY m.created_at, m.id LIMIT $11::integer))
SELECT (hookd_api_message(p.msg, $7::boolean) || jsonb_build_object('status', p.status,
          'statusText', CASE p.status WHEN 0 THEN 'success' WHEN 2 THEN 'fail' ELSE 'sending' END)
          || CASE WHEN p.status = 3 THEN jsonb_build_object('nextAttempt', hookd_api_ts(p.next_attempt_at))
                  ELSE '{}'::jsonb END)::text AS body,
       hookd_api_id('msg', p.id) AS api_id
  FROM page p
