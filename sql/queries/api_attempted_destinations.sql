-- A page of the endpoints a message was attempted to (Svix's "list
-- attempted destinations"), in endpoint id order after the iterator;
-- paging backwards (a prevIterator), the page before it (rows in reverse:
-- api_reply_list turns them round). Each is the endpoint (EndpointOut) with
-- its delivery's status: 0 success, 2 fail, 3 sending (with `nextAttempt`).
-- parameters: $1 = message id (uuid), $2 = iterator (ep_… id) or NULL, $3 = rows, $4 = backwards (boolean)
-- columns: body, api_id
WITH t AS NOT MATERIALIZED (
  SELECT e AS ep, e.id, d.next_attempt_at,
         CASE d.status WHEN 'SUCCEEDED' THEN 0 WHEN 'DEAD' THEN 2 ELSE 3 END AS status
    FROM outbox_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id
   WHERE d.event_id = $1::uuid AND @in_part(d.part_at, $1::uuid)
     AND EXISTS (SELECT 1 FROM attempts a WHERE a.source = 'delivery' AND a.source_id = d.id
                 AND @since_id(a.part_at, d.id))),
 page AS (
  (SELECT * FROM t WHERE NOT $4::boolean AND ($2::text IS NULL OR t.id > hookd_api_uuid('ep', $2))
    ORDER BY t.id LIMIT $3::integer)
  UNION ALL
  (SELECT * FROM t WHERE $4::boolean AND t.id < hookd_api_uuid('ep', $2) ORDER BY t.id DESC LIMIT $3::integer))
SELECT (hookd_api_endpoint(p.ep) || jsonb_build_object('status', p.status,
          'statusText', CASE p.status WHEN 0 THEN 'success' WHEN 2 THEN 'fail' ELSE 'sending' END,
          'nextAttempt', CASE WHEN p.status = 3 THEN hookd_api_ts(p.next_attempt_at) END))::text AS body,
       hookd_api_id('ep', p.id) AS api_id
  FROM page p
