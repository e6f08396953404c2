-- Every subscriber, by name (`hookd endpoint list`).
-- parameters: none
-- columns: name, enabled, events, url, disabled_reason
SELECT name, CASE WHEN enabled THEN 'yes' ELSE 'no' END AS enabled,
       array_to_string(event_types, ',') AS events, url,
       coalesce(disabled_reason, '') AS disabled_reason
  FROM webhook_endpoints
 ORDER BY name
