-- Auto-disable: an endpoint whose circuit stays open for
-- `circuit_disable_after` (default 5 days, as Svix) is disabled by hookd
-- (sql/queries/delivery_disable_failing_endpoint.sql). failing_since is when
-- its circuit opened, and endpoint.disabled carries it as Svix's `failSince`
-- (svix-webhooks' EndpointDisabledEventData); null for an endpoint disabled
-- otherwise (410 Gone, by hand). Re-enabling clears it.
ALTER TABLE webhook_endpoints ADD COLUMN failing_since timestamptz;

DO $$
BEGIN
    EXECUTE format(
        'CREATE OR REPLACE FUNCTION hookd_operational_endpoint() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER'
        ' SET search_path = %I, pg_temp AS $f$'
        ' BEGIN'
        '   IF NOT hookd_operational_on(''endpoint.'') THEN RETURN NULL; END IF;'
        '   INSERT INTO outbox_events (aggregate_type, aggregate_id, event_type, payload)'
        '   SELECT ''hookd.operational'', NEW.id::text, ''endpoint.disabled'', jsonb_build_object('
        '          ''type'', ''endpoint.disabled'', ''timestamp'', hookd_api_ts(now()), ''data'', jsonb_build_object('
        '          ''appId'', NEW.tenant_id,'
        '          ''appUid'', (SELECT uid FROM hookd_tenants WHERE id = NEW.tenant_id),'
        '          ''endpointId'', hookd_api_id(''ep'', NEW.id), ''endpointUid'', NEW.uid,'
        '          ''reason'', NEW.disabled_reason, ''failSince'', hookd_api_ts(NEW.failing_since)));'
        '   RETURN NULL;'
        ' END $f$', current_schema());
END
$$;

CREATE FUNCTION hookd_endpoint_clear_failing_since() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.failing_since := NULL;
    RETURN NEW;
END
$$;

CREATE TRIGGER webhook_endpoints_enabled BEFORE UPDATE OF enabled ON webhook_endpoints
    FOR EACH ROW WHEN (NOT OLD.enabled AND NEW.enabled) EXECUTE FUNCTION hookd_endpoint_clear_failing_since();
