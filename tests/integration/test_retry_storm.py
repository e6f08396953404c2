"""Retry storms: failed delivery attempts recorded set-wise per
batch, and each endpoint's circuit.

Covered: the retry accounting (every request the receiver saw is one row of
`attempts`, and each delivery's attempts counter agrees), the DLQ exactly at
max_attempts, Retry-After honoured by the batch path, the circuit's
open -> half-open (one probe) -> closed cycle with the parked deliveries
spending no attempt, a worker killed with SIGKILL in the middle of retry
batches (nothing lost, nothing doubled), and a healthy endpoint delivering
while another one fails (functional: no timing is asserted). The outcomes
that end a delivery (the last attempt, 410 Gone, a disabled endpoint) are
recorded per batch too: their accounting; an open circuit costs nothing
(parked deliveries are neither re-seeded by the reconciler nor re-sent, and
requests still queued in the HTTP client when it opens are parked, not
sent)."""
from __future__ import annotations

import threading
import time

from hookdtest.util import wait_for
from test_outbound import Request, add_endpoint, by_event, endpoint_cli, outbound_config, receivers  # noqa: F401 (fixture)


def retry_section(name: str, schedule: str = "50ms", max_attempts: int = 6, circuit: str = "off",
                  more: str = "") -> str:
    return (f"\n[retry endpoint:{name}]\nschedule = {schedule}\nmax_attempts = {max_attempts}\njitter = 0%\n"
            f"circuit = {circuit}\n{more}")


def fail_first(n: int, code: int = 500, headers: dict | None = None):
    """Answers `code` to the first n requests of each webhook-id, then 200."""
    seen: dict[str, int] = {}
    lock = threading.Lock()

    def respond(req: Request):
        with lock:
            k = seen[req.event_id] = seen.get(req.event_id, 0) + 1
        return (code, headers or {}, b"no") if k <= n else (200, {}, b"ok")
    return respond


def emit_many(env, event_type: str, n: int, tag: str) -> list[str]:
    rows = env.db.all("SELECT hookd_emit('Order', %s || g, %s, jsonb_build_object('n', g))::text AS id"
                      " FROM generate_series(1, %s) g", tag, event_type, n)
    return [r["id"] for r in rows]


def count_status(env, endpoint_id: str, status: str) -> int:
    return env.db.value("SELECT count(*) FROM outbox_deliveries WHERE endpoint_id = %s AND status = %s",
                        endpoint_id, status)


def rows_per_event(env, endpoint_id: str) -> dict[str, tuple[int, int]]:
    """event id -> (attempts rows, the delivery's attempts counter)."""
    rows = env.db.all("SELECT d.event_id::text AS event_id, d.attempts,"
                      " (SELECT count(*) FROM attempts a WHERE a.source = 'delivery' AND a.source_id = d.id) AS n"
                      " FROM outbox_deliveries d WHERE d.endpoint_id = %s", endpoint_id)
    return {r["event_id"]: (r["n"], r["attempts"]) for r in rows}


def test_retry_accounting_and_dlq_exactly_at_max_attempts(env, receivers):
    flaky = receivers(fail_first(3))
    dead = receivers(lambda req: (500, {}, b"down"))
    cfg = outbound_config(env, extra=retry_section("flaky") + retry_section("dead", max_attempts=4))
    ep_flaky = add_endpoint(cfg, flaky.url(), "flaky", "flaky.*")
    ep_dead = add_endpoint(cfg, dead.url(), "dead", "dead.*")
    env.worker(config=cfg)
    ids = emit_many(env, "flaky.x", 60, "f")
    dead_ids = emit_many(env, "dead.x", 5, "d")
    wait_for(lambda: count_status(env, ep_flaky.id, "SUCCEEDED") == 60, 40, what="60 flaky deliveries")
    wait_for(lambda: count_status(env, ep_dead.id, "DEAD") == 5, 40, what="5 dead deliveries")

    seen = by_event(flaky.got())
    per = rows_per_event(env, ep_flaky.id)
    assert sorted(per) == sorted(ids)
    for ev in ids:  # 3 failures then the success, each request one row, the counter agrees
        assert len(seen[ev]) == 4, (ev, len(seen[ev]))
        assert per[ev] == (4, 4), (ev, per[ev])
    outcomes = env.db.all("SELECT outcome, status_code, count(*) AS n FROM attempts a JOIN outbox_deliveries d"
                          " ON d.id = a.source_id WHERE d.endpoint_id = %s GROUP BY 1, 2 ORDER BY 1", ep_flaky.id)
    assert [(o["outcome"], o["status_code"], o["n"]) for o in outcomes] == [("failed", 500, 180),
                                                                            ("succeeded", 200, 60)]
    seen_dead = by_event(dead.got())
    per_dead = rows_per_event(env, ep_dead.id)
    for ev in dead_ids:  # dead-lettered on the 4th failure, never a 5th request
        assert len(seen_dead[ev]) == 4
        assert per_dead[ev] == (4, 4)
    dl = env.db.all("SELECT d.reason, d.attempts FROM dead_letters d JOIN outbox_deliveries o ON o.id = d.source_id"
                    " WHERE o.endpoint_id = %s", ep_dead.id)
    assert len(dl) == 5 and all(r["attempts"] == 4 and r["reason"] == "retries exhausted" for r in dl), dl
    assert env.db.value("SELECT count(*) FROM outbox_events WHERE processed_at IS NULL") == 0


