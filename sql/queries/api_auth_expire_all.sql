-- Ends an application's tokens after a grace period (Svix's expire-all):
-- its portal links and sessions (only those of the given sessionIds when
-- there are some) and its tenant-scoped API tokens (none when sessionIds
-- are given: an API token has no session). A token that ends sooner keeps
-- its earlier end.
-- parameters: $1 = tenant id, $2 = grace period (seconds, 0: now),
--   $3 = sessionIds as a JSON array, or NULL for all
-- columns: links, sessions, tokens
WITH ids AS (
    SELECT jsonb_array_elements_text($3::jsonb) AS id
), links AS (
    UPDATE hookd_portal_links SET expires_at = least(expires_at, now() + $2::bigint * interval '1 second')
     WHERE tenant_id = $1 AND expires_at > now() AND used_at IS NULL
       AND ($3::jsonb IS NULL OR session_id IN (SELECT id FROM ids))
    RETURNING 1
), sessions AS (
    UPDATE hookd_portal_sessions SET expires_at = least(expires_at, now() + $2::bigint * interval '1 second')
     WHERE tenant_id = $1 AND expires_at > now()
       AND ($3::jsonb IS NULL OR session_id IN (SELECT id FROM ids))
    RETURNING 1
), tokens AS (
    UPDATE hookd_api_tokens
       SET expires_at = least(coalesce(expires_at, 'infinity'), now() + $2::bigint * interval '1 second')
     WHERE tenant_id = $1 AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > now())
       AND $3::jsonb IS NULL
    RETURNING 1
)
SELECT (SELECT count(*) FROM links) AS links, (SELECT count(*) FROM sessions) AS sessions,
       (SELECT count(*) FROM tokens) AS tokens
