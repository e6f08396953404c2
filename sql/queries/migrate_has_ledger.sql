-- Whether the migration ledger exists (a database never migrated has none).
-- parameters: none
-- columns: present
SELECT to_regclass('schema_migrations') IS NOT NULL AS present
