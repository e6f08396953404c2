-- A tenant by id or uid (the id wins over a uid that looks the same).
-- parameters: $1 = id or uid
-- columns: id
SELECT id FROM hookd_tenants WHERE id = $1 OR uid = $1 ORDER BY (id = $1) DESC LIMIT 1
