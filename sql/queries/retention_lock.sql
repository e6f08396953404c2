-- One retention pass at a time, whichever worker or `hookd retention run`
-- starts it: a session-level advisory lock on the pass's own connection.
-- parameters: none
-- columns: locked
SELECT pg_try_advisory_lock(hashtext('hookd.retention')) AS locked
