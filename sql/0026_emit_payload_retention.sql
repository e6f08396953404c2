-- hookd_emit with a payload retention.
--
-- hookd_emit(p_aggregate_type, p_aggregate_id, p_event_type, p_payload
--            [, p_tenant text] [, p_payload_retention interval])
-- One function with defaults replaces the four-argument form (0002/0005)
-- and the tenant form (0013), so every earlier call keeps working — four
-- arguments, a fifth positional tenant, `p_tenant => …` — and
-- `p_payload_retention => interval '7 days'` works with or without a tenant.
-- (Keeping the old forms beside it would make a four-argument call
-- ambiguous: Postgres cannot choose between f(a) and f(a, b DEFAULT …).)
-- p_payload_retention sets outbox_events.payload_expires_at to now() + the
-- interval, as the API sets it for a message that asks for
-- payloadRetentionPeriod/-Hours (sql/0020: from then on the payload reads
-- as expired, is never sent, and the retention pass clears its bytes); it
-- must be positive. NULL (the default): the payload lives as long as its
-- row. now() is the calling transaction's start, like
-- created_at's.
-- Whoever could execute either old form may execute the new one (their
-- grants are carried over; the old functions' ACLs are read before they are
-- dropped), and nobody else: PUBLIC keeps EXECUTE only if it had it.
-- sql/roles/least_privilege.sql names the new signature.
DO $$
DECLARE
    g oid;
    grantees oid[];
    sig constant text := 'hookd_emit(text, text, text, jsonb, text, interval)';
BEGIN
    SELECT array_agg(DISTINCT a.grantee) INTO grantees
      FROM pg_proc p CROSS JOIN LATERAL aclexplode(coalesce(p.proacl, acldefault('f', p.proowner))) a
     WHERE p.oid IN (to_regprocedure(format('%I.hookd_emit(text, text, text, jsonb)', current_schema())),
                     to_regprocedure(format('%I.hookd_emit(text, text, text, jsonb, text)', current_schema())))
       AND a.privilege_type = 'EXECUTE';
    DROP FUNCTION IF EXISTS hookd_emit(text, text, text, jsonb);
    DROP FUNCTION IF EXISTS hookd_emit(text, text, text, jsonb, text);
    EXECUTE format(
        'CREATE FUNCTION hookd_emit(p_aggregate_type text, p_aggregate_id text, p_event_type text,'
        ' p_payload jsonb, p_tenant text DEFAULT NULL, p_payload_retention interval DEFAULT NULL)'
        ' RETURNS uuid LANGUAGE plpgsql SECURITY DEFINER SET search_path = %I, pg_temp AS $f$'
        ' DECLARE t text; r uuid; x timestamptz;'
        ' BEGIN'
        '   IF p_payload_retention IS NOT NULL THEN'
        '     IF p_payload_retention <= interval ''0'' THEN'
        '       RAISE EXCEPTION ''hookd_emit: p_payload_retention must be positive, not %%'', p_payload_retention'
        '         USING ERRCODE = ''invalid_parameter_value'';'
        '     END IF;'
        '     x := now() + p_payload_retention;'
        '   END IF;'
        '   IF p_tenant IS NOT NULL THEN'
        '     SELECT id INTO t FROM hookd_tenants WHERE uid = p_tenant;'
        '     IF t IS NULL THEN SELECT id INTO t FROM hookd_tenants WHERE id = p_tenant; END IF;'
        '     IF t IS NULL THEN'
        '       RAISE EXCEPTION ''hookd_emit: no tenant %%'', p_tenant USING ERRCODE = ''foreign_key_violation'';'
        '     END IF;'
        '   END IF;'
        '   INSERT INTO outbox_events (aggregate_type, aggregate_id, event_type, payload, tenant_id,'
        '                              payload_expires_at)'
        '   VALUES (p_aggregate_type, p_aggregate_id, p_event_type, p_payload, t, x) RETURNING id INTO r;'
        '   RETURN r;'
        ' END $f$', current_schema());
    EXECUTE format('REVOKE ALL ON FUNCTION %s FROM PUBLIC', sig);
    FOREACH g IN ARRAY coalesce(grantees, '{}') LOOP
        IF g = 0 THEN
            EXECUTE format('GRANT EXECUTE ON FUNCTION %s TO PUBLIC', sig);
        ELSE
            EXECUTE format('GRANT EXECUTE ON FUNCTION %s TO %s', sig, g::regrole);
        END IF;
    END LOOP;
END
$$;
