-- Delivery settings for tenants and endpoints: a JSON object of named
-- settings (engine/core/settings.h lists them and their values, such as
-- signature_headers). A delivery resolves each setting from its endpoint's
-- object, else its tenant's, else the [hookd] config section; an absent key
-- falls through. The API shows an endpoint's own object as `settings`.
--
-- What this migration locks: hookd_tenants and webhook_endpoints, briefly,
-- ACCESS EXCLUSIVE for each ADD COLUMN (a constant default: no rewrite),
-- and the catalog rows of the two functions it replaces (the API shapes of
-- an endpoint and an application, which gain `settings`).

ALTER TABLE hookd_tenants ADD COLUMN settings jsonb NOT NULL DEFAULT '{}'
    CONSTRAINT hookd_tenants_settings_object CHECK (jsonb_typeof(settings) = 'object');
ALTER TABLE webhook_endpoints ADD COLUMN settings jsonb NOT NULL DEFAULT '{}'
    CONSTRAINT webhook_endpoints_settings_object CHECK (jsonb_typeof(settings) = 'object');

CREATE OR REPLACE FUNCTION hookd_api_endpoint(e webhook_endpoints) RETURNS jsonb
    LANGUAGE sql STABLE AS $$
    SELECT jsonb_build_object('id', hookd_api_id('ep', e.id), 'uid', e.uid, 'url', e.url,
        'description', e.description, 'version', 1, 'disabled', NOT e.enabled,
        'eventTypes', CASE WHEN e.event_types = ARRAY['*'] THEN NULL ELSE to_jsonb(e.event_types) END,
        'filterTypes', CASE WHEN e.event_types = ARRAY['*'] THEN NULL ELSE to_jsonb(e.event_types) END,
        'channels', to_jsonb(e.channels), 'throttleRate', e.rate_limit, 'rateLimit', e.rate_limit,
        'metadata', e.metadata, 'payloadFilter', e.payload_filter, 'ordered', e.ordered,
        'settings', e.settings,
        'createdAt', hookd_api_ts(e.created_at), 'updatedAt', hookd_api_ts(e.updated_at)) $$;

CREATE OR REPLACE FUNCTION hookd_api_app(t hookd_tenants) RETURNS jsonb
    LANGUAGE sql STABLE AS $$
    SELECT jsonb_build_object('id', t.id, 'uid', t.uid, 'name', t.name, 'throttleRate', t.rate_limit,
        'rateLimit', t.rate_limit, 'metadata', t.metadata, 'settings', t.settings,
        'createdAt', hookd_api_ts(t.created_at), 'updatedAt', hookd_api_ts(t.updated_at)) $$;
