-- Tenant references resolved in one place, the id first, and uids that
-- can never be taken for ids.
--
-- A tenant is named by its id (`app_…`, made by hookd) or by its uid (the
-- customer's id in the application's own system, chosen through the API or
-- the CLI). hookd_tenant_id(ref) is the one resolution: the tenant whose id
-- is ref, else the one whose uid is ref, else NULL. hookd_emit, the API's
-- lookups (sql/queries/api_app_resolve.sql, api_message_batch.sql) and the
-- CLI's (tenant_resolve.sql, dlq_list.sql) all call it, so no caller can
-- put the uid first: hookd_emit used to, and a tenant that set its uid to
-- another tenant's id received that tenant's events.
--
-- Uids may no longer start with `app_`, the prefix of every application id
-- (hookd_api_id('app', …)): a uid then never equals an id, and a reference
-- means the same tenant whichever lookup reads it. The API refuses such a
-- uid with 422 before it reaches the constraint.
--
-- Existing uids that start with `app_` are cleared (set to NULL), whether
-- they equal another tenant's id (a squat: that tenant's events went to the
-- holder of the uid), the tenant's own id (redundant: the id still names it)
-- or no id at all (the id of a deleted tenant, which the holder would
-- receive events for). The former uid is kept in the tenant's metadata
-- under "hookdFormerUid", so that an operator whose hookd_emit calls named
-- it finds the tenant (`hookd tenant show`, or SELECT … WHERE metadata ?
-- 'hookdFormerUid'), and the migration raises one WARNING per cleared uid.
-- A call that still names a cleared uid fails in the application's
-- transaction (no tenant), as for any unknown tenant; none is delivered to
-- the wrong tenant.
--
-- What this migration locks: hookd_tenants, briefly (the rows it clears,
-- then the constraint's check of a table of one row per tenant), and the
-- catalog rows of hookd_emit, which it replaces with its signature, owner
-- and grants unchanged.

CREATE FUNCTION hookd_tenant_id(p_ref text) RETURNS text LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT coalesce((SELECT t.id FROM hookd_tenants t WHERE t.id = p_ref),
                    (SELECT t.id FROM hookd_tenants t WHERE t.uid = p_ref)) $$;

DO $$
DECLARE
    r record;
BEGIN
    FOR r IN SELECT id, uid FROM hookd_tenants WHERE uid LIKE 'app\_%' ORDER BY id FOR UPDATE LOOP
        UPDATE hookd_tenants
           SET uid = NULL, metadata = metadata || jsonb_build_object('hookdFormerUid', r.uid), updated_at = now()
         WHERE id = r.id;
        RAISE WARNING 'hookd: tenant % had the uid %, which looks like an application id: cleared (kept in its metadata as hookdFormerUid)',
            r.id, r.uid;
    END LOOP;
END
$$;

ALTER TABLE hookd_tenants ADD CONSTRAINT hookd_tenants_uid_not_an_id CHECK (uid NOT LIKE 'app\_%');

-- The function's text keeps its lines, so that it reads in sql/schema.sql.
DO $do$
BEGIN
    EXECUTE format($def$
CREATE OR REPLACE FUNCTION hookd_emit(p_aggregate_type text, p_aggregate_id text, p_event_type text,
                                      p_payload jsonb, p_tenant text DEFAULT NULL,
                                      p_payload_retention interval DEFAULT NULL)
    RETURNS uuid LANGUAGE plpgsql SECURITY DEFINER SET search_path = %I, pg_temp AS $f$
DECLARE
    t text;
    r uuid;
    x timestamptz;
BEGIN
    IF p_payload_retention IS NOT NULL THEN
        IF p_payload_retention <= interval '0' THEN
            RAISE EXCEPTION 'hookd_emit: p_payload_retention must be positive, not %%', p_payload_retention
                USING ERRCODE = 'invalid_parameter_value';
        END IF;
        x := now() + p_payload_retention;
    END IF;
    IF p_tenant IS NOT NULL THEN
        t := hookd_tenant_id(p_tenant);
        IF t IS NULL THEN
            RAISE EXCEPTION 'hookd_emit: no tenant %%', p_tenant USING ERRCODE = 'foreign_key_violation';
        END IF;
    END IF;
    INSERT INTO outbox_events (aggregate_type, aggregate_id, event_type, payload, tenant_id, payload_expires_at)
    VALUES (p_aggregate_type, p_aggregate_id, p_event_type, p_payload, t, x) RETURNING id INTO r;
    RETURN r;
END $f$
$def$, current_schema());
END
$do$;
