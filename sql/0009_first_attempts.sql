-- Deliveries are inserted by the relay's fan-out only, joined to the event
-- rows it holds locked in the same transaction, so the foreign key from
-- outbox_deliveries.event_id could never fail - but it cost a lookup and a
-- KEY SHARE lock on the event per delivery, a large part of the time a
-- fan-out pass takes to write. Its ON DELETE CASCADE (an application
-- purging old events) is kept by statement triggers, as 0007 did for the
-- endpoint key; outbox_deliveries' (event_id, endpoint_id) unique index
-- serves the lookup. TRUNCATE, which the key refused without CASCADE, now
-- empties outbox_deliveries too.
ALTER TABLE outbox_deliveries DROP CONSTRAINT IF EXISTS outbox_deliveries_event_id_fkey;

-- The trigger functions are SECURITY DEFINER (deleting events or endpoints
-- needs no grant on outbox_deliveries, as with the foreign keys' cascades;
-- the outbox trigger reads hookd_relay_state for roles that may not), with
-- the search_path pinned to the schema hookd was installed in, as 0005 does
-- for hookd_emit. 0007 and 0008 pinned `public`; they are redefined here.
DO $$
BEGIN
    EXECUTE format(
        'CREATE FUNCTION hookd_events_deleted() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER'
        ' SET search_path = %I, pg_temp AS $f$'
        ' BEGIN'
        '   DELETE FROM outbox_deliveries d USING deleted_events o WHERE d.event_id = o.id;'
        '   RETURN NULL;'
        ' END $f$', current_schema());
    EXECUTE format(
        'CREATE FUNCTION hookd_events_truncated() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER'
        ' SET search_path = %I, pg_temp AS $f$'
        ' BEGIN'
        '   TRUNCATE outbox_deliveries;'
        '   RETURN NULL;'
        ' END $f$', current_schema());
    EXECUTE format(
        'CREATE OR REPLACE FUNCTION hookd_endpoint_deleted() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER'
        ' SET search_path = %I, pg_temp AS $f$'
        ' BEGIN'
        '   DELETE FROM outbox_deliveries d USING deleted_endpoints o WHERE d.endpoint_id = o.id;'
        '   RETURN NULL;'
        ' END $f$', current_schema());
    EXECUTE format(
        'CREATE OR REPLACE FUNCTION hookd_outbox_notify() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER'
        ' SET search_path = %I, pg_temp AS $f$'
        ' BEGIN'
        '   IF (SELECT listening FROM hookd_relay_state WHERE id = 1) IS NOT FALSE THEN'
        '     PERFORM pg_notify(''hookd_outbox'', '''');'
        '   END IF;'
        '   RETURN NULL;'
        ' END $f$', current_schema());
END
$$;

CREATE TRIGGER outbox_events_cascade AFTER DELETE ON outbox_events
    REFERENCING OLD TABLE AS deleted_events
    FOR EACH STATEMENT EXECUTE FUNCTION hookd_events_deleted();

CREATE TRIGGER outbox_events_truncate_cascade AFTER TRUNCATE ON outbox_events
    FOR EACH STATEMENT EXECUTE FUNCTION hookd_events_truncated();
