-- NOTIFY only when a relay is waiting for it.
--
-- Postgres serialises the commits of every transaction that sent a NOTIFY
-- (one global lock, held across the commit's WAL flush), so the trigger of
-- 0002 caps how fast applications can commit transactions that emit.
-- While a relay is busy it polls the outbox every few milliseconds anyway and
-- needs no signal: it sets `listening = false`, and the trigger stays quiet.
-- When it has found nothing for a while it sets `listening = true` again and
-- waits for the next NOTIFY (and polls every second as a fallback).
CREATE TABLE hookd_relay_state (
    id        integer PRIMARY KEY CHECK (id = 1),
    listening boolean NOT NULL DEFAULT true,
    changed_at timestamptz NOT NULL DEFAULT now()
);
INSERT INTO hookd_relay_state (id) VALUES (1);

-- SECURITY DEFINER: applications that insert into outbox_events themselves
-- need no grant on hookd_relay_state.
CREATE OR REPLACE FUNCTION hookd_outbox_notify() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public AS $$
BEGIN
    IF (SELECT listening FROM hookd_relay_state WHERE id = 1) IS NOT FALSE THEN
        PERFORM pg_notify('hookd_outbox', '');
    END IF;
    RETURN NULL;
END
$$;
