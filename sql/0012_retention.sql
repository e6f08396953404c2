-- Retention: time-partitioned tables that hookd expires whole, and a dedup
-- table that keeps partners' event ids for the [retention] dedup window.
--
-- Layout. webhook_inbox, outbox_events, outbox_deliveries and attempts
-- become tables PARTITIONED BY RANGE (part_at), a new column that is now()
-- when a row is written. Each has:
--   <table>_kept    [MINVALUE, 1970-01-02): rows kept past their partition's
--                   expiry because they are not terminal (PENDING, DEFERRED,
--                   RETRYING, an open dead letter, an undelivered event): the
--                   retention pass moves them here (part_at = -infinity)
--                   before it drops their partition, and deletes them from
--                   here once they are terminal and older than the window;
--   <table>_legacy  [1970-01-02, T0): the rows that existed when this
--                   migration ran (T0), converted in place; dropped whole
--                   when T0 + window has passed;
--   <table>_pYYYYMMDD_HHMMSS  time partitions of a quarter of the window
--                   each, created ahead by the retention pass;
--   <table>_far     [last bound, MAXVALUE): empty while passes run, so that
--                   nothing is ever refused for want of a partition.
-- Expiring = moving a partition's few survivors to _kept, DETACH PARTITION
-- CONCURRENTLY, DROP TABLE (engine/core/retention.c). Unique indexes of a
-- partitioned table must contain the partition key: the primary keys become
-- (id, part_at) (attempts: (source, source_id, id, part_at)), and
-- UNIQUE(partner_name, partner_event_id) moves to hookd_dedup, where it
-- stays the mechanism (ingest inserts the key and the row in one statement).
--
-- What this migration locks: it runs in one
-- transaction and holds ACCESS EXCLUSIVE on webhook_inbox, outbox_events,
-- outbox_deliveries and attempts from its first statement to its commit
-- (from the first, so that no inbox row committed during the copy of the
-- keys is missing from hookd_dedup, and no worker's lock can deadlock with
-- the conversion): ingest, workers and hookd_emit wait meanwhile. Its time is the
-- key copy, the new primary-key indexes built on the existing rows and the
-- scans that validate the _legacy partitions: it grows linearly with the
-- rows (`make bench-scale` with SCALE_ONLY=migrate times it for a given
-- size). Stop the workers (or accept that they wait) for that long.

LOCK TABLE webhook_inbox, outbox_events, outbox_deliveries, attempts IN ACCESS EXCLUSIVE MODE;

-- ---- dedup -------------------------------------------------------------

CREATE TABLE hookd_dedup (
    partner_name     varchar(50)  NOT NULL,
    partner_event_id varchar(100) NOT NULL,
    content_digest   bytea,                              -- see 0011
    inbox_id         uuid         NOT NULL,              -- the row it was stored as
    received_at      timestamptz  NOT NULL DEFAULT now()
) WITH (fillfactor = 100, autovacuum_vacuum_scale_factor = 0.02, autovacuum_vacuum_insert_scale_factor = 0.05,
        autovacuum_analyze_scale_factor = 0.02);

INSERT INTO hookd_dedup (partner_name, partner_event_id, content_digest, inbox_id, received_at)
    SELECT partner_name, partner_event_id, content_digest, id, received_at FROM webhook_inbox;

ALTER TABLE hookd_dedup ADD PRIMARY KEY (partner_name, partner_event_id);
CREATE UNIQUE INDEX hookd_dedup_digest ON hookd_dedup (partner_name, content_digest)
    WHERE content_digest IS NOT NULL;
CREATE INDEX hookd_dedup_received ON hookd_dedup (received_at);

-- ---- helpers -----------------------------------------------------------

-- The partitions of a hookd table with their bounds (-infinity / infinity for
-- MINVALUE / MAXVALUE), read from the catalog.
CREATE FUNCTION hookd_partitions(p_parent regclass)
RETURNS TABLE (part regclass, lo timestamptz, hi timestamptz, detach_pending boolean)
LANGUAGE sql STABLE AS $$
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

-- Storage parameters of a new partition (README "Retention").
CREATE FUNCTION hookd_partition_options(p_table text) RETURNS text LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE p_table
        WHEN 'attempts' THEN 'fillfactor = 100, autovacuum_vacuum_insert_scale_factor = 0.05,'
                             ' autovacuum_analyze_scale_factor = 0.05'
        ELSE 'fillfactor = 90, autovacuum_vacuum_scale_factor = 0.02, autovacuum_vacuum_threshold = 1000,'
             ' autovacuum_vacuum_insert_scale_factor = 0.05, autovacuum_analyze_scale_factor = 0.02'
    END
$$;

-- Creates and attaches the partition [lo, hi) of parent. Created apart and
-- attached (SHARE UPDATE EXCLUSIVE on the parent: inserts and updates go on),
-- not with CREATE TABLE ... PARTITION OF (ACCESS EXCLUSIVE).
CREATE FUNCTION hookd_partition_create(p_parent regclass, p_name text, p_lo timestamptz, p_hi timestamptz)
RETURNS void LANGUAGE plpgsql AS $$
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

