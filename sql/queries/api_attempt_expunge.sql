-- Expunge an attempt's response: what the endpoint answered (and the error
-- text) becomes 'EXPUNGED', as Svix's server writes it.
-- parameters: $1 = message id (uuid), $2 = attempt id (atmpt_…)
-- columns: id
UPDATE attempts a SET response_excerpt = 'EXPUNGED', error = NULL
  FROM outbox_deliveries d
 WHERE d.event_id = $1::uuid AND (d.part_at IN (hookd_id_part($1::uuid), '-infinity') OR d.part_at >= hookd_id_any($1::uuid))
   AND a.source = 'delivery' AND a.source_id = d.id AND (a.part_at = '-infinity' OR a.part_at >= hookd_id_since(d.id))
   AND a.id = hookd_api_num('atmpt', $2)
RETURNING a.id::text AS id