def test_retry_after_is_honoured_on_the_batch_path(env, receivers):
    rcv = receivers(fail_first(1, 503, {"Retry-After": "2"}))
    cfg = outbound_config(env, extra=retry_section("ra", schedule="20ms"))
    ep = add_endpoint(cfg, rcv.url(), "ra", "*")
    env.worker(config=cfg)
    emit_many(env, "order.x", 3, "r")
    wait_for(lambda: count_status(env, ep.id, "RETRYING") == 3, 20, what="3 retrying deliveries")
    waits = env.db.all("SELECT extract(epoch FROM d.next_attempt_at - a.attempted_at) AS wait, a.status_code"
                       " FROM outbox_deliveries d JOIN attempts a ON a.source_id = d.id WHERE d.endpoint_id = %s",
                       ep.id)
    assert len(waits) == 3 and all(w["status_code"] == 503 for w in waits)
    assert all(float(w["wait"]) >= 1.9 for w in waits), waits  # 2 s asked, not the schedule's 20 ms
    wait_for(lambda: count_status(env, ep.id, "SUCCEEDED") == 3, 20, what="3 deliveries after Retry-After")
    assert len(rcv.got()) == 6


def test_circuit_opens_probes_once_and_closes(env, receivers):
    state = {"down": True}
    rcv = receivers(lambda req: (503, {}, b"down") if state["down"] else (200, {}, b"ok"))
    cfg = outbound_config(env, extra=retry_section("wobbly", schedule="100ms", max_attempts=30, circuit="on",
                                                   more="circuit_failures = 3\ncircuit_probe = 1s\n"))
    ep = add_endpoint(cfg, rcv.url(), "wobbly", "*")
    env.worker(config=cfg)
    emit_many(env, "order.x", 20, "c")
    open_key, parked_key = env.key("{delivery}:circuit:open"), env.key("{delivery}:parked:wobbly")
    wait_for(lambda: env.redis.hget(open_key, "wobbly"), 20, what="the circuit to open")
    wait_for(lambda: env.redis.zcard(parked_key) >= 15, 20, what="deliveries parked")
    # Half-open: the probe (one request) fails and the circuit stays open.
    n0 = len(rcv.got())
    wait_for(lambda: len(rcv.got()) > n0, 20, what="a probe")
    assert env.redis.hget(open_key, "wobbly")
    # No delivery was dead-lettered, and what is parked spent nothing more.
    assert count_status(env, ep.id, "DEAD") == 0
    total = env.db.value("SELECT sum(attempts) FROM outbox_deliveries WHERE endpoint_id = %s", ep.id)
    assert total < 20 * 5, total
    # The endpoint recovers: the next probe closes the circuit and the backlog is sent.
    state["down"] = False
    wait_for(lambda: count_status(env, ep.id, "SUCCEEDED") == 20, 30, what="20 deliveries after recovery")
    assert not env.redis.hget(open_key, "wobbly")
    assert env.redis.zcard(parked_key) == 0
    rows = env.db.value("SELECT count(*) FROM attempts a JOIN outbox_deliveries d ON d.id = a.source_id"
                        " WHERE d.endpoint_id = %s", ep.id)
    assert rows == len(rcv.got())
    per = rows_per_event(env, ep.id)
    assert all(n == a for n, a in per.values()), per


