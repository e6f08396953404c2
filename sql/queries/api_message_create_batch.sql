-- A batch of messages (engine/roles/api_message.c): outbox events of their
-- tenants, each eventId claimed per tenant first. A message whose eventId
-- exists already (or comes twice in the batch: the first one wins) is not
-- stored and comes back without a row: 409. eventIds are claimed in key
-- order, so that two batches sharing them lock them in the same order.
-- channels and tags as in api_message_create. The ids are time-ordered
-- UUIDs made by the caller; the answer is hookd_api_message's without its
-- `id`, which the caller adds (engine/base/api_id.h: hookd_api_id costs
-- about 70 µs a row in SQL, hookd_uuid7 12 µs).
-- parameters: $1 = application ids (text[]), $2 = event types (text[]), $3 = payloads (jsonb[]),
--   $4 = eventIds (text[], NULL elements for none), $5 = channels (jsonb[]: arrays or NULL),
--   $6 = tags (jsonb[]: arrays or NULL), $7 = deliverAt (text[]: timestamps or NULL), $8 = ids (uuid[])
-- columns: i, body
WITH x AS (SELECT u.*
             FROM unnest($1::text[], $2::text[], $3::jsonb[], $4::text[], $5::jsonb[], $6::jsonb[], $7::text[],
                         $8::uuid[]) WITH ORDINALITY AS u(a, t, p, e, c, g, d, id, i)),
 claim AS (INSERT INTO hookd_message_ids (tenant_id, event_id, message_id)
           SELECT a, e, id FROM x WHERE e IS NOT NULL ORDER BY a, e, i
           ON CONFLICT DO NOTHING RETURNING message_id),
 ins AS (INSERT INTO outbox_events (id, aggregate_type, aggregate_id, event_type, payload, tenant_id, api_event_id,
                                    channels, tags, deliver_at, part_at)
         SELECT id, 'message', NULL, t, p, a, e,
                (SELECT array_agg(DISTINCT v ORDER BY v) FROM jsonb_array_elements_text(c) v),
                (SELECT array_agg(DISTINCT v ORDER BY v) FROM jsonb_array_elements_text(g) v),
                d::timestamptz,
                coalesce(hookd_id_part(id), date_trunc('milliseconds', now())) -- the id's clock (sql/0018)
           FROM x WHERE e IS NULL OR id IN (SELECT message_id FROM claim) ORDER BY i
         RETURNING id, jsonb_build_object('eventId', api_event_id, 'eventType', event_type, 'payload', payload,
                       'channels', to_jsonb(channels), 'tags', to_jsonb(tags),
                       'deliverAt', hookd_api_ts(deliver_at), 'timestamp', hookd_api_ts(created_at))::text AS body)
SELECT (x.i - 1)::integer AS i, ins.body FROM ins JOIN x ON x.id = ins.id
