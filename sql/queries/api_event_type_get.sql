-- One event type as the API shows it.
-- parameters: $1 = name
-- columns: body
SELECT hookd_api_event_type(t)::text AS body FROM hookd_event_types t WHERE t.name = $1
