-- Svix's EnvironmentOut: every event type (archived ones too) as the API
-- shows it, by name; hookd has no environment settings or connectors.
-- parameters: none
-- columns: body
SELECT jsonb_build_object('version', 1, 'createdAt', hookd_api_ts(now()),
           'eventTypes', coalesce((SELECT jsonb_agg(hookd_api_event_type(t) ORDER BY t.name)
                                     FROM hookd_event_types t), '[]'::jsonb),
           'settings', '{}'::jsonb, 'connectors', '[]'::jsonb)::text AS body
