-- An entity of the built-in table in its initial state, unless it exists.
-- (Entities in the application's own tables: the same statement built at
-- run time in engine/inbound/inbox.c, entity_sql_build.)
-- parameters: $1 = machine (entity type), $2 = entity id, $3 = state
INSERT INTO hookd_entities (entity_type, entity_id, state) VALUES ($1, $2, $3)
 ON CONFLICT DO NOTHING
