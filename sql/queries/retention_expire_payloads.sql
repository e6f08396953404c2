-- Clears a batch of message payloads whose retention ran out
-- (payloadRetentionPeriod/-Hours, or an expunge: sql/0020): the payload
-- becomes JSON null (its raw text, sql/0030, NULL) and the row leaves the partial index
-- outbox_events_payload_expiry, which holds only the payloads still to
-- clear, so a pass reads only those. Reads answer {"expired": true} from
-- the expiry time on, before and after this (hookd_payload_expired).
-- parameters: $1 = batch size
-- columns: cleared
WITH c AS (UPDATE outbox_events m SET payload = 'null'::jsonb, payload_raw = NULL
            WHERE (m.id, m.part_at) IN (SELECT e.id, e.part_at FROM outbox_events e
                                         WHERE e.payload_expires_at <= now() AND e.payload <> 'null'::jsonb
                                         ORDER BY e.payload_expires_at LIMIT $1::int)
           RETURNING 1)
SELECT count(*) AS cleared FROM c
