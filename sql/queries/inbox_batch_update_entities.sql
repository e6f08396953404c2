-- The new states of a machine's entities after the batch's transitions.
-- parameters: $1 = machine (entity type), $2 = entity ids (text[], binary),
--   $3 = new states (text[], binary), $4 = transitions applied (int[], binary)
UPDATE hookd_entities e SET state = k.state, version = e.version + k.n, updated_at = now()
 FROM unnest($2::text[], $3::text[], $4::int[]) AS k(id, state, n)
 WHERE e.entity_type = $1 AND e.entity_id = k.id
