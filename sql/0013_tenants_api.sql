-- Tenants and the Svix-compatible API.
--
-- A tenant is what Svix calls an application: one customer of the user's
-- SaaS, named by `uid` (the customer's id in the user's own system) and by
-- hookd's own id (`app_…`). An endpoint belongs to at most one tenant; an
-- outbox event names at most one tenant, and is delivered only to the
-- matching endpoints of that tenant (an event without a tenant goes to the
-- endpoints without one). No foreign key points at outbox_events,
-- outbox_deliveries or attempts (they may become partitioned tables): the
-- per-tenant uniqueness of a message's eventId lives in a table of its own.

CREATE TABLE hookd_tenants (
    id          text        PRIMARY KEY,            -- app_<base62>
    uid         text        UNIQUE,                 -- the customer's id in the user's system
    name        text        NOT NULL,
    rate_limit  integer     CHECK (rate_limit > 0), -- Svix throttleRate (stored)
    metadata    jsonb       NOT NULL DEFAULT '{}',
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now(),
    CHECK (uid IS NULL OR (uid ~ '^[a-zA-Z0-9_.-]+$' AND length(uid) <= 256))
);

-- Endpoints: their tenant and the per-endpoint delivery policies.
ALTER TABLE webhook_endpoints
    ADD COLUMN tenant_id      text REFERENCES hookd_tenants (id) ON DELETE CASCADE,
    ADD COLUMN uid            text,
    ADD COLUMN description    text  NOT NULL DEFAULT '',
    ADD COLUMN metadata       jsonb NOT NULL DEFAULT '{}',
    ADD COLUMN rate_limit     integer CHECK (rate_limit > 0),   -- deliveries per second
    ADD COLUMN headers        jsonb NOT NULL DEFAULT '{}',      -- custom static headers
    ADD COLUMN payload_filter jsonb,                            -- condition on the payload
    ADD COLUMN ordered        boolean NOT NULL DEFAULT false;   -- per-aggregate order
CREATE UNIQUE INDEX webhook_endpoints_tenant_uid ON webhook_endpoints (tenant_id, uid) WHERE uid IS NOT NULL;
CREATE INDEX webhook_endpoints_tenant ON webhook_endpoints (tenant_id, created_at, id);

-- Events: the tenant they belong to (NULL: the global endpoints).
ALTER TABLE outbox_events ADD COLUMN tenant_id text,
                          ADD COLUMN api_event_id text;             -- the message's eventId (API)
CREATE INDEX outbox_events_tenant ON outbox_events (tenant_id, created_at, id) WHERE tenant_id IS NOT NULL;

-- A message's eventId, unique per tenant (Svix: per application): the
-- second create with the same eventId answers the first message.
CREATE TABLE hookd_message_ids (
    tenant_id  text        NOT NULL REFERENCES hookd_tenants (id) ON DELETE CASCADE,
    event_id   text        NOT NULL,
    message_id uuid        NOT NULL,               -- outbox_events.id (no foreign key)
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, event_id)
);

