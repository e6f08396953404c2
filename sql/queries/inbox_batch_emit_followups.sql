-- The follow-up outbox events of a batch's applied transitions (the
-- machines' `emit`), one statement for the whole batch, inserted in the order
-- given (receipt order), each carrying its inbox event's payload as data.
-- The same rows as inbox_emit_followup, which the robust pass still runs per
-- event (a failure there names its event).
-- Each id is looked up in its own partition and _kept only (part_at from the
-- id: sql/0018_ids_carry_partition.sql), never in every one.
-- parameters: $1 = jsonb array of {machine, entity_id, type, from (null when new), to, cause, id}
INSERT INTO outbox_events (aggregate_type, aggregate_id, event_type, payload)
 SELECT x.o->>'machine', x.o->>'entity_id', x.o->>'type', jsonb_build_object('type', x.o->>'type',
  'entity_type', x.o->>'machine', 'entity_id', x.o->>'entity_id', 'from', x.o->>'from', 'to', x.o->>'to',
  'cause', x.o->>'cause', 'inbox_id', x.o->>'id', 'data', w.payload)
 FROM jsonb_array_elements($1::jsonb) WITH ORDINALITY AS x(o, n)
 CROSS JOIN LATERAL (SELECT w.payload FROM webhook_inbox w WHERE w.id = (x.o->>'id')::uuid
  AND @in_part(w.part_at, (x.o->>'id')::uuid)
  OFFSET 0) w
 ORDER BY x.n
