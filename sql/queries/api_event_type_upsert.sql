-- Creates an event type from the API's normalised fields (a JSON object:
-- description, archived, deprecated, schemas, group_name, feature_flags),
-- or, when $3 is true and it exists, changes the fields present.
-- parameters: $1 = name, $2 = the fields (jsonb), $3 = update an existing one (boolean)
-- columns: body, created
WITH c AS (SELECT $2::jsonb AS c)
INSERT INTO hookd_event_types AS t (name, description, archived, deprecated, schemas, group_name, feature_flags)
SELECT $1, coalesce(c->>'description', ''), coalesce((c->>'archived')::boolean, false),
       coalesce((c->>'deprecated')::boolean, false), nullif(c->'schemas', 'null'), c->>'group_name',
       (SELECT array_agg(x) FROM jsonb_array_elements_text(nullif(c->'feature_flags', 'null')) x)
  FROM c
ON CONFLICT (name) DO UPDATE SET
   description = CASE WHEN $2::jsonb ? 'description' THEN EXCLUDED.description ELSE t.description END,
   archived = CASE WHEN $2::jsonb ? 'archived' THEN EXCLUDED.archived ELSE t.archived END,
   deprecated = CASE WHEN $2::jsonb ? 'deprecated' THEN EXCLUDED.deprecated ELSE t.deprecated END,
   schemas = CASE WHEN $2::jsonb ? 'schemas' THEN EXCLUDED.schemas ELSE t.schemas END,
   group_name = CASE WHEN $2::jsonb ? 'group_name' THEN EXCLUDED.group_name ELSE t.group_name END,
   feature_flags = CASE WHEN $2::jsonb ? 'feature_flags' THEN EXCLUDED.feature_flags ELSE t.feature_flags END,
   updated_at = now()
 WHERE $3::boolean
RETURNING hookd_api_event_type(t)::text AS body, (xmax = 0) AS created
