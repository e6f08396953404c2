-- Locks an entity of the built-in table and reads its state; never waits
-- (NOWAIT: a lock conflict makes the event busy).
-- parameters: $1 = machine (entity type), $2 = entity id
-- columns: state
SELECT state FROM hookd_entities WHERE entity_type = $1 AND entity_id = $2
 FOR UPDATE NOWAIT
