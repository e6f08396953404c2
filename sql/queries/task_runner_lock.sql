-- A batch's first step: locks the task for the batch's transaction, if it
-- is still running and still this worker's (the lease may have expired and
-- another worker claimed it meanwhile: then no row, and this worker lets it
-- go).
-- parameters: $1 = task id (uuid), $2 = this worker's id
-- columns: tenant_id, kind, parameters, cursor, data
SELECT tenant_id, kind, parameters::text AS parameters, cursor, data::text AS data
  FROM hookd_background_tasks
 WHERE id = $1::uuid AND claimed_by = $2 AND status = 'running'
   FOR UPDATE
