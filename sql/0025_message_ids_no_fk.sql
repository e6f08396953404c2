-- Message creation speed: the eventId claims' foreign key to hookd_tenants
-- runs, per message created, an RI trigger that looks the application up
-- and locks it FOR KEY SHARE (an SPI query per row of the batch statement,
-- sql/queries/api_message_batch.sql). This migration drops it; what it
-- guaranteed is kept otherwise:
--   - no claim for an application that is gone: the statements that claim
--     (api_message_batch, api_message_create) lock their applications FOR
--     KEY SHARE themselves, once per statement, so a concurrent delete waits
--     for them or, committed first, leaves the application unknown (404);
--   - ON DELETE CASCADE: a statement trigger deletes the claims of deleted
--     applications (the primary key (tenant_id, event_id) serves it), and
--     TRUNCATE, which the key refused without CASCADE, empties the claims
--     too (as sql/0009 did for outbox_deliveries).
-- Existing claims are untouched and keep answering 409 for their eventIds.
-- What this migration locks: hookd_message_ids and hookd_tenants, briefly
-- (dropping a constraint and creating triggers; no row is read or written).
ALTER TABLE hookd_message_ids DROP CONSTRAINT IF EXISTS hookd_message_ids_tenant_id_fkey;

DO $$
BEGIN
    EXECUTE format(
        'CREATE FUNCTION hookd_tenants_deleted() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER'
        ' SET search_path = %I, pg_temp AS $f$'
        ' BEGIN'
        '   DELETE FROM hookd_message_ids m USING deleted_tenants o WHERE m.tenant_id = o.id;'
        '   RETURN NULL;'
        ' END $f$', current_schema());
    EXECUTE format(
        'CREATE FUNCTION hookd_tenants_truncated() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER'
        ' SET search_path = %I, pg_temp AS $f$'
        ' BEGIN'
        '   TRUNCATE hookd_message_ids;'
        '   RETURN NULL;'
        ' END $f$', current_schema());
END
$$;

CREATE TRIGGER hookd_tenants_cascade AFTER DELETE ON hookd_tenants
    REFERENCING OLD TABLE AS deleted_tenants
    FOR EACH STATEMENT EXECUTE FUNCTION hookd_tenants_deleted();

CREATE TRIGGER hookd_tenants_truncate_cascade AFTER TRUNCATE ON hookd_tenants
    FOR EACH STATEMENT EXECUTE FUNCTION hookd_tenants_truncated();