def test_kill9_in_the_middle_of_retry_batches_loses_and_doubles_nothing(env, receivers):
    rcv = receivers(fail_first(2))
    cfg = outbound_config(env, extra=retry_section("k9", schedule="30ms", max_attempts=6))
    ep = add_endpoint(cfg, rcv.url(), "k9", "*")
    w = env.worker(config=cfg)
    ids = emit_many(env, "order.x", 300, "k")
    wait_for(lambda: env.db.value("SELECT count(*) FROM attempts WHERE outcome = 'failed'") >= 150, 30,
             interval=0.01, what="retry batches under way")
    w.kill9()
    env.worker(config=cfg)  # the leases of the dead worker expire (3 s) and its items come back
    wait_for(lambda: count_status(env, ep.id, "SUCCEEDED") == 300, 60, what="300 deliveries after the kill")
    seen = by_event(rcv.got())
    per = rows_per_event(env, ep.id)
    assert sorted(per) == sorted(ids)
    for ev, (rows, counter) in per.items():
        assert rows == counter, (ev, rows, counter)  # no attempt row lost or doubled against the counter
        assert 1 <= rows <= len(seen[ev]), (ev, rows, len(seen[ev]))  # each row is a request the receiver saw
    # A request without a row is one whose answer the killed worker had not
    # committed yet (at-least-once: sent again, same webhook-id); every
    # committed batch is whole: each delivery's rows are its failures, then
    # exactly one success, in order.
    unrecorded = sum(len(seen[ev]) - per[ev][0] for ev in ids)
    assert 0 <= unrecorded <= 300, unrecorded
    hist = env.db.all("SELECT d.event_id::text AS ev, array_agg(a.outcome ORDER BY a.id) AS o FROM attempts a"
                      " JOIN outbox_deliveries d ON d.id = a.source_id GROUP BY 1")
    for h in hist:
        assert h["o"][-1] == "succeeded" and set(h["o"][:-1]) <= {"failed"}, h
    assert env.db.value("SELECT count(*) FROM attempts WHERE outcome = 'succeeded'") == 300


def test_a_healthy_endpoint_delivers_while_another_one_fails(env, receivers):
    good = receivers()
    bad = receivers(lambda req: (500, {}, b"down"))
    cfg = outbound_config(env, extra=retry_section("bad", schedule="50ms", max_attempts=50, circuit="on",
                                                   more="circuit_failures = 5\ncircuit_probe = 30s\n"))
    ep_good = add_endpoint(cfg, good.url(), "good", "good.*")
    ep_bad = add_endpoint(cfg, bad.url(), "bad", "bad.*")
    env.worker(config=cfg)
    emit_many(env, "bad.x", 400, "b")
    wait_for(lambda: env.redis.hget(env.key("{delivery}:circuit:open"), "bad"), 20, what="the bad circuit to open")
    good_ids = emit_many(env, "good.x", 100, "g")
    wait_for(lambda: count_status(env, ep_good.id, "SUCCEEDED") == 100, 20, what="the healthy endpoint's 100")
    assert sorted(by_event(good.got())) == sorted(good_ids)
    # The failing endpoint is not hammered: its circuit holds the backlog, nothing died.
    assert count_status(env, ep_bad.id, "DEAD") == 0
    assert len(bad.got()) < 400 * 2
    assert env.db.value("SELECT count(*) FROM outbox_deliveries WHERE endpoint_id = %s AND status IN"
                        " ('PENDING', 'RETRYING')", ep_bad.id) == 400


