-- Ordered delivery: deliveries of one aggregate (outbox
-- aggregate_type + aggregate_id) to an endpoint with `ordered` are sent one
-- at a time, in hookd_emit order.
--
-- hookd_emit order: emit_seq, taken from a sequence when the event is
-- inserted (events of one transaction share created_at, and their ids are
-- random). Rows from before this migration have none and come first. The
-- column gets its default after it is added, so adding it rewrites nothing.
CREATE SEQUENCE hookd_emit_seq;
ALTER TABLE outbox_events ADD COLUMN emit_seq bigint;
ALTER TABLE outbox_events ALTER COLUMN emit_seq SET DEFAULT nextval('hookd_emit_seq');
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'hookd_worker') THEN
        GRANT USAGE ON SEQUENCE hookd_emit_seq TO hookd_worker; -- API messages are inserted by the worker
    END IF;
END
$$;

-- An aggregate's events not fanned out yet (they hold their successors: two
-- relay passes may commit out of order).
CREATE INDEX outbox_events_aggregate_unfanned ON outbox_events (aggregate_type, aggregate_id)
    WHERE fanned_out_at IS NULL;
-- An endpoint's dead deliveries (a dead-lettered one holds its successors).
CREATE INDEX outbox_deliveries_endpoint_dead ON outbox_deliveries (endpoint_id) WHERE status = 'DEAD';

-- `hookd dlq skip`: the entry is closed without a replay (replayed_at and
-- skipped_at set); the delivery stays DEAD and its successors go on.
ALTER TABLE dead_letters ADD COLUMN skipped_at timestamptz;

-- How long a claimed delivery to an ordered endpoint must wait, in ms, or
-- NULL when it may be sent now: while an earlier event of its aggregate is
-- unfanned (500), while an earlier delivery of the aggregate to the endpoint
-- has an open dead letter (5000: until it is replayed or skipped), or while
-- one is PENDING/RETRYING (until it is due, at least 200, at most 60000).
-- Events without an aggregate are not ordered.
CREATE FUNCTION hookd_delivery_blocked_ms(p_endpoint uuid, p_event uuid) RETURNS bigint
    LANGUAGE plpgsql STABLE AS $$
DECLARE
    e record;
    due timestamptz;
BEGIN
    SELECT aggregate_type, aggregate_id, coalesce(emit_seq, 0) AS seq, created_at, id INTO e
      FROM outbox_events WHERE id = p_event;
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
                WHERE d.endpoint_id = p_endpoint AND d.status = 'DEAD'
                  AND o.aggregate_type = e.aggregate_type AND o.aggregate_id = e.aggregate_id
                  AND (coalesce(o.emit_seq, 0), o.created_at, o.id) < (e.seq, e.created_at, e.id)
                  AND EXISTS (SELECT 1 FROM dead_letters dl WHERE dl.source = 'delivery'
                                 AND dl.source_id = d.id AND dl.replayed_at IS NULL)) THEN
        RETURN 5000;
    END IF;
    SELECT max(d.next_attempt_at) INTO due
      FROM outbox_deliveries d JOIN outbox_events o ON o.id = d.event_id
     WHERE d.endpoint_id = p_endpoint AND d.status IN ('PENDING', 'RETRYING')
       AND o.aggregate_type = e.aggregate_type AND o.aggregate_id = e.aggregate_id
       AND (coalesce(o.emit_seq, 0), o.created_at, o.id) < (e.seq, e.created_at, e.id);
    IF due IS NULL THEN
        RETURN NULL;
    END IF;
    RETURN greatest(200, least(60000, (extract(epoch FROM due - now()) * 1000)::bigint + 200));
END $$;
