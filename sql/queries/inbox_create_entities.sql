-- The missing entities of one machine of the built-in table, in its initial
-- state, in key order (concurrent creators lock in one order). Most exist
-- already: a plain probe is far cheaper than a speculative insertion that
-- conflicts.
-- parameters: $1 = machine (entity type), $2 = entity ids (jsonb array of strings),
--   $3 = initial state
INSERT INTO hookd_entities (entity_type, entity_id, state)
 SELECT $1::text, x, $3::text FROM jsonb_array_elements_text($2::jsonb) x
 WHERE NOT EXISTS (SELECT 1 FROM hookd_entities e WHERE e.entity_type = $1::text AND e.entity_id = x)
 ORDER BY x ON CONFLICT DO NOTHING
