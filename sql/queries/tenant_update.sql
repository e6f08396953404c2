-- Changes a tenant (`hookd tenant update`): each NULL leaves its column as
-- it is. No row: no such tenant.
-- parameters: $1 = id, $2 = name or NULL, $3 = delivery settings (JSON object, merged into the
--   tenant's; a null removes one) or NULL
-- columns: id
UPDATE hookd_tenants
   SET name = coalesce($2, name),
       settings = CASE WHEN $3::jsonb IS NULL THEN settings ELSE jsonb_strip_nulls(settings || $3::jsonb) END,
       updated_at = now()
 WHERE id = $1
RETURNING id
