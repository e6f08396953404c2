-- Finding which entities a batch's apply fails for, so that one refused
-- entity does not make every retry of its batch fail. The inbox writes a
-- batch's entity states with one UPDATE
-- (sql/queries/inbox_batch_update_entities.sql); when a trigger or a check of
-- the application refuses one entity's new state, that statement fails for
-- the whole batch and does not say which entity. After such a failure (and
-- while batches keep failing) the inbox runs the update through this
-- function instead: each entity in its own block, so a refusal is caught and
-- returned (the entity, Postgres' message and SQLSTATE) and the others are
-- written. The inbox charges the refused events (a lock conflict: busy, not
-- charged) in the same try when each is its entity's only event in the
-- batch, and otherwise evaluates the rest again as one set. The blocks are
-- subtransactions, which is why the plain UPDATE stays the first try when
-- nothing failed lately.
CREATE OR REPLACE FUNCTION hookd_inbox_update_entities_each(p_type text, p_ids text[], p_states text[],
                                                            p_applied int[])
RETURNS TABLE (failed_id text, failed_error text, failed_sqlstate text)
LANGUAGE plpgsql AS $$
DECLARE
    i int;
BEGIN
    FOR i IN 1 .. coalesce(array_length(p_ids, 1), 0) LOOP
        BEGIN
            UPDATE hookd_entities e SET state = p_states[i], version = e.version + p_applied[i], updated_at = now()
             WHERE e.entity_type = p_type AND e.entity_id = p_ids[i];
        EXCEPTION WHEN OTHERS THEN
            failed_id := p_ids[i];
            failed_error := 'ERROR:  ' || SQLERRM;
            failed_sqlstate := SQLSTATE;
            RETURN NEXT;
        END;
    END LOOP;
END $$;
