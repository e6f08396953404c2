-- The number of open (not replayed) dead letters.
-- parameters: none
-- columns: entries
SELECT count(*) AS entries FROM dead_letters WHERE replayed_at IS NULL
