-- Ordered delivery within a tenant, and endpoints' event-type filters
-- without repeats.
--
-- Order is kept per tenant, endpoint and aggregate. The ordering check
-- (hookd_delivery_blocked_ms, sql/0017 and 0022) held a delivery while an
-- earlier event of its aggregate was not fanned out yet, matching the
-- aggregate's type and id whatever the tenant: an application that emits
-- the same aggregate for two tenants (invoice 1 of each customer) made one
-- tenant's slow fan-out hold the other's ordered deliveries. The earlier
-- event must now belong to the same tenant (or, for an event without one,
-- also be without one). The two other holds (an open dead letter, an open
-- earlier delivery) look at the delivery's own endpoint, which belongs to
-- one tenant, and are unchanged. The event is still found by id in its own
-- partition (sql/0018's predicate); the unfanned events of the aggregate
-- through outbox_events_aggregate_unfanned, whose entries are few.
--
-- An endpoint's event types are a set: the API stores each filter once
-- from now on, and the relay reads one row per endpoint. Stored lists with
-- repeats keep their first occurrences, in order.
--
-- What this migration locks: the catalog row of the function it replaces,
-- and the endpoints whose event types repeat (one UPDATE of those rows; no
-- table is altered).

CREATE OR REPLACE FUNCTION hookd_delivery_blocked_ms(p_endpoint uuid, p_event uuid) RETURNS bigint
    LANGUAGE plpgsql STABLE AS $$
DECLARE
    e record;
    due timestamptz;
BEGIN
    SELECT aggregate_type, aggregate_id, tenant_id, coalesce(emit_seq, 0) AS seq, created_at, id INTO e
      FROM outbox_events WHERE id = p_event
       AND (part_at IN (hookd_id_part(p_event), '-infinity') OR part_at >= hookd_id_any(p_event));
    IF NOT FOUND OR e.aggregate_type IS NULL OR e.aggregate_id IS NULL THEN
        RETURN NULL;
    END IF;
    IF EXISTS (SELECT 1 FROM outbox_events o
                WHERE o.fanned_out_at IS NULL AND o.aggregate_type = e.aggregate_type
                  AND o.aggregate_id = e.aggregate_id AND o.tenant_id IS NOT DISTINCT FROM e.tenant_id
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

UPDATE webhook_endpoints e
   SET event_types = ARRAY(SELECT u.x FROM unnest(e.event_types) WITH ORDINALITY AS u(x, i)
                            GROUP BY u.x ORDER BY min(u.i))
 WHERE cardinality(e.event_types) > (SELECT count(DISTINCT x) FROM unnest(e.event_types) x);
