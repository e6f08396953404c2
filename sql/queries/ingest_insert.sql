-- A batch of received webhooks into the inbox, one statement for every
-- batch size: the rows go as arrays in binary form (db_array), so Postgres
-- neither parses and plans a VALUES list per batch nor parses the arrays
-- element by element. The keys go into hookd_dedup first, in the same
-- statement: its unique indexes, (partner_name, partner_event_id) and
-- (partner_name, content_digest) (sql/0011_inbox_content_digest.sql), make a
-- row a duplicate for as long as [retention] dedup keeps the key, and a
-- duplicate is stored nowhere (ON CONFLICT has no target so that either key
-- counts). webhook_inbox itself is partitioned by time and has no key that
-- could span its partitions (sql/0012_retention.sql).
-- parameters: $1 = partners, $2 = partner event ids (text[]), $3 = payloads (jsonb[]),
--   $4 = event types, $5 = entity types, $6 = entity ids (text[]), $7 = kept headers (jsonb[]),
--   $8 = content digests (text[], hex; NULL for partners whose signature covers the id, type and a timestamp),
--   $9 = the rows' ids (uuid[]): made by the worker, so that an insert retried after a lost connection knows
--   which of the rows it finds are its own; version 7 on the worker's clock, which is the row's part_at
--   (sql/0018_ids_carry_partition.sql: an id's clock is its row's part_at)
-- columns: id, partner_name, partner_event_id, due_ms
WITH x AS (SELECT id, p, e, pl, t, et, ei, h, decode(d, 'hex') AS dg
  FROM unnest($1::text[], $2::text[], $3::jsonb[], $4::text[], $5::text[], $6::text[], $7::jsonb[],
   $8::text[], $9::uuid[]) AS x(p, e, pl, t, et, ei, h, d, id)),
 k AS (INSERT INTO hookd_dedup (partner_name, partner_event_id, content_digest, inbox_id)
  SELECT p, e, dg, id FROM x ON CONFLICT DO NOTHING RETURNING inbox_id)
INSERT INTO webhook_inbox (id, partner_name, partner_event_id, payload, signature_verified, event_type,
 entity_type, entity_id, headers, content_digest, part_at)
 SELECT x.id, p, e, pl, true, t, et, ei, h, dg, coalesce(hookd_id_part(x.id), date_trunc('milliseconds', now()))
 FROM x JOIN k ON k.inbox_id = x.id
 RETURNING id::text AS id, partner_name, partner_event_id,
 (extract(epoch FROM next_attempt_at) * 1000)::bigint AS due_ms
