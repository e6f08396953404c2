-- A login link that can still be opened (unused, not expired), read without
-- using it: its GET shows a page whose button (a POST) opens it, so a mail
-- or chat scanner that fetches the link uses nothing.
-- parameters: $1 = link token digest (hex)
-- columns: tenant_name
SELECT t.name AS tenant_name
  FROM hookd_portal_links l JOIN hookd_tenants t ON t.id = l.tenant_id
 WHERE l.token_sha256 = $1 AND l.used_at IS NULL AND l.expires_at > now()
