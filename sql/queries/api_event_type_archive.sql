-- Archives an event type (it stays for the endpoints that name it; new
-- filterTypes may not name it), or deletes it (expunge).
-- parameters: $1 = name, $2 = expunge (boolean)
-- columns: name
WITH a AS (UPDATE hookd_event_types SET archived = true, updated_at = now()
            WHERE name = $1 AND NOT $2::boolean RETURNING name),
 d AS (DELETE FROM hookd_event_types WHERE name = $1 AND $2::boolean RETURNING name)
SELECT name FROM a UNION ALL SELECT name FROM d
