-- A batch of message creations (engine/api/api_message.c) in one
-- statement, committed on its own (one round trip, one WAL flush, as
-- ingest's insert). Per request, in the order given:
--   - its live API token (by SHA-256): token_id NULL is 401; the token's
--     tenant ('' for a token that sees every tenant); whether its last use
--     is older than a minute (then api_token_touch records this one);
--   - the path's application (hookd_tenant_id, sql/0027: by id, then by
--     uid) within that token's scope (app_id NULL: 404, or the caller
--     creates it);
--   - its idempotency record: the scope is the token's tenant ('*') and the
--     request's method and path (api_idem_scope); the same scope and key a
--     second time in the batch is a follower (nth > 1), answered by the
--     caller as the first; a key recorded before answers its recorded
--     answer (old_found, old_status, old_body);
--   - the message, when the request is valid ($5: the caller checked its
--     body), authenticated, new and its application known: its eventId is
--     claimed per application first (a repeat, stored before or earlier in
--     the batch, is not stored: body NULL, 409); then the outbox event, and
--     its answer (hookd_api_message's fields; the `msg_` id, $14, and the
--     time-ordered UUID, $13, made by the caller) recorded under its key;
--     its payload's text is kept as sent (payload_raw, sql/0030).
-- A key that another transaction recorded after this statement's snapshot
-- (a concurrent retry) aborts the statement (the keys' insert waits for that
-- transaction, then finds the key taken: unique violation), and the caller
-- runs the requests one by one (the exact path).
-- The batch's applications are locked FOR KEY SHARE once (sql/0025: the
-- eventId claims' foreign key, which locked the application per message, is
-- replaced by this lock and a delete trigger): a delete of one waits for
-- this statement, or, committed first, leaves it unknown here (404).
-- Postgres's CPU per message stays low: every CTE read more than once is
-- materialized once; the answers are built from the rows inserted, not
-- joined back to the insert's RETURNING; the timestamp is formatted once.
-- parameters: $1 = token SHA-256 digests, hex (text[]), $2 = the paths' application ids or uids (text[]),
--   $3 = the requests' method and path, for their idempotency scope (text[], NULL without a key),
--   $4 = idempotency keys (text[], NULL for none), $5 = the body passed the checks (boolean[]),
--   $6 = with_content (boolean[]), $7 = event types (text[]), $8 = payloads (text[]: JSON text, stored as sent),
--   $9 = eventIds (text[], NULL for none), $10 = channels (jsonb[]: arrays or NULL),
--   $11 = tags (jsonb[]: arrays or NULL), $12 = deliverAt (text[]: timestamps or NULL), $13 = ids (uuid[]),
--   $14 = the ids' `msg_` forms (text[]), $15 = payload retention in hours (integer[], NULL: as long as the row)
-- columns: token_id, tenant_id, stale, app_id, scope, nth, old_found, old_status, old_body, body
WITH x AS (SELECT u.*
             FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::boolean[], $6::boolean[], $7::text[],
                         $8::text[], $9::text[], $10::jsonb[], $11::jsonb[], $12::text[], $13::uuid[], $14::text[],
                         $15::integer[])
                  WITH ORDINALITY AS u(sha, app, ps, k, ok, wc, t, p, e, c, g, d, id, api_id, px, i)),
 ap AS MATERIALIZED (SELECT r.ref, t.id FROM (SELECT DISTINCT ref FROM unnest($2::text[]) AS u(ref)) r
                       JOIN hookd_tenants t ON t.id = hookd_tenant_id(r.ref) FOR KEY SHARE OF t),
 a AS (SELECT x.*, tk.id::text AS token_id, coalesce(tk.tenant_id, '') AS tenant_id,
              (tk.last_used_at IS NULL OR tk.last_used_at < now() - interval '1 minute') AS stale,
              (SELECT ap.id FROM ap WHERE ap.ref = x.app AND (tk.tenant_id IS NULL OR ap.id = tk.tenant_id))
                AS app_id,
              CASE WHEN x.k IS NOT NULL AND tk.id IS NOT NULL THEN coalesce(tk.tenant_id, '*') || ' ' || x.ps END
                AS scope
         FROM x LEFT JOIN hookd_api_tokens tk ON tk.token_sha256 = x.sha AND tk.revoked_at IS NULL),
 f AS (SELECT a.*, CASE WHEN a.scope IS NULL THEN 1 ELSE row_number() OVER (PARTITION BY a.scope, a.k ORDER BY a.i)
                   END AS nth
         FROM a),
 old AS (SELECT f.i, h.status, h.body FROM f JOIN hookd_idempotency_keys h ON h.scope = f.scope AND h.key = f.k
          WHERE f.nth = 1),
 go AS (SELECT f.*,
               CASE WHEN f.c IS NOT NULL THEN
                 (SELECT array_agg(DISTINCT v ORDER BY v) FROM jsonb_array_elements_text(f.c) v) END AS ch,
               CASE WHEN f.g IS NOT NULL THEN
                 (SELECT array_agg(DISTINCT v ORDER BY v) FROM jsonb_array_elements_text(f.g) v) END AS tg,
               f.d::timestamptz AS dl, f.p::jsonb AS pj
          FROM f
         WHERE f.token_id IS NOT NULL AND f.nth = 1 AND f.ok AND f.app_id IS NOT NULL
           AND NOT EXISTS (SELECT 1 FROM old WHERE old.i = f.i)),
 claim AS (INSERT INTO hookd_message_ids (tenant_id, event_id, message_id)
           SELECT app_id, e, id FROM go WHERE e IS NOT NULL ORDER BY app_id, e, i
           ON CONFLICT DO NOTHING RETURNING message_id),
 w AS (SELECT go.* FROM go WHERE e IS NULL OR id IN (SELECT message_id FROM claim)),
 ins AS (INSERT INTO outbox_events (id, aggregate_type, aggregate_id, event_type, payload, payload_raw, tenant_id,
                                    api_event_id, channels, tags, deliver_at, payload_expires_at, part_at)
         SELECT id, 'message', NULL, t, pj, p, app_id, e, ch, tg, dl,
                CASE WHEN px IS NOT NULL THEN now() + px * interval '1 hour' END,
                coalesce(hookd_id_part(id), date_trunc('milliseconds', now())) -- the id's clock (sql/0018)
           FROM w),
 -- created_at: now(), the same for every row; hookd_api_ts's format
 -- written out (a call of the SQL function costs a plan of its body per
 -- statement)
 ts AS MATERIALIZED (SELECT to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS v),
 ans AS (SELECT w.i, w.scope, w.k,
                jsonb_build_object('id', w.api_id, 'eventId', w.e, 'eventType', w.t,
                    'payload', CASE WHEN w.wc THEN w.pj ELSE '{}'::jsonb END, 'channels', to_jsonb(w.ch),
                    'tags', to_jsonb(w.tg), 'deliverAt', hookd_api_ts(w.dl), 'timestamp', ts.v)::text
                  AS body
           FROM w CROSS JOIN ts),
 keys AS (INSERT INTO hookd_idempotency_keys (scope, key, status, body)
          SELECT scope, k, 202, body FROM ans WHERE k IS NOT NULL ORDER BY scope, k)
SELECT f.token_id, f.tenant_id, f.stale, f.app_id, f.scope, f.nth::integer AS nth, old.i IS NOT NULL AS old_found,
       old.status AS old_status, old.body AS old_body, ans.body
  FROM f LEFT JOIN old ON old.i = f.i LEFT JOIN ans ON ans.i = f.i
 ORDER BY f.i