def test_circuit_scripts_open_park_probe_and_close(env):
    """The circuit's Lua scripts alone, against the test Redis: the threshold
    opens, claimed members are parked (not the probe), the tick picks one
    probe at a time, a success closes and makes every parked member due at
    its score (circuit_unpark), and an opening parks what waits in the due set."""
    from hookdtest.paths import ROOT
    r = env.redis
    s = {n: r.register_script((ROOT / "lua" / f"{n}.lua").read_text())
         for n in ("circuit_report", "circuit_park", "circuit_tick", "circuit_park_due")}
    k = {n: env.key(f"{{delivery}}:{n}") for n in ("circuit:failures", "circuit:open", "circuit:probe", "due",
                                                 "inflight", "parked:ep", "parked_ids", "circuit:draining",
                                                 "circuit:since")}
    report_keys = [k["circuit:failures"], k["circuit:open"], k["circuit:probe"], k["due"], k["parked:ep"],
                   k["parked_ids"], k["circuit:draining"], k["circuit:since"]]
    park_keys = [k["circuit:open"], k["circuit:probe"], k["inflight"], k["parked:ep"], k["parked_ids"]]

    def report(now, ok, trailing):
        return s["circuit_report"](keys=report_keys, args=[now, "ep", 1 if ok else 0, trailing, 3, 1000])

    assert report(1000, False, 2) == ["ep", 0, 0]  # 2 of 3: still closed
    assert r.hget(k["circuit:failures"], "ep") == "2"
    assert report(1001, False, 1) == ["ep", 2001, 2]  # the third opens it (2: this call opened it)
    # Claimed while open: parked at their due scores, out of inflight; nothing to send.
    r.zadd(k["inflight"], {"d1": 99999, "d2": 99999})
    assert s["circuit_park"](keys=park_keys, args=["ep", "d1", 10, "d2", 20]) == []
    assert r.hgetall(k["parked_ids"]) == {"d1": "ep", "d2": "ep"}
    assert r.zrange(k["parked:ep"], 0, -1, withscores=True) == [("d1", 10.0), ("d2", 20.0)]
    assert r.zcard(k["inflight"]) == 0
    # Opening parks what waits in due (d3), not what is not there (d9).
    r.zadd(k["due"], {"d3": 30})
    assert s["circuit_park_due"](keys=[k["circuit:open"], k["due"], k["parked:ep"], k["parked_ids"]],
                                 args=["ep", "d3", "d9"]) == 1
    # The reconciler brings a parked one back: the filter knows it without Postgres.
    flt = r.register_script((ROOT / "lua" / "circuit_filter.lua").read_text())
    assert flt(keys=[k["parked_ids"], k["circuit:open"]], args=["d2", "d9"]) == ["ep", ""]
    assert r.zcard(k["due"]) == 0 and r.zscore(k["parked:ep"], "d3") == 30
    # Half-open: not before the interval; then one probe, the oldest, due now; the interval starts again.
    tick_keys = [k["circuit:open"], k["circuit:probe"], k["parked:ep"], k["due"], k["parked_ids"], k["circuit:since"]]
    assert r.hget(k["circuit:since"], "ep") == "1001"  # when it opened
    assert s["circuit_tick"](keys=tick_keys, args=["ep", 2000, 1000, 0]) is None
    assert s["circuit_tick"](keys=tick_keys, args=["ep", 2001, 1000, 5000]) == "d1"  # open 1 s of 5: a probe
    assert s["circuit_tick"](keys=tick_keys, args=["ep", 2002, 1000, 5000]) is None  # one probe per interval
    assert r.zscore(k["due"], "d1") == 2001 and r.hget(k["circuit:open"], "ep") == "3001"
    assert r.hget(k["parked_ids"], "d1") is None
    # The probe comes back claimed: sent, the others stay parked.
    r.zadd(k["inflight"], {"d1": 99999})
    assert s["circuit_park"](keys=park_keys, args=["ep", "d1", 2001]) == ["d1"]
    # Its failure keeps it open another interval; its success closes and releases the parked.
    assert report(2500, False, 1) == ["ep", 3500, 0]
    assert report(2600, True, 0) == ["ep", 0, 1]
    assert r.hget(k["circuit:draining"], "ep") == "2600"  # the parked set is moved by circuit_unpark, in chunks
    unpark = r.register_script((ROOT / "lua" / "circuit_unpark.lua").read_text())
    assert unpark(keys=[k["circuit:open"], k["circuit:draining"], k["parked:ep"], k["due"], k["inflight"],
                        k["parked_ids"]], args=["ep", 1000]) == [2, 0]
    assert r.hget(k["circuit:open"], "ep") is None and r.zcard(k["parked:ep"]) == 0
    assert {m: int(sc) for m, sc in r.zrange(k["due"], 0, -1, withscores=True)} == {"d1": 2001, "d2": 20, "d3": 30}
    assert r.hget(k["circuit:failures"], "ep") is None
    assert r.hlen(k["parked_ids"]) == 0
    assert r.hlen(k["circuit:draining"]) == 0 and r.hlen(k["circuit:since"]) == 0
    # Open again for longer than the disable window, with a delivery parked: the tick says disable, probes nothing.
    assert report(10000, False, 3) == ["ep", 11000, 2]
    r.zadd(k["parked:ep"], {"d7": 70})
    assert s["circuit_tick"](keys=tick_keys, args=["ep", 12000, 1000, 5000]) == "d7"  # 2 s of 5: probed
    r.zadd(k["parked:ep"], {"d8": 80})
    assert s["circuit_tick"](keys=tick_keys, args=["ep", 15000, 1000, 5000]) == ["disable", 10000]
    assert r.zscore(k["parked:ep"], "d8") == 80 and r.hget(k["circuit:open"], "ep") == "16000"
    assert s["circuit_tick"](keys=tick_keys, args=["ep", 16000, 1000, 0]) == "d8"  # window off: probes again


