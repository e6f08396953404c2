-- When an endpoint's circuit last changed, as its attempt history tells it
-- (Redis holds the circuit's state, not its times): of its newest 1,000
-- attempts that count for the circuit (a success, or a failure that says
-- the endpoint is unwell: no answer, 5xx, 408, 429 - engine/outbound/delivery.c),
-- the runs of failures between successes. failing_since: the first failure
-- after the last success; opened_at: the threshold-th of them (when it
-- opened, if it is open); closed_at: the success that ended the last run
-- that reached the threshold (NULL: no outage in that history). Times UTC.
-- parameters: $1 = tenant id, $2 = endpoint id (ep_…), $3 = threshold (circuit_failures)
-- columns: failing_since, opened_at, closed_at
WITH a AS (
    SELECT a.attempted_at AS at, a.outcome = 'succeeded' AS ok
      FROM webhook_endpoints e
      JOIN outbox_deliveries d ON d.endpoint_id = e.id
      JOIN attempts a ON a.source = 'delivery' AND a.source_id = d.id AND @since_id(a.part_at, d.id)
     WHERE e.tenant_id = $1 AND e.id = hookd_api_uuid('ep', $2)
       AND (a.outcome = 'succeeded' OR a.status_code IS NULL OR a.status_code >= 500 OR a.status_code IN (408, 429))
     ORDER BY a.attempted_at DESC LIMIT 1000),
 runs AS (SELECT at, ok, count(*) FILTER (WHERE ok) OVER (ORDER BY at ROWS UNBOUNDED PRECEDING) AS run FROM a),
 fails AS (SELECT at, run, row_number() OVER (PARTITION BY run ORDER BY at) AS n, count(*) OVER (PARTITION BY run) AS len
             FROM runs WHERE NOT ok),
 last_run AS (SELECT max(run) AS run FROM runs),
 outage AS (SELECT max(run) AS run FROM fails WHERE len >= $3::integer AND run < (SELECT run FROM last_run))
SELECT to_char((SELECT min(at) FROM fails WHERE run = (SELECT run FROM last_run)) AT TIME ZONE 'UTC',
               'YYYY-MM-DD HH24:MI:SS') AS failing_since,
       to_char((SELECT at FROM fails WHERE run = (SELECT run FROM last_run) AND n = $3::integer) AT TIME ZONE 'UTC',
               'YYYY-MM-DD HH24:MI:SS') AS opened_at,
       to_char((SELECT min(at) FROM runs WHERE ok AND run = (SELECT run FROM outage) + 1) AT TIME ZONE 'UTC',
               'YYYY-MM-DD HH24:MI:SS') AS closed_at
