-- The server's clock as the statement runs (clock_timestamp(), not the
-- transaction's start), in microseconds since the epoch: each worker
-- measures its clock's offset from Postgres's with it (clock_sync.c).
-- parameters: none
-- columns: now_us
SELECT (extract(epoch FROM clock_timestamp()) * 1000000)::bigint AS now_us
