-- The status of the batch's events inbox_batch_lock_rows could not lock.
-- parameters: $1 = the batch's ids (uuid[], binary)
-- columns: id, status
SELECT id::text AS id, status FROM webhook_inbox WHERE id = ANY($1::uuid[])