def attempt_rows(env, endpoint_id: str, real_only: bool = True) -> dict[str, int]:
    """event id -> attempts rows; real_only: those of a request made (not the
    row that says an endpoint was disabled)."""
    rows = env.db.all("SELECT d.event_id::text AS ev, count(a.id) AS n FROM outbox_deliveries d"
                      " LEFT JOIN attempts a ON a.source = 'delivery' AND a.source_id = d.id"
                      + (" AND a.error IS DISTINCT FROM 'the endpoint is disabled'" if real_only else "")
                      + " WHERE d.endpoint_id = %s GROUP BY 1", endpoint_id)
    return {r["ev"]: r["n"] for r in rows}


def test_last_attempts_410_and_disabled_endpoints_are_recorded_per_batch(env, receivers):
    """Outcomes that end a delivery, recorded set-wise per batch: every
    request the receiver saw is one attempt row and the counter agrees, the
    DLQ is reached exactly at max_attempts, 410 (on a first attempt or on a
    retry) disables the endpoint and dead-letters at once, and a disabled
    endpoint's deliveries die unsent (their one extra row says so); every
    event ends processed."""
    dead = receivers(lambda req: (500, {}, b"down"))
    gone = receivers(fail_first(1, 410))  # 410 at once
    late_codes: dict[str, int] = {}
    lock = threading.Lock()

    def late_respond(req):  # 500 first, then 410 on the retry
        with lock:
            k = late_codes[req.event_id] = late_codes.get(req.event_id, 0) + 1
        return (500, {}, b"x") if k == 1 else (410, {}, b"gone now")
    late = receivers(late_respond)
    paused = receivers(lambda req: (503, {}, b"busy"))
    cfg = outbound_config(env, extra=retry_section("dead", max_attempts=3) + retry_section("gone")
                          + retry_section("late", schedule="100ms") + retry_section("paused", schedule="3s"))
    ep_dead = add_endpoint(cfg, dead.url(), "dead", "dead.*")
    ep_gone = add_endpoint(cfg, gone.url(), "gone", "gone.*")
    ep_late = add_endpoint(cfg, late.url(), "late", "late.*")
    ep_paused = add_endpoint(cfg, paused.url(), "paused", "paused.*")
    w = env.worker(config=cfg)
    paused_ids = emit_many(env, "paused.x", 20, "p")
    wait_for(lambda: count_status(env, ep_paused.id, "RETRYING") == 20, 20, what="20 paused deliveries retrying")
    # The paused endpoint is disabled by an operator while its deliveries wait for their retry.
    r = endpoint_cli(cfg, "disable", "paused")
    assert r.returncode == 0, r.stderr
    dead_ids = emit_many(env, "dead.x", 40, "d")
    gone_ids = emit_many(env, "gone.x", 20, "g")
    late_ids = emit_many(env, "late.x", 20, "l")
    for ep, n, what in ((ep_dead, 40, "dead at max_attempts"), (ep_gone, 20, "gone"), (ep_late, 20, "gone late"),
                        (ep_paused, 20, "of the disabled endpoint")):
        wait_for(lambda: count_status(env, ep.id, "DEAD") == n, 40, what=f"{n} deliveries {what}")

    seen_dead, per_dead = by_event(dead.got()), rows_per_event(env, ep_dead.id)
    for ev in dead_ids:  # exactly max_attempts requests, each one row, the counter agrees
        assert len(seen_dead[ev]) == 3, (ev, len(seen_dead[ev]))
        assert per_dead[ev] == (3, 3), (ev, per_dead[ev])
    for rcv, ep, ids in ((gone, ep_gone, gone_ids), (late, ep_late, late_ids), (paused, ep_paused, paused_ids)):
        seen, per, real = by_event(rcv.got()), rows_per_event(env, ep.id), attempt_rows(env, ep.id)
        for ev in ids:  # a row per request made, plus one for "disabled"; the counter agrees
            assert real[ev] == len(seen.get(ev, [])), (ep.name, ev, real[ev], len(seen.get(ev, [])))
            assert per[ev][0] == per[ev][1], (ep.name, ev, per[ev])
    assert all(len(v) == 1 for v in by_event(paused.got()).values())  # the disabled endpoint got no retry
    assert all(n == 2 for n in attempt_rows(env, ep_paused.id, real_only=False).values())
    # One dead letter each, with its reason and attempts.
    dl = env.db.all("SELECT o.endpoint_id::text AS ep, d.reason, d.attempts, count(*) AS n FROM dead_letters d"
                    " JOIN outbox_deliveries o ON o.id = d.source_id GROUP BY 1, 2, 3")
    got = {(r["ep"], r["reason"], r["attempts"]): r["n"] for r in dl}
    assert got[(ep_dead.id, "retries exhausted", 3)] == 40
    assert got[(ep_paused.id, "endpoint disabled", 2)] == 20
    for ep in (ep_gone, ep_late):  # 410 ends it; deliveries loaded after the endpoint was disabled die unsent
        mine = {k: n for k, n in got.items() if k[0] == ep.id}
        assert sum(mine.values()) == 20 and {k[1] for k in mine} <= {"endpoint gone (410)", "endpoint disabled"}
        assert any(k[1] == "endpoint gone (410)" for k in mine), mine
        assert env.db.value("SELECT enabled FROM webhook_endpoints WHERE id = %s", ep.id) is False
    # Every 410 the receivers sent is one 'gone' row.
    assert env.db.value("SELECT count(*) FROM attempts WHERE outcome = 'gone'") == \
        len(gone.got()) + sum(1 for n in late_codes.values() if n >= 2)
    assert env.db.value("SELECT count(*) FROM outbox_events WHERE processed_at IS NULL") == 0
    assert "delivery.record_failed" not in w.output()  # the set-based statements wrote them all


