-- Ids that carry their partition: a statement that finds rows by
-- id alone cannot prune the time partitions of sql/0012_retention.sql and
-- probes every partition's primary key, deeper the more history there is.
--
-- From this migration on, the ids of webhook_inbox, outbox_events and
-- outbox_deliveries are version 7 UUIDs (RFC 9562) whose millisecond clock
-- IS the row's part_at: part_at defaults to now() cut to the millisecond,
-- the id to hookd_uuid7(), which takes the same now() (the transaction's
-- start: one clock for both defaults). A delivery keeps its event's part_at
-- and takes its event's clock in its id (relay_settle.sql,
-- api_attempt_resend.sql, and the relay, engine/outbound/relay.c, for the ids
-- it makes). So for every row,
--     part_at = hookd_id_part(id)    or   part_at = '-infinity' (in _kept)
-- whenever hookd_id_part(id) is not NULL, and a statement that looks a row up
-- by id adds
--     (part_at IN (hookd_id_part(id), '-infinity') OR part_at >= hookd_id_any(id))
-- which Postgres prunes to the id's partition and _kept, at plan time for a
-- constant id and at run time for an id from a parameter or an outer row
-- (batch statements: hookd_id_keys below).
--
-- hookd_id_part is NULL for an id that does not tell: not version 7, or
-- older than this migration (rows of 0012's layout: random ids, or version 7
-- ids of the API and the relay whose clock was not the row's part_at).
-- hookd_id_any is then -infinity and the condition is true in every
-- partition: such rows are found without pruning until they
-- expire. The cut-off (this migration's time) is written into hookd_id_part,
-- which stays IMMUTABLE, so that the planner folds it for constants.
--
-- Upgrading: stop (or upgrade) every hookd worker before `hookd migrate`:
-- a worker of an earlier version would write deliveries whose ids do not
-- carry their part_at, which a new worker would not find.
--
-- What this migration locks: ALTER TABLE ... SET DEFAULT on the three
-- partitioned tables and their partitions, catalog changes only (no row is
-- read or rewritten): ACCESS EXCLUSIVE for milliseconds per table, the same
-- whatever the number of rows, once the transactions using the tables have
-- finished.

-- A version 7 UUID for the instant p_at (now() for -infinity: a row kept
-- past expiry has no instant of its own), 74 random bits.
CREATE FUNCTION hookd_uuid7_at(p_at timestamptz) RETURNS uuid LANGUAGE sql VOLATILE AS $$
    SELECT encode(substring(int8send(floor(extract(epoch FROM CASE WHEN isfinite(p_at) THEN p_at ELSE now() END)
                                           * 1000)::bigint) FROM 3)
                  || set_byte(substring(r FROM 7), 0, (get_byte(r, 6) & 15) | 112), 'hex')::uuid
      FROM uuid_send(gen_random_uuid()) AS r $$;

-- 0013's hookd_uuid7() read clock_timestamp(): now() makes an API message's
-- id and its default part_at the same millisecond.
CREATE OR REPLACE FUNCTION hookd_uuid7() RETURNS uuid LANGUAGE sql VOLATILE AS $$
    SELECT hookd_uuid7_at(now()) $$;

-- The part_at of a row with id p_id (when not in _kept), NULL when the id
-- does not tell. One expression, so that the planner inlines it.
DO $do$
BEGIN
    EXECUTE format($f$
CREATE FUNCTION hookd_id_part(p_id uuid) RETURNS timestamptz LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $b$
    SELECT CASE WHEN substr(p_id::text, 15, 1) = '7'
                 AND ('x' || translate(left(p_id::text, 13), '-', ''))::bit(48)::bigint >= %s
           THEN to_timestamp(('x' || translate(left(p_id::text, 13), '-', ''))::bit(48)::bigint / 1000.0) END $b$
$f$, floor(extract(epoch FROM now()) * 1000)::bigint);
END
$do$;

-- -infinity when p_id does not tell its part_at (every partition may hold
-- it), NULL otherwise (the condition's second arm then selects nothing).
CREATE FUNCTION hookd_id_any(p_id uuid) RETURNS timestamptz LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN hookd_id_part(p_id) IS NULL THEN '-infinity'::timestamptz END $$;

-- A batch's distinct ids with what they tell (hookd_id_part) and the
-- second arm's bound (hookd_id_any), each computed once per id: a batch
-- statement joins its table to these rows, so that the per-row pruning
-- compares plain values (evaluating the id's text form again for every
-- partition step cost about 45 us a row). Usage, per row k:
--     part_at IN (k.part_at, '-infinity') OR part_at >= k.any_at
CREATE FUNCTION hookd_id_keys(p_ids uuid[]) RETURNS TABLE (id uuid, part_at timestamptz, any_at timestamptz)
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT x.i, x.p, CASE WHEN x.p IS NULL THEN '-infinity'::timestamptz END
      FROM (SELECT DISTINCT i, hookd_id_part(i) AS p FROM unnest(p_ids) AS i) x $$;

ALTER TABLE webhook_inbox ALTER COLUMN part_at SET DEFAULT date_trunc('milliseconds', now()),
    ALTER COLUMN id SET DEFAULT hookd_uuid7();
ALTER TABLE outbox_events ALTER COLUMN part_at SET DEFAULT date_trunc('milliseconds', now()),
    ALTER COLUMN id SET DEFAULT hookd_uuid7();
ALTER TABLE outbox_deliveries ALTER COLUMN part_at SET DEFAULT date_trunc('milliseconds', now()),
    ALTER COLUMN id SET DEFAULT hookd_uuid7();

-- The storage figures read every partition directly (their sizes, whether
-- they hold rows, _kept's oldest row), which a role granted the partitioned
-- tables only (sql/roles/least_privilege.sql's hookd_worker) may not: the
-- function runs as its owner, for the roles granted it (the worker role by
-- sql/roles/least_privilege.sql; the owner always).
DO $do$
BEGIN
    EXECUTE format('ALTER FUNCTION hookd_storage(bigint, bigint, bigint, bigint, bigint) SECURITY DEFINER'
                   ' SET search_path = %I, pg_temp', current_schema());
END
$do$;
REVOKE EXECUTE ON FUNCTION hookd_storage(bigint, bigint, bigint, bigint, bigint) FROM PUBLIC;
