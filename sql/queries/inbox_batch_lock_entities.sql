-- Locks a machine's entities of the batch in the built-in table and reads
-- their states; never waits (SKIP LOCKED). The ids are joined by the whole
-- key (unnest, LATERAL), so each is one index probe whatever the planner's
-- statistics say. Shares its column order with inbox_batch_entities_exist.
-- parameters: $1 = machine (entity type), $2 = entity ids, sorted (text[], binary)
-- columns: id, state
SELECT k.id, x.state FROM unnest($2::text[]) AS k(id),
 LATERAL (SELECT e.state FROM hookd_entities e WHERE e.entity_type = $1 AND e.entity_id = k.id
 FOR UPDATE SKIP LOCKED) x
