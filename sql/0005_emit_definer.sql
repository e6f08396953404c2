-- hookd_emit runs with its owner's rights, so applications need nothing but
-- EXECUTE on it (see sql/roles/least_privilege.sql): they can write to the
-- outbox without being able to read it. The search_path is pinned to the
-- function's own schema so a caller cannot redirect the insert.
DO $$
BEGIN
    EXECUTE format(
        'CREATE OR REPLACE FUNCTION hookd_emit(p_aggregate_type text, p_aggregate_id text,'
        ' p_event_type text, p_payload jsonb) RETURNS uuid LANGUAGE sql SECURITY DEFINER'
        ' SET search_path = %I, pg_temp AS $f$'
        ' INSERT INTO outbox_events (aggregate_type, aggregate_id, event_type, payload)'
        ' VALUES (p_aggregate_type, p_aggregate_id, p_event_type, p_payload) RETURNING id $f$',
        current_schema());
END
$$;
