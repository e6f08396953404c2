-- Releases the pass's advisory lock (retention_lock.sql).
-- parameters: none
-- columns: unlocked
SELECT pg_advisory_unlock(hashtext('hookd.retention')) AS unlocked
