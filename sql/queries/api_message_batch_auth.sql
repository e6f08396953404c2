-- A batch of message creations (engine/roles/api_message.c), step 1: each
-- request's live API token (by its SHA-256) with the token's tenant ('' for
-- a token that sees every tenant), whether its last use is older than a
-- minute (then api_token_touch records this one), and the application the
-- request's path names (by id or uid, the id winning) within that token's
-- scope. One row per request, in the order given.
-- parameters: $1 = the tokens' SHA-256 digests, hex (text[]), $2 = the paths' application ids or uids (text[])
-- columns: token_id, tenant_id, stale, app_id
SELECT t.id::text AS token_id, coalesce(t.tenant_id, '') AS tenant_id,
       (t.last_used_at IS NULL OR t.last_used_at < now() - interval '1 minute') AS stale,
       (SELECT a.id FROM hookd_tenants a WHERE (a.id = u.app OR a.uid = u.app)
           AND (t.tenant_id IS NULL OR a.id = t.tenant_id)
         ORDER BY (a.id = u.app) DESC LIMIT 1) AS app_id
  FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS u(sha, app, i)
  LEFT JOIN hookd_api_tokens t ON t.token_sha256 = u.sha AND t.revoked_at IS NULL
 ORDER BY u.i
