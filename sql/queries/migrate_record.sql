-- Records one applied migration in the ledger.
-- parameters: $1 = version ("0001_inbox"), $2 = SHA-256 of the file, hex
INSERT INTO schema_migrations (version, checksum) VALUES ($1, $2)
