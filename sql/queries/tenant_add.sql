-- A new tenant (`hookd tenant add UID`).
-- parameters: $1 = uid, $2 = name
-- columns: id
INSERT INTO hookd_tenants (id, uid, name) VALUES (hookd_api_id('app', hookd_uuid7()), $1, $2) RETURNING id
