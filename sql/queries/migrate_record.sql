-- Records one applied migration in the ledger.
-- parameters: $1 = version ("0001_inbox"), $2 = checksum of its SQL without comments (hex)
INSERT INTO schema_migrations (version, checksum) VALUES ($1, $2)
