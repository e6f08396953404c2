-- The new state of an entity of the built-in table (a transition applied).
-- parameters: $1 = machine (entity type), $2 = entity id, $3 = new state
UPDATE hookd_entities SET state = $3, version = version + 1, updated_at = now()
 WHERE entity_type = $1 AND entity_id = $2
