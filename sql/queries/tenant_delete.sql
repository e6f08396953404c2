-- Deletes a tenant; its endpoints, tokens and eventIds go with it.
-- parameters: $1 = id
-- columns: id
DELETE FROM hookd_tenants WHERE id = $1 RETURNING id
