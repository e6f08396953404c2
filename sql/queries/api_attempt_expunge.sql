-- Expunge an attempt's response: what the endpoint answered (and the error
-- text) becomes 'EXPUNGED', as Svix's server writes it.
-- parameters: $1 = message id (uuid), $2 = attempt id (atmpt_…)
-- columns: id
UPDATE attempts a SET response_excerpt = 'EXPUNGED', error = NULL
  FROM outbox_deliveries d
 WHERE d.event_id = $1::uuid AND @in_part(d.part_at, $1::uuid)
   AND a.source = 'delivery' AND a.source_id = d.id AND @since_id(a.part_at, d.id)
   AND a.id = hookd_api_num('atmpt', $2)
RETURNING a.id::text AS id
