-- Least-privilege roles for hookd. Not a migration: run it once as a
-- superuser (or the schema owner with CREATEROLE) after `hookd migrate`:
--   psql "$DATABASE_URL" -f sql/roles/least_privilege.sql
-- then give login roles membership, e.g.
--   CREATE ROLE hookd_w LOGIN PASSWORD '...' IN ROLE hookd_worker;
-- Workers need no DDL and no DELETE; the operator role adds what the
-- `hookd endpoint` and `hookd dlq purge` commands need; applications only
-- call hookd_emit(). Machines on your own tables also need
--   GRANT SELECT, UPDATE ON your_table TO hookd_worker;   (INSERT if create = true)

DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'hookd_worker') THEN
        CREATE ROLE hookd_worker NOLOGIN;
    END IF;
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'hookd_operator') THEN
        CREATE ROLE hookd_operator NOLOGIN IN ROLE hookd_worker;
    END IF;
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'hookd_app') THEN
        CREATE ROLE hookd_app NOLOGIN;
    END IF;
END
$$;

-- hookd run: ingest, evaluate, relay, deliver, record, dead-letter, replay.
GRANT SELECT                 ON schema_migrations TO hookd_worker;
GRANT SELECT, INSERT, UPDATE ON webhook_inbox     TO hookd_worker;
GRANT SELECT, INSERT, UPDATE ON hookd_entities    TO hookd_worker;
GRANT SELECT, INSERT, UPDATE ON outbox_events     TO hookd_worker;
GRANT SELECT, INSERT, UPDATE ON outbox_deliveries TO hookd_worker;
GRANT SELECT, UPDATE         ON webhook_endpoints TO hookd_worker;  -- 410 Gone disables an endpoint
GRANT SELECT, INSERT         ON attempts          TO hookd_worker;
GRANT UPDATE (response_excerpt, error) ON attempts TO hookd_worker;  -- the API's expunge of a response
GRANT USAGE                  ON SEQUENCE attempts_id_seq TO hookd_worker;
GRANT SELECT, INSERT, UPDATE ON dead_letters      TO hookd_worker;
GRANT SELECT, UPDATE         ON hookd_relay_state TO hookd_worker;  -- relays: NOTIFY wanted or not
GRANT SELECT, INSERT         ON hookd_dedup       TO hookd_worker;  -- ingest: the dedup keys (0012)
-- The retention pass (partitions, DETACH, DROP) needs the tables' owner: set
-- [retention] interval = off for the workers and run `hookd retention run` as
-- the owner from a timer (docs/guides/retention.md, least privilege). A worker that
-- tries a pass anyway logs retention.forbidden once and runs no more passes.
-- The storage figures (hookd status, /metrics, /admin) read every partition:
-- hookd_storage is SECURITY DEFINER since sql/0018, executable by these roles.
GRANT EXECUTE ON FUNCTION hookd_storage(bigint, bigint, bigint, bigint, bigint) TO hookd_worker;

-- hookd endpoint add/rotate-secret, hookd dlq purge.
GRANT INSERT, DELETE ON webhook_endpoints TO hookd_operator;
GRANT DELETE         ON dead_letters      TO hookd_operator;

-- Applications: write to the outbox inside their own transactions (hookd_emit is
-- SECURITY DEFINER), nothing else.
-- One function since sql/0026: the four-argument call, p_tenant => … and
-- p_payload_retention => … are all this signature.
REVOKE EXECUTE ON FUNCTION hookd_emit(text, text, text, jsonb, text, interval) FROM PUBLIC;
GRANT EXECUTE  ON FUNCTION hookd_emit(text, text, text, jsonb, text, interval) TO hookd_app;
-- The same parameters with the payload as text, stored and delivered byte
-- for byte (sql/0030).
REVOKE EXECUTE ON FUNCTION hookd_emit_raw(text, text, text, text, text, interval) FROM PUBLIC;
GRANT EXECUTE  ON FUNCTION hookd_emit_raw(text, text, text, text, text, interval) TO hookd_app;

-- The API runs in the worker: tenants, endpoints, messages, event
-- types, tokens and idempotency keys are written through it.
GRANT SELECT, INSERT, UPDATE, DELETE ON hookd_tenants, hookd_message_ids, hookd_event_types,
                                        hookd_idempotency_keys TO hookd_worker;
GRANT INSERT, DELETE         ON webhook_endpoints TO hookd_worker;
GRANT SELECT, UPDATE         ON hookd_api_tokens  TO hookd_worker;  -- last_used_at
GRANT SELECT, INSERT, UPDATE ON hookd_background_tasks TO hookd_worker;  -- the API's tasks and their runners
GRANT INSERT, DELETE         ON hookd_api_tokens  TO hookd_operator;

-- Ordered delivery (sql/0017): every outbox insert takes emit_seq from this
-- sequence, the API's messages included (hookd_emit is SECURITY DEFINER).
GRANT USAGE ON SEQUENCE hookd_emit_seq TO hookd_worker;
