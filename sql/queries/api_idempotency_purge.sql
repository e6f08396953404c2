-- Forgets idempotency records older than 24 hours (a few at a time, from
-- the API's own timer).
-- parameters: none
DELETE FROM hookd_idempotency_keys WHERE ctid = ANY (ARRAY(
  SELECT ctid FROM hookd_idempotency_keys WHERE created_at < now() - interval '24 hours' LIMIT 1000))
