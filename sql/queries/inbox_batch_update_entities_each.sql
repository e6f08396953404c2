-- The new states of a machine's entities after the batch's transitions, each
-- entity in its own block (sql/0024_inbox_isolate.sql): run after the plain
-- update (inbox_batch_update_entities) failed, it returns the entities whose
-- update failed, and why, and writes the others.
-- parameters: $1 = machine (entity type), $2 = entity ids (text[], binary),
--   $3 = new states (text[], binary), $4 = transitions applied (int[], binary)
-- columns: id, error, sqlstate
SELECT f.failed_id AS id, f.failed_error AS error, f.failed_sqlstate AS sqlstate
 FROM hookd_inbox_update_entities_each($1, $2::text[], $3::text[], $4::int[]) f
