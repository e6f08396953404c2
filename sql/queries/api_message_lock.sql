-- Locks a message's outbox event before its expunge (api_content.c), in the
-- request's transaction: a relay pass that claimed the event is waited for,
-- so that the expunge's statement, which runs after this one and takes its
-- own snapshot, sees (and closes) the deliveries that pass wrote; and no
-- pass claims it meanwhile (SKIP LOCKED).
-- parameters: $1 = message id (uuid)
-- columns: locked
SELECT 1 AS locked FROM outbox_events WHERE id = $1::uuid
 AND @in_part(part_at, $1::uuid) FOR UPDATE
