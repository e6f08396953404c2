-- Of the given event-type filters, those that name no event type of the
-- catalog (a glob with '*' must match at least one).
-- parameters: $1 = filters (JSON array of strings)
-- columns: name
SELECT f AS name FROM jsonb_array_elements_text($1::jsonb) f
 WHERE NOT EXISTS (SELECT 1 FROM hookd_event_types t WHERE NOT t.archived
                    AND (t.name = f OR (strpos(f, '*') > 0 AND t.name LIKE replace(replace(replace(f, '\', '\\'),
                         '_', '\_'), '*', '%'))))
