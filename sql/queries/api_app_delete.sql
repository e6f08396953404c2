-- Deletes an application; its endpoints, tokens and eventIds go with it
-- (foreign keys), its messages stay in the outbox.
-- parameters: $1 = id
-- columns: id
DELETE FROM hookd_tenants WHERE id = $1 RETURNING id
