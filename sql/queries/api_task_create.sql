-- Starts a background task for an application: the runners (task_runner.c)
-- claim it. The answer is Svix's RecoverOut / ReplayOut.
-- parameters: $1 = application id, $2 = kind (BackgroundTaskType), $3 = parameters (jsonb)
-- columns: body
INSERT INTO hookd_background_tasks (tenant_id, kind, parameters) VALUES ($1, $2, $3::jsonb)
RETURNING (hookd_api_task(hookd_background_tasks) - 'data')::text AS body
