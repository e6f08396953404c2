-- A finished task's id (qtask_…) and the time: the statistics and the
-- OpenAPI export run in the request and answer a task that is already
-- finished (it is not stored, so background-task.get does not find it).
-- parameters: none
-- columns: id, at
SELECT hookd_api_id('qtask', hookd_uuid7()) AS id, hookd_api_ts(now()) AS at
