-- The tenant of a live portal session (by the cookie token's digest).
-- parameters: $1 = session token digest (hex)
-- columns: tenant_id, uid, name
SELECT t.id AS tenant_id, coalesce(t.uid, '') AS uid, t.name
  FROM hookd_portal_sessions s JOIN hookd_tenants t ON t.id = s.tenant_id
 WHERE s.token_sha256 = $1 AND s.expires_at > now()
