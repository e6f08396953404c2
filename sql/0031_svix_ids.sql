-- Ids in Svix's shape: a prefix and 27 base62 digits.
--
-- Svix's ids (its published API's `pattern`: `^msg_[A-Za-z0-9]{27}$`, and
-- likewise app_, ep_, atmpt_, qtask_) are KSUIDs: a 20-byte number, 4 bytes
-- of seconds since the KSUID epoch (1400000000, 2014-05-13T16:53:20Z) and
-- 16 more, written in 27 base62 digits, zero-padded on the left. hookd's
-- ids take the same shape with the row's own key as the 16 bytes, so that an
-- id still maps back to its row without a lookup table:
--   - a UUID row (endpoint, message, task): the seconds are the clock of a
--     version 7 UUID (every row hookd makes), 0 for another version (its
--     bits tell no time): the id is a function of the UUID alone, whichever
--     statement writes it, and ids sort by creation time as text;
--   - an attempt (a bigserial key): the seconds of its attempted_at, then
--     8 bytes of the MD5 of its key, then the key in 8 bytes: successive
--     attempts' ids do not read as a counter (they differ from the eighth
--     digit on), still sort by the second, and a mistyped one names no
--     attempt (hookd_api_num checks the 8 bytes).
-- The C side (engine/base/api_id.c) computes the same ids for the hot paths.
--
-- Ids of the former shape (22 digits of the UUID; `atmpt_` and 11 digits of
-- the key) are still read everywhere an id is: hookd_api_uuid and
-- hookd_api_num accept both. Applications keep the id stored in their row
-- (hookd_tenants.id is the key other rows refer to): those made before keep
-- their 22-digit id, new ones get 27 digits.
--
-- A tenant's message is delivered with its API id as webhook-id, on which
-- receivers dedupe; a message that exists before this migration keeps the
-- former id there (outbox_events.legacy_webhook_id, true for the rows that
-- exist now, false for the rows written after): its retries and replays
-- carry the webhook-id its first attempts carried.
--
-- What this migration locks: outbox_events (and its partitions) briefly in
-- ACCESS EXCLUSIVE to add a column with a constant default, which writes
-- no row; the functions' catalog rows.

-- A UUID's 128 bits as a number.
CREATE FUNCTION hookd_api_uuid_number(p_id uuid) RETURNS numeric
    LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
DECLARE
    h constant text := replace(p_id::text, '-', '');
    n numeric := 0;
BEGIN
    FOR i IN 0..3 LOOP
        n := n * 4294967296 + ('x' || substr(h, 8 * i + 1, 8))::bit(32)::bigint;
    END LOOP;
    RETURN n;
END $$;

-- The former id: 22 digits of the UUID alone.
CREATE FUNCTION hookd_api_legacy_id(p_prefix text, p_id uuid) RETURNS text LANGUAGE sql IMMUTABLE STRICT AS $$
    SELECT p_prefix || '_' || hookd_b62(hookd_api_uuid_number(p_id), 22) $$;

-- The seconds since the KSUID epoch an id of this UUID carries.
CREATE FUNCTION hookd_api_id_seconds(p_id uuid) RETURNS bigint LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    SELECT CASE WHEN substr(p_id::text, 15, 1) = '7'
                THEN least(greatest(('x' || lpad(left(replace(p_id::text, '-', ''), 12), 16, '0'))::bit(64)::bigint
                                    / 1000 - 1400000000, 0), 4294967295)
                ELSE 0 END $$;

-- The seconds since the KSUID epoch of a time.
CREATE FUNCTION hookd_api_ts_seconds(p_at timestamptz) RETURNS bigint LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    SELECT least(greatest(floor(extract(epoch FROM p_at))::bigint - 1400000000, 0), 4294967295) $$;

CREATE OR REPLACE FUNCTION hookd_api_id(p_prefix text, p_id uuid) RETURNS text
    LANGUAGE sql IMMUTABLE STRICT AS $$
    SELECT p_prefix || '_' || hookd_b62(hookd_api_id_seconds(p_id) * 340282366920938463463374607431768211456
                                        + hookd_api_uuid_number(p_id), 27) $$;

-- The number an id's digits write (below 2^160), when it has the prefix
-- and only base62 digits; NULL otherwise. Its width is the caller's to check.
CREATE FUNCTION hookd_api_number(p_prefix text, p_text text) RETURNS numeric
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    SELECT n FROM (SELECT hookd_b62_num(substr(p_text, length(p_prefix) + 2)) AS n) d
     WHERE left(p_text, length(p_prefix) + 1) = p_prefix || '_'
       AND n < 1461501637330902918203684832716283019655932542976 $$;

-- The id's UUID, either shape; NULL for anything that is not one (a
-- 27-digit id whose seconds are not its UUID's was not made by hookd).
CREATE OR REPLACE FUNCTION hookd_api_uuid(p_prefix text, p_text text) RETURNS uuid
    LANGUAGE plpgsql IMMUTABLE STRICT AS $$
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

-- The 8 bytes of an attempt id before its key: the first 8 bytes of the MD5
-- of the key's decimal text, as a number.
CREATE FUNCTION hookd_api_num_check(p_n bigint) RETURNS numeric LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    SELECT ('x' || substr(md5(p_n::text), 1, 8))::bit(32)::bigint::numeric * 4294967296
           + ('x' || substr(md5(p_n::text), 9, 8))::bit(32)::bigint $$;

-- The id of a row keyed by a bigint (an attempt), made at p_at.
CREATE FUNCTION hookd_api_num_id(p_prefix text, p_n bigint, p_at timestamptz) RETURNS text
    LANGUAGE sql IMMUTABLE STRICT AS $$
    SELECT p_prefix || '_' || hookd_b62(hookd_api_ts_seconds(p_at) * 340282366920938463463374607431768211456
                                        + hookd_api_num_check(p_n) * 18446744073709551616 + p_n, 27) $$;

-- The key such an id names, either shape; NULL for anything that is not one.
CREATE OR REPLACE FUNCTION hookd_api_num(p_prefix text, p_text text) RETURNS bigint
    LANGUAGE plpgsql IMMUTABLE STRICT AS $$
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

-- The messages that exist now keep their former webhook-id; later ones are
-- sent with their id's current shape.
ALTER TABLE outbox_events ADD COLUMN legacy_webhook_id boolean NOT NULL DEFAULT true;
ALTER TABLE outbox_events ALTER COLUMN legacy_webhook_id SET DEFAULT false;

-- The webhook-id of a tenant's message: its API id, in the shape its first
-- deliveries carried.
CREATE FUNCTION hookd_webhook_id(e outbox_events) RETURNS text LANGUAGE sql STABLE AS $$
    SELECT CASE WHEN e.tenant_id IS NULL THEN e.id::text
                WHEN e.legacy_webhook_id THEN hookd_api_legacy_id('msg', e.id)
                ELSE hookd_api_id('msg', e.id) END $$;
