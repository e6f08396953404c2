-- An inbox row by its key, after an insert retried on a new connection
-- (the first attempt's commit may have landed): the key's hookd_dedup entry
-- names the row; it is the request's own only if it has the id the request
-- gave it (ingest.c, make_ids).
-- Each id is looked up in its own partition and _kept only (part_at from the
-- id: hookd_id_part, sql/0018_ids_carry_partition.sql), never in every one.
-- parameters: $1 = partner, $2 = partner event id
-- columns: id, due_ms
SELECT i.id::text AS id, (extract(epoch FROM i.next_attempt_at) * 1000)::bigint AS due_ms
 FROM hookd_dedup k JOIN webhook_inbox i ON i.id = k.inbox_id
 AND @in_part(i.part_at, k.inbox_id)
 WHERE k.partner_name = $1 AND k.partner_event_id = $2
