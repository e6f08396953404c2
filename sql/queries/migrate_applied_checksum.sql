-- The checksum with which one migration was applied (no row: not applied).
-- parameters: $1 = version ("0001_inbox")
-- columns: checksum
SELECT checksum FROM schema_migrations WHERE version = $1
