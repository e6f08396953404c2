-- Which of a machine's entities exist (those inbox_batch_lock_entities did
-- not lock: held by another worker, or missing).
-- parameters: $1 = machine (entity type), $2 = entity ids, sorted (text[], binary)
-- columns: id
SELECT k.id FROM unnest($2::text[]) AS k(id)
 JOIN hookd_entities e ON e.entity_type = $1 AND e.entity_id = k.id
