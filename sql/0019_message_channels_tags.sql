-- Svix's message fields channels, tags and deliverAt:
--
-- channels   (messages and endpoints) An endpoint with channels receives
--            only the messages carrying at least one of them; an endpoint
--            without channels receives every message its event types let
--            through; a message without channels goes only to endpoints
--            without channels (svix-webhooks' filtered_endpoints). Matched
--            at fan-out (engine/core/endpoint_match.c).
-- tags       (messages) stored and returned; the message list filters by
--            one (`tag`).
-- deliverAt  (messages) no attempt before that time: the fan-out writes the
--            deliveries PENDING, due then, and schedules them in the
--            delivery due zset for then (no inline first attempt).
--
-- Columns only (no table rewrite); the API's JSON shapes are redefined to
-- carry them. No index: `tag` and `channel` filter a tenant's messages as
-- the list walks them (outbox_events_tenant).
ALTER TABLE outbox_events ADD COLUMN channels   text[],
                          ADD COLUMN tags       text[],
                          ADD COLUMN deliver_at timestamptz;
ALTER TABLE webhook_endpoints ADD COLUMN channels text[];

CREATE OR REPLACE FUNCTION hookd_api_message(m outbox_events, with_content boolean) RETURNS jsonb
    LANGUAGE sql STABLE AS $$
    SELECT jsonb_build_object('id', hookd_api_id('msg', m.id), 'eventId', m.api_event_id,
        'eventType', m.event_type, 'payload', CASE WHEN with_content THEN m.payload ELSE '{}'::jsonb END,
        'channels', to_jsonb(m.channels), 'tags', to_jsonb(m.tags), 'deliverAt', hookd_api_ts(m.deliver_at),
        'timestamp', hookd_api_ts(m.created_at)) $$;

CREATE OR REPLACE FUNCTION hookd_api_endpoint(e webhook_endpoints) RETURNS jsonb LANGUAGE sql STABLE AS $$
    SELECT jsonb_build_object('id', hookd_api_id('ep', e.id), 'uid', e.uid, 'url', e.url,
        'description', e.description, 'version', 1, 'disabled', NOT e.enabled,
        'eventTypes', CASE WHEN e.event_types = ARRAY['*'] THEN NULL ELSE to_jsonb(e.event_types) END,
        'filterTypes', CASE WHEN e.event_types = ARRAY['*'] THEN NULL ELSE to_jsonb(e.event_types) END,
        'channels', to_jsonb(e.channels), 'throttleRate', e.rate_limit, 'rateLimit', e.rate_limit,
        'metadata', e.metadata, 'payloadFilter', e.payload_filter, 'ordered', e.ordered,
        'createdAt', hookd_api_ts(e.created_at), 'updatedAt', hookd_api_ts(e.updated_at)) $$;
