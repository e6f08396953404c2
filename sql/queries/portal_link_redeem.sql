-- Opens a login link once: marks it used and creates the session (the new
-- cookie token's digest, with the link's sessionId) in one statement; no row when the link is unknown,
-- used or expired.
-- parameters: $1 = link token digest (hex), $2 = session token digest (hex)
-- columns: tenant_id, max_age_s
WITH l AS (
    UPDATE hookd_portal_links SET used_at = now()
     WHERE token_sha256 = $1 AND used_at IS NULL AND expires_at > now()
    RETURNING tenant_id, session_ttl_ms, session_id
)
INSERT INTO hookd_portal_sessions (token_sha256, tenant_id, expires_at, session_id)
SELECT $2, l.tenant_id, now() + l.session_ttl_ms * interval '1 millisecond', l.session_id FROM l
RETURNING tenant_id, (extract(epoch FROM expires_at - now()))::bigint::text AS max_age_s