CREATE FUNCTION hookd_partition_name(p_parent regclass, p_lo timestamptz) RETURNS text LANGUAGE sql STABLE AS $$
    SELECT (SELECT relname FROM pg_class WHERE oid = p_parent)
           || to_char(p_lo AT TIME ZONE 'UTC', '"_p"YYYYMMDD"_"HH24MISS')
$$;

-- Turns an existing table into the _legacy partition of a new partitioned
-- table of the same name (columns, defaults, checks, triggers and grants
-- copied from it, so columns added by any earlier migration come along).
-- p_indexes: statements creating the parent's keys and indexes, %T for it.
CREATE FUNCTION hookd_partition_adopt(p_table text, p_t0 timestamptz, p_indexes text[]) RETURNS void
LANGUAGE plpgsql AS $$
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

-- ---- the conversion ----------------------------------------------------

-- The inbox's unique keys are hookd_dedup's now.
ALTER TABLE webhook_inbox DROP CONSTRAINT IF EXISTS webhook_inbox_partner_name_partner_event_id_key;
DROP INDEX IF EXISTS webhook_inbox_content_digest;

SELECT hookd_partition_adopt('webhook_inbox', now(), ARRAY[
    'ALTER TABLE %T ADD CONSTRAINT webhook_inbox_pkey PRIMARY KEY (id, part_at)',
    'CREATE INDEX webhook_inbox_due ON %T (next_attempt_at, id)'
        ' WHERE status IN (''PENDING'', ''DEFERRED'', ''RETRYING'')',
    'CREATE INDEX webhook_inbox_deferred_entity ON %T (entity_type, entity_id) WHERE status = ''DEFERRED''']);

SELECT hookd_partition_adopt('outbox_events', now(), ARRAY[
    'ALTER TABLE %T ADD CONSTRAINT outbox_events_pkey PRIMARY KEY (id, part_at)',
    'CREATE INDEX outbox_events_unfanned ON %T (created_at, id) WHERE fanned_out_at IS NULL']);

SELECT hookd_partition_adopt('outbox_deliveries', now(), ARRAY[
    'ALTER TABLE %T ADD CONSTRAINT outbox_deliveries_pkey PRIMARY KEY (id, part_at)',
    'ALTER TABLE %T ADD CONSTRAINT outbox_deliveries_event_id_endpoint_id_key UNIQUE (event_id, endpoint_id, part_at)',
    'CREATE INDEX outbox_deliveries_due ON %T (next_attempt_at, id) WHERE status IN (''PENDING'', ''RETRYING'')',
    'CREATE INDEX outbox_deliveries_event_open ON %T (event_id) WHERE status IN (''PENDING'', ''RETRYING'')']);

SELECT hookd_partition_adopt('attempts', now(), ARRAY[
    'ALTER TABLE %T ADD CONSTRAINT attempts_pkey PRIMARY KEY (source, source_id, id, part_at)']);

-- ---- the retention pass's statements (engine/core/retention.c) ---------
-- They run as the tables' owner (DDL): the role that ran `hookd migrate`.

-- The rows of one partition (or detached partition) p_part of p_table that
-- expiry must not take, as (id, part_at): not terminal, or an open dead
-- letter's. Each branch starts from a small set (a partial index of open
-- rows, or the open dead letters), never from a scan of the partition.
CREATE FUNCTION hookd_retention_survivors_sql(p_table text, p_part text) RETURNS text
LANGUAGE sql IMMUTABLE AS $$
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
$$;

-- For rows kept past expiry (in _kept): still alive? (a boolean on alias t)
-- and when did the row last change? (its age counts from then).
CREATE FUNCTION hookd_retention_live_sql(p_table text) RETURNS text LANGUAGE sql IMMUTABLE AS $$
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

CREATE FUNCTION hookd_retention_age_sql(p_table text) RETURNS text LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE p_table
    WHEN 'webhook_inbox' THEN 'greatest(t.received_at, t.processed_at, t.replayed_at)'
    WHEN 'outbox_events' THEN 'greatest(t.created_at, t.processed_at)'
    WHEN 'outbox_deliveries' THEN 'greatest(t.created_at, t.delivered_at, t.replayed_at)'
    WHEN 'attempts' THEN 't.attempted_at'
    END
$$;

-- What a pass does to p_parent, in order: finish an interrupted DETACH
-- CONCURRENTLY ('finalize'), drop a partition detached by a pass that died
-- before dropping it ('drop'), expire partitions whose upper bound is older
-- than the window ('expire'). rows_estimate from the last ANALYZE.
CREATE FUNCTION hookd_retention_plan(p_parent regclass, p_window interval)
RETURNS TABLE (action text, part text, lo timestamptz, hi timestamptz, rows_estimate bigint)
LANGUAGE sql STABLE AS $$
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
$$;

-- Moves the survivors of an expiring partition to _kept (part_at =
-- -infinity), skipping rows another transaction holds; returns how many
-- survivors are left in it (the caller drops it only at 0).
CREATE FUNCTION hookd_retention_move(p_parent regclass, p_part regclass) RETURNS bigint
LANGUAGE plpgsql AS $$
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

