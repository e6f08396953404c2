-- Hands inbox events to the outbox for their routes, in the transaction that
-- evaluates them: marks each event routed (routed_at) and inserts one outbox
-- event per (event, route) the caller matched, in the order given, only for
-- the events this statement marked, so that an evaluation that runs again
-- emits nothing twice. An outbox event carries the partner's payload, the
-- partner's name as aggregate type and the entity id (else the partner's
-- event id) as aggregate id, so that ordered endpoints keep each entity's
-- order; a route's tenant uid must name a tenant (hookd_route_tenant).
-- One result row per outbox event written: its inbox event's id.
-- Each id is looked up in its own partition and _kept only (part_at from the
-- id: hookd_id_keys, sql/0018_ids_carry_partition.sql), never in every one.
-- parameters: $1 = the events to mark routed (uuid[], binary),
--   $2 = jsonb array of {id, route, type, tenant (null: none)}
-- columns: id
WITH marked AS (UPDATE webhook_inbox w SET routed_at = now() FROM hookd_id_keys($1::uuid[]) k
  WHERE w.id = k.id AND @in_part_of(w.part_at, k.part_at, k.any_at) AND w.routed_at IS NULL
  RETURNING w.id, w.partner_name, w.partner_event_id, w.entity_id, w.payload),
 emitted AS (INSERT INTO outbox_events (aggregate_type, aggregate_id, event_type, payload, tenant_id)
  SELECT m.partner_name, coalesce(m.entity_id, m.partner_event_id), x.o->>'type', m.payload,
   hookd_route_tenant(x.o->>'route', x.o->>'tenant')
  FROM jsonb_array_elements($2::jsonb) WITH ORDINALITY AS x(o, n)
  JOIN marked m ON m.id = (x.o->>'id')::uuid
  ORDER BY x.n
  RETURNING 1)
SELECT m.id::text AS id FROM jsonb_array_elements($2::jsonb) AS x(o) JOIN marked m ON m.id = (x.o->>'id')::uuid
