"""The relay's side of the outbox trigger, and endpoints deleted under it.

A NOTIFY serialises the commits of the transactions that send it, so an
active relay — one that keeps finding events and polls every few
milliseconds anyway — tells the trigger to stay quiet
(`hookd_relay_state.listening = false`, sql/0008) and turns it back on when it
has been idle for a while, before it goes back to waiting for a NOTIFY.

Deleting an endpoint deletes its deliveries (a trigger keeps the cascade the
foreign key used to give, sql/0007); a delivery whose endpoint row vanished
anyway is dead-lettered, never sent."""
import threading

import psycopg2
import pytest

from hookdtest.services import Db
from hookdtest.util import wait_for
from test_outbound import (add_endpoint, attempts_of, emit, make_retry_due_now, one_delivery_retrying,  # noqa: F401
                           outbound_config, receivers, statuses, wait_status)  # receivers: the fixture


def listening(env) -> bool:
    return env.db.value("SELECT listening FROM hookd_relay_state WHERE id = 1")


class Listener:
    """A connection LISTENing on the relay's channel, counting what arrives."""

    def __init__(self, env) -> None:
        self.conn = psycopg2.connect(env.db_url)
        self.conn.autocommit = True
        self.conn.cursor().execute("LISTEN hookd_outbox")

    def drain(self) -> int:
        self.conn.poll()
        n = len(self.conn.notifies)
        self.conn.notifies.clear()
        return n

    def close(self) -> None:
        self.conn.close()


def test_busy_relay_silences_the_notify_trigger_and_listens_again_when_idle(env, receivers):
    rcv = receivers(statuses(200))
    cfg = outbound_config(env)
    add_endpoint(cfg, rcv.url(), "busy")
    env.worker(config=cfg)
    wait_for(lambda: listening(env) is True, what="an idle relay listening")
    listener = Listener(env)
    try:
        # Idle relay: an emit is announced.
        emit(env, "order.created", {"n": 0}, aggregate_id="o0")
        wait_for(lambda: listener.drain() > 0, what="a NOTIFY for an emit while the relay is idle")

        # A steady stream: the relay becomes active and silences the trigger.
        stop = threading.Event()
        emitted = [1]

        def stream():
            while not stop.is_set():
                emit(env, "order.created", {"n": emitted[0]}, aggregate_id=f"o{emitted[0]}")
                emitted[0] += 1
                stop.wait(0.02)

        t = threading.Thread(target=stream, daemon=True)
        t.start()
        try:
            wait_for(lambda: listening(env) is False, what="the active relay to silence the trigger")
            listener.drain()  # anything sent before the flag went off
            before = emitted[0]
            wait_for(lambda: emitted[0] >= before + 20, what="20 more emits while the relay is active")
            silent = listener.drain()
        finally:
            stop.set()
            t.join()
        assert silent == 0, f"{silent} NOTIFY(s) while the relay was active"

        # Idle again: the relay turns the trigger back on, and an emit is announced.
        wait_for(lambda: listening(env) is True, what="the idle relay to listen again")
        listener.drain()
        last = emit(env, "order.created", {"n": "last"}, aggregate_id="olast")
        wait_for(lambda: listener.drain() > 0, what="a NOTIFY for an emit after the relay went idle")
        wait_for(lambda: any(r.event_id == last for r in rcv.got()), what="the last event delivered")
        total = env.db.value("SELECT count(*) FROM outbox_events")
        wait_for(lambda: env.db.value("SELECT count(*) FROM outbox_deliveries WHERE status = 'SUCCEEDED'") == total,
                 what="every emitted event delivered")
        assert len({r.event_id for r in rcv.got()}) == total
    finally:
        listener.close()


def test_a_relay_that_starts_clears_a_flag_left_off(env, receivers):
    """A relay killed while active leaves `listening = false`; the next one to
    start turns it back on, so applications go back to announcing their events."""
    env.db.all("UPDATE hookd_relay_state SET listening = false WHERE id = 1")
    rcv = receivers(statuses(200))
    cfg = outbound_config(env)
    add_endpoint(cfg, rcv.url(), "restart")
    env.worker(config=cfg)
    wait_for(lambda: listening(env) is True, what="the starting relay to listen")


def test_deleting_an_endpoint_deletes_its_deliveries(env, receivers):
    rcv = receivers(statuses(500))
    cfg = outbound_config(env, retry_schedule="1h, 1h, 1h")
    gone = add_endpoint(cfg, rcv.url(), "gone")
    kept = add_endpoint(cfg, rcv.url(), "kept")
    env.worker(config=cfg)
    event_id = emit(env, "order.created", {"id": "o1"})
    wait_status(env, event_id, gone, "RETRYING")
    wait_status(env, event_id, kept, "RETRYING")
    env.db.all("DELETE FROM webhook_endpoints WHERE id = %s", gone.id)
    assert env.db.value("SELECT count(*) FROM outbox_deliveries WHERE endpoint_id = %s", gone.id) == 0
    assert env.db.value("SELECT count(*) FROM outbox_deliveries WHERE endpoint_id = %s", kept.id) == 1


def test_deleting_or_truncating_events_deletes_their_deliveries(env, receivers):
    rcv = receivers()
    cfg = outbound_config(env)
    ep = add_endpoint(cfg, rcv.url(), "ep")
    env.worker(config=cfg)
    ids = [emit(env, "order.created", {"n": n}, aggregate_id=f"o{n}") for n in range(3)]
    for event_id in ids:
        wait_status(env, event_id, ep, "SUCCEEDED")
    env.db.all("DELETE FROM outbox_events WHERE id = %s", ids[0])
    assert env.db.value("SELECT count(*) FROM outbox_deliveries WHERE event_id = %s", ids[0]) == 0
    assert env.db.value("SELECT count(*) FROM outbox_deliveries") == 2
    env.db.all("TRUNCATE outbox_events")
    assert env.db.value("SELECT count(*) FROM outbox_deliveries") == 0


