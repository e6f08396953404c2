-- Locks an application for a change of its endpoints, so that two changes
-- check its budget ([hookd] tenant_max_endpoints, tenant_max_filter_bytes)
-- one after the other, each seeing what the other stored. FOR NO KEY
-- UPDATE: message creation (FOR KEY SHARE) goes on meanwhile.
-- parameters: $1 = application id
-- columns: id
SELECT id FROM hookd_tenants WHERE id = $1 FOR NO KEY UPDATE