-- Drops a partition that DETACH PARTITION CONCURRENTLY took out of
-- p_parent. Nothing writes to it any more; a survivor found in it now (none
-- is expected: hookd_retention_move ran and found none) goes back into
-- _kept first. Returns how many were put back.
CREATE FUNCTION hookd_retention_drop(p_parent regclass, p_part regclass) RETURNS bigint
LANGUAGE plpgsql AS $$
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

-- Deletes up to p_limit rows of _kept that are terminal and older than the
-- window (few: _kept holds only what outlived its partition).
CREATE FUNCTION hookd_retention_prune_kept(p_parent regclass, p_window interval, p_limit integer) RETURNS bigint
LANGUAGE plpgsql AS $$
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
$$;

-- Deletes up to p_limit expired dedup keys ('dedup') or replayed dead
-- letters ('dead_letters'): narrow rows, pruned in small batches (a unique
-- index cannot span partitions, and the dead-letter queue is small).
CREATE FUNCTION hookd_retention_prune(p_what text, p_window interval, p_limit integer) RETURNS bigint
LANGUAGE plpgsql AS $$
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

-- Partitions of p_width from p_from until p_target is covered, then _far.
CREATE FUNCTION hookd_retention_fill(p_parent regclass, p_from timestamptz, p_width interval,
                                     p_target timestamptz) RETURNS void LANGUAGE plpgsql AS $$
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

-- Do p_parent's partitions reach p_ahead widths (at least 10 s) ahead? NULL
-- when they do (or when this call made them: see below); otherwise the name
-- of the empty _far partition, which starts more than 5 s from now: the
-- caller detaches it CONCURRENTLY (no insert can want it meanwhile) and
-- hands it to hookd_retention_extend. Done here, in this transaction, with
-- ACCESS EXCLUSIVE on p_parent (after waiting at most lock_timeout, 1 s) for
-- as long as validating the current partition's rows takes:
--  * when _far holds rows or begins within 5 s (no pass ran for the whole
--    horizon ahead; the first pass after `hookd migrate`), it becomes an
--    ordinary partition up to a width past now;
--  * when the partition being written (up to 256 MB), or one ahead, is more
--    than twice as wide as p_width (a window was shortened: a reload), the
--    current one is cut back to a width past its newest row and the empty
--    ones ahead are dropped and made again at the new width.
CREATE FUNCTION hookd_retention_ahead(p_parent regclass, p_width interval, p_ahead integer) RETURNS text
LANGUAGE plpgsql SET lock_timeout = '1s' AS $$
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

-- hookd_retention_ahead's second case: the empty partitions after the one
-- holding now are dropped and made again at p_width, and the one holding
-- now is cut back to a width past its newest row when it is small enough
-- (256 MB) to validate within the lock; a bigger one keeps its bound, so its
-- rows go at most one old width later than the new window says. Gives up
-- (nothing changed) if a partition ahead holds rows (a clock jump); the next
-- pass tries again.
CREATE FUNCTION hookd_retention_reshape(p_parent regclass, p_width interval, p_target timestamptz) RETURNS text
LANGUAGE plpgsql AS $$
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

-- After the caller detached the empty _far (p_far) CONCURRENTLY: drops it
-- and creates the partitions ahead and a new _far. Should a row have landed
-- in it meanwhile (a part_at in the future: a clock jump), it is attached
-- again as it was.
CREATE FUNCTION hookd_retention_extend(p_parent regclass, p_far regclass, p_width interval, p_ahead integer)
RETURNS void LANGUAGE plpgsql AS $$
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

-- Storage per table for `hookd status`, /metrics and /admin: bytes (table,
-- indexes, TOAST), rows (the planner's estimate), the oldest row, and when
-- the next rows expire (NULL: nothing to expire). Windows in ms, as
-- [retention] gives them. The oldest row of a partitioned table is its
-- oldest kept row or the lower bound of its oldest non-empty time
-- partition (for _legacy: the oldest of a 1% sample).
CREATE FUNCTION hookd_storage(p_inbox bigint, p_outbox bigint, p_attempts bigint, p_dead_letters bigint,
                              p_dedup bigint)
RETURNS TABLE (tbl text, bytes bigint, rows_estimate bigint, oldest timestamptz, next_expiry timestamptz)
LANGUAGE plpgsql STABLE AS $$
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
$$;

-- For `hookd retention run --dry-run`.
CREATE FUNCTION hookd_retention_survivors_count(p_parent regclass, p_part regclass) RETURNS bigint
LANGUAGE plpgsql STABLE AS $$
DECLARE
    n bigint;
BEGIN
    EXECUTE format('SELECT count(*) FROM (%s) s',
                   hookd_retention_survivors_sql((SELECT relname FROM pg_class WHERE oid = p_parent), p_part::text))
        INTO n;
    RETURN n;
END
$$;

CREATE FUNCTION hookd_retention_prunable(p_what text, p_window interval) RETURNS bigint
LANGUAGE plpgsql STABLE AS $$
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
$$;