def test_the_relay_goes_on_when_the_event_it_marked_is_gone(env, receivers):
    """Claims start after a mark, the first event of the last claim that
    found any. That event can vanish while the relay is idle (its retention
    ran out; a failover to a standby that never had it): the next event is
    still fanned out and delivered."""
    rcv = receivers()
    cfg = outbound_config(env)
    ep = add_endpoint(cfg, rcv.url(), "ep")
    env.worker(config=cfg)
    first = emit(env, "order.created", {"n": 1}, aggregate_id="o1")
    wait_status(env, first, ep, "SUCCEEDED")
    env.db.all("DELETE FROM outbox_events WHERE id = %s", first)  # as retention does
    after = [emit(env, "order.created", {"n": n}, aggregate_id=f"o{n}") for n in range(2, 5)]
    for event_id in after:
        wait_status(env, event_id, ep, "SUCCEEDED")


def test_an_endpoint_deleted_during_a_fan_out_loses_the_rows_the_fan_out_writes(env, receivers):
    """The fan-out holds its endpoints (KEY SHARE) until it commits: a delete
    waits for it, and its cascade then takes the rows the fan-out wrote."""
    from test_outbound import Held
    rcv = receivers(lambda req: Held(200))
    cfg = outbound_config(env, ("allow_private_networks = true", "first_attempt_window = 1h"))
    ep = add_endpoint(cfg, rcv.url(), "doomed")
    env.worker(config=cfg)
    event_id = emit(env, "order.created", {"id": "o1"})
    rcv.wait(1)  # the fan-out's transaction is open, waiting for the answer
    deleted = threading.Event()

    def delete():
        db = Db(env.db_url)
        try:
            db.all("DELETE FROM webhook_endpoints WHERE id = %s", ep.id)
        finally:
            db.close()
        deleted.set()
    t = threading.Thread(target=delete)
    t.start()
    wait_for(lambda: env.db.value("SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
                                  " AND query LIKE 'DELETE FROM webhook_endpoints%%'") == 1,
             what="the delete waiting for the fan-out's lock")
    assert not deleted.is_set()
    rcv.release.set()
    t.join(30)
    assert deleted.is_set()
    wait_for(lambda: env.db.value("SELECT fanned_out_at IS NOT NULL FROM outbox_events WHERE id = %s", event_id),
             what="the fan-out committed")
    assert env.db.value("SELECT count(*) FROM outbox_deliveries") == 0


def test_a_delivery_whose_endpoint_vanished_is_dead_lettered_unsent(env, receivers):
    rcv, _, ep, event_id, row = one_delivery_retrying(env, receivers, "vanishing")
    # An orphan, as a delete racing the fan-out could leave one: no cascade.
    env.db.all("ALTER TABLE webhook_endpoints DISABLE TRIGGER webhook_endpoints_cascade")
    env.db.all("DELETE FROM webhook_endpoints WHERE id = %s", ep.id)
    env.db.all("ALTER TABLE webhook_endpoints ENABLE TRIGGER webhook_endpoints_cascade")
    make_retry_due_now(env, row["id"])

    wait_for(lambda: env.db.value("SELECT status FROM outbox_deliveries WHERE id = %s", row["id"]) == "DEAD",
             what="the orphaned delivery dead-lettered")
    dl = env.db.one("SELECT * FROM dead_letters WHERE source = 'delivery' AND source_id = %s", str(row["id"]))
    assert dl["reason"] == "endpoint deleted"
    assert attempts_of(env, row["id"])[-1]["error"] == "the endpoint was deleted"
    assert len(rcv.got()) == 1  # only the first attempt, before the endpoint vanished
    assert env.db.value("SELECT processed_at IS NOT NULL FROM outbox_events WHERE id = %s", event_id)


@pytest.mark.valgrind
def test_outbound_paths_exit_clean(env, receivers):
    """Fan-out, signed deliveries, retries, a dead letter, an endpoint deleted
    under its deliveries, the relay going active and idle, and a graceful
    stop in one worker: under `make valgrind` this is the leak check of the
    outbound paths (valgrind's exit code 99 fails the test)."""
    ok = receivers(statuses(200))
    flaky = receivers(statuses(500, 200))
    dead = receivers(statuses(500))
    cfg = outbound_config(env)
    add_endpoint(cfg, ok.url(), "ok")
    add_endpoint(cfg, flaky.url(), "flaky", "order.paid")
    gone = add_endpoint(cfg, dead.url(), "dead", "order.cancelled")
    w = env.worker(config=cfg)
    for n in range(40):
        emit(env, "order.paid" if n % 2 else "order.cancelled", {"n": n}, aggregate_id=f"o{n}")
    wait_for(lambda: env.db.value("SELECT count(*) FROM outbox_deliveries WHERE status = 'DEAD'") == 20, timeout=120,
             what="the always-failing endpoint's deliveries dead-lettered")
    wait_for(lambda: env.db.value("SELECT count(*) FROM outbox_deliveries WHERE status = 'SUCCEEDED'") == 60,
             timeout=120, what="the others delivered")
    env.db.all("DELETE FROM webhook_endpoints WHERE id = %s", gone.id)
    wait_for(lambda: listening(env) is True, timeout=30, what="the relay idle again")
    assert w.stop(timeout=60) == 0
    assert env.db.value("SELECT count(*) FROM outbox_events WHERE processed_at IS NULL") == 0
