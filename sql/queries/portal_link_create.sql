-- A new portal login link for a tenant (the token's digest), valid for
-- link_ttl; the session it opens lives session_ttl. Purges links and
-- sessions that expired more than a day ago on the way.
-- parameters: $1 = token digest (hex), $2 = tenant id, $3 = link ttl (ms), $4 = session ttl (ms),
--   $5 = the API's sessionId (expire-all may name it), or NULL
-- columns: expires_at
WITH purge_links AS (
    DELETE FROM hookd_portal_links WHERE expires_at < now() - interval '1 day'
), purge_sessions AS (
    DELETE FROM hookd_portal_sessions WHERE expires_at < now() - interval '1 day'
)
INSERT INTO hookd_portal_links (token_sha256, tenant_id, expires_at, session_ttl_ms, session_id)
VALUES ($1, $2, now() + $3::bigint * interval '1 millisecond', $4::bigint, $5)
RETURNING to_char(expires_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') AS expires_at
