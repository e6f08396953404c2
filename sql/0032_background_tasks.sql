-- Background tasks: the work an API operation starts and a worker does
-- afterwards (Svix's QueueBackgroundTask). The operation inserts a row and
-- answers 202 with its id; a worker claims it (claimed_by, lease_until),
-- works through it in bounded batches and, in each batch's transaction,
-- stores how far it got (cursor) and what it did so far (data). A worker
-- killed mid-task leaves its lease to expire; the next one resumes from the
-- cursor, so a committed batch is never done twice.
--
-- kind and status take Svix's BackgroundTaskType and BackgroundTaskStatus
-- values; data is the task's BackgroundTaskOut.data. A task belongs to one
-- application (tenant) and goes with it.
--
-- What this migration locks: nothing that exists (a new table).
CREATE TABLE hookd_background_tasks (
    id uuid PRIMARY KEY DEFAULT hookd_uuid7(),
    tenant_id text NOT NULL REFERENCES hookd_tenants (id) ON DELETE CASCADE,
    kind text NOT NULL CHECK (kind IN ('endpoint.replay', 'endpoint.recover', 'application.stats',
                                       'message.broadcast', 'sdk.generate', 'event-type.aggregate',
                                       'application.purge_content', 'endpoint.bulk-replay')),
    status text NOT NULL DEFAULT 'running' CHECK (status IN ('running', 'finished', 'failed')),
    parameters jsonb NOT NULL DEFAULT '{}',
    cursor text,
    batches integer NOT NULL DEFAULT 0,
    data jsonb NOT NULL DEFAULT '{}',
    claimed_by text,
    lease_until timestamptz,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now()
);

-- The API's lists: one tenant's tasks in id (creation) order.
CREATE INDEX hookd_background_tasks_tenant ON hookd_background_tasks (tenant_id, id);
-- The runners' claims: the tasks still running.
CREATE INDEX hookd_background_tasks_running ON hookd_background_tasks (id) WHERE status = 'running';

-- A task as the API shows it (Svix's BackgroundTaskOut).
CREATE FUNCTION hookd_api_task(t hookd_background_tasks) RETURNS jsonb
    LANGUAGE sql STABLE AS $$
    SELECT jsonb_build_object('id', hookd_api_id('qtask', t.id), 'status', t.status, 'task', t.kind,
        'data', t.data, 'updatedAt', hookd_api_ts(t.updated_at)) $$;
