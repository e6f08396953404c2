-- Serialises concurrent `hookd migrate` runs until the end of the transaction;
-- the key is arbitrary and constant ("hookd" as a lock id).
-- parameters: none
-- columns: locked
SELECT pg_advisory_xact_lock(7270316111) AS locked
