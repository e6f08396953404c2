-- An endpoint's statistics over [since, until) (Svix's get-stats: until
-- defaults to now, since to 28 days before until; a future until or a range
-- over 28 days (+ 5 minutes of clock slack) is refused, `bad` says which).
-- success and fail count the attempts made in the range, as Svix counts
-- them; pending and sending the endpoint's deliveries created in the range
-- that are still open: not attempted yet, or retrying.
-- parameters: $1 = endpoint id (uuid), $2 = since (timestamptz) or NULL, $3 = until or NULL
-- columns: bad, success, pending, sending, fail
WITH r AS (SELECT u, coalesce($2::timestamptz, u - interval '28 days') AS s
             FROM (SELECT coalesce($3::timestamptz, now()) AS u) x),
 att AS (SELECT count(*) FILTER (WHERE a.outcome = 'succeeded') AS ok,
                count(*) FILTER (WHERE a.outcome <> 'succeeded') AS ko
           FROM r, outbox_deliveries d
           JOIN attempts a ON a.source = 'delivery' AND a.source_id = d.id AND @since_id(a.part_at, d.id)
          WHERE d.endpoint_id = $1::uuid AND a.attempted_at >= r.s AND a.attempted_at < r.u),
 open AS (SELECT count(*) FILTER (WHERE d.attempts = 0) AS pending, count(*) FILTER (WHERE d.attempts > 0) AS sending
            FROM r, outbox_deliveries d
           WHERE d.endpoint_id = $1::uuid AND d.status IN ('PENDING', 'RETRYING')
             AND d.created_at >= r.s AND d.created_at < r.u)
SELECT CASE WHEN r.u > now() THEN 'future' WHEN r.u - r.s > interval '28 days 5 minutes' THEN 'range' END AS bad,
       att.ok AS success, open.pending, open.sending, att.ko AS fail
  FROM r, att, open