-- The event-type catalog (Svix's event types): filterTypes must name types
-- that exist here.
CREATE TABLE hookd_event_types (
    name          text        PRIMARY KEY CHECK (name ~ '^[a-zA-Z0-9_.-]+$' AND length(name) <= 256),
    description   text        NOT NULL DEFAULT '',
    archived      boolean     NOT NULL DEFAULT false,
    deprecated    boolean     NOT NULL DEFAULT false,
    schemas       jsonb,
    group_name    text,
    feature_flags text[],
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now()
);

-- API tokens: only a SHA-256 digest of the token is kept; a tenant-scoped
-- token sees that tenant alone.
CREATE TABLE hookd_api_tokens (
    id           uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
    name         text        NOT NULL UNIQUE,
    tenant_id    text        REFERENCES hookd_tenants (id) ON DELETE CASCADE,
    token_sha256 text        NOT NULL UNIQUE,      -- hex
    prefix       text        NOT NULL,             -- the first characters, to recognise it
    created_at   timestamptz NOT NULL DEFAULT now(),
    last_used_at timestamptz,
    revoked_at   timestamptz
);

-- Idempotency keys (the `idempotency-key` header of POST requests): the
-- first answer is kept and given again to a repeat within 24 hours. A repeat
-- that arrives while the first is still running waits for it (the row's
-- unique index entry).
CREATE TABLE hookd_idempotency_keys (
    scope      text        NOT NULL,               -- the token's tenant ('*': global), method and path
    key        text        NOT NULL,
    status     integer,
    body       text,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (scope, key)
);
CREATE INDEX hookd_idempotency_keys_created ON hookd_idempotency_keys (created_at);

-- hookd_emit for a tenant: `hookd_emit(…, p_tenant => 'acme')`, by uid or
-- by id. The four-argument form stays (global endpoints); the tenant form
-- has no default, so a call with four arguments is never ambiguous. An
-- unknown tenant is an error in the application's transaction, never an
-- event nobody receives.
DO $$
BEGIN
    EXECUTE format(
        'CREATE FUNCTION hookd_emit(p_aggregate_type text, p_aggregate_id text,'
        ' p_event_type text, p_payload jsonb, p_tenant text) RETURNS uuid LANGUAGE plpgsql SECURITY DEFINER'
        ' SET search_path = %I, pg_temp AS $f$'
        ' DECLARE t text; r uuid;'
        ' BEGIN'
        '   IF p_tenant IS NULL THEN'
        '     INSERT INTO outbox_events (aggregate_type, aggregate_id, event_type, payload)'
        '     VALUES (p_aggregate_type, p_aggregate_id, p_event_type, p_payload) RETURNING id INTO r;'
        '     RETURN r;'
        '   END IF;'
        '   SELECT id INTO t FROM hookd_tenants WHERE uid = p_tenant;'
        '   IF t IS NULL THEN SELECT id INTO t FROM hookd_tenants WHERE id = p_tenant; END IF;'
        '   IF t IS NULL THEN'
        '     RAISE EXCEPTION ''hookd_emit: no tenant %%'', p_tenant USING ERRCODE = ''foreign_key_violation'';'
        '   END IF;'
        '   INSERT INTO outbox_events (aggregate_type, aggregate_id, event_type, payload, tenant_id)'
        '   VALUES (p_aggregate_type, p_aggregate_id, p_event_type, p_payload, t) RETURNING id INTO r;'
        '   RETURN r;'
        ' END $f$', current_schema());
END
$$;

-- Ids as the API shows them: a prefix and a fixed-width base62 number
-- (`app_…`, `ep_…`, `msg_…`, `atmpt_…`), KSUID-like. Digits sort in ASCII
-- order and the width is fixed, so ids of time-ordered UUIDs (version 7)
-- sort by creation time as text. hookd_api_uuid / hookd_api_num read them
-- back (NULL for anything that is not one).
CREATE FUNCTION hookd_b62(p_n numeric, p_width integer) RETURNS text
    LANGUAGE plpgsql IMMUTABLE STRICT AS $$
DECLARE
    a constant text := '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
    n numeric := p_n;
    out text := '';
BEGIN
    FOR i IN 1..p_width LOOP
        out := substr(a, mod(n, 62)::integer + 1, 1) || out;
        n := div(n, 62);
    END LOOP;
    RETURN out;
END $$;

CREATE FUNCTION hookd_b62_num(p_text text) RETURNS numeric
    LANGUAGE plpgsql IMMUTABLE STRICT AS $$
DECLARE
    a constant text := '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
    n numeric := 0;
    d integer;
BEGIN
    IF p_text !~ '^[0-9A-Za-z]{1,30}$' THEN
        RETURN NULL;
    END IF;
    FOR i IN 1..length(p_text) LOOP
        d := strpos(a, substr(p_text, i, 1)) - 1;
        n := n * 62 + d;
    END LOOP;
    RETURN n;
END $$;

CREATE FUNCTION hookd_api_id(p_prefix text, p_id uuid) RETURNS text
    LANGUAGE plpgsql IMMUTABLE STRICT AS $$
DECLARE
    h constant text := replace(p_id::text, '-', '');
    n numeric := 0;
BEGIN
    FOR i IN 0..3 LOOP
        n := n * 4294967296 + ('x' || substr(h, 8 * i + 1, 8))::bit(32)::bigint;
    END LOOP;
    RETURN p_prefix || '_' || hookd_b62(n, 22);
END $$;

CREATE FUNCTION hookd_api_uuid(p_prefix text, p_text text) RETURNS uuid
    LANGUAGE plpgsql IMMUTABLE STRICT AS $$
DECLARE
    n numeric;
    h text := '';
BEGIN
    IF left(p_text, length(p_prefix) + 1) <> p_prefix || '_' OR length(p_text) <> length(p_prefix) + 23 THEN
        RETURN NULL;
    END IF;
    n := hookd_b62_num(substr(p_text, length(p_prefix) + 2));
    IF n IS NULL OR n >= 340282366920938463463374607431768211456 THEN
        RETURN NULL;
    END IF;
    FOR i IN 1..4 LOOP
        h := lpad(to_hex(mod(n, 4294967296)::bigint), 8, '0') || h;
        n := div(n, 4294967296);
    END LOOP;
    RETURN h::uuid;
END $$;

CREATE FUNCTION hookd_api_num_id(p_prefix text, p_n bigint) RETURNS text
    LANGUAGE sql IMMUTABLE STRICT AS $$ SELECT p_prefix || '_' || hookd_b62(p_n, 11) $$;

CREATE FUNCTION hookd_api_num(p_prefix text, p_text text) RETURNS bigint
    LANGUAGE sql IMMUTABLE STRICT AS $$
    SELECT CASE WHEN left(p_text, length(p_prefix) + 1) = p_prefix || '_' AND length(p_text) = length(p_prefix) + 12
                 AND hookd_b62_num(substr(p_text, length(p_prefix) + 2)) < 9223372036854775807
           THEN hookd_b62_num(substr(p_text, length(p_prefix) + 2))::bigint END $$;

-- A time-ordered UUID (version 7, RFC 9562) for rows the API creates.
CREATE FUNCTION hookd_uuid7() RETURNS uuid LANGUAGE sql VOLATILE AS $$
    SELECT encode(set_bit(set_bit(overlay(uuid_send(gen_random_uuid()) PLACING
        substring(int8send(floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint) FROM 3) FROM 1 FOR 6),
        52, 1), 53, 1), 'hex')::uuid $$;

-- Timestamps as the API writes them (UTC, ISO 8601, microseconds).
CREATE FUNCTION hookd_api_ts(p timestamptz) RETURNS text LANGUAGE sql IMMUTABLE STRICT AS $$
    SELECT to_char(p AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') $$;

-- The API's objects as JSON, in Svix's shapes (camelCase): one definition
-- for every statement that answers them (sql/queries/api_*.sql).
CREATE FUNCTION hookd_api_app(t hookd_tenants) RETURNS jsonb LANGUAGE sql STABLE AS $$
    SELECT jsonb_build_object('id', t.id, 'uid', t.uid, 'name', t.name, 'throttleRate', t.rate_limit,
        'rateLimit', t.rate_limit, 'metadata', t.metadata, 'createdAt', hookd_api_ts(t.created_at),
        'updatedAt', hookd_api_ts(t.updated_at)) $$;

CREATE FUNCTION hookd_api_endpoint(e webhook_endpoints) RETURNS jsonb LANGUAGE sql STABLE AS $$
    SELECT jsonb_build_object('id', hookd_api_id('ep', e.id), 'uid', e.uid, 'url', e.url,
        'description', e.description, 'version', 1, 'disabled', NOT e.enabled,
        'eventTypes', CASE WHEN e.event_types = ARRAY['*'] THEN NULL ELSE to_jsonb(e.event_types) END,
        'filterTypes', CASE WHEN e.event_types = ARRAY['*'] THEN NULL ELSE to_jsonb(e.event_types) END,
        'channels', NULL, 'throttleRate', e.rate_limit, 'rateLimit', e.rate_limit, 'metadata', e.metadata,
        'payloadFilter', e.payload_filter, 'ordered', e.ordered,
        'createdAt', hookd_api_ts(e.created_at), 'updatedAt', hookd_api_ts(e.updated_at)) $$;

CREATE FUNCTION hookd_api_message(m outbox_events, with_content boolean) RETURNS jsonb LANGUAGE sql STABLE AS $$
    SELECT jsonb_build_object('id', hookd_api_id('msg', m.id), 'eventId', m.api_event_id,
        'eventType', m.event_type, 'payload', CASE WHEN with_content THEN m.payload ELSE '{}'::jsonb END,
        'channels', NULL, 'tags', NULL, 'timestamp', hookd_api_ts(m.created_at)) $$;

CREATE FUNCTION hookd_api_event_type(t hookd_event_types) RETURNS jsonb LANGUAGE sql STABLE AS $$
    SELECT jsonb_build_object('name', t.name, 'description', t.description, 'archived', t.archived,
        'deprecated', t.deprecated, 'schemas', t.schemas, 'groupName', t.group_name,
        'featureFlags', to_jsonb(t.feature_flags), 'createdAt', hookd_api_ts(t.created_at),
        'updatedAt', hookd_api_ts(t.updated_at)) $$;

-- Operational webhooks (Svix's): message.attempt.exhausted (a delivery
-- dead-lettered), message.attempt.failing (its 4th failure),
-- message.attempt.recovered (a success after failures or a replay) and
-- endpoint.disabled, written as outbox events (aggregate_type
-- 'hookd.operational', no tenant) in the transaction of the change, and so
-- delivered through hookd's own outbound path to the global endpoints that
-- subscribe to them. They are written only while an enabled global endpoint
-- names such a type in its filters (`message.attempt.*`, `endpoint.*`, or
-- the exact types: not just '*'), so that installations without an operator
-- endpoint pay one index probe per statement; an endpoint subscribed to
-- '*' receives them too once they are on. Deliveries of operational events
-- never produce operational events.
CREATE FUNCTION hookd_operational_on(p_prefix text) RETURNS boolean LANGUAGE sql STABLE AS $$
    SELECT EXISTS (SELECT 1 FROM webhook_endpoints e WHERE e.tenant_id IS NULL AND e.enabled
                    AND EXISTS (SELECT 1 FROM unnest(e.event_types) f WHERE f LIKE p_prefix || '%')) $$;

DO $$
BEGIN
    EXECUTE format(
        'CREATE FUNCTION hookd_operational_deliveries() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER'
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
    EXECUTE format(
        'CREATE FUNCTION hookd_operational_endpoint() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER'
        ' SET search_path = %I, pg_temp AS $f$'
        ' BEGIN'
        '   IF NOT hookd_operational_on(''endpoint.'') THEN RETURN NULL; END IF;'
        '   INSERT INTO outbox_events (aggregate_type, aggregate_id, event_type, payload)'
        '   SELECT ''hookd.operational'', NEW.id::text, ''endpoint.disabled'', jsonb_build_object('
        '          ''type'', ''endpoint.disabled'', ''timestamp'', hookd_api_ts(now()), ''data'', jsonb_build_object('
        '          ''appId'', NEW.tenant_id, ''appUid'', (SELECT uid FROM hookd_tenants WHERE id = NEW.tenant_id),'
        '          ''endpointId'', hookd_api_id(''ep'', NEW.id), ''endpointUid'', NEW.uid,'
        '          ''reason'', NEW.disabled_reason));'
        '   RETURN NULL;'
        ' END $f$', current_schema());
END
$$;

CREATE TRIGGER outbox_deliveries_operational AFTER UPDATE ON outbox_deliveries
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION hookd_operational_deliveries();

CREATE TRIGGER webhook_endpoints_disabled AFTER UPDATE OF enabled ON webhook_endpoints
    FOR EACH ROW WHEN (OLD.enabled AND NOT NEW.enabled) EXECUTE FUNCTION hookd_operational_endpoint();
