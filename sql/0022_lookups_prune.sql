-- Lookups by id that probe only the id's partition: the
-- statements in sql/queries (dlq_*, api_*, portal_*) carry the pruning
-- condition of sql/0018 in the files themselves; this migration gives it to
-- the two functions that look rows up by id, and adds the bound for
-- attempts looked up by their source.
--
-- An attempt is recorded after its source row was written: its part_at
-- (the recording transaction's now()) is later than the clock its source's
-- id carries (sql/0018: an inbox row's received time, a delivery's event's
-- part_at), unless the pass moved it to _kept ('-infinity'). A lookup of
-- attempts by source adds
--     (part_at = '-infinity' OR part_at >= hookd_id_since(source_id))
-- which prunes every partition that ended before the source was written.
-- hookd_id_since keeps an hour of margin below the id's clock (a
-- transaction that began before a concurrent one wrote the source row and
-- then recorded an attempt for it has an earlier now(); ids made by a worker
-- follow Postgres's clock to within a round trip, engine/core/clock_sync.h),
-- and is -infinity for an id that does not tell (every partition).
--
-- What this migration locks: nothing but the catalog rows of the functions
-- it replaces (no table is altered); it is instant whatever the history.

CREATE FUNCTION hookd_id_since(p_id uuid) RETURNS timestamptz LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT coalesce(to_timestamp(extract(epoch FROM hookd_id_part(p_id)) - 3600), '-infinity'::timestamptz) $$;

-- sql/0013's operational-webhook trigger: the event of each updated
-- delivery found in its own partition (a delivery's event_id carries it).
DO $$
BEGIN
    EXECUTE format(
        'CREATE OR REPLACE FUNCTION hookd_operational_deliveries() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER'
        ' SET search_path = %I, pg_temp AS $f$'
        ' BEGIN'
        '   IF NOT hookd_operational_on(''message.attempt.'') THEN RETURN NULL; END IF;'
        '   INSERT INTO outbox_events (aggregate_type, aggregate_id, event_type, payload)'
        '   SELECT ''hookd.operational'', n.id::text, k.type, jsonb_build_object(''type'', k.type,'
        '          ''timestamp'', hookd_api_ts(now()), ''data'', jsonb_build_object(''appId'', ev.tenant_id,'
        '          ''appUid'', t.uid, ''endpointId'', hookd_api_id(''ep'', n.endpoint_id),'
        '          ''msgId'', hookd_api_id(''msg'', n.event_id), ''msgEventId'', ev.api_event_id,'
        '          ''lastAttempt'', jsonb_build_object(''timestamp'', hookd_api_ts(now()),'
        '          ''responseStatusCode'', n.last_status_code, ''error'', n.last_error)))'
        '     FROM new_rows n JOIN old_rows o ON o.id = n.id'
        '     JOIN outbox_events ev ON ev.id = n.event_id'
        '      AND (ev.part_at IN (hookd_id_part(n.event_id), ''-infinity'') OR ev.part_at >= hookd_id_any(n.event_id))'
        '     LEFT JOIN hookd_tenants t ON t.id = ev.tenant_id'
        '     CROSS JOIN LATERAL (VALUES'
        '       (CASE WHEN o.attempts < 4 AND n.attempts >= 4 AND n.status IN (''RETRYING'', ''DEAD'')'
        '             THEN ''message.attempt.failing'' END),'
        '       (CASE WHEN n.status = ''DEAD'' AND o.status <> ''DEAD'' THEN ''message.attempt.exhausted'' END),'
        '       (CASE WHEN n.status = ''SUCCEEDED'' AND o.status <> ''SUCCEEDED'''
        '              AND (o.status = ''RETRYING'' OR o.replayed_at IS NOT NULL)'
        '             THEN ''message.attempt.recovered'' END)) k(type)'
        '    WHERE k.type IS NOT NULL AND ev.aggregate_type IS DISTINCT FROM ''hookd.operational'';'
        '   RETURN NULL;'
        ' END $f$', current_schema());
END
$$;

-- sql/0017's ordering check: the event, and the events of the endpoint's
-- earlier deliveries, found by id in their partitions.
CREATE OR REPLACE FUNCTION hookd_delivery_blocked_ms(p_endpoint uuid, p_event uuid) RETURNS bigint
    LANGUAGE plpgsql STABLE AS $$
DECLARE
    e record;
    due timestamptz;
BEGIN
    SELECT aggregate_type, aggregate_id, coalesce(emit_seq, 0) AS seq, created_at, id INTO e
      FROM outbox_events WHERE id = p_event
       AND (part_at IN (hookd_id_part(p_event), '-infinity') OR part_at >= hookd_id_any(p_event));
    IF NOT FOUND OR e.aggregate_type IS NULL OR e.aggregate_id IS NULL THEN
        RETURN NULL;
    END IF;
    IF EXISTS (SELECT 1 FROM outbox_events o
                WHERE o.fanned_out_at IS NULL AND o.aggregate_type = e.aggregate_type
                  AND o.aggregate_id = e.aggregate_id
                  AND (coalesce(o.emit_seq, 0), o.created_at, o.id) < (e.seq, e.created_at, e.id)) THEN
        RETURN 500;
    END IF;
    IF EXISTS (SELECT 1 FROM outbox_deliveries d JOIN outbox_events o ON o.id = d.event_id
                 AND (o.part_at IN (hookd_id_part(d.event_id), '-infinity') OR o.part_at >= hookd_id_any(d.event_id))
                WHERE d.endpoint_id = p_endpoint AND d.status = 'DEAD'
                  AND o.aggregate_type = e.aggregate_type AND o.aggregate_id = e.aggregate_id
                  AND (coalesce(o.emit_seq, 0), o.created_at, o.id) < (e.seq, e.created_at, e.id)
                  AND EXISTS (SELECT 1 FROM dead_letters dl WHERE dl.source = 'delivery'
                                 AND dl.source_id = d.id AND dl.replayed_at IS NULL)) THEN
        RETURN 5000;
    END IF;
    SELECT max(d.next_attempt_at) INTO due
      FROM outbox_deliveries d JOIN outbox_events o ON o.id = d.event_id
                 AND (o.part_at IN (hookd_id_part(d.event_id), '-infinity') OR o.part_at >= hookd_id_any(d.event_id))
     WHERE d.endpoint_id = p_endpoint AND d.status IN ('PENDING', 'RETRYING')
       AND o.aggregate_type = e.aggregate_type AND o.aggregate_id = e.aggregate_id
       AND (coalesce(o.emit_seq, 0), o.created_at, o.id) < (e.seq, e.created_at, e.id);
    IF due IS NULL THEN
        RETURN NULL;
    END IF;
    RETURN greatest(200, least(60000, (extract(epoch FROM due - now()) * 1000)::bigint + 200));
END $$;
