-- Ends a portal session (sign out).
-- parameters: $1 = session token digest (hex)
DELETE FROM hookd_portal_sessions WHERE token_sha256 = $1
