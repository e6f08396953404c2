-- Less work per delivery and per transition.
--
-- outbox_deliveries_event repeated the leading column of the
-- (event_id, endpoint_id) unique index: every delivery paid for it at fan-out
-- and at every status update. (outbox_deliveries_event_open stays: it is what
-- keeps "are this event's deliveries all done?" an index probe.)
DROP INDEX IF EXISTS outbox_deliveries_event;

-- Room on each page, so that an entity's state update can stay on its page
-- (a HOT update: no index entry to add). Applies to pages written from now on.
ALTER TABLE hookd_entities SET (fillfactor = 80);

-- The endpoint foreign key made every fanned-out delivery take a KEY SHARE
-- lock on its endpoint's row: with one busy endpoint and two fan-out passes at
-- once, that single row became a multixact hot spot that slowed every pass.
-- The cascade it gave is kept by a trigger on
-- the (rare) delete of an endpoint instead; a delivery whose endpoint vanished
-- anyway is dead-lettered by the delivery role ("the endpoint was deleted").
ALTER TABLE outbox_deliveries DROP CONSTRAINT IF EXISTS outbox_deliveries_endpoint_id_fkey;

-- SECURITY DEFINER: deleting an endpoint needs no grant on outbox_deliveries,
-- as with the foreign key's cascade.
CREATE FUNCTION hookd_endpoint_deleted() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public AS $$
BEGIN
    DELETE FROM outbox_deliveries d USING deleted_endpoints o WHERE d.endpoint_id = o.id;
    RETURN NULL;
END;
$$;

CREATE TRIGGER webhook_endpoints_cascade AFTER DELETE ON webhook_endpoints
    REFERENCING OLD TABLE AS deleted_endpoints
    FOR EACH STATEMENT EXECUTE FUNCTION hookd_endpoint_deleted();
