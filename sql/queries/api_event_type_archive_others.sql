-- Archives every live event type whose name is not in the list (an OpenAPI
-- import's replaceAll).
-- parameters: $1 = the names to keep, a JSON array
-- columns: name
UPDATE hookd_event_types SET archived = true, updated_at = now()
 WHERE NOT archived AND name NOT IN (SELECT jsonb_array_elements_text($1::jsonb))
RETURNING name