def log_count(w, needle: str) -> int:
    return w.output().count(needle)


def test_parked_deliveries_are_not_reseeded_or_resent_while_the_circuit_is_open(env, receivers):
    """While an endpoint's circuit is open its parked deliveries stay parked
    across reconcile passes: not made due again (not claimed and parked once
    more), not sent, no attempt spent."""
    rcv = receivers(lambda req: (500, {}, b"down"))
    cfg = outbound_config(env, extra=retry_section("down", schedule="50ms", max_attempts=50, circuit="on",
                                                   more="circuit_failures = 3\ncircuit_probe = 10m\n"),
                          log_level="debug", reconcile_interval="500ms")
    ep = add_endpoint(cfg, rcv.url(), "down", "*")
    w = env.worker(config=cfg)
    emit_many(env, "order.x", 30, "p")
    parked_key = env.key("{delivery}:parked:down")
    wait_for(lambda: env.redis.zcard(parked_key) == 30, 30, what="30 deliveries parked")
    passes = log_count(w, "reconcile.pass")
    wait_for(lambda: log_count(w, "reconcile.pass") >= passes + 1, 20, what="a reconcile pass")
    parked_logs, requests = log_count(w, "delivery.parked"), len(rcv.got())
    passes = log_count(w, "reconcile.pass")
    wait_for(lambda: log_count(w, "reconcile.pass") >= passes + 3, 20, what="three more reconcile passes")
    assert env.redis.zcard(parked_key) == 30
    assert env.redis.zcard(env.key("{delivery}:due")) == 0
    assert log_count(w, "delivery.parked") == parked_logs  # none claimed and parked again
    assert len(rcv.got()) == requests
    assert env.db.value("SELECT sum(attempts) FROM outbox_deliveries WHERE endpoint_id = %s", ep.id) == requests
    assert count_status(env, ep.id, "DEAD") == 0


def test_requests_queued_when_the_circuit_opens_are_parked_not_sent(env, receivers):
    """An endpoint that answers slowly and one request at a time
    (max_inflight 1) with 40 deliveries queued in the HTTP client: once its
    circuit opens, what still waits in the queue is parked unsent. The
    receiver sees a handful of requests, not 40, and each is one attempt
    row."""
    def slow_failure(req):
        time.sleep(0.2)  # the receiver's own slowness, not a wait for a condition
        return (500, {}, b"down")
    rcv = receivers(slow_failure)
    cfg = outbound_config(env, extra=retry_section("slow", schedule="50ms", max_attempts=50, circuit="on",
                                                   more="circuit_failures = 3\ncircuit_probe = 10m\n"))
    ep = add_endpoint(cfg, rcv.url(), "slow", "*", "--max-inflight", "1")
    w = env.worker(config=cfg)
    emit_many(env, "order.x", 40, "q")
    parked_key = env.key("{delivery}:parked:slow")
    wait_for(lambda: env.redis.zcard(parked_key) == 40, 40, what="40 deliveries parked")
    assert "delivery.unsent_parked" in w.output()
    n = len(rcv.got())
    assert 3 <= n <= 12, n  # the failures that opened it and what was on the wire, not 40
    wait_for(lambda: env.db.value("SELECT count(*) FROM attempts a JOIN outbox_deliveries d ON d.id = a.source_id"
                                  " WHERE d.endpoint_id = %s", ep.id) == len(rcv.got()), 20,
             what="an attempt row for every request")
    assert env.db.value("SELECT sum(attempts) FROM outbox_deliveries WHERE endpoint_id = %s", ep.id) == len(rcv.got())
    assert count_status(env, ep.id, "DEAD") == 0


