-- Replaces the raw-bytes checksum an earlier hookd recorded for one migration
-- with the checksum of its SQL without comments (the same migration).
-- parameters: $1 = version ("0001_inbox"), $2 = checksum (hex), $3 = the raw-bytes checksum it replaces
UPDATE schema_migrations SET checksum = $2 WHERE version = $1 AND checksum = $3
