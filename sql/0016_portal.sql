-- The tenants' portal: single-use login links and the sessions
-- they open. Only SHA-256 digests of the link and session tokens are kept,
-- so a copy of the database opens no portal. A tenant's links and sessions
-- go with the tenant.
CREATE TABLE hookd_portal_links (
    token_sha256 text        PRIMARY KEY,          -- hex
    tenant_id    text        NOT NULL REFERENCES hookd_tenants (id) ON DELETE CASCADE,
    created_at   timestamptz NOT NULL DEFAULT now(),
    expires_at   timestamptz NOT NULL,             -- [portal] link_ttl after creation
    used_at      timestamptz,                      -- set when opened: a link opens once
    session_ttl_ms bigint    NOT NULL CHECK (session_ttl_ms > 0)
);
CREATE INDEX hookd_portal_links_expires ON hookd_portal_links (expires_at);

CREATE TABLE hookd_portal_sessions (
    token_sha256 text        PRIMARY KEY,          -- hex of the cookie's token
    tenant_id    text        NOT NULL REFERENCES hookd_tenants (id) ON DELETE CASCADE,
    created_at   timestamptz NOT NULL DEFAULT now(),
    expires_at   timestamptz NOT NULL
);
CREATE INDEX hookd_portal_sessions_expires ON hookd_portal_sessions (expires_at);
