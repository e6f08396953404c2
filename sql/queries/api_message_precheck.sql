-- Whether an enabled endpoint of the application would be sent a message
-- of this event type and channels (Svix's message precheck): one of its
-- event-type globs ('*' any run of characters, as config_glob_match)
-- matches the type, and it has no channels or shares one with the message
-- (a message without channels goes only to endpoints without any). Payload
-- filters are not consulted: the precheck has no payload. Reads the
-- application's endpoints through webhook_endpoints_tenant.
-- parameters: $1 = application id, $2 = event type, $3 = channels (JSON array of strings) or NULL
-- columns: active
SELECT EXISTS (
  SELECT 1 FROM webhook_endpoints e
   WHERE e.tenant_id = $1 AND e.enabled
     AND EXISTS (SELECT 1 FROM unnest(e.event_types) g
                  WHERE $2::text LIKE replace(replace(replace(replace(g, '\', '\\'), '%', '\%'), '_', '\_'), '*', '%'))
     AND (e.channels IS NULL
          OR e.channels && ARRAY(SELECT jsonb_array_elements_text(coalesce($3::jsonb, '[]'::jsonb)))))
  AS active
