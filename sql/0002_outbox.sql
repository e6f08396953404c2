-- The transactional outbox (the seed's outbox_events), the endpoints that
-- subscribe to it, and one delivery row per (event, endpoint).

CREATE TABLE outbox_events (
    id             uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    aggregate_type varchar(50),                 -- e.g. 'Order' or 'User'
    aggregate_id   text,                        -- e.g. the entity id
    event_type     varchar(100) NOT NULL,       -- e.g. 'order.activated'
    payload        jsonb        NOT NULL,       -- the exact webhook payload
    created_at     timestamptz  NOT NULL DEFAULT now(),
    fanned_out_at  timestamptz,                 -- deliveries created (relay)
    processed_at   timestamptz                  -- null until every delivery is done
);

CREATE INDEX outbox_events_unfanned ON outbox_events (created_at, id) WHERE fanned_out_at IS NULL;

CREATE TABLE webhook_endpoints (
    id                 uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    name               varchar(100) NOT NULL UNIQUE,
    url                text         NOT NULL,
    secret             text         NOT NULL,   -- whsec_<base64>
    previous_secret    text,                    -- still signed with during a rotation
    previous_secret_expires_at timestamptz,
    event_types        text[]       NOT NULL DEFAULT ARRAY['*'],  -- filters, '*' wildcards
    enabled            boolean      NOT NULL DEFAULT true,
    disabled_reason    text,
    timeout_ms         integer      NOT NULL DEFAULT 10000 CHECK (timeout_ms > 0),
    max_inflight       integer      NOT NULL DEFAULT 16 CHECK (max_inflight > 0),
    created_at         timestamptz  NOT NULL DEFAULT now(),
    updated_at         timestamptz  NOT NULL DEFAULT now()
);

CREATE TABLE outbox_deliveries (
    id               uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    event_id         uuid NOT NULL REFERENCES outbox_events (id) ON DELETE CASCADE,
    endpoint_id      uuid NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
    status           varchar(20) NOT NULL DEFAULT 'PENDING'
        CHECK (status IN ('PENDING', 'RETRYING', 'SUCCEEDED', 'DEAD')),
    attempts         integer     NOT NULL DEFAULT 0,
    next_attempt_at  timestamptz NOT NULL DEFAULT now(),
    last_status_code integer,
    last_error       text,
    created_at       timestamptz NOT NULL DEFAULT now(),
    delivered_at     timestamptz,
    UNIQUE (event_id, endpoint_id)
);

CREATE INDEX outbox_deliveries_due ON outbox_deliveries (next_attempt_at, id)
    WHERE status IN ('PENDING', 'RETRYING');
CREATE INDEX outbox_deliveries_event ON outbox_deliveries (event_id);

-- For applications: write the intent to notify inside their own transaction.
CREATE FUNCTION hookd_emit(p_aggregate_type text, p_aggregate_id text,
                           p_event_type text, p_payload jsonb)
RETURNS uuid LANGUAGE sql AS $$
    INSERT INTO outbox_events (aggregate_type, aggregate_id, event_type, payload)
    VALUES (p_aggregate_type, p_aggregate_id, p_event_type, p_payload)
    RETURNING id
$$;

-- Wakes relays at commit time (NOTIFY is delivered only if the insert commits).
CREATE FUNCTION hookd_outbox_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('hookd_outbox', '');
    RETURN NULL;
END
$$;

CREATE TRIGGER outbox_events_notify AFTER INSERT ON outbox_events
    FOR EACH STATEMENT EXECUTE FUNCTION hookd_outbox_notify();
