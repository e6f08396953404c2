-- A batch's last step, in its transaction: how far the task got, what it
-- did so far, whether it is finished (or failed), and the lease renewed.
-- parameters: $1 = task id (uuid), $2 = cursor or NULL, $3 = data (jsonb), $4 = status,
--   $5 = lease (interval)
UPDATE hookd_background_tasks
   SET cursor = $2, data = $3::jsonb, status = $4, batches = batches + 1, updated_at = now(),
       lease_until = now() + $5::interval
 WHERE id = $1::uuid
