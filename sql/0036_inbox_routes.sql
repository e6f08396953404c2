-- Routes ([route NAME] in the config) hand an inbox event to the outbox in
-- the transaction that evaluates it. routed_at marks the event as handed
-- over, so that an evaluation that runs again (a deferral, a retry, a
-- replay) never emits it twice; an event that routes take and no machine
-- names ends PROCESSED with the outcome 'routed'. hookd_route_tenant turns
-- a route's tenant uid into the tenant's id, and refuses a uid that names no
-- tenant, so that the event fails with that reason (and stays replayable)
-- instead of reaching the endpoints without a tenant.
-- Locks: ADD COLUMN is nullable without a default (catalog only); the new
-- outcome CHECK takes ACCESS EXCLUSIVE on webhook_inbox and its partitions
-- while it reads every row to validate them.
ALTER TABLE webhook_inbox ADD COLUMN routed_at timestamptz;

ALTER TABLE webhook_inbox DROP CONSTRAINT webhook_inbox_outcome_check;
ALTER TABLE webhook_inbox ADD CONSTRAINT webhook_inbox_outcome_check
    CHECK (outcome IS NULL OR outcome IN ('applied', 'noop', 'ignored', 'dead', 'routed'));

CREATE FUNCTION hookd_route_tenant(p_route text, p_tenant text) RETURNS text
    LANGUAGE plpgsql STABLE
    SET search_path TO 'public', 'pg_temp'
    AS $$
DECLARE
    t text;
BEGIN
    IF p_tenant IS NULL THEN
        RETURN NULL;
    END IF;
    t := hookd_tenant_id(p_tenant);
    IF t IS NULL THEN
        RAISE EXCEPTION 'route %: no tenant %', p_route, p_tenant USING ERRCODE = 'foreign_key_violation';
    END IF;
    RETURN t;
END $$;
