-- Whether the outbox trigger NOTIFYs (sql/0008): off while a relay polls
-- fast, on again when it goes idle; written only when it changes.
-- parameters: $1 = listening (boolean)
UPDATE hookd_relay_state SET listening = $1, changed_at = now()
 WHERE id = 1 AND listening IS DISTINCT FROM $1::boolean