def test_periodic_reconcile_passes_read_recent_rows_and_still_repair_lost_entries(env, receivers):
    """The reconciler's periodic passes walk only the rows due since shortly
    before the previous pass (RECONCILE_MARGIN_MS, 60 s), not every open
    delivery; full passes (start-up, reconnect, every 10th) walk them all.
    Both repair: a lost due entry of a recent row is back after the next
    pass, one of a row due long ago after the next full pass."""
    rcv = receivers(lambda req: (500, {}, b"down"))
    cfg = outbound_config(env, extra=retry_section("slow", schedule="30m", max_attempts=5),
                          reconcile_interval="200ms")
    ep = add_endpoint(cfg, rcv.url(), "slow", "*")
    w = env.worker(config=cfg)
    emit_many(env, "order.x", 30, "rc")
    wait_for(lambda: count_status(env, ep.id, "RETRYING") == 30, 30, what="30 deliveries waiting for their retry")
    ids = [r["id"] for r in env.db.all("SELECT id::text AS id FROM outbox_deliveries WHERE endpoint_id = %s"
                                       " ORDER BY id", ep.id)]
    old, recent = ids[:20], ids[20:]
    # 20 of them written long ago: due an hour ago in Postgres (Redis still holds them at +30m, so not sent)
    env.db.all("UPDATE outbox_deliveries SET next_attempt_at = now() - interval '1 hour' WHERE id = ANY(%s::uuid[])",
               old)
    due = env.key("{delivery}:due")
    start = len(w.output())
    wait_for(lambda: "examined=10 full=false" in w.output()[start:], 20, what="a periodic pass over the 10 recent rows")
    wait_for(lambda: "examined=30 full=true" in w.output()[start:], 20, what="a full pass over all 30")
    # A lost entry of a recent row: back after the next pass, at its due time.
    score = env.redis.zscore(due, recent[0])
    assert score is not None
    env.redis.zrem(due, recent[0])
    wait_for(lambda: env.redis.zscore(due, recent[0]) is not None, 10, what="the recent row seeded again")
    assert abs(env.redis.zscore(due, recent[0]) - score) < 2000  # at its due time (Postgres's), not now
    # A lost entry of an old row: back after the next full pass (due an hour ago: sent at once, a second attempt).
    start = len(w.output())
    env.redis.zrem(due, old[0])
    wait_for(lambda: env.db.value("SELECT attempts FROM outbox_deliveries WHERE id = %s", old[0]) == 2, 20,
             what="the old row seeded again by a full pass and retried")
    assert "full=true" in w.output()[start:]
    assert all(env.db.value("SELECT attempts FROM outbox_deliveries WHERE id = %s", i) == 1 for i in old[1:])


