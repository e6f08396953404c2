-- Every API token (never the token itself): name, tenant, prefix, state.
-- parameters: none
-- columns: name, tenant, prefix, created_at, last_used_at, state
SELECT k.name, coalesce(t.uid, t.id, '*') AS tenant, k.prefix, hookd_api_ts(k.created_at) AS created_at,
       coalesce(hookd_api_ts(k.last_used_at), '') AS last_used_at,
       CASE WHEN k.revoked_at IS NOT NULL THEN 'revoked'
            WHEN k.expires_at <= now() THEN 'expired' ELSE 'active' END AS state
  FROM hookd_api_tokens k LEFT JOIN hookd_tenants t ON t.id = k.tenant_id ORDER BY k.name
