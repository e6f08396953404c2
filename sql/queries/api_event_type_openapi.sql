-- The live event types as an OpenAPI 3.1 document of webhooks (Svix's
-- export-openapi): per type a `post` operation with its description,
-- deprecation, group and feature flags (x-svix-*), and its latest schema
-- version as the JSON request body's schema (no request body without one).
-- parameters: none
-- columns: body
SELECT jsonb_build_object(
           'openapi', '3.1.0', 'info', jsonb_build_object('title', 'Webhooks', 'version', '1.0.0'),
           'webhooks', coalesce(jsonb_object_agg(t.name, jsonb_build_object('post',
               jsonb_build_object('operationId', t.name, 'description', t.description, 'deprecated', t.deprecated,
                   'responses', jsonb_build_object('2XX', jsonb_build_object('description',
                       'Return any 2XX status to indicate that the data was received successfully')))
               || CASE WHEN s.schema IS NULL THEN '{}'::jsonb
                       ELSE jsonb_build_object('requestBody', jsonb_build_object('content', jsonb_build_object(
                           'application/json', jsonb_build_object('schema', s.schema)))) END
               || CASE WHEN t.group_name IS NULL THEN '{}'::jsonb
                       ELSE jsonb_build_object('x-svix-group-name', t.group_name) END
               || CASE WHEN t.feature_flags IS NULL THEN '{}'::jsonb
                       ELSE jsonb_build_object('x-svix-feature-flags', to_jsonb(t.feature_flags)) END))
               FILTER (WHERE t.name IS NOT NULL), '{}'::jsonb)) AS body
  FROM hookd_event_types t
  LEFT JOIN LATERAL (SELECT v.value AS schema FROM jsonb_each(t.schemas) v
                      WHERE v.key ~ '^[0-9]{1,9}$' ORDER BY v.key::int DESC LIMIT 1) s ON true
 WHERE NOT t.archived
