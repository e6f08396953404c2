-- One index on attempts instead of two. Every inbox verdict and every
-- delivery attempt wrote an entry into both the bigserial primary key and
-- attempts_source (source, source_id, id), yet every reader asks for one
-- event's or delivery's history in order (`hookd dlq show`, /admin), which
-- the second serves alone. The primary key becomes that index: still unique
-- (id is), and one B-tree insertion less per attempt (and its WAL).
-- Rebuilding takes an ACCESS EXCLUSIVE lock on
-- attempts for as long as indexing the existing rows takes.
ALTER TABLE attempts DROP CONSTRAINT attempts_pkey;
DROP INDEX attempts_source;
ALTER TABLE attempts ADD CONSTRAINT attempts_pkey PRIMARY KEY (source, source_id, id);
