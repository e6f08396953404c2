-- Payloads delivered byte for byte, as Svix delivers them.
--
-- payload_raw  the payload's JSON text exactly as the application sent it
--            (an API message's `payload` member, or hookd_emit_raw's
--            p_payload): spacing, key order, escapes and number spellings
--            kept. Every delivery of the message sends these bytes and signs
--            them; NULL (hookd_emit, rows written before): the jsonb payload's
--            text is sent, as before. payload (jsonb) keeps the same value
--            parsed: payload filters, the API's answers and the pages read it.
--            Expunging a message's content and its retention running out
--            clear both (api_message_expunge.sql, retention_expire_payloads.sql).
--
-- hookd_emit_raw(p_aggregate_type, p_aggregate_id, p_event_type, p_payload text
--                [, p_tenant text] [, p_payload_retention interval])
-- hookd_emit's parameters with the payload as text, under a name of its own:
-- an overload of hookd_emit taking text would capture every existing call
-- whose payload is an untyped literal. p_payload must be JSON (any value, as
-- for hookd_emit); a text that is not is refused with invalid_text_representation
-- and nothing is written. Whoever may execute hookd_emit may execute it (its
-- grants are copied; PUBLIC keeps EXECUTE only if it has it on hookd_emit);
-- sql/roles/least_privilege.sql grants it to hookd_app.
--
-- What this migration locks: outbox_events and its partitions, briefly
-- (ADD COLUMN of a nullable column without a default rewrites nothing).
ALTER TABLE outbox_events ADD COLUMN payload_raw text;

-- The function's text keeps its lines, so that it reads in sql/schema.sql.
DO $do$
DECLARE
    g oid;
    grantees oid[];
    sig constant text := 'hookd_emit_raw(text, text, text, text, text, interval)';
BEGIN
    EXECUTE format($def$
CREATE FUNCTION hookd_emit_raw(p_aggregate_type text, p_aggregate_id text, p_event_type text,
                               p_payload text, p_tenant text DEFAULT NULL,
                               p_payload_retention interval DEFAULT NULL)
    RETURNS uuid LANGUAGE plpgsql SECURITY DEFINER SET search_path = %I, pg_temp AS $f$
DECLARE
    t text;
    r uuid;
    x timestamptz;
    j jsonb;
BEGIN
    IF p_payload IS NULL THEN
        RAISE EXCEPTION 'hookd_emit_raw: p_payload is NULL' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    BEGIN
        j := p_payload::jsonb;
    EXCEPTION WHEN invalid_text_representation OR untranslatable_character THEN
        RAISE EXCEPTION 'hookd_emit_raw: p_payload is not JSON: %%', SQLERRM
            USING ERRCODE = 'invalid_text_representation';
    END;
    IF p_payload_retention IS NOT NULL THEN
        IF p_payload_retention <= interval '0' THEN
            RAISE EXCEPTION 'hookd_emit_raw: p_payload_retention must be positive, not %%', p_payload_retention
                USING ERRCODE = 'invalid_parameter_value';
        END IF;
        x := now() + p_payload_retention;
    END IF;
    IF p_tenant IS NOT NULL THEN
        t := hookd_tenant_id(p_tenant);
        IF t IS NULL THEN
            RAISE EXCEPTION 'hookd_emit_raw: no tenant %%', p_tenant USING ERRCODE = 'foreign_key_violation';
        END IF;
    END IF;
    INSERT INTO outbox_events (aggregate_type, aggregate_id, event_type, payload, payload_raw, tenant_id,
                               payload_expires_at)
    VALUES (p_aggregate_type, p_aggregate_id, p_event_type, j, p_payload, t, x) RETURNING id INTO r;
    RETURN r;
END $f$
$def$, current_schema());
    SELECT array_agg(DISTINCT a.grantee) INTO grantees
      FROM pg_proc p CROSS JOIN LATERAL aclexplode(coalesce(p.proacl, acldefault('f', p.proowner))) a
     WHERE p.oid = to_regprocedure(format('%I.hookd_emit(text, text, text, jsonb, text, interval)',
                                          current_schema()))
       AND a.privilege_type = 'EXECUTE';
    EXECUTE format('REVOKE ALL ON FUNCTION %s FROM PUBLIC', sig);
    FOREACH g IN ARRAY coalesce(grantees, '{}') LOOP
        IF g = 0 THEN
            EXECUTE format('GRANT EXECUTE ON FUNCTION %s TO PUBLIC', sig);
        ELSE
            EXECUTE format('GRANT EXECUTE ON FUNCTION %s TO %s', sig, g::regrole);
        END IF;
    END LOOP;
END
$do$;
