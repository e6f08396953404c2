-- Svix's authentication operations on an application's tokens: expire-all
-- ends them (now or after a grace period), logout ends the token that asks.
-- An API token gets an expiry of its own beside revocation, so that a
-- grace period needs no timer; portal links and the sessions they open
-- carry the sessionId given to app-portal-access, so that expire-all can
-- end one user's sessions only.
-- Locks: each ADD COLUMN is nullable without a default, so it changes the
-- catalog only (a brief ACCESS EXCLUSIVE lock on three small tables, no
-- rewrite).
ALTER TABLE hookd_api_tokens ADD COLUMN expires_at timestamptz;
ALTER TABLE hookd_portal_links ADD COLUMN session_id text;
ALTER TABLE hookd_portal_sessions ADD COLUMN session_id text;
