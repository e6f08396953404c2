-- Claims the oldest running background task that no worker holds (never
-- claimed, or its lease expired: its worker died or stalled) for this
-- worker until the lease's end. A task whose row another worker has locked
-- (a batch in progress) is skipped.
-- parameters: $1 = this worker's id, $2 = lease (interval, e.g. '30 seconds')
-- columns: id
UPDATE hookd_background_tasks t SET claimed_by = $1, lease_until = now() + $2::interval
 WHERE t.id = (SELECT id FROM hookd_background_tasks
                WHERE status = 'running' AND (lease_until IS NULL OR lease_until < now())
                ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED)
RETURNING t.id::text AS id
