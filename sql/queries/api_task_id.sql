-- A background task's id (qtask_…) and the time it finished: the API's
-- recover and replay-missing do their work in the request, so the task they
-- answer is finished when the answer comes.
-- parameters: none
-- columns: id, at
SELECT hookd_api_id('qtask', hookd_uuid7()) AS id, hookd_api_ts(now()) AS at
