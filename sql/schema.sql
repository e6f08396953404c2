-- hookd's schema as `hookd migrate` makes it on an empty database: generated
-- by scripts/schema.py (`make schema`) from the migrations sql/NNNN_*.sql,
-- which stay the truth; do not edit. `make schema-check` fails when this file
-- is not what they make. Left out: owners, privileges and the partitions per
-- time range (their parent's columns and indexes); '<migrate time>' and
-- <migrate time in ms> stand for the time the migrations ran.

--
-- PostgreSQL database dump
--

SET statement_timeout = 0;
SET lock_timeout = 0;
SET idle_in_transaction_session_timeout = 0;
SET client_encoding = 'UTF8';
SET standard_conforming_strings = on;
SELECT pg_catalog.set_config('search_path', '', false);
SET check_function_bodies = false;
SET xmloption = content;
SET client_min_messages = warning;
SET row_security = off;

--
-- Name: public; Type: SCHEMA; Schema: -; Owner: -
--

CREATE SCHEMA public;

SET default_table_access_method = heap;

--
-- Name: hookd_tenants; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.hookd_tenants (
    id text NOT NULL,
    uid text,
    name text NOT NULL,
    rate_limit integer,
    metadata jsonb DEFAULT '{}'::jsonb NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    settings jsonb DEFAULT '{}'::jsonb NOT NULL,
    CONSTRAINT hookd_tenants_rate_limit_check CHECK ((rate_limit > 0)),
    CONSTRAINT hookd_tenants_settings_object CHECK ((jsonb_typeof(settings) = 'object'::text)),
    CONSTRAINT hookd_tenants_uid_check CHECK (((uid IS NULL) OR ((uid ~ '^[a-zA-Z0-9_.-]+$'::text) AND (length(uid) <= 256)))),
    CONSTRAINT hookd_tenants_uid_not_an_id CHECK ((uid !~~ 'app\_%'::text))
);

--
-- Name: hookd_api_app(public.hookd_tenants); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.hookd_api_app(t public.hookd_tenants) RETURNS jsonb
    LANGUAGE sql STABLE
    AS $$
    SELECT jsonb_build_object('id', t.id, 'uid', t.uid, 'name', t.name, 'throttleRate', t.rate_limit,
        'rateLimit', t.rate_limit, 'metadata', t.metadata, 'settings', t.settings,
        'createdAt', hookd_api_ts(t.created_at), 'updatedAt', hookd_api_ts(t.updated_at)) $$;

--
-- Name: hookd_api_batch_retry(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.hookd_api_batch_retry() RETURNS text
    LANGUAGE plpgsql
    AS $$
BEGIN
    RAISE EXCEPTION 'an idempotency key of the batch was recorded meanwhile' USING ERRCODE = '40001';
END
$$;

--
-- Name: webhook_endpoints; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.webhook_endpoints (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    name character varying(100) NOT NULL,
    url text NOT NULL,
    secret text NOT NULL,
    previous_secret text,
    previous_secret_expires_at timestamp with time zone,
    event_types text[] DEFAULT ARRAY['*'::text] NOT NULL,
    enabled boolean DEFAULT true NOT NULL,
    disabled_reason text,
    timeout_ms integer DEFAULT 10000 NOT NULL,
    max_inflight integer DEFAULT 16 NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    tenant_id text,
    uid text,
    description text DEFAULT ''::text NOT NULL,
    metadata jsonb DEFAULT '{}'::jsonb NOT NULL,
    rate_limit integer,
    headers jsonb DEFAULT '{}'::jsonb NOT NULL,
    payload_filter jsonb,
    ordered boolean DEFAULT false NOT NULL,
    channels text[],
    failing_since timestamp with time zone,
    settings jsonb DEFAULT '{}'::jsonb NOT NULL,
    CONSTRAINT webhook_endpoints_max_inflight_check CHECK ((max_inflight > 0)),
    CONSTRAINT webhook_endpoints_rate_limit_check CHECK ((rate_limit > 0)),
    CONSTRAINT webhook_endpoints_settings_object CHECK ((jsonb_typeof(settings) = 'object'::text)),
    CONSTRAINT webhook_endpoints_timeout_ms_check CHECK ((timeout_ms > 0))
);

--
-- Name: hookd_api_endpoint(public.webhook_endpoints); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.hookd_api_endpoint(e public.webhook_endpoints) RETURNS jsonb
    LANGUAGE sql STABLE
    AS $$
    SELECT jsonb_build_object('id', hookd_api_id('ep', e.id), 'uid', e.uid, 'url', e.url,
        'description', e.description, 'version', 1, 'disabled', NOT e.enabled,
        'eventTypes', CASE WHEN e.event_types = ARRAY['*'] THEN NULL ELSE to_jsonb(e.event_types) END,
        'filterTypes', CASE WHEN e.event_types = ARRAY['*'] THEN NULL ELSE to_jsonb(e.event_types) END,
        'channels', to_jsonb(e.channels), 'throttleRate', e.rate_limit, 'rateLimit', e.rate_limit,
        'metadata', e.metadata, 'payloadFilter', e.payload_filter, 'ordered', e.ordered,
        'settings', e.settings,
        'createdAt', hookd_api_ts(e.created_at), 'updatedAt', hookd_api_ts(e.updated_at)) $$;

--
-- Name: hookd_event_types; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.hookd_event_types (
    name text NOT NULL,
    description text DEFAULT ''::text NOT NULL,
    archived boolean DEFAULT false NOT NULL,
    deprecated boolean DEFAULT false NOT NULL,
    schemas jsonb,
    group_name text,
    feature_flags text[],
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT hookd_event_types_name_check CHECK (((name ~ '^[a-zA-Z0-9_.-]+$'::text) AND (length(name) <= 256)))
);

--
-- Name: hookd_api_event_type(public.hookd_event_types); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.hookd_api_event_type(t public.hookd_event_types) RETURNS jsonb
    LANGUAGE sql STABLE
    AS $$
    SELECT jsonb_build_object('name', t.name, 'description', t.description, 'archived', t.archived,
        'deprecated', t.deprecated, 'schemas', t.schemas, 'groupName', t.group_name,
        'featureFlags', to_jsonb(t.feature_flags), 'createdAt', hookd_api_ts(t.created_at),
        'updatedAt', hookd_api_ts(t.updated_at)) $$;

--
-- Name: hookd_api_id(text, uuid); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.hookd_api_id(p_prefix text, p_id uuid) RETURNS text
    LANGUAGE sql IMMUTABLE STRICT
    AS $$
    SELECT p_prefix || '_' || hookd_b62(hookd_api_id_seconds(p_id) * 340282366920938463463374607431768211456
                                        + hookd_api_uuid_number(p_id), 27) $$;

--
-- Name: hookd_api_id_seconds(uuid); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.hookd_api_id_seconds(p_id uuid) RETURNS bigint
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    AS $$
    SELECT CASE WHEN substr(p_id::text, 15, 1) = '7'
                THEN least(greatest(('x' || lpad(left(replace(p_id::text, '-', ''), 12), 16, '0'))::bit(64)::bigint
                                    / 1000 - 1400000000, 0), 4294967295)
                ELSE 0 END $$;

--
-- Name: hookd_api_legacy_id(text, uuid); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.hookd_api_legacy_id(p_prefix text, p_id uuid) RETURNS text
    LANGUAGE sql IMMUTABLE STRICT
    AS $$
    SELECT p_prefix || '_' || hookd_b62(hookd_api_uuid_number(p_id), 22) $$;

--
-- Name: hookd_uuid7(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.hookd_uuid7() RETURNS uuid
    LANGUAGE sql
    AS $$
    SELECT hookd_uuid7_at(now()) $$;

--
-- Name: hookd_emit_seq; Type: SEQUENCE; Schema: public; Owner: -
--

CREATE SEQUENCE public.hookd_emit_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

--
-- Name: outbox_events; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.outbox_events (
    id uuid DEFAULT public.hookd_uuid7() NOT NULL,
    aggregate_type character varying(50),
    aggregate_id text,
    event_type character varying(100) NOT NULL,
    payload jsonb NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    fanned_out_at timestamp with time zone,
    processed_at timestamp with time zone,
    part_at timestamp with time zone DEFAULT date_trunc('milliseconds'::text, now()) NOT NULL,
    tenant_id text,
    api_event_id text,
    emit_seq bigint DEFAULT nextval('public.hookd_emit_seq'::regclass),
    channels text[],
    tags text[],
    deliver_at timestamp with time zone,
    payload_expires_at timestamp with time zone,
    payload_raw text,
    legacy_webhook_id boolean DEFAULT false NOT NULL
)
PARTITION BY RANGE (part_at);

--
-- Name: hookd_api_message(public.outbox_events, boolean); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.hookd_api_message(m public.outbox_events, with_content boolean) RETURNS jsonb
    LANGUAGE sql STABLE
    AS $$
    SELECT jsonb_build_object('id', hookd_api_id('msg', m.id), 'eventId', m.api_event_id,
        'eventType', m.event_type,
        'payload', CASE WHEN NOT with_content THEN '{}'::jsonb
                        WHEN hookd_payload_expired(m) THEN '{"expired": true}'::jsonb ELSE m.payload END,
        'channels', to_jsonb(m.channels), 'tags', to_jsonb(m.tags), 'deliverAt', hookd_api_ts(m.deliver_at),
        'timestamp', hookd_api_ts(m.created_at)) $$;

--
-- Name: hookd_api_num(text, text); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.hookd_api_num(p_prefix text, p_text text) RETURNS bigint
    LANGUAGE plpgsql IMMUTABLE STRICT
    AS $$
DECLARE
    w constant integer := length(p_text) - length(p_prefix) - 1;
    n numeric := hookd_api_number(p_prefix, p_text);
    k numeric;
BEGIN
    IF n IS NULL OR w NOT IN (11, 27) THEN
        RETURN NULL;
    END IF;
    IF w = 11 THEN
        RETURN CASE WHEN n < 9223372036854775807 THEN n::bigint END;
    END IF;
    n := mod(n, 340282366920938463463374607431768211456);
    k := mod(n, 18446744073709551616);
    IF k >= 9223372036854775807 OR div(n, 18446744073709551616) <> hookd_api_num_check(k::bigint) THEN
        RETURN NULL;
    END IF;
    RETURN k::bigint;
END $$;

--
-- Name: hookd_api_num_check(bigint); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.hookd_api_num_check(p_n bigint) RETURNS numeric
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    AS $$
    SELECT ('x' || substr(md5(p_n::text), 1, 8))::bit(32)::bigint::numeric * 4294967296
           + ('x' || substr(md5(p_n::text), 9, 8))::bit(32)::bigint $$;

--
-- Name: hookd_api_num_id(text, bigint); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.hookd_api_num_id(p_prefix text, p_n bigint) RETURNS text
    LANGUAGE sql IMMUTABLE STRICT
    AS $$ SELECT p_prefix || '_' || hookd_b62(p_n, 11) $$;

--
-- Name: hookd_api_num_id(text, bigint, timestamp with time zone); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.hookd_api_num_id(p_prefix text, p_n bigint, p_at timestamp with time zone) RETURNS text
    LANGUAGE sql IMMUTABLE STRICT
    AS $$
    SELECT p_prefix || '_' || hookd_b62(hookd_api_ts_seconds(p_at) * 340282366920938463463374607431768211456
                                        + hookd_api_num_check(p_n) * 18446744073709551616 + p_n, 27) $$;

--
-- Name: hookd_api_number(text, text); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.hookd_api_number(p_prefix text, p_text text) RETURNS numeric
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    AS $$
    SELECT n FROM (SELECT hookd_b62_num(substr(p_text, length(p_prefix) + 2)) AS n) d
     WHERE left(p_text, length(p_prefix) + 1) = p_prefix || '_'
       AND n < 1461501637330902918203684832716283019655932542976 $$;

--
-- Name: hookd_background_tasks; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.hookd_background_tasks (
    id uuid DEFAULT public.hookd_uuid7() NOT NULL,
    tenant_id text NOT NULL,
    kind text NOT NULL,
    status text DEFAULT 'running'::text NOT NULL,
    parameters jsonb DEFAULT '{}'::jsonb NOT NULL,
    cursor text,
    batches integer DEFAULT 0 NOT NULL,
    data jsonb DEFAULT '{}'::jsonb NOT NULL,
    claimed_by text,
    lease_until timestamp with time zone,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT hookd_background_tasks_kind_check CHECK ((kind = ANY (ARRAY['endpoint.replay'::text, 'endpoint.recover'::text, 'application.stats'::text, 'message.broadcast'::text, 'sdk.generate'::text, 'event-type.aggregate'::text, 'application.purge_content'::text, 'endpoint.bulk-replay'::text]))),
    CONSTRAINT hookd_background_tasks_status_check CHECK ((status = ANY (ARRAY['running'::text, 'finished'::text, 'failed'::text])))
);

--
-- Name: hookd_api_task(public.hookd_background_tasks); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.hookd_api_task(t public.hookd_background_tasks) RETURNS jsonb
    LANGUAGE sql STABLE
    AS $$
    SELECT jsonb_build_object('id', hookd_api_id('qtask', t.id), 'status', t.status, 'task', t.kind,
        'data', t.data, 'updatedAt', hookd_api_ts(t.updated_at)) $$;

--
-- Name: hookd_api_ts(timestamp with time zone); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.hookd_api_ts(p timestamp with time zone) RETURNS text
    LANGUAGE sql IMMUTABLE STRICT
    AS $$
    SELECT to_char(p AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') $$;

--
-- Name: hookd_api_ts_seconds(timestamp with time zone); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.hookd_api_ts_seconds(p_at timestamp with time zone) RETURNS bigint
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    AS $$
    SELECT least(greatest(floor(extract(epoch FROM p_at))::bigint - 1400000000, 0), 4294967295) $$;

--
-- Name: hookd_api_uuid(text, text); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.hookd_api_uuid(p_prefix text, p_text text) RETURNS uuid
    LANGUAGE plpgsql IMMUTABLE STRICT
    AS $$
DECLARE
    w constant integer := length(p_text) - length(p_prefix) - 1;
    n numeric := hookd_api_number(p_prefix, p_text);
    s numeric := 0;
    h text := '';
BEGIN
    IF n IS NULL OR w NOT IN (22, 27) THEN
        RETURN NULL;
    END IF;
    IF w = 27 THEN
        s := div(n, 340282366920938463463374607431768211456);
        n := mod(n, 340282366920938463463374607431768211456);
    ELSIF n >= 340282366920938463463374607431768211456 THEN
        RETURN NULL;
    END IF;
    FOR i IN 1..4 LOOP
        h := lpad(to_hex(mod(n, 4294967296)::bigint), 8, '0') || h;
        n := div(n, 4294967296);
    END LOOP;
    IF w = 27 AND s <> hookd_api_id_seconds(h::uuid) THEN
        RETURN NULL;
    END IF;
    RETURN h::uuid;
END $$;

--
-- Name: hookd_api_uuid_number(uuid); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.hookd_api_uuid_number(p_id uuid) RETURNS numeric
    LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
    AS $$
DECLARE
    h constant text := replace(p_id::text, '-', '');
    n numeric := 0;
BEGIN
    FOR i IN 0..3 LOOP
        n := n * 4294967296 + ('x' || substr(h, 8 * i + 1, 8))::bit(32)::bigint;
    END LOOP;
    RETURN n;
END $$;

--
-- Name: hookd_b62(numeric, integer); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.hookd_b62(p_n numeric, p_width integer) RETURNS text
    LANGUAGE plpgsql IMMUTABLE STRICT
    AS $$
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

--
-- Name: hookd_b62_num(text); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.hookd_b62_num(p_text text) RETURNS numeric
    LANGUAGE plpgsql IMMUTABLE STRICT
    AS $_$
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
END $_$;

--
-- Name: hookd_delivery_blocked_ms(uuid, uuid); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.hookd_delivery_blocked_ms(p_endpoint uuid, p_event uuid) RETURNS bigint
    LANGUAGE plpgsql STABLE
    AS $$
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

--
-- Name: hookd_emit(text, text, text, jsonb, text, interval); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.hookd_emit(p_aggregate_type text, p_aggregate_id text, p_event_type text, p_payload jsonb, p_tenant text DEFAULT NULL::text, p_payload_retention interval DEFAULT NULL::interval) RETURNS uuid
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    AS $$
DECLARE
    t text;
    r uuid;
    x timestamptz;
BEGIN
    IF p_payload_retention IS NOT NULL THEN
        IF p_payload_retention <= interval '0' THEN
            RAISE EXCEPTION 'hookd_emit: p_payload_retention must be positive, not %', p_payload_retention
                USING ERRCODE = 'invalid_parameter_value';
        END IF;
        x := now() + p_payload_retention;
    END IF;
    IF p_tenant IS NOT NULL THEN
        t := hookd_tenant_id(p_tenant);
        IF t IS NULL THEN
            RAISE EXCEPTION 'hookd_emit: no tenant %', p_tenant USING ERRCODE = 'foreign_key_violation';
        END IF;
    END IF;
    INSERT INTO outbox_events (aggregate_type, aggregate_id, event_type, payload, tenant_id, payload_expires_at)
    VALUES (p_aggregate_type, p_aggregate_id, p_event_type, p_payload, t, x) RETURNING id INTO r;
    RETURN r;
END $$;

--
-- Name: hookd_emit_raw(text, text, text, text, text, interval); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.hookd_emit_raw(p_aggregate_type text, p_aggregate_id text, p_event_type text, p_payload text, p_tenant text DEFAULT NULL::text, p_payload_retention interval DEFAULT NULL::interval) RETURNS uuid
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    AS $$
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
        RAISE EXCEPTION 'hookd_emit_raw: p_payload is not JSON: %', SQLERRM
            USING ERRCODE = 'invalid_text_representation';
    END;
    IF p_payload_retention IS NOT NULL THEN
        IF p_payload_retention <= interval '0' THEN
            RAISE EXCEPTION 'hookd_emit_raw: p_payload_retention must be positive, not %', p_payload_retention
                USING ERRCODE = 'invalid_parameter_value';
        END IF;
        x := now() + p_payload_retention;
    END IF;
    IF p_tenant IS NOT NULL THEN
        t := hookd_tenant_id(p_tenant);
        IF t IS NULL THEN
            RAISE EXCEPTION 'hookd_emit_raw: no tenant %', p_tenant USING ERRCODE = 'foreign_key_violation';
        END IF;
    END IF;
    INSERT INTO outbox_events (aggregate_type, aggregate_id, event_type, payload, payload_raw, tenant_id,
                               payload_expires_at)
    VALUES (p_aggregate_type, p_aggregate_id, p_event_type, j, p_payload, t, x) RETURNING id INTO r;
    RETURN r;
END $$;

--
-- Name: hookd_endpoint_clear_failing_since(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.hookd_endpoint_clear_failing_since() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    NEW.failing_since := NULL;
    RETURN NEW;
END
$$;

--
-- Name: hookd_endpoint_deleted(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.hookd_endpoint_deleted() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    AS $$ BEGIN   DELETE FROM outbox_deliveries d USING deleted_endpoints o WHERE d.endpoint_id = o.id;   RETURN NULL; END $$;

--
-- Name: hookd_events_deleted(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.hookd_events_deleted() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    AS $$ BEGIN   DELETE FROM outbox_deliveries d USING deleted_events o WHERE d.event_id = o.id;   RETURN NULL; END $$;

--
-- Name: hookd_events_truncated(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.hookd_events_truncated() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    AS $$ BEGIN   TRUNCATE outbox_deliveries;   RETURN NULL; END $$;

--
-- Name: hookd_id_any(uuid); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.hookd_id_any(p_id uuid) RETURNS timestamp with time zone
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
    SELECT CASE WHEN hookd_id_part(p_id) IS NULL THEN '-infinity'::timestamptz END $$;

--
-- Name: hookd_id_keys(uuid[]); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.hookd_id_keys(p_ids uuid[]) RETURNS TABLE(id uuid, part_at timestamp with time zone, any_at timestamp with time zone)
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
    SELECT x.i, x.p, CASE WHEN x.p IS NULL THEN '-infinity'::timestamptz END
      FROM (SELECT DISTINCT i, hookd_id_part(i) AS p FROM unnest(p_ids) AS i) x $$;

--
-- Name: hookd_id_part(uuid); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.hookd_id_part(p_id uuid) RETURNS timestamp with time zone
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
    SELECT CASE WHEN substr(p_id::text, 15, 1) = '7'
                 AND ('x' || translate(left(p_id::text, 13), '-', ''))::bit(48)::bigint >= <migrate time in ms>
           THEN to_timestamp(('x' || translate(left(p_id::text, 13), '-', ''))::bit(48)::bigint / 1000.0) END $$;

--
-- Name: hookd_id_since(uuid); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.hookd_id_since(p_id uuid) RETURNS timestamp with time zone
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
    SELECT coalesce(to_timestamp(extract(epoch FROM hookd_id_part(p_id)) - 3600), '-infinity'::timestamptz) $$;

--
-- Name: hookd_inbox_update_entities_each(text, text[], text[], integer[]); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.hookd_inbox_update_entities_each(p_type text, p_ids text[], p_states text[], p_applied integer[]) RETURNS TABLE(failed_id text, failed_error text, failed_sqlstate text)
    LANGUAGE plpgsql
    AS $$
DECLARE
    i int;
BEGIN
    FOR i IN 1 .. coalesce(array_length(p_ids, 1), 0) LOOP
        BEGIN
            UPDATE hookd_entities e SET state = p_states[i], version = e.version + p_applied[i], updated_at = now()
             WHERE e.entity_type = p_type AND e.entity_id = p_ids[i];
        EXCEPTION WHEN OTHERS THEN
            failed_id := p_ids[i];
            failed_error := 'ERROR:  ' || SQLERRM;
            failed_sqlstate := SQLSTATE;
            RETURN NEXT;
        END;
    END LOOP;
END $$;

--
-- Name: hookd_operational_deliveries(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.hookd_operational_deliveries() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    AS $$ BEGIN   IF NOT hookd_operational_on('message.attempt.') THEN RETURN NULL; END IF;   INSERT INTO outbox_events (aggregate_type, aggregate_id, event_type, payload)   SELECT 'hookd.operational', n.id::text, k.type, jsonb_build_object('type', k.type,          'timestamp', hookd_api_ts(now()), 'data', jsonb_build_object('appId', ev.tenant_id,          'appUid', t.uid, 'endpointId', hookd_api_id('ep', n.endpoint_id),          'msgId', hookd_api_id('msg', n.event_id), 'msgEventId', ev.api_event_id,          'lastAttempt', jsonb_build_object('timestamp', hookd_api_ts(now()),          'responseStatusCode', n.last_status_code, 'error', n.last_error)))     FROM new_rows n JOIN old_rows o ON o.id = n.id     JOIN outbox_events ev ON ev.id = n.event_id      AND (ev.part_at IN (hookd_id_part(n.event_id), '-infinity') OR ev.part_at >= hookd_id_any(n.event_id))     LEFT JOIN hookd_tenants t ON t.id = ev.tenant_id     CROSS JOIN LATERAL (VALUES       (CASE WHEN o.attempts < 4 AND n.attempts >= 4 AND n.status IN ('RETRYING', 'DEAD')             THEN 'message.attempt.failing' END),       (CASE WHEN n.status = 'DEAD' AND o.status <> 'DEAD' THEN 'message.attempt.exhausted' END),       (CASE WHEN n.status = 'SUCCEEDED' AND o.status <> 'SUCCEEDED'              AND (o.status = 'RETRYING' OR o.replayed_at IS NOT NULL)             THEN 'message.attempt.recovered' END)) k(type)    WHERE k.type IS NOT NULL AND ev.aggregate_type IS DISTINCT FROM 'hookd.operational';   RETURN NULL; END $$;

--
-- Name: hookd_operational_endpoint(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.hookd_operational_endpoint() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    AS $$ BEGIN   IF NOT hookd_operational_on('endpoint.') THEN RETURN NULL; END IF;   INSERT INTO outbox_events (aggregate_type, aggregate_id, event_type, payload)   SELECT 'hookd.operational', NEW.id::text, 'endpoint.disabled', jsonb_build_object(          'type', 'endpoint.disabled', 'timestamp', hookd_api_ts(now()), 'data', jsonb_build_object(          'appId', NEW.tenant_id,          'appUid', (SELECT uid FROM hookd_tenants WHERE id = NEW.tenant_id),          'endpointId', hookd_api_id('ep', NEW.id), 'endpointUid', NEW.uid,          'reason', NEW.disabled_reason, 'failSince', hookd_api_ts(NEW.failing_since)));   RETURN NULL; END $$;

--
-- Name: hookd_operational_on(text); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.hookd_operational_on(p_prefix text) RETURNS boolean
    LANGUAGE sql STABLE
    AS $$
    SELECT EXISTS (SELECT 1 FROM webhook_endpoints e WHERE e.tenant_id IS NULL AND e.enabled
                    AND EXISTS (SELECT 1 FROM unnest(e.event_types) f WHERE f LIKE p_prefix || '%')) $$;

--
-- Name: hookd_outbox_notify(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.hookd_outbox_notify() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    AS $$ BEGIN   IF (SELECT listening FROM hookd_relay_state WHERE id = 1) IS NOT FALSE THEN     PERFORM pg_notify('hookd_outbox', '');   END IF;   RETURN NULL; END $$;

--
-- Name: hookd_partition_adopt(text, timestamp with time zone, text[]); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.hookd_partition_adopt(p_table text, p_t0 timestamp with time zone, p_indexes text[]) RETURNS void
    LANGUAGE plpgsql
    AS $$
DECLARE
    legacy text := p_table || '_legacy';
    r record;
    ix text;
BEGIN
    EXECUTE format('ALTER TABLE %I RENAME TO %I', p_table, legacy);
    -- index names are per schema: the old ones make way for the parent's
    FOR r IN SELECT c.relname FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
              WHERE i.indrelid = legacy::regclass LOOP
        EXECUTE format('ALTER INDEX %I RENAME TO %I', r.relname, left('legacy_' || r.relname, 63));
    END LOOP;
    EXECUTE format('ALTER TABLE %I ADD COLUMN part_at timestamptz NOT NULL DEFAULT %L', legacy,
                   '1970-01-02 00:00:00+00');
    EXECUTE format('CREATE TABLE %I (LIKE %I INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING STORAGE'
                   ' INCLUDING COMMENTS INCLUDING GENERATED INCLUDING IDENTITY INCLUDING STATISTICS)'
                   ' PARTITION BY RANGE (part_at)', p_table, legacy);
    EXECUTE format('ALTER TABLE %I ALTER COLUMN part_at SET DEFAULT now()', p_table);
    FOREACH ix IN ARRAY p_indexes LOOP
        EXECUTE replace(ix, '%T', quote_ident(p_table));
    END LOOP;
    -- sequences owned by the old table's columns would be dropped with it
    FOR r IN SELECT s.oid::regclass AS seq, a.attname FROM pg_depend d
               JOIN pg_class s ON s.oid = d.objid AND s.relkind = 'S'
               JOIN pg_attribute a ON a.attrelid = d.refobjid AND a.attnum = d.refobjsubid
              WHERE d.refobjid = legacy::regclass AND d.deptype = 'a' LOOP
        EXECUTE format('ALTER SEQUENCE %s OWNED BY %I.%I', r.seq, p_table, r.attname);
    END LOOP;
    -- triggers move to the parent
    FOR r IN SELECT t.tgname, pg_get_triggerdef(t.oid) AS def FROM pg_trigger t
              WHERE t.tgrelid = legacy::regclass AND NOT t.tgisinternal LOOP
        EXECUTE format('DROP TRIGGER %I ON %I', r.tgname, legacy);
        EXECUTE regexp_replace(r.def, ' ON \S+ ', ' ON ' || quote_ident(p_table) || ' ');
    END LOOP;
    -- grants (sql/roles/least_privilege.sql may have run before)
    FOR r IN SELECT a.privilege_type, a.grantee FROM pg_class c, aclexplode(c.relacl) a
              WHERE c.oid = legacy::regclass AND a.grantee <> c.relowner LOOP
        EXECUTE format('GRANT %s ON %I TO %s', r.privilege_type, p_table,
                       CASE WHEN r.grantee = 0 THEN 'PUBLIC' ELSE quote_ident(r.grantee::regrole::text) END);
    END LOOP;
    -- the parent's primary key (with part_at) replaces the old one
    FOR r IN SELECT conname FROM pg_constraint WHERE conrelid = legacy::regclass AND contype = 'p' LOOP
        EXECUTE format('ALTER TABLE %I DROP CONSTRAINT %I', legacy, r.conname);
    END LOOP;
    EXECUTE format('ALTER TABLE %I ATTACH PARTITION %I FOR VALUES FROM (%L) TO (%L)', p_table, legacy,
                   '1970-01-02 00:00:00+00', p_t0);
    PERFORM hookd_partition_create(p_table::regclass, p_table || '_kept', '-infinity', '1970-01-02 00:00:00+00');
    -- everything new goes to _far until the first retention pass (a worker's,
    -- or the end of `hookd migrate`) cuts it into partitions of the window's
    PERFORM hookd_partition_create(p_table::regclass, p_table || '_far', p_t0, 'infinity');
END
$$;

--
-- Name: hookd_partition_create(regclass, text, timestamp with time zone, timestamp with time zone); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.hookd_partition_create(p_parent regclass, p_name text, p_lo timestamp with time zone, p_hi timestamp with time zone) RETURNS void
    LANGUAGE plpgsql
    AS $$
DECLARE
    t text := (SELECT relname FROM pg_class WHERE oid = p_parent);
BEGIN
    EXECUTE format('CREATE TABLE %I (LIKE %s INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING STORAGE'
                   ' INCLUDING GENERATED INCLUDING IDENTITY) WITH (%s)',
                   p_name, p_parent, hookd_partition_options(t));
    EXECUTE format('ALTER TABLE %s ATTACH PARTITION %I FOR VALUES FROM (%s) TO (%s)', p_parent, p_name,
                   CASE WHEN p_lo = '-infinity' THEN 'MINVALUE' ELSE quote_literal(p_lo) END,
                   CASE WHEN p_hi = 'infinity' THEN 'MAXVALUE' ELSE quote_literal(p_hi) END);
END
$$;

--
-- Name: hookd_partition_name(regclass, timestamp with time zone); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.hookd_partition_name(p_parent regclass, p_lo timestamp with time zone) RETURNS text
    LANGUAGE sql STABLE
    AS $$
    SELECT (SELECT relname FROM pg_class WHERE oid = p_parent)
           || to_char(p_lo AT TIME ZONE 'UTC', '"_p"YYYYMMDD"_"HH24MISS')
$$;

--
-- Name: hookd_partition_options(text); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.hookd_partition_options(p_table text) RETURNS text
    LANGUAGE sql IMMUTABLE
    AS $$
    SELECT CASE p_table
        WHEN 'attempts' THEN 'fillfactor = 100, autovacuum_vacuum_insert_scale_factor = 0.05,'
                             ' autovacuum_analyze_scale_factor = 0.05'
        ELSE 'fillfactor = 90, autovacuum_vacuum_scale_factor = 0.02, autovacuum_vacuum_threshold = 1000,'
             ' autovacuum_vacuum_insert_scale_factor = 0.05, autovacuum_analyze_scale_factor = 0.02'
    END
$$;

--
-- Name: hookd_partitions(regclass); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.hookd_partitions(p_parent regclass) RETURNS TABLE(part regclass, lo timestamp with time zone, hi timestamp with time zone, detach_pending boolean)
    LANGUAGE sql STABLE
    AS $$
    SELECT c.oid::regclass,
           CASE WHEN b LIKE '%FROM (MINVALUE)%' THEN '-infinity'::timestamptz
                ELSE substring(b FROM 'FROM \(''([^'']*)''\)')::timestamptz END,
           CASE WHEN b LIKE '%TO (MAXVALUE)%' THEN 'infinity'::timestamptz
                ELSE substring(b FROM 'TO \(''([^'']*)''\)')::timestamptz END,
           i.inhdetachpending
      FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid,
           LATERAL pg_get_expr(c.relpartbound, c.oid) AS b
     WHERE i.inhparent = p_parent
     ORDER BY 2
$$;

--
-- Name: hookd_payload_expired(public.outbox_events); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.hookd_payload_expired(m public.outbox_events) RETURNS boolean
    LANGUAGE sql STABLE
    AS $$
    SELECT coalesce(m.payload_expires_at <= now(), false) $$;

--
-- Name: hookd_retention_age_sql(text); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.hookd_retention_age_sql(p_table text) RETURNS text
    LANGUAGE sql IMMUTABLE
    AS $$
    SELECT CASE p_table
    WHEN 'webhook_inbox' THEN 'greatest(t.received_at, t.processed_at, t.replayed_at)'
    WHEN 'outbox_events' THEN 'greatest(t.created_at, t.processed_at)'
    WHEN 'outbox_deliveries' THEN 'greatest(t.created_at, t.delivered_at, t.replayed_at)'
    WHEN 'attempts' THEN 't.attempted_at'
    END
$$;

--
-- Name: hookd_retention_ahead(regclass, interval, integer); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.hookd_retention_ahead(p_parent regclass, p_width interval, p_ahead integer) RETURNS text
    LANGUAGE plpgsql
    SET lock_timeout TO '1s'
    AS $$
DECLARE
    t text := (SELECT relname FROM pg_class WHERE oid = p_parent);
    target timestamptz := now() + greatest(p_width * p_ahead, interval '10 seconds');
    f record;
    c record;
    p record;
    newest timestamptz;
    has_rows boolean;
BEGIN
    SELECT * INTO f FROM hookd_partitions(p_parent) WHERE hi = 'infinity';
    IF NOT FOUND THEN
        -- an extend that died after detaching _far: start again after the last bound
        SELECT max(hi) INTO newest FROM hookd_partitions(p_parent);
        PERFORM hookd_retention_fill(p_parent, newest, p_width, greatest(target, newest));
        RETURN NULL;
    END IF;
    SELECT * INTO c FROM hookd_partitions(p_parent) WHERE lo <= now() AND hi > now() AND hi < 'infinity';
    IF (FOUND AND c.hi - c.lo > p_width * 2 AND pg_relation_size(c.part) <= 256 * 1024 * 1024)
            OR EXISTS (SELECT 1 FROM hookd_partitions(p_parent) x
                        WHERE x.lo > now() AND x.hi < 'infinity' AND x.hi - x.lo > p_width * 2) THEN
        RETURN hookd_retention_reshape(p_parent, p_width, target);
    END IF;
    IF f.lo >= target THEN
        RETURN NULL;
    END IF;
    EXECUTE format('SELECT EXISTS (SELECT 1 FROM %s)', f.part) INTO has_rows;
    IF NOT has_rows AND f.lo > now() + interval '5 seconds' THEN
        RETURN f.part::text;
    END IF;
    EXECUTE format('SELECT max(part_at) FROM %s', f.part) INTO newest;
    newest := greatest(newest, now()) + p_width;
    EXECUTE format('ALTER TABLE %s DETACH PARTITION %s', p_parent, f.part);
    EXECUTE format('ALTER TABLE %s RENAME TO %I', f.part, hookd_partition_name(p_parent, f.lo));
    EXECUTE format('ALTER TABLE %s ATTACH PARTITION %I FOR VALUES FROM (%L) TO (%L)', p_parent,
                   hookd_partition_name(p_parent, f.lo), f.lo, newest);
    PERFORM hookd_retention_fill(p_parent, newest, p_width, greatest(target, newest));
    RETURN NULL;
END
$$;

--
-- Name: hookd_retention_drop(regclass, regclass); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.hookd_retention_drop(p_parent regclass, p_part regclass) RETURNS bigint
    LANGUAGE plpgsql
    AS $$
DECLARE
    n bigint;
BEGIN
    IF EXISTS (SELECT 1 FROM pg_inherits WHERE inhrelid = p_part) THEN
        RAISE EXCEPTION '% is still a partition', p_part;
    END IF;
    EXECUTE format('UPDATE %s t SET part_at = ''-infinity'' FROM (%s) s WHERE t.id = s.id AND t.part_at = s.part_at',
                   p_part, hookd_retention_survivors_sql((SELECT relname FROM pg_class WHERE oid = p_parent),
                                                         p_part::text));
    GET DIAGNOSTICS n = ROW_COUNT;
    IF n > 0 THEN
        EXECUTE format('INSERT INTO %s SELECT * FROM %s WHERE part_at = ''-infinity''', p_parent, p_part);
    END IF;
    EXECUTE format('DROP TABLE %s', p_part);
    RETURN n;
END
$$;

--
-- Name: hookd_retention_extend(regclass, regclass, interval, integer); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.hookd_retention_extend(p_parent regclass, p_far regclass, p_width interval, p_ahead integer) RETURNS void
    LANGUAGE plpgsql
    AS $$
DECLARE
    lo timestamptz := (SELECT max(hi) FROM hookd_partitions(p_parent));
    has_rows boolean;
BEGIN
    EXECUTE format('SELECT EXISTS (SELECT 1 FROM %s)', p_far) INTO has_rows;
    IF has_rows THEN
        EXECUTE format('ALTER TABLE %s ATTACH PARTITION %s FOR VALUES FROM (%L) TO (MAXVALUE)', p_parent, p_far, lo);
        RETURN;
    END IF;
    EXECUTE format('DROP TABLE %s', p_far);
    PERFORM hookd_retention_fill(p_parent, lo, p_width, now() + greatest(p_width * p_ahead, interval '10 seconds'));
END
$$;

--
-- Name: hookd_retention_fill(regclass, timestamp with time zone, interval, timestamp with time zone); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.hookd_retention_fill(p_parent regclass, p_from timestamp with time zone, p_width interval, p_target timestamp with time zone) RETURNS void
    LANGUAGE plpgsql
    AS $$
DECLARE
    lo timestamptz := p_from;
BEGIN
    WHILE lo < p_target LOOP
        PERFORM hookd_partition_create(p_parent, hookd_partition_name(p_parent, lo), lo, lo + p_width);
        lo := lo + p_width;
    END LOOP;
    PERFORM hookd_partition_create(p_parent, (SELECT relname FROM pg_class WHERE oid = p_parent) || '_far', lo,
                                   'infinity');
END
$$;

--
-- Name: hookd_retention_live_sql(text); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.hookd_retention_live_sql(p_table text) RETURNS text
    LANGUAGE sql IMMUTABLE
    AS $$
    SELECT CASE p_table
    WHEN 'webhook_inbox' THEN
        '(t.status IN (''PENDING'', ''DEFERRED'', ''RETRYING'') OR EXISTS (SELECT 1 FROM dead_letters l'
        ' WHERE l.source = ''inbox'' AND l.source_id = t.id AND l.replayed_at IS NULL))'
    WHEN 'outbox_events' THEN
        '(t.fanned_out_at IS NULL OR t.processed_at IS NULL OR EXISTS (SELECT 1 FROM outbox_deliveries d'
        ' WHERE d.event_id = t.id AND (d.status IN (''PENDING'', ''RETRYING'') OR EXISTS (SELECT 1'
        ' FROM dead_letters l WHERE l.source = ''delivery'' AND l.source_id = d.id AND l.replayed_at IS NULL))))'
    WHEN 'outbox_deliveries' THEN
        '(t.status IN (''PENDING'', ''RETRYING'') OR EXISTS (SELECT 1 FROM dead_letters l'
        ' WHERE l.source = ''delivery'' AND l.source_id = t.id AND l.replayed_at IS NULL))'
    WHEN 'attempts' THEN
        'EXISTS (SELECT 1 FROM dead_letters l WHERE l.source = t.source AND l.source_id = t.source_id'
        ' AND l.replayed_at IS NULL)'
    END
$$;

--
-- Name: hookd_retention_move(regclass, regclass); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.hookd_retention_move(p_parent regclass, p_part regclass) RETURNS bigint
    LANGUAGE plpgsql
    AS $$
DECLARE
    s text := hookd_retention_survivors_sql((SELECT relname FROM pg_class WHERE oid = p_parent), p_part::text);
    n bigint;
BEGIN
    EXECUTE format('WITH s AS (%s), l AS (SELECT t.id, t.part_at FROM %s t JOIN s USING (id, part_at)'
                   ' FOR UPDATE OF t SKIP LOCKED)'
                   ' UPDATE %s t SET part_at = ''-infinity'' FROM l WHERE t.id = l.id AND t.part_at = l.part_at',
                   s, p_part, p_parent);
    EXECUTE format('SELECT count(*) FROM (%s) s', s) INTO n;
    RETURN n;
END
$$;

--
-- Name: hookd_retention_plan(regclass, interval); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.hookd_retention_plan(p_parent regclass, p_window interval) RETURNS TABLE(action text, part text, lo timestamp with time zone, hi timestamp with time zone, rows_estimate bigint)
    LANGUAGE sql STABLE
    AS $_$
    SELECT 'finalize', p.part::text, p.lo, p.hi, greatest(c.reltuples, 0)::bigint
      FROM hookd_partitions(p_parent) p JOIN pg_class c ON c.oid = p.part WHERE p.detach_pending
    UNION ALL
    SELECT 'drop', c.oid::regclass::text, NULL, NULL, greatest(c.reltuples, 0)::bigint
      FROM pg_class c JOIN pg_class par ON par.oid = p_parent
     WHERE c.relkind = 'r' AND c.relnamespace = par.relnamespace
       AND c.relname ~ ('^' || par.relname || '_(p[0-9]{8}_[0-9]{6}|far|legacy)$')
       AND NOT EXISTS (SELECT 1 FROM pg_inherits i WHERE i.inhrelid = c.oid)
    UNION ALL
    SELECT 'expire', p.part::text, p.lo, p.hi, greatest(c.reltuples, 0)::bigint
      FROM hookd_partitions(p_parent) p JOIN pg_class c ON c.oid = p.part
     WHERE NOT p.detach_pending AND p.lo > '-infinity' AND p.hi < 'infinity' AND p.hi <= now() - p_window
       -- a delivery takes its event's part_at (relay_settle.sql): its partition
       -- stays while an event partition it could be written for does
       AND (p_parent <> 'outbox_deliveries'::regclass OR p.hi <= (SELECT coalesce(min(e.lo), 'infinity')
            FROM hookd_partitions('outbox_events') e WHERE e.lo > '-infinity'))
$_$;

--
-- Name: hookd_retention_prunable(text, interval); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.hookd_retention_prunable(p_what text, p_window interval) RETURNS bigint
    LANGUAGE plpgsql STABLE
    AS $_$
DECLARE
    n bigint;
BEGIN
    IF p_what = 'dedup' THEN
        SELECT count(*) INTO n FROM hookd_dedup WHERE received_at < now() - p_window;
    ELSIF p_what = 'dead_letters' THEN
        SELECT count(*) INTO n FROM dead_letters WHERE replayed_at < now() - p_window;
    ELSE
        EXECUTE format('SELECT count(*) FROM %I t WHERE %s < now() - $1 AND NOT %s', p_what || '_kept',
                       hookd_retention_age_sql(p_what), hookd_retention_live_sql(p_what))
            INTO n USING p_window;
    END IF;
    RETURN n;
END
$_$;

--
-- Name: hookd_retention_prune(text, interval, integer); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.hookd_retention_prune(p_what text, p_window interval, p_limit integer) RETURNS bigint
    LANGUAGE plpgsql
    AS $$
DECLARE
    n bigint;
BEGIN
    IF p_what = 'dedup' THEN
        DELETE FROM hookd_dedup WHERE ctid = ANY (ARRAY(SELECT ctid FROM hookd_dedup
            WHERE received_at < now() - p_window ORDER BY received_at LIMIT p_limit));
    ELSE
        DELETE FROM dead_letters WHERE ctid = ANY (ARRAY(SELECT ctid FROM dead_letters
            WHERE replayed_at < now() - p_window LIMIT p_limit));
    END IF;
    GET DIAGNOSTICS n = ROW_COUNT;
    RETURN n;
END
$$;

--
-- Name: hookd_retention_prune_kept(regclass, interval, integer); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.hookd_retention_prune_kept(p_parent regclass, p_window interval, p_limit integer) RETURNS bigint
    LANGUAGE plpgsql
    AS $_$
DECLARE
    t text := (SELECT relname FROM pg_class WHERE oid = p_parent);
    n bigint;
BEGIN
    EXECUTE format('DELETE FROM %1$I WHERE ctid = ANY (ARRAY(SELECT t.ctid FROM %1$I t'
                   ' WHERE %2$s < now() - $1 AND NOT %3$s LIMIT $2))',
                   t || '_kept', hookd_retention_age_sql(t), hookd_retention_live_sql(t))
        USING p_window, p_limit;
    GET DIAGNOSTICS n = ROW_COUNT;
    RETURN n;
END
$_$;

--
-- Name: hookd_retention_reshape(regclass, interval, timestamp with time zone); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.hookd_retention_reshape(p_parent regclass, p_width interval, p_target timestamp with time zone) RETURNS text
    LANGUAGE plpgsql
    AS $$
DECLARE
    c record;
    p record;
    newest timestamptz;
    from_ts timestamptz;
    cut boolean := false;
    has_rows boolean;
BEGIN
    SELECT * INTO c FROM hookd_partitions(p_parent) WHERE lo <= now() AND hi > now();
    IF c.hi < 'infinity' AND c.hi - c.lo > p_width * 2 AND pg_relation_size(c.part) <= 256 * 1024 * 1024 THEN
        EXECUTE format('SELECT max(part_at) FROM %s', c.part) INTO newest;
        from_ts := greatest(newest, now()) + p_width;
        cut := from_ts < c.hi;
    END IF;
    IF NOT cut THEN
        from_ts := c.hi;
    END IF;
    FOR p IN SELECT * FROM hookd_partitions(p_parent) WHERE lo > now() ORDER BY lo LOOP
        EXECUTE format('SELECT EXISTS (SELECT 1 FROM %s)', p.part) INTO has_rows;
        IF has_rows THEN
            RETURN NULL;
        END IF;
    END LOOP;
    FOR p IN SELECT * FROM hookd_partitions(p_parent) WHERE lo > now() ORDER BY lo LOOP
        EXECUTE format('ALTER TABLE %s DETACH PARTITION %s', p_parent, p.part);
        EXECUTE format('DROP TABLE %s', p.part);
    END LOOP;
    IF cut THEN
        EXECUTE format('ALTER TABLE %s DETACH PARTITION %s', p_parent, c.part);
        EXECUTE format('ALTER TABLE %s ATTACH PARTITION %s FOR VALUES FROM (%L) TO (%L)', p_parent, c.part, c.lo,
                       from_ts);
    END IF;
    PERFORM hookd_retention_fill(p_parent, from_ts, p_width, greatest(p_target, from_ts));
    RETURN NULL;
END
$$;

--
-- Name: hookd_retention_survivors_count(regclass, regclass); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.hookd_retention_survivors_count(p_parent regclass, p_part regclass) RETURNS bigint
    LANGUAGE plpgsql STABLE
    AS $$
DECLARE
    n bigint;
BEGIN
    EXECUTE format('SELECT count(*) FROM (%s) s',
                   hookd_retention_survivors_sql((SELECT relname FROM pg_class WHERE oid = p_parent), p_part::text))
        INTO n;
    RETURN n;
END
$$;

--
-- Name: hookd_retention_survivors_sql(text, text); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.hookd_retention_survivors_sql(p_table text, p_part text) RETURNS text
    LANGUAGE sql IMMUTABLE
    AS $_$
    SELECT CASE p_table
    WHEN 'webhook_inbox' THEN format(
        'SELECT t.id, t.part_at FROM %1$s t WHERE t.status IN (''PENDING'', ''DEFERRED'', ''RETRYING'')'
        ' UNION SELECT t.id, t.part_at FROM dead_letters l JOIN %1$s t ON t.id = l.source_id'
        ' WHERE l.source = ''inbox'' AND l.replayed_at IS NULL', p_part)
    WHEN 'outbox_events' THEN format(
        'SELECT t.id, t.part_at FROM %1$s t WHERE t.fanned_out_at IS NULL'
        ' UNION SELECT t.id, t.part_at FROM outbox_deliveries d JOIN %1$s t ON t.id = d.event_id'
        ' WHERE d.status IN (''PENDING'', ''RETRYING'')'
        ' UNION SELECT t.id, t.part_at FROM dead_letters l JOIN outbox_deliveries d ON d.id = l.source_id'
        ' JOIN %1$s t ON t.id = d.event_id WHERE l.source = ''delivery'' AND l.replayed_at IS NULL', p_part)
    WHEN 'outbox_deliveries' THEN format(
        'SELECT t.id, t.part_at FROM %1$s t WHERE t.status IN (''PENDING'', ''RETRYING'')'
        ' UNION SELECT t.id, t.part_at FROM dead_letters l JOIN %1$s t ON t.id = l.source_id'
        ' WHERE l.source = ''delivery'' AND l.replayed_at IS NULL', p_part)
    WHEN 'attempts' THEN format(
        'SELECT t.id, t.part_at FROM dead_letters l JOIN %1$s t'
        ' ON t.source = l.source AND t.source_id = l.source_id WHERE l.replayed_at IS NULL', p_part)
    END
$_$;

--
-- Name: hookd_route_tenant(text, text); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.hookd_route_tenant(p_route text, p_tenant text) RETURNS text
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

--
-- Name: hookd_storage(bigint, bigint, bigint, bigint, bigint); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.hookd_storage(p_inbox bigint, p_outbox bigint, p_attempts bigint, p_dead_letters bigint, p_dedup bigint) RETURNS TABLE(tbl text, bytes bigint, rows_estimate bigint, oldest timestamp with time zone, next_expiry timestamp with time zone)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    AS $_$
DECLARE
    w interval;
    p record;
    found_one timestamptz;
    kept_next timestamptz;
BEGIN
    FOREACH tbl IN ARRAY ARRAY['webhook_inbox', 'outbox_events', 'outbox_deliveries', 'attempts'] LOOP
        w := CASE tbl WHEN 'webhook_inbox' THEN p_inbox WHEN 'attempts' THEN p_attempts ELSE p_outbox END
             * interval '1 millisecond';
        SELECT coalesce(sum(pg_total_relation_size(x.part)), 0), coalesce(sum(greatest(c.reltuples, 0)), 0)
          INTO bytes, rows_estimate
          FROM hookd_partitions(tbl::regclass) x JOIN pg_class c ON c.oid = x.part;
        EXECUTE format('SELECT min(%s), min(%1$s) FILTER (WHERE NOT %s) FROM %I t', hookd_retention_age_sql(tbl),
                       hookd_retention_live_sql(tbl), tbl || '_kept') INTO oldest, kept_next;
        next_expiry := kept_next + w;
        FOR p IN SELECT * FROM hookd_partitions(tbl::regclass) WHERE lo > '-infinity' AND hi < 'infinity'
                  ORDER BY lo LOOP
            EXECUTE format('SELECT CASE WHEN EXISTS (SELECT 1 FROM %s) THEN $1 END', p.part) INTO found_one USING p.lo;
            CONTINUE WHEN found_one IS NULL;
            IF p.lo = '1970-01-02 00:00:00+00' THEN
                EXECUTE format('SELECT coalesce(min(%s), $1) FROM %s t TABLESAMPLE SYSTEM (1)',
                               hookd_retention_age_sql(tbl), p.part) INTO found_one USING p.hi;
            END IF;
            oldest := least(oldest, found_one);
            next_expiry := least(next_expiry, p.hi + w);
            EXIT;
        END LOOP;
        RETURN NEXT;
    END LOOP;
    tbl := 'hookd_dedup';
    bytes := pg_total_relation_size('hookd_dedup');
    rows_estimate := (SELECT greatest(reltuples, 0)::bigint FROM pg_class WHERE oid = 'hookd_dedup'::regclass);
    oldest := (SELECT min(received_at) FROM hookd_dedup);
    next_expiry := oldest + p_dedup * interval '1 millisecond';
    RETURN NEXT;
    tbl := 'dead_letters';
    bytes := pg_total_relation_size('dead_letters');
    rows_estimate := (SELECT greatest(reltuples, 0)::bigint FROM pg_class WHERE oid = 'dead_letters'::regclass);
    oldest := (SELECT min(dead_at) FROM dead_letters);
    next_expiry := (SELECT min(replayed_at) FROM dead_letters) + p_dead_letters * interval '1 millisecond';
    RETURN NEXT;
END
$_$;

--
-- Name: hookd_tenant_id(text); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.hookd_tenant_id(p_ref text) RETURNS text
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $$
    SELECT coalesce((SELECT t.id FROM hookd_tenants t WHERE t.id = p_ref),
                    (SELECT t.id FROM hookd_tenants t WHERE t.uid = p_ref)) $$;

--
-- Name: hookd_tenants_deleted(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.hookd_tenants_deleted() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    AS $$ BEGIN   DELETE FROM hookd_message_ids m USING deleted_tenants o WHERE m.tenant_id = o.id;   RETURN NULL; END $$;

--
-- Name: hookd_tenants_truncated(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.hookd_tenants_truncated() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    AS $$ BEGIN   TRUNCATE hookd_message_ids;   RETURN NULL; END $$;

--
-- Name: hookd_uuid7_at(timestamp with time zone); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.hookd_uuid7_at(p_at timestamp with time zone) RETURNS uuid
    LANGUAGE sql
    AS $$
    SELECT encode(substring(int8send(floor(extract(epoch FROM CASE WHEN isfinite(p_at) THEN p_at ELSE now() END)
                                           * 1000)::bigint) FROM 3)
                  || set_byte(substring(r FROM 7), 0, (get_byte(r, 6) & 15) | 112), 'hex')::uuid
      FROM uuid_send(gen_random_uuid()) AS r $$;

--
-- Name: hookd_webhook_id(public.outbox_events); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.hookd_webhook_id(e public.outbox_events) RETURNS text
    LANGUAGE sql STABLE
    AS $$
    SELECT CASE WHEN e.tenant_id IS NULL THEN e.id::text
                WHEN e.legacy_webhook_id THEN hookd_api_legacy_id('msg', e.id)
                ELSE hookd_api_id('msg', e.id) END $$;

--
-- Name: attempts; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.attempts (
    id bigint NOT NULL,
    source character varying(10) NOT NULL,
    source_id uuid NOT NULL,
    attempted_at timestamp with time zone DEFAULT now() NOT NULL,
    outcome character varying(20) NOT NULL,
    duration_ms double precision DEFAULT 0 NOT NULL,
    status_code integer,
    error text,
    response_excerpt text,
    worker_id text,
    part_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT attempts_source_check CHECK (((source)::text = ANY ((ARRAY['inbox'::character varying, 'delivery'::character varying])::text[])))
)
PARTITION BY RANGE (part_at);

--
-- Name: attempts_id_seq; Type: SEQUENCE; Schema: public; Owner: -
--

CREATE SEQUENCE public.attempts_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

--
-- Name: attempts_id_seq; Type: SEQUENCE OWNED BY; Schema: public; Owner: -
--

ALTER SEQUENCE public.attempts_id_seq OWNED BY public.attempts.id;

--
-- Name: attempts_far; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.attempts_far (
    id bigint DEFAULT nextval('public.attempts_id_seq'::regclass) NOT NULL,
    source character varying(10) NOT NULL,
    source_id uuid NOT NULL,
    attempted_at timestamp with time zone DEFAULT now() NOT NULL,
    outcome character varying(20) NOT NULL,
    duration_ms double precision DEFAULT 0 NOT NULL,
    status_code integer,
    error text,
    response_excerpt text,
    worker_id text,
    part_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT attempts_source_check CHECK (((source)::text = ANY ((ARRAY['inbox'::character varying, 'delivery'::character varying])::text[])))
)
WITH (fillfactor='100', autovacuum_vacuum_insert_scale_factor='0.05', autovacuum_analyze_scale_factor='0.05');

--
-- Name: attempts_kept; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.attempts_kept (
    id bigint DEFAULT nextval('public.attempts_id_seq'::regclass) NOT NULL,
    source character varying(10) NOT NULL,
    source_id uuid NOT NULL,
    attempted_at timestamp with time zone DEFAULT now() NOT NULL,
    outcome character varying(20) NOT NULL,
    duration_ms double precision DEFAULT 0 NOT NULL,
    status_code integer,
    error text,
    response_excerpt text,
    worker_id text,
    part_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT attempts_source_check CHECK (((source)::text = ANY ((ARRAY['inbox'::character varying, 'delivery'::character varying])::text[])))
)
WITH (fillfactor='100', autovacuum_vacuum_insert_scale_factor='0.05', autovacuum_analyze_scale_factor='0.05');

--
-- Name: attempts_legacy; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.attempts_legacy (
    id bigint DEFAULT nextval('public.attempts_id_seq'::regclass) NOT NULL,
    source character varying(10) NOT NULL,
    source_id uuid NOT NULL,
    attempted_at timestamp with time zone DEFAULT now() NOT NULL,
    outcome character varying(20) NOT NULL,
    duration_ms double precision DEFAULT 0 NOT NULL,
    status_code integer,
    error text,
    response_excerpt text,
    worker_id text,
    part_at timestamp with time zone DEFAULT '1970-01-02 00:00:00+00'::timestamp with time zone NOT NULL,
    CONSTRAINT attempts_source_check CHECK (((source)::text = ANY ((ARRAY['inbox'::character varying, 'delivery'::character varying])::text[])))
);

--
-- Name: dead_letters; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.dead_letters (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    source character varying(10) NOT NULL,
    source_id uuid NOT NULL,
    reason text NOT NULL,
    attempts integer NOT NULL,
    last_error text,
    dead_at timestamp with time zone DEFAULT now() NOT NULL,
    replayed_at timestamp with time zone,
    replay_count integer DEFAULT 0 NOT NULL,
    skipped_at timestamp with time zone,
    CONSTRAINT dead_letters_source_check CHECK (((source)::text = ANY ((ARRAY['inbox'::character varying, 'delivery'::character varying])::text[])))
);

--
-- Name: hookd_api_tokens; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.hookd_api_tokens (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    name text NOT NULL,
    tenant_id text,
    token_sha256 text NOT NULL,
    prefix text NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    last_used_at timestamp with time zone,
    revoked_at timestamp with time zone,
    expires_at timestamp with time zone
);

--
-- Name: hookd_dedup; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.hookd_dedup (
    partner_name character varying(50) NOT NULL,
    partner_event_id character varying(100) NOT NULL,
    content_digest bytea,
    inbox_id uuid NOT NULL,
    received_at timestamp with time zone DEFAULT now() NOT NULL
)
WITH (fillfactor='100', autovacuum_vacuum_scale_factor='0.02', autovacuum_vacuum_insert_scale_factor='0.05', autovacuum_analyze_scale_factor='0.02');

--
-- Name: hookd_entities; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.hookd_entities (
    entity_type character varying(100) NOT NULL,
    entity_id text NOT NULL,
    state character varying(100) NOT NULL,
    version bigint DEFAULT 0 NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL
)
WITH (fillfactor='80');

--
-- Name: hookd_idempotency_keys; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.hookd_idempotency_keys (
    scope text NOT NULL,
    key text NOT NULL,
    status integer,
    body text,
    created_at timestamp with time zone DEFAULT now() NOT NULL
);

--
-- Name: hookd_message_ids; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.hookd_message_ids (
    tenant_id text NOT NULL,
    event_id text NOT NULL,
    message_id uuid NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL
);

--
-- Name: hookd_portal_links; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.hookd_portal_links (
    token_sha256 text NOT NULL,
    tenant_id text NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    expires_at timestamp with time zone NOT NULL,
    used_at timestamp with time zone,
    session_ttl_ms bigint NOT NULL,
    session_id text,
    CONSTRAINT hookd_portal_links_session_ttl_ms_check CHECK ((session_ttl_ms > 0))
);

--
-- Name: hookd_portal_sessions; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.hookd_portal_sessions (
    token_sha256 text NOT NULL,
    tenant_id text NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    expires_at timestamp with time zone NOT NULL,
    session_id text
);

--
-- Name: hookd_relay_state; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.hookd_relay_state (
    id integer NOT NULL,
    listening boolean DEFAULT true NOT NULL,
    changed_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT hookd_relay_state_id_check CHECK ((id = 1))
);

--
-- Name: outbox_deliveries; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.outbox_deliveries (
    id uuid DEFAULT public.hookd_uuid7() NOT NULL,
    event_id uuid NOT NULL,
    endpoint_id uuid NOT NULL,
    status character varying(20) DEFAULT 'PENDING'::character varying NOT NULL,
    attempts integer DEFAULT 0 NOT NULL,
    next_attempt_at timestamp with time zone DEFAULT now() NOT NULL,
    last_status_code integer,
    last_error text,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    delivered_at timestamp with time zone,
    replayed_at timestamp with time zone,
    part_at timestamp with time zone DEFAULT date_trunc('milliseconds'::text, now()) NOT NULL,
    CONSTRAINT outbox_deliveries_status_check CHECK (((status)::text = ANY ((ARRAY['PENDING'::character varying, 'RETRYING'::character varying, 'SUCCEEDED'::character varying, 'DEAD'::character varying])::text[])))
)
PARTITION BY RANGE (part_at);

--
-- Name: outbox_deliveries_far; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.outbox_deliveries_far (
    id uuid DEFAULT public.hookd_uuid7() NOT NULL,
    event_id uuid NOT NULL,
    endpoint_id uuid NOT NULL,
    status character varying(20) DEFAULT 'PENDING'::character varying NOT NULL,
    attempts integer DEFAULT 0 NOT NULL,
    next_attempt_at timestamp with time zone DEFAULT now() NOT NULL,
    last_status_code integer,
    last_error text,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    delivered_at timestamp with time zone,
    replayed_at timestamp with time zone,
    part_at timestamp with time zone DEFAULT date_trunc('milliseconds'::text, now()) NOT NULL,
    CONSTRAINT outbox_deliveries_status_check CHECK (((status)::text = ANY ((ARRAY['PENDING'::character varying, 'RETRYING'::character varying, 'SUCCEEDED'::character varying, 'DEAD'::character varying])::text[])))
)
WITH (fillfactor='90', autovacuum_vacuum_scale_factor='0.02', autovacuum_vacuum_threshold='1000', autovacuum_vacuum_insert_scale_factor='0.05', autovacuum_analyze_scale_factor='0.02');

--
-- Name: outbox_deliveries_kept; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.outbox_deliveries_kept (
    id uuid DEFAULT public.hookd_uuid7() NOT NULL,
    event_id uuid NOT NULL,
    endpoint_id uuid NOT NULL,
    status character varying(20) DEFAULT 'PENDING'::character varying NOT NULL,
    attempts integer DEFAULT 0 NOT NULL,
    next_attempt_at timestamp with time zone DEFAULT now() NOT NULL,
    last_status_code integer,
    last_error text,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    delivered_at timestamp with time zone,
    replayed_at timestamp with time zone,
    part_at timestamp with time zone DEFAULT date_trunc('milliseconds'::text, now()) NOT NULL,
    CONSTRAINT outbox_deliveries_status_check CHECK (((status)::text = ANY ((ARRAY['PENDING'::character varying, 'RETRYING'::character varying, 'SUCCEEDED'::character varying, 'DEAD'::character varying])::text[])))
)
WITH (fillfactor='90', autovacuum_vacuum_scale_factor='0.02', autovacuum_vacuum_threshold='1000', autovacuum_vacuum_insert_scale_factor='0.05', autovacuum_analyze_scale_factor='0.02');

--
-- Name: outbox_deliveries_legacy; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.outbox_deliveries_legacy (
    id uuid DEFAULT public.hookd_uuid7() NOT NULL,
    event_id uuid NOT NULL,
    endpoint_id uuid NOT NULL,
    status character varying(20) DEFAULT 'PENDING'::character varying NOT NULL,
    attempts integer DEFAULT 0 NOT NULL,
    next_attempt_at timestamp with time zone DEFAULT now() NOT NULL,
    last_status_code integer,
    last_error text,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    delivered_at timestamp with time zone,
    replayed_at timestamp with time zone,
    part_at timestamp with time zone DEFAULT date_trunc('milliseconds'::text, now()) NOT NULL,
    CONSTRAINT outbox_deliveries_status_check CHECK (((status)::text = ANY ((ARRAY['PENDING'::character varying, 'RETRYING'::character varying, 'SUCCEEDED'::character varying, 'DEAD'::character varying])::text[])))
);

--
-- Name: outbox_events_far; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.outbox_events_far (
    id uuid DEFAULT public.hookd_uuid7() NOT NULL,
    aggregate_type character varying(50),
    aggregate_id text,
    event_type character varying(100) NOT NULL,
    payload jsonb NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    fanned_out_at timestamp with time zone,
    processed_at timestamp with time zone,
    part_at timestamp with time zone DEFAULT date_trunc('milliseconds'::text, now()) NOT NULL,
    tenant_id text,
    api_event_id text,
    emit_seq bigint DEFAULT nextval('public.hookd_emit_seq'::regclass),
    channels text[],
    tags text[],
    deliver_at timestamp with time zone,
    payload_expires_at timestamp with time zone,
    payload_raw text,
    legacy_webhook_id boolean DEFAULT false NOT NULL
)
WITH (fillfactor='90', autovacuum_vacuum_scale_factor='0.02', autovacuum_vacuum_threshold='1000', autovacuum_vacuum_insert_scale_factor='0.05', autovacuum_analyze_scale_factor='0.02');

--
-- Name: outbox_events_kept; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.outbox_events_kept (
    id uuid DEFAULT public.hookd_uuid7() NOT NULL,
    aggregate_type character varying(50),
    aggregate_id text,
    event_type character varying(100) NOT NULL,
    payload jsonb NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    fanned_out_at timestamp with time zone,
    processed_at timestamp with time zone,
    part_at timestamp with time zone DEFAULT date_trunc('milliseconds'::text, now()) NOT NULL,
    tenant_id text,
    api_event_id text,
    emit_seq bigint DEFAULT nextval('public.hookd_emit_seq'::regclass),
    channels text[],
    tags text[],
    deliver_at timestamp with time zone,
    payload_expires_at timestamp with time zone,
    payload_raw text,
    legacy_webhook_id boolean DEFAULT false NOT NULL
)
WITH (fillfactor='90', autovacuum_vacuum_scale_factor='0.02', autovacuum_vacuum_threshold='1000', autovacuum_vacuum_insert_scale_factor='0.05', autovacuum_analyze_scale_factor='0.02');

--
-- Name: outbox_events_legacy; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.outbox_events_legacy (
    id uuid DEFAULT public.hookd_uuid7() NOT NULL,
    aggregate_type character varying(50),
    aggregate_id text,
    event_type character varying(100) NOT NULL,
    payload jsonb NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    fanned_out_at timestamp with time zone,
    processed_at timestamp with time zone,
    part_at timestamp with time zone DEFAULT date_trunc('milliseconds'::text, now()) NOT NULL,
    tenant_id text,
    api_event_id text,
    emit_seq bigint DEFAULT nextval('public.hookd_emit_seq'::regclass),
    channels text[],
    tags text[],
    deliver_at timestamp with time zone,
    payload_expires_at timestamp with time zone,
    payload_raw text,
    legacy_webhook_id boolean DEFAULT false NOT NULL
);

--
-- Name: schema_migrations; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.schema_migrations (
    version text NOT NULL,
    checksum text NOT NULL,
    applied_at timestamp with time zone DEFAULT now() NOT NULL
);

--
-- Name: webhook_inbox; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.webhook_inbox (
    id uuid DEFAULT public.hookd_uuid7() NOT NULL,
    partner_name character varying(50) NOT NULL,
    partner_event_id character varying(100) NOT NULL,
    payload jsonb NOT NULL,
    signature_verified boolean DEFAULT false NOT NULL,
    status character varying(20) DEFAULT 'PENDING'::character varying NOT NULL,
    received_at timestamp with time zone DEFAULT now() NOT NULL,
    processed_at timestamp with time zone,
    event_type character varying(100) NOT NULL,
    entity_type character varying(100),
    entity_id text,
    headers jsonb DEFAULT '{}'::jsonb NOT NULL,
    attempts integer DEFAULT 0 NOT NULL,
    deferrals integer DEFAULT 0 NOT NULL,
    next_attempt_at timestamp with time zone DEFAULT now() NOT NULL,
    last_error text,
    outcome character varying(20),
    replayed_at timestamp with time zone,
    content_digest bytea,
    part_at timestamp with time zone DEFAULT date_trunc('milliseconds'::text, now()) NOT NULL,
    routed_at timestamp with time zone,
    CONSTRAINT webhook_inbox_outcome_check CHECK (((outcome IS NULL) OR ((outcome)::text = ANY ((ARRAY['applied'::character varying, 'noop'::character varying, 'ignored'::character varying, 'dead'::character varying, 'routed'::character varying])::text[])))),
    CONSTRAINT webhook_inbox_status_check CHECK (((status)::text = ANY ((ARRAY['PENDING'::character varying, 'PROCESSED'::character varying, 'DEFERRED'::character varying, 'RETRYING'::character varying, 'QUARANTINED'::character varying])::text[])))
)
PARTITION BY RANGE (part_at);

--
-- Name: webhook_inbox_far; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.webhook_inbox_far (
    id uuid DEFAULT public.hookd_uuid7() NOT NULL,
    partner_name character varying(50) NOT NULL,
    partner_event_id character varying(100) NOT NULL,
    payload jsonb NOT NULL,
    signature_verified boolean DEFAULT false NOT NULL,
    status character varying(20) DEFAULT 'PENDING'::character varying NOT NULL,
    received_at timestamp with time zone DEFAULT now() NOT NULL,
    processed_at timestamp with time zone,
    event_type character varying(100) NOT NULL,
    entity_type character varying(100),
    entity_id text,
    headers jsonb DEFAULT '{}'::jsonb NOT NULL,
    attempts integer DEFAULT 0 NOT NULL,
    deferrals integer DEFAULT 0 NOT NULL,
    next_attempt_at timestamp with time zone DEFAULT now() NOT NULL,
    last_error text,
    outcome character varying(20),
    replayed_at timestamp with time zone,
    content_digest bytea,
    part_at timestamp with time zone DEFAULT date_trunc('milliseconds'::text, now()) NOT NULL,
    routed_at timestamp with time zone,
    CONSTRAINT webhook_inbox_outcome_check CHECK (((outcome IS NULL) OR ((outcome)::text = ANY ((ARRAY['applied'::character varying, 'noop'::character varying, 'ignored'::character varying, 'dead'::character varying, 'routed'::character varying])::text[])))),
    CONSTRAINT webhook_inbox_status_check CHECK (((status)::text = ANY ((ARRAY['PENDING'::character varying, 'PROCESSED'::character varying, 'DEFERRED'::character varying, 'RETRYING'::character varying, 'QUARANTINED'::character varying])::text[])))
)
WITH (fillfactor='90', autovacuum_vacuum_scale_factor='0.02', autovacuum_vacuum_threshold='1000', autovacuum_vacuum_insert_scale_factor='0.05', autovacuum_analyze_scale_factor='0.02');

--
-- Name: webhook_inbox_kept; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.webhook_inbox_kept (
    id uuid DEFAULT public.hookd_uuid7() NOT NULL,
    partner_name character varying(50) NOT NULL,
    partner_event_id character varying(100) NOT NULL,
    payload jsonb NOT NULL,
    signature_verified boolean DEFAULT false NOT NULL,
    status character varying(20) DEFAULT 'PENDING'::character varying NOT NULL,
    received_at timestamp with time zone DEFAULT now() NOT NULL,
    processed_at timestamp with time zone,
    event_type character varying(100) NOT NULL,
    entity_type character varying(100),
    entity_id text,
    headers jsonb DEFAULT '{}'::jsonb NOT NULL,
    attempts integer DEFAULT 0 NOT NULL,
    deferrals integer DEFAULT 0 NOT NULL,
    next_attempt_at timestamp with time zone DEFAULT now() NOT NULL,
    last_error text,
    outcome character varying(20),
    replayed_at timestamp with time zone,
    content_digest bytea,
    part_at timestamp with time zone DEFAULT date_trunc('milliseconds'::text, now()) NOT NULL,
    routed_at timestamp with time zone,
    CONSTRAINT webhook_inbox_outcome_check CHECK (((outcome IS NULL) OR ((outcome)::text = ANY ((ARRAY['applied'::character varying, 'noop'::character varying, 'ignored'::character varying, 'dead'::character varying, 'routed'::character varying])::text[])))),
    CONSTRAINT webhook_inbox_status_check CHECK (((status)::text = ANY ((ARRAY['PENDING'::character varying, 'PROCESSED'::character varying, 'DEFERRED'::character varying, 'RETRYING'::character varying, 'QUARANTINED'::character varying])::text[])))
)
WITH (fillfactor='90', autovacuum_vacuum_scale_factor='0.02', autovacuum_vacuum_threshold='1000', autovacuum_vacuum_insert_scale_factor='0.05', autovacuum_analyze_scale_factor='0.02');

--
-- Name: webhook_inbox_legacy; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.webhook_inbox_legacy (
    id uuid DEFAULT public.hookd_uuid7() NOT NULL,
    partner_name character varying(50) NOT NULL,
    partner_event_id character varying(100) NOT NULL,
    payload jsonb NOT NULL,
    signature_verified boolean DEFAULT false NOT NULL,
    status character varying(20) DEFAULT 'PENDING'::character varying NOT NULL,
    received_at timestamp with time zone DEFAULT now() NOT NULL,
    processed_at timestamp with time zone,
    event_type character varying(100) NOT NULL,
    entity_type character varying(100),
    entity_id text,
    headers jsonb DEFAULT '{}'::jsonb NOT NULL,
    attempts integer DEFAULT 0 NOT NULL,
    deferrals integer DEFAULT 0 NOT NULL,
    next_attempt_at timestamp with time zone DEFAULT now() NOT NULL,
    last_error text,
    outcome character varying(20),
    replayed_at timestamp with time zone,
    content_digest bytea,
    part_at timestamp with time zone DEFAULT date_trunc('milliseconds'::text, now()) NOT NULL,
    routed_at timestamp with time zone,
    CONSTRAINT webhook_inbox_outcome_check CHECK (((outcome IS NULL) OR ((outcome)::text = ANY ((ARRAY['applied'::character varying, 'noop'::character varying, 'ignored'::character varying, 'dead'::character varying, 'routed'::character varying])::text[])))),
    CONSTRAINT webhook_inbox_status_check CHECK (((status)::text = ANY ((ARRAY['PENDING'::character varying, 'PROCESSED'::character varying, 'DEFERRED'::character varying, 'RETRYING'::character varying, 'QUARANTINED'::character varying])::text[])))
);

--
-- Name: attempts_far; Type: TABLE ATTACH; Schema: public; Owner: -
--

ALTER TABLE ONLY public.attempts ATTACH PARTITION public.attempts_far FOR VALUES FROM ('<migrate time>') TO (MAXVALUE);

--
-- Name: attempts_kept; Type: TABLE ATTACH; Schema: public; Owner: -
--

ALTER TABLE ONLY public.attempts ATTACH PARTITION public.attempts_kept FOR VALUES FROM (MINVALUE) TO ('1970-01-02 00:00:00+00');

--
-- Name: attempts_legacy; Type: TABLE ATTACH; Schema: public; Owner: -
--

ALTER TABLE ONLY public.attempts ATTACH PARTITION public.attempts_legacy FOR VALUES FROM ('1970-01-02 00:00:00+00') TO ('<migrate time>');

--
-- Name: outbox_deliveries_far; Type: TABLE ATTACH; Schema: public; Owner: -
--

ALTER TABLE ONLY public.outbox_deliveries ATTACH PARTITION public.outbox_deliveries_far FOR VALUES FROM ('<migrate time>') TO (MAXVALUE);

--
-- Name: outbox_deliveries_kept; Type: TABLE ATTACH; Schema: public; Owner: -
--

ALTER TABLE ONLY public.outbox_deliveries ATTACH PARTITION public.outbox_deliveries_kept FOR VALUES FROM (MINVALUE) TO ('1970-01-02 00:00:00+00');

--
-- Name: outbox_deliveries_legacy; Type: TABLE ATTACH; Schema: public; Owner: -
--

ALTER TABLE ONLY public.outbox_deliveries ATTACH PARTITION public.outbox_deliveries_legacy FOR VALUES FROM ('1970-01-02 00:00:00+00') TO ('<migrate time>');

--
-- Name: outbox_events_far; Type: TABLE ATTACH; Schema: public; Owner: -
--

ALTER TABLE ONLY public.outbox_events ATTACH PARTITION public.outbox_events_far FOR VALUES FROM ('<migrate time>') TO (MAXVALUE);

--
-- Name: outbox_events_kept; Type: TABLE ATTACH; Schema: public; Owner: -
--

ALTER TABLE ONLY public.outbox_events ATTACH PARTITION public.outbox_events_kept FOR VALUES FROM (MINVALUE) TO ('1970-01-02 00:00:00+00');

--
-- Name: outbox_events_legacy; Type: TABLE ATTACH; Schema: public; Owner: -
--

ALTER TABLE ONLY public.outbox_events ATTACH PARTITION public.outbox_events_legacy FOR VALUES FROM ('1970-01-02 00:00:00+00') TO ('<migrate time>');

--
-- Name: webhook_inbox_far; Type: TABLE ATTACH; Schema: public; Owner: -
--

ALTER TABLE ONLY public.webhook_inbox ATTACH PARTITION public.webhook_inbox_far FOR VALUES FROM ('<migrate time>') TO (MAXVALUE);

--
-- Name: webhook_inbox_kept; Type: TABLE ATTACH; Schema: public; Owner: -
--

ALTER TABLE ONLY public.webhook_inbox ATTACH PARTITION public.webhook_inbox_kept FOR VALUES FROM (MINVALUE) TO ('1970-01-02 00:00:00+00');

--
-- Name: webhook_inbox_legacy; Type: TABLE ATTACH; Schema: public; Owner: -
--

ALTER TABLE ONLY public.webhook_inbox ATTACH PARTITION public.webhook_inbox_legacy FOR VALUES FROM ('1970-01-02 00:00:00+00') TO ('<migrate time>');

--
-- Name: attempts id; Type: DEFAULT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.attempts ALTER COLUMN id SET DEFAULT nextval('public.attempts_id_seq'::regclass);

--
-- Name: attempts attempts_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.attempts
    ADD CONSTRAINT attempts_pkey PRIMARY KEY (source, source_id, id, part_at);

--
-- Name: attempts_far attempts_far_pkey1; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.attempts_far
    ADD CONSTRAINT attempts_far_pkey1 PRIMARY KEY (source, source_id, id, part_at);

--
-- Name: attempts_kept attempts_kept_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.attempts_kept
    ADD CONSTRAINT attempts_kept_pkey PRIMARY KEY (source, source_id, id, part_at);

--
-- Name: attempts_legacy attempts_legacy_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.attempts_legacy
    ADD CONSTRAINT attempts_legacy_pkey PRIMARY KEY (source, source_id, id, part_at);

--
-- Name: dead_letters dead_letters_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.dead_letters
    ADD CONSTRAINT dead_letters_pkey PRIMARY KEY (id);

--
-- Name: hookd_api_tokens hookd_api_tokens_name_key; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.hookd_api_tokens
    ADD CONSTRAINT hookd_api_tokens_name_key UNIQUE (name);

--
-- Name: hookd_api_tokens hookd_api_tokens_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.hookd_api_tokens
    ADD CONSTRAINT hookd_api_tokens_pkey PRIMARY KEY (id);

--
-- Name: hookd_api_tokens hookd_api_tokens_token_sha256_key; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.hookd_api_tokens
    ADD CONSTRAINT hookd_api_tokens_token_sha256_key UNIQUE (token_sha256);

--
-- Name: hookd_background_tasks hookd_background_tasks_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.hookd_background_tasks
    ADD CONSTRAINT hookd_background_tasks_pkey PRIMARY KEY (id);

--
-- Name: hookd_dedup hookd_dedup_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.hookd_dedup
    ADD CONSTRAINT hookd_dedup_pkey PRIMARY KEY (partner_name, partner_event_id);

--
-- Name: hookd_entities hookd_entities_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.hookd_entities
    ADD CONSTRAINT hookd_entities_pkey PRIMARY KEY (entity_type, entity_id);

--
-- Name: hookd_event_types hookd_event_types_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.hookd_event_types
    ADD CONSTRAINT hookd_event_types_pkey PRIMARY KEY (name);

--
-- Name: hookd_idempotency_keys hookd_idempotency_keys_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.hookd_idempotency_keys
    ADD CONSTRAINT hookd_idempotency_keys_pkey PRIMARY KEY (scope, key);

--
-- Name: hookd_message_ids hookd_message_ids_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.hookd_message_ids
    ADD CONSTRAINT hookd_message_ids_pkey PRIMARY KEY (tenant_id, event_id);

--
-- Name: hookd_portal_links hookd_portal_links_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.hookd_portal_links
    ADD CONSTRAINT hookd_portal_links_pkey PRIMARY KEY (token_sha256);

--
-- Name: hookd_portal_sessions hookd_portal_sessions_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.hookd_portal_sessions
    ADD CONSTRAINT hookd_portal_sessions_pkey PRIMARY KEY (token_sha256);

--
-- Name: hookd_relay_state hookd_relay_state_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.hookd_relay_state
    ADD CONSTRAINT hookd_relay_state_pkey PRIMARY KEY (id);

--
-- Name: hookd_tenants hookd_tenants_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.hookd_tenants
    ADD CONSTRAINT hookd_tenants_pkey PRIMARY KEY (id);

--
-- Name: hookd_tenants hookd_tenants_uid_key; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.hookd_tenants
    ADD CONSTRAINT hookd_tenants_uid_key UNIQUE (uid);

--
-- Name: outbox_deliveries_legacy legacy_outbox_deliveries_event_id_endpoint_id_key; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.outbox_deliveries_legacy
    ADD CONSTRAINT legacy_outbox_deliveries_event_id_endpoint_id_key UNIQUE (event_id, endpoint_id);

--
-- Name: outbox_deliveries outbox_deliveries_event_id_endpoint_id_key; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.outbox_deliveries
    ADD CONSTRAINT outbox_deliveries_event_id_endpoint_id_key UNIQUE (event_id, endpoint_id, part_at);

--
-- Name: outbox_deliveries_far outbox_deliveries_far_event_id_endpoint_id_part_at_key1; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.outbox_deliveries_far
    ADD CONSTRAINT outbox_deliveries_far_event_id_endpoint_id_part_at_key1 UNIQUE (event_id, endpoint_id, part_at);

--
-- Name: outbox_deliveries outbox_deliveries_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.outbox_deliveries
    ADD CONSTRAINT outbox_deliveries_pkey PRIMARY KEY (id, part_at);

--
-- Name: outbox_deliveries_far outbox_deliveries_far_pkey1; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.outbox_deliveries_far
    ADD CONSTRAINT outbox_deliveries_far_pkey1 PRIMARY KEY (id, part_at);

--
-- Name: outbox_deliveries_kept outbox_deliveries_kept_event_id_endpoint_id_part_at_key; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.outbox_deliveries_kept
    ADD CONSTRAINT outbox_deliveries_kept_event_id_endpoint_id_part_at_key UNIQUE (event_id, endpoint_id, part_at);

--
-- Name: outbox_deliveries_kept outbox_deliveries_kept_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.outbox_deliveries_kept
    ADD CONSTRAINT outbox_deliveries_kept_pkey PRIMARY KEY (id, part_at);

--
-- Name: outbox_deliveries_legacy outbox_deliveries_legacy_event_id_endpoint_id_part_at_key; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.outbox_deliveries_legacy
    ADD CONSTRAINT outbox_deliveries_legacy_event_id_endpoint_id_part_at_key UNIQUE (event_id, endpoint_id, part_at);

--
-- Name: outbox_deliveries_legacy outbox_deliveries_legacy_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.outbox_deliveries_legacy
    ADD CONSTRAINT outbox_deliveries_legacy_pkey PRIMARY KEY (id, part_at);

--
-- Name: outbox_events outbox_events_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.outbox_events
    ADD CONSTRAINT outbox_events_pkey PRIMARY KEY (id, part_at);

--
-- Name: outbox_events_far outbox_events_far_pkey1; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.outbox_events_far
    ADD CONSTRAINT outbox_events_far_pkey1 PRIMARY KEY (id, part_at);

--
-- Name: outbox_events_kept outbox_events_kept_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.outbox_events_kept
    ADD CONSTRAINT outbox_events_kept_pkey PRIMARY KEY (id, part_at);

--
-- Name: outbox_events_legacy outbox_events_legacy_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.outbox_events_legacy
    ADD CONSTRAINT outbox_events_legacy_pkey PRIMARY KEY (id, part_at);

--
-- Name: schema_migrations schema_migrations_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.schema_migrations
    ADD CONSTRAINT schema_migrations_pkey PRIMARY KEY (version);

--
-- Name: webhook_endpoints webhook_endpoints_name_key; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.webhook_endpoints
    ADD CONSTRAINT webhook_endpoints_name_key UNIQUE (name);

--
-- Name: webhook_endpoints webhook_endpoints_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.webhook_endpoints
    ADD CONSTRAINT webhook_endpoints_pkey PRIMARY KEY (id);

--
-- Name: webhook_inbox webhook_inbox_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.webhook_inbox
    ADD CONSTRAINT webhook_inbox_pkey PRIMARY KEY (id, part_at);

--
-- Name: webhook_inbox_far webhook_inbox_far_pkey1; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.webhook_inbox_far
    ADD CONSTRAINT webhook_inbox_far_pkey1 PRIMARY KEY (id, part_at);

--
-- Name: webhook_inbox_kept webhook_inbox_kept_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.webhook_inbox_kept
    ADD CONSTRAINT webhook_inbox_kept_pkey PRIMARY KEY (id, part_at);

--
-- Name: webhook_inbox_legacy webhook_inbox_legacy_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.webhook_inbox_legacy
    ADD CONSTRAINT webhook_inbox_legacy_pkey PRIMARY KEY (id, part_at);

--
-- Name: dead_letters_dead_at; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX dead_letters_dead_at ON public.dead_letters USING btree (dead_at);

--
-- Name: dead_letters_open; Type: INDEX; Schema: public; Owner: -
--

CREATE UNIQUE INDEX dead_letters_open ON public.dead_letters USING btree (source, source_id) WHERE (replayed_at IS NULL);

--
-- Name: hookd_background_tasks_running; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX hookd_background_tasks_running ON public.hookd_background_tasks USING btree (id) WHERE (status = 'running'::text);

--
-- Name: hookd_background_tasks_tenant; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX hookd_background_tasks_tenant ON public.hookd_background_tasks USING btree (tenant_id, id);

--
-- Name: hookd_dedup_digest; Type: INDEX; Schema: public; Owner: -
--

CREATE UNIQUE INDEX hookd_dedup_digest ON public.hookd_dedup USING btree (partner_name, content_digest) WHERE (content_digest IS NOT NULL);

--
-- Name: hookd_dedup_received; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX hookd_dedup_received ON public.hookd_dedup USING btree (received_at);

--
-- Name: hookd_idempotency_keys_created; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX hookd_idempotency_keys_created ON public.hookd_idempotency_keys USING btree (created_at);

--
-- Name: hookd_portal_links_expires; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX hookd_portal_links_expires ON public.hookd_portal_links USING btree (expires_at);

--
-- Name: hookd_portal_sessions_expires; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX hookd_portal_sessions_expires ON public.hookd_portal_sessions USING btree (expires_at);

--
-- Name: outbox_deliveries_due; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX outbox_deliveries_due ON ONLY public.outbox_deliveries USING btree (next_attempt_at, id) WHERE ((status)::text = ANY ((ARRAY['PENDING'::character varying, 'RETRYING'::character varying])::text[]));

--
-- Name: legacy_outbox_deliveries_due; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX legacy_outbox_deliveries_due ON public.outbox_deliveries_legacy USING btree (next_attempt_at, id) WHERE ((status)::text = ANY ((ARRAY['PENDING'::character varying, 'RETRYING'::character varying])::text[]));

--
-- Name: outbox_deliveries_event_open; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX outbox_deliveries_event_open ON ONLY public.outbox_deliveries USING btree (event_id) WHERE ((status)::text = ANY ((ARRAY['PENDING'::character varying, 'RETRYING'::character varying])::text[]));

--
-- Name: legacy_outbox_deliveries_event_open; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX legacy_outbox_deliveries_event_open ON public.outbox_deliveries_legacy USING btree (event_id) WHERE ((status)::text = ANY ((ARRAY['PENDING'::character varying, 'RETRYING'::character varying])::text[]));

--
-- Name: outbox_events_unfanned; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX outbox_events_unfanned ON ONLY public.outbox_events USING btree (created_at, id) WHERE (fanned_out_at IS NULL);

--
-- Name: legacy_outbox_events_unfanned; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX legacy_outbox_events_unfanned ON public.outbox_events_legacy USING btree (created_at, id) WHERE (fanned_out_at IS NULL);

--
-- Name: webhook_inbox_deferred_entity; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX webhook_inbox_deferred_entity ON ONLY public.webhook_inbox USING btree (entity_type, entity_id) WHERE ((status)::text = 'DEFERRED'::text);

--
-- Name: legacy_webhook_inbox_deferred_entity; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX legacy_webhook_inbox_deferred_entity ON public.webhook_inbox_legacy USING btree (entity_type, entity_id) WHERE ((status)::text = 'DEFERRED'::text);

--
-- Name: webhook_inbox_due; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX webhook_inbox_due ON ONLY public.webhook_inbox USING btree (next_attempt_at, id) WHERE ((status)::text = ANY ((ARRAY['PENDING'::character varying, 'DEFERRED'::character varying, 'RETRYING'::character varying])::text[]));

--
-- Name: legacy_webhook_inbox_due; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX legacy_webhook_inbox_due ON public.webhook_inbox_legacy USING btree (next_attempt_at, id) WHERE ((status)::text = ANY ((ARRAY['PENDING'::character varying, 'DEFERRED'::character varying, 'RETRYING'::character varying])::text[]));

--
-- Name: outbox_deliveries_endpoint_dead; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX outbox_deliveries_endpoint_dead ON ONLY public.outbox_deliveries USING btree (endpoint_id) WHERE ((status)::text = 'DEAD'::text);

--
-- Name: outbox_deliveries_endpoint_open; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX outbox_deliveries_endpoint_open ON ONLY public.outbox_deliveries USING btree (endpoint_id) WHERE ((status)::text = ANY ((ARRAY['PENDING'::character varying, 'RETRYING'::character varying])::text[]));

--
-- Name: outbox_deliveries_far_endpoint_id_idx2; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX outbox_deliveries_far_endpoint_id_idx2 ON public.outbox_deliveries_far USING btree (endpoint_id) WHERE ((status)::text = ANY ((ARRAY['PENDING'::character varying, 'RETRYING'::character varying])::text[]));

--
-- Name: outbox_deliveries_far_endpoint_id_idx3; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX outbox_deliveries_far_endpoint_id_idx3 ON public.outbox_deliveries_far USING btree (endpoint_id) WHERE ((status)::text = 'DEAD'::text);

--
-- Name: outbox_deliveries_far_event_id_idx1; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX outbox_deliveries_far_event_id_idx1 ON public.outbox_deliveries_far USING btree (event_id) WHERE ((status)::text = ANY ((ARRAY['PENDING'::character varying, 'RETRYING'::character varying])::text[]));

--
-- Name: outbox_deliveries_far_next_attempt_at_id_idx1; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX outbox_deliveries_far_next_attempt_at_id_idx1 ON public.outbox_deliveries_far USING btree (next_attempt_at, id) WHERE ((status)::text = ANY ((ARRAY['PENDING'::character varying, 'RETRYING'::character varying])::text[]));

--
-- Name: outbox_deliveries_kept_endpoint_id_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX outbox_deliveries_kept_endpoint_id_idx ON public.outbox_deliveries_kept USING btree (endpoint_id) WHERE ((status)::text = ANY ((ARRAY['PENDING'::character varying, 'RETRYING'::character varying])::text[]));

--
-- Name: outbox_deliveries_kept_endpoint_id_idx1; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX outbox_deliveries_kept_endpoint_id_idx1 ON public.outbox_deliveries_kept USING btree (endpoint_id) WHERE ((status)::text = 'DEAD'::text);

--
-- Name: outbox_deliveries_kept_event_id_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX outbox_deliveries_kept_event_id_idx ON public.outbox_deliveries_kept USING btree (event_id) WHERE ((status)::text = ANY ((ARRAY['PENDING'::character varying, 'RETRYING'::character varying])::text[]));

--
-- Name: outbox_deliveries_kept_next_attempt_at_id_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX outbox_deliveries_kept_next_attempt_at_id_idx ON public.outbox_deliveries_kept USING btree (next_attempt_at, id) WHERE ((status)::text = ANY ((ARRAY['PENDING'::character varying, 'RETRYING'::character varying])::text[]));

--
-- Name: outbox_deliveries_legacy_endpoint_id_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX outbox_deliveries_legacy_endpoint_id_idx ON public.outbox_deliveries_legacy USING btree (endpoint_id) WHERE ((status)::text = ANY ((ARRAY['PENDING'::character varying, 'RETRYING'::character varying])::text[]));

--
-- Name: outbox_deliveries_legacy_endpoint_id_idx1; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX outbox_deliveries_legacy_endpoint_id_idx1 ON public.outbox_deliveries_legacy USING btree (endpoint_id) WHERE ((status)::text = 'DEAD'::text);

--
-- Name: outbox_events_aggregate_unfanned; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX outbox_events_aggregate_unfanned ON ONLY public.outbox_events USING btree (aggregate_type, aggregate_id) WHERE (fanned_out_at IS NULL);

--
-- Name: outbox_events_far_aggregate_type_aggregate_id_idx1; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX outbox_events_far_aggregate_type_aggregate_id_idx1 ON public.outbox_events_far USING btree (aggregate_type, aggregate_id) WHERE (fanned_out_at IS NULL);

--
-- Name: outbox_events_far_created_at_id_idx1; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX outbox_events_far_created_at_id_idx1 ON public.outbox_events_far USING btree (created_at, id) WHERE (fanned_out_at IS NULL);

--
-- Name: outbox_events_payload_expiry; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX outbox_events_payload_expiry ON ONLY public.outbox_events USING btree (payload_expires_at) WHERE ((payload_expires_at IS NOT NULL) AND (payload <> 'null'::jsonb));

--
-- Name: outbox_events_far_payload_expires_at_idx1; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX outbox_events_far_payload_expires_at_idx1 ON public.outbox_events_far USING btree (payload_expires_at) WHERE ((payload_expires_at IS NOT NULL) AND (payload <> 'null'::jsonb));

--
-- Name: outbox_events_tenant; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX outbox_events_tenant ON ONLY public.outbox_events USING btree (tenant_id, created_at, id) WHERE (tenant_id IS NOT NULL);

--
-- Name: outbox_events_far_tenant_id_created_at_id_idx1; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX outbox_events_far_tenant_id_created_at_id_idx1 ON public.outbox_events_far USING btree (tenant_id, created_at, id) WHERE (tenant_id IS NOT NULL);

--
-- Name: outbox_events_kept_aggregate_type_aggregate_id_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX outbox_events_kept_aggregate_type_aggregate_id_idx ON public.outbox_events_kept USING btree (aggregate_type, aggregate_id) WHERE (fanned_out_at IS NULL);

--
-- Name: outbox_events_kept_created_at_id_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX outbox_events_kept_created_at_id_idx ON public.outbox_events_kept USING btree (created_at, id) WHERE (fanned_out_at IS NULL);

--
-- Name: outbox_events_kept_payload_expires_at_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX outbox_events_kept_payload_expires_at_idx ON public.outbox_events_kept USING btree (payload_expires_at) WHERE ((payload_expires_at IS NOT NULL) AND (payload <> 'null'::jsonb));

--
-- Name: outbox_events_kept_tenant_id_created_at_id_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX outbox_events_kept_tenant_id_created_at_id_idx ON public.outbox_events_kept USING btree (tenant_id, created_at, id) WHERE (tenant_id IS NOT NULL);

--
-- Name: outbox_events_legacy_aggregate_type_aggregate_id_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX outbox_events_legacy_aggregate_type_aggregate_id_idx ON public.outbox_events_legacy USING btree (aggregate_type, aggregate_id) WHERE (fanned_out_at IS NULL);

--
-- Name: outbox_events_legacy_payload_expires_at_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX outbox_events_legacy_payload_expires_at_idx ON public.outbox_events_legacy USING btree (payload_expires_at) WHERE ((payload_expires_at IS NOT NULL) AND (payload <> 'null'::jsonb));

--
-- Name: outbox_events_legacy_tenant_id_created_at_id_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX outbox_events_legacy_tenant_id_created_at_id_idx ON public.outbox_events_legacy USING btree (tenant_id, created_at, id) WHERE (tenant_id IS NOT NULL);

--
-- Name: webhook_endpoints_tenant; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX webhook_endpoints_tenant ON public.webhook_endpoints USING btree (tenant_id, created_at, id);

--
-- Name: webhook_endpoints_tenant_uid; Type: INDEX; Schema: public; Owner: -
--

CREATE UNIQUE INDEX webhook_endpoints_tenant_uid ON public.webhook_endpoints USING btree (tenant_id, uid) WHERE (uid IS NOT NULL);

--
-- Name: webhook_inbox_far_entity_type_entity_id_idx1; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX webhook_inbox_far_entity_type_entity_id_idx1 ON public.webhook_inbox_far USING btree (entity_type, entity_id) WHERE ((status)::text = 'DEFERRED'::text);

--
-- Name: webhook_inbox_far_next_attempt_at_id_idx1; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX webhook_inbox_far_next_attempt_at_id_idx1 ON public.webhook_inbox_far USING btree (next_attempt_at, id) WHERE ((status)::text = ANY ((ARRAY['PENDING'::character varying, 'DEFERRED'::character varying, 'RETRYING'::character varying])::text[]));

--
-- Name: webhook_inbox_kept_entity_type_entity_id_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX webhook_inbox_kept_entity_type_entity_id_idx ON public.webhook_inbox_kept USING btree (entity_type, entity_id) WHERE ((status)::text = 'DEFERRED'::text);

--
-- Name: webhook_inbox_kept_next_attempt_at_id_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX webhook_inbox_kept_next_attempt_at_id_idx ON public.webhook_inbox_kept USING btree (next_attempt_at, id) WHERE ((status)::text = ANY ((ARRAY['PENDING'::character varying, 'DEFERRED'::character varying, 'RETRYING'::character varying])::text[]));

--
-- Name: attempts_far_pkey1; Type: INDEX ATTACH; Schema: public; Owner: -
--

ALTER INDEX public.attempts_pkey ATTACH PARTITION public.attempts_far_pkey1;

--
-- Name: attempts_kept_pkey; Type: INDEX ATTACH; Schema: public; Owner: -
--

ALTER INDEX public.attempts_pkey ATTACH PARTITION public.attempts_kept_pkey;

--
-- Name: attempts_legacy_pkey; Type: INDEX ATTACH; Schema: public; Owner: -
--

ALTER INDEX public.attempts_pkey ATTACH PARTITION public.attempts_legacy_pkey;

--
-- Name: legacy_outbox_deliveries_due; Type: INDEX ATTACH; Schema: public; Owner: -
--

ALTER INDEX public.outbox_deliveries_due ATTACH PARTITION public.legacy_outbox_deliveries_due;

--
-- Name: legacy_outbox_deliveries_event_open; Type: INDEX ATTACH; Schema: public; Owner: -
--

ALTER INDEX public.outbox_deliveries_event_open ATTACH PARTITION public.legacy_outbox_deliveries_event_open;

--
-- Name: legacy_outbox_events_unfanned; Type: INDEX ATTACH; Schema: public; Owner: -
--

ALTER INDEX public.outbox_events_unfanned ATTACH PARTITION public.legacy_outbox_events_unfanned;

--
-- Name: legacy_webhook_inbox_deferred_entity; Type: INDEX ATTACH; Schema: public; Owner: -
--

ALTER INDEX public.webhook_inbox_deferred_entity ATTACH PARTITION public.legacy_webhook_inbox_deferred_entity;

--
-- Name: legacy_webhook_inbox_due; Type: INDEX ATTACH; Schema: public; Owner: -
--

ALTER INDEX public.webhook_inbox_due ATTACH PARTITION public.legacy_webhook_inbox_due;

--
-- Name: outbox_deliveries_far_endpoint_id_idx2; Type: INDEX ATTACH; Schema: public; Owner: -
--

ALTER INDEX public.outbox_deliveries_endpoint_open ATTACH PARTITION public.outbox_deliveries_far_endpoint_id_idx2;

--
-- Name: outbox_deliveries_far_endpoint_id_idx3; Type: INDEX ATTACH; Schema: public; Owner: -
--

ALTER INDEX public.outbox_deliveries_endpoint_dead ATTACH PARTITION public.outbox_deliveries_far_endpoint_id_idx3;

--
-- Name: outbox_deliveries_far_event_id_endpoint_id_part_at_key1; Type: INDEX ATTACH; Schema: public; Owner: -
--

ALTER INDEX public.outbox_deliveries_event_id_endpoint_id_key ATTACH PARTITION public.outbox_deliveries_far_event_id_endpoint_id_part_at_key1;

--
-- Name: outbox_deliveries_far_event_id_idx1; Type: INDEX ATTACH; Schema: public; Owner: -
--

ALTER INDEX public.outbox_deliveries_event_open ATTACH PARTITION public.outbox_deliveries_far_event_id_idx1;

--
-- Name: outbox_deliveries_far_next_attempt_at_id_idx1; Type: INDEX ATTACH; Schema: public; Owner: -
--

ALTER INDEX public.outbox_deliveries_due ATTACH PARTITION public.outbox_deliveries_far_next_attempt_at_id_idx1;

--
-- Name: outbox_deliveries_far_pkey1; Type: INDEX ATTACH; Schema: public; Owner: -
--

ALTER INDEX public.outbox_deliveries_pkey ATTACH PARTITION public.outbox_deliveries_far_pkey1;

--
-- Name: outbox_deliveries_kept_endpoint_id_idx; Type: INDEX ATTACH; Schema: public; Owner: -
--

ALTER INDEX public.outbox_deliveries_endpoint_open ATTACH PARTITION public.outbox_deliveries_kept_endpoint_id_idx;

--
-- Name: outbox_deliveries_kept_endpoint_id_idx1; Type: INDEX ATTACH; Schema: public; Owner: -
--

ALTER INDEX public.outbox_deliveries_endpoint_dead ATTACH PARTITION public.outbox_deliveries_kept_endpoint_id_idx1;

--
-- Name: outbox_deliveries_kept_event_id_endpoint_id_part_at_key; Type: INDEX ATTACH; Schema: public; Owner: -
--

ALTER INDEX public.outbox_deliveries_event_id_endpoint_id_key ATTACH PARTITION public.outbox_deliveries_kept_event_id_endpoint_id_part_at_key;

--
-- Name: outbox_deliveries_kept_event_id_idx; Type: INDEX ATTACH; Schema: public; Owner: -
--

ALTER INDEX public.outbox_deliveries_event_open ATTACH PARTITION public.outbox_deliveries_kept_event_id_idx;

--
-- Name: outbox_deliveries_kept_next_attempt_at_id_idx; Type: INDEX ATTACH; Schema: public; Owner: -
--

ALTER INDEX public.outbox_deliveries_due ATTACH PARTITION public.outbox_deliveries_kept_next_attempt_at_id_idx;

--
-- Name: outbox_deliveries_kept_pkey; Type: INDEX ATTACH; Schema: public; Owner: -
--

ALTER INDEX public.outbox_deliveries_pkey ATTACH PARTITION public.outbox_deliveries_kept_pkey;

--
-- Name: outbox_deliveries_legacy_endpoint_id_idx; Type: INDEX ATTACH; Schema: public; Owner: -
--

ALTER INDEX public.outbox_deliveries_endpoint_open ATTACH PARTITION public.outbox_deliveries_legacy_endpoint_id_idx;

--
-- Name: outbox_deliveries_legacy_endpoint_id_idx1; Type: INDEX ATTACH; Schema: public; Owner: -
--

ALTER INDEX public.outbox_deliveries_endpoint_dead ATTACH PARTITION public.outbox_deliveries_legacy_endpoint_id_idx1;

--
-- Name: outbox_deliveries_legacy_event_id_endpoint_id_part_at_key; Type: INDEX ATTACH; Schema: public; Owner: -
--

ALTER INDEX public.outbox_deliveries_event_id_endpoint_id_key ATTACH PARTITION public.outbox_deliveries_legacy_event_id_endpoint_id_part_at_key;

--
-- Name: outbox_deliveries_legacy_pkey; Type: INDEX ATTACH; Schema: public; Owner: -
--

ALTER INDEX public.outbox_deliveries_pkey ATTACH PARTITION public.outbox_deliveries_legacy_pkey;

--
-- Name: outbox_events_far_aggregate_type_aggregate_id_idx1; Type: INDEX ATTACH; Schema: public; Owner: -
--

ALTER INDEX public.outbox_events_aggregate_unfanned ATTACH PARTITION public.outbox_events_far_aggregate_type_aggregate_id_idx1;

--
-- Name: outbox_events_far_created_at_id_idx1; Type: INDEX ATTACH; Schema: public; Owner: -
--

ALTER INDEX public.outbox_events_unfanned ATTACH PARTITION public.outbox_events_far_created_at_id_idx1;

--
-- Name: outbox_events_far_payload_expires_at_idx1; Type: INDEX ATTACH; Schema: public; Owner: -
--

ALTER INDEX public.outbox_events_payload_expiry ATTACH PARTITION public.outbox_events_far_payload_expires_at_idx1;

--
-- Name: outbox_events_far_pkey1; Type: INDEX ATTACH; Schema: public; Owner: -
--

ALTER INDEX public.outbox_events_pkey ATTACH PARTITION public.outbox_events_far_pkey1;

--
-- Name: outbox_events_far_tenant_id_created_at_id_idx1; Type: INDEX ATTACH; Schema: public; Owner: -
--

ALTER INDEX public.outbox_events_tenant ATTACH PARTITION public.outbox_events_far_tenant_id_created_at_id_idx1;

--
-- Name: outbox_events_kept_aggregate_type_aggregate_id_idx; Type: INDEX ATTACH; Schema: public; Owner: -
--

ALTER INDEX public.outbox_events_aggregate_unfanned ATTACH PARTITION public.outbox_events_kept_aggregate_type_aggregate_id_idx;

--
-- Name: outbox_events_kept_created_at_id_idx; Type: INDEX ATTACH; Schema: public; Owner: -
--

ALTER INDEX public.outbox_events_unfanned ATTACH PARTITION public.outbox_events_kept_created_at_id_idx;

--
-- Name: outbox_events_kept_payload_expires_at_idx; Type: INDEX ATTACH; Schema: public; Owner: -
--

ALTER INDEX public.outbox_events_payload_expiry ATTACH PARTITION public.outbox_events_kept_payload_expires_at_idx;

--
-- Name: outbox_events_kept_pkey; Type: INDEX ATTACH; Schema: public; Owner: -
--

ALTER INDEX public.outbox_events_pkey ATTACH PARTITION public.outbox_events_kept_pkey;

--
-- Name: outbox_events_kept_tenant_id_created_at_id_idx; Type: INDEX ATTACH; Schema: public; Owner: -
--

ALTER INDEX public.outbox_events_tenant ATTACH PARTITION public.outbox_events_kept_tenant_id_created_at_id_idx;

--
-- Name: outbox_events_legacy_aggregate_type_aggregate_id_idx; Type: INDEX ATTACH; Schema: public; Owner: -
--

ALTER INDEX public.outbox_events_aggregate_unfanned ATTACH PARTITION public.outbox_events_legacy_aggregate_type_aggregate_id_idx;

--
-- Name: outbox_events_legacy_payload_expires_at_idx; Type: INDEX ATTACH; Schema: public; Owner: -
--

ALTER INDEX public.outbox_events_payload_expiry ATTACH PARTITION public.outbox_events_legacy_payload_expires_at_idx;

--
-- Name: outbox_events_legacy_pkey; Type: INDEX ATTACH; Schema: public; Owner: -
--

ALTER INDEX public.outbox_events_pkey ATTACH PARTITION public.outbox_events_legacy_pkey;

--
-- Name: outbox_events_legacy_tenant_id_created_at_id_idx; Type: INDEX ATTACH; Schema: public; Owner: -
--

ALTER INDEX public.outbox_events_tenant ATTACH PARTITION public.outbox_events_legacy_tenant_id_created_at_id_idx;

--
-- Name: webhook_inbox_far_entity_type_entity_id_idx1; Type: INDEX ATTACH; Schema: public; Owner: -
--

ALTER INDEX public.webhook_inbox_deferred_entity ATTACH PARTITION public.webhook_inbox_far_entity_type_entity_id_idx1;

--
-- Name: webhook_inbox_far_next_attempt_at_id_idx1; Type: INDEX ATTACH; Schema: public; Owner: -
--

ALTER INDEX public.webhook_inbox_due ATTACH PARTITION public.webhook_inbox_far_next_attempt_at_id_idx1;

--
-- Name: webhook_inbox_far_pkey1; Type: INDEX ATTACH; Schema: public; Owner: -
--

ALTER INDEX public.webhook_inbox_pkey ATTACH PARTITION public.webhook_inbox_far_pkey1;

--
-- Name: webhook_inbox_kept_entity_type_entity_id_idx; Type: INDEX ATTACH; Schema: public; Owner: -
--

ALTER INDEX public.webhook_inbox_deferred_entity ATTACH PARTITION public.webhook_inbox_kept_entity_type_entity_id_idx;

--
-- Name: webhook_inbox_kept_next_attempt_at_id_idx; Type: INDEX ATTACH; Schema: public; Owner: -
--

ALTER INDEX public.webhook_inbox_due ATTACH PARTITION public.webhook_inbox_kept_next_attempt_at_id_idx;

--
-- Name: webhook_inbox_kept_pkey; Type: INDEX ATTACH; Schema: public; Owner: -
--

ALTER INDEX public.webhook_inbox_pkey ATTACH PARTITION public.webhook_inbox_kept_pkey;

--
-- Name: webhook_inbox_legacy_pkey; Type: INDEX ATTACH; Schema: public; Owner: -
--

ALTER INDEX public.webhook_inbox_pkey ATTACH PARTITION public.webhook_inbox_legacy_pkey;

--
-- Name: hookd_tenants hookd_tenants_cascade; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER hookd_tenants_cascade AFTER DELETE ON public.hookd_tenants REFERENCING OLD TABLE AS deleted_tenants FOR EACH STATEMENT EXECUTE FUNCTION public.hookd_tenants_deleted();

--
-- Name: hookd_tenants hookd_tenants_truncate_cascade; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER hookd_tenants_truncate_cascade AFTER TRUNCATE ON public.hookd_tenants FOR EACH STATEMENT EXECUTE FUNCTION public.hookd_tenants_truncated();

--
-- Name: outbox_deliveries outbox_deliveries_operational; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER outbox_deliveries_operational AFTER UPDATE ON public.outbox_deliveries REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION public.hookd_operational_deliveries();

--
-- Name: outbox_events outbox_events_cascade; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER outbox_events_cascade AFTER DELETE ON public.outbox_events REFERENCING OLD TABLE AS deleted_events FOR EACH STATEMENT EXECUTE FUNCTION public.hookd_events_deleted();

--
-- Name: outbox_events outbox_events_notify; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER outbox_events_notify AFTER INSERT ON public.outbox_events FOR EACH STATEMENT EXECUTE FUNCTION public.hookd_outbox_notify();

--
-- Name: outbox_events outbox_events_truncate_cascade; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER outbox_events_truncate_cascade AFTER TRUNCATE ON public.outbox_events FOR EACH STATEMENT EXECUTE FUNCTION public.hookd_events_truncated();

--
-- Name: webhook_endpoints webhook_endpoints_cascade; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER webhook_endpoints_cascade AFTER DELETE ON public.webhook_endpoints REFERENCING OLD TABLE AS deleted_endpoints FOR EACH STATEMENT EXECUTE FUNCTION public.hookd_endpoint_deleted();

--
-- Name: webhook_endpoints webhook_endpoints_disabled; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER webhook_endpoints_disabled AFTER UPDATE OF enabled ON public.webhook_endpoints FOR EACH ROW WHEN ((old.enabled AND (NOT new.enabled))) EXECUTE FUNCTION public.hookd_operational_endpoint();

--
-- Name: webhook_endpoints webhook_endpoints_enabled; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER webhook_endpoints_enabled BEFORE UPDATE OF enabled ON public.webhook_endpoints FOR EACH ROW WHEN (((NOT old.enabled) AND new.enabled)) EXECUTE FUNCTION public.hookd_endpoint_clear_failing_since();

--
-- Name: hookd_api_tokens hookd_api_tokens_tenant_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.hookd_api_tokens
    ADD CONSTRAINT hookd_api_tokens_tenant_id_fkey FOREIGN KEY (tenant_id) REFERENCES public.hookd_tenants(id) ON DELETE CASCADE;

--
-- Name: hookd_background_tasks hookd_background_tasks_tenant_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.hookd_background_tasks
    ADD CONSTRAINT hookd_background_tasks_tenant_id_fkey FOREIGN KEY (tenant_id) REFERENCES public.hookd_tenants(id) ON DELETE CASCADE;

--
-- Name: hookd_portal_links hookd_portal_links_tenant_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.hookd_portal_links
    ADD CONSTRAINT hookd_portal_links_tenant_id_fkey FOREIGN KEY (tenant_id) REFERENCES public.hookd_tenants(id) ON DELETE CASCADE;

--
-- Name: hookd_portal_sessions hookd_portal_sessions_tenant_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.hookd_portal_sessions
    ADD CONSTRAINT hookd_portal_sessions_tenant_id_fkey FOREIGN KEY (tenant_id) REFERENCES public.hookd_tenants(id) ON DELETE CASCADE;

--
-- Name: webhook_endpoints webhook_endpoints_tenant_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.webhook_endpoints
    ADD CONSTRAINT webhook_endpoints_tenant_id_fkey FOREIGN KEY (tenant_id) REFERENCES public.hookd_tenants(id) ON DELETE CASCADE;

--
-- PostgreSQL database dump complete
--
