-- One background task (Svix's BackgroundTaskOut), within the token's scope.
-- parameters: $1 = the token's tenant id or '', $2 = task id (qtask_…)
-- columns: body
SELECT hookd_api_task(t)::text AS body FROM hookd_background_tasks t
 WHERE t.id = hookd_api_uuid('qtask', $2) AND ($1 = '' OR t.tenant_id = $1)