def test_an_endpoint_failing_for_circuit_disable_after_is_disabled_and_its_deliveries_dead_lettered(env, receivers):
    """`circuit_disable_after` (Svix: 5 days; 2 s here): an endpoint whose
    circuit stays open that long is disabled with the reason (failing since
    when), one endpoint.disabled operational webhook goes out, and every
    delivery it owed is dead-lettered ("endpoint disabled": visible in the
    DLQ, replayable), none left parked; an endpoint with the window off
    stays enabled and parked."""
    down = receivers(lambda req: (500, {}, b"down"))
    kept = receivers(lambda req: (500, {}, b"down"))
    ops = receivers(lambda req: (200, {}, b"ok"))
    circuit = "circuit_failures = 3\ncircuit_probe = 200ms\n"
    cfg = outbound_config(env, extra=retry_section("down", schedule="50ms", max_attempts=50, circuit="on",
                                                   more=circuit + "circuit_disable_after = 2s\n")
                          + retry_section("kept", schedule="50ms", max_attempts=50, circuit="on",
                                          more=circuit + "circuit_disable_after = off\n"))
    ep = add_endpoint(cfg, down.url(), "down", "down.*")
    ep_kept = add_endpoint(cfg, kept.url(), "kept", "kept.*")
    add_endpoint(cfg, ops.url(), "ops", "endpoint.*")
    w = env.worker(config=cfg)
    t0 = time.time()
    emit_many(env, "down.x", 25, "ad")
    emit_many(env, "kept.x", 25, "ak")
    wait_for(lambda: count_status(env, ep.id, "DEAD") == 25, 30, what="the failing endpoint's 25 deliveries DEAD")
    assert time.time() - t0 >= 2.0  # not before the window (2 s of an open circuit)
    row = env.db.one("SELECT enabled, disabled_reason FROM webhook_endpoints WHERE id = %s", ep.id)
    assert row["enabled"] is False
    assert row["disabled_reason"].startswith("failing since ") and "circuit_disable_after (2s)" in row["disabled_reason"]
    dl = env.db.all("SELECT d.reason, count(*) AS n FROM dead_letters d JOIN outbox_deliveries o ON o.id = d.source_id"
                    " WHERE o.endpoint_id = %s GROUP BY 1", ep.id)
    assert dl == [{"reason": "endpoint disabled", "n": 25}]
    assert env.redis.zcard(env.key("{delivery}:parked:down")) == 0
    assert env.redis.hget(env.key("{delivery}:circuit:open"), "down") is None
    assert env.redis.hget(env.key("{delivery}:circuit:since"), "down") is None
    wait_for(lambda: any(r.json.get("type") == "endpoint.disabled" for r in ops.got()), 20,
             what="the endpoint.disabled operational webhook")
    disabled = [r.json for r in ops.got() if r.json.get("type") == "endpoint.disabled"]
    assert len(disabled) == 1 and disabled[0]["data"]["reason"] == row["disabled_reason"]
    since = env.db.value("SELECT failing_since FROM webhook_endpoints WHERE id = %s", ep.id)
    assert since is not None and disabled[0]["data"]["failSince"].startswith(since.strftime("%Y-%m-%dT%H:%M:%S"))
    assert "delivery.endpoint_disabled" in w.output()
    # Enabled again (to replay its DLQ entries): failing_since is cleared.
    assert endpoint_cli(cfg, "enable", "down").returncode == 0
    assert env.db.one("SELECT enabled, failing_since FROM webhook_endpoints WHERE id = %s", ep.id) == \
        {"enabled": True, "failing_since": None}
    # The window off: still enabled, its deliveries parked, none dead.
    assert env.db.value("SELECT enabled FROM webhook_endpoints WHERE id = %s", ep_kept.id) is True
    assert count_status(env, ep_kept.id, "DEAD") == 0
    assert env.redis.zcard(env.key("{delivery}:parked:kept")) > 0


def test_an_event_committed_after_newer_ones_were_fanned_out_is_still_delivered(env, receivers):
    """The relay's claims start after a mark (the first event of the last
    claim that found any), so that they do not walk the index entries of
    every event fanned out since the last VACUUM (a storm's 100,000, slow
    while any transaction holds an old snapshot). An application
    transaction that began before newer events and commits after they were
    fanned out leaves its event behind the mark: the claim before the mark
    (at most a second later) delivers it."""
    import psycopg2
    rcv = receivers(lambda req: (200, {}, b"ok"))
    cfg = outbound_config(env)
    add_endpoint(cfg, rcv.url(), "sink", "*")
    env.worker(config=cfg)
    late = psycopg2.connect(env.db_url)
    try:
        cur = late.cursor()
        cur.execute("SELECT hookd_emit('Order', 'late', 'order.late', '{}'::jsonb)::text")  # created_at: now, uncommitted
        late_id = cur.fetchone()[0]
        for k in range(3):  # newer events, fanned out and delivered while it waits
            emit_many(env, "order.new", 5, f"new{k}")
            wait_for(lambda k=k: len(rcv.got()) >= 5 * (k + 1), 20, what="the newer events delivered")
        assert late_id not in by_event(rcv.got())
        late.commit()
    finally:
        late.close()
    wait_for(lambda: late_id in by_event(rcv.got()), 20, what="the late event delivered")
    assert env.db.value("SELECT count(*) FROM outbox_events WHERE fanned_out_at IS NULL") == 0
