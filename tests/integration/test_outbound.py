"""Outbound webhooks: the transactional outbox relay, end to end.

Applications write `hookd_emit(...)` in their own transaction; the relay fans
committed events out to the subscribed endpoints and POSTs them, signed with
Standard Webhooks headers, to real HTTP(S) receivers started by the test.
Covered: commit/rollback, fan-out filters, retries and their schedule
(per-endpoint override, Retry-After), the DLQ and its alert, 410 Gone,
timeouts, TLS verification, the SSRF guard, a worker killed mid-delivery, a
dead endpoint next to a healthy one, the endpoint CLI with secret rotation,
and an outbox event written by a state machine's `emit`."""
from __future__ import annotations

import json
import re
import signal
import socket
import ssl
import subprocess
import threading
import time
from dataclasses import dataclass
from email.utils import formatdate
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Callable

import psycopg2
import pytest

from hookdtest.client import order_event, post_standard
from hookdtest.paths import ROOT
from hookdtest.signing import sign_standard
from hookdtest.util import wait_for
from hookdtest.worker import run_hookd

# ---- receivers: real HTTP(S) servers that record what hookd sends ------------

HANG = object()  # a responder's answer: hold the request open until released


@dataclass
class Held:
    """A responder's answer: hold the request until released, then answer."""
    status: int
    body: bytes = b"ok"


@dataclass
class Request:
    n: int            # 1-based arrival number at this receiver
    path: str
    headers: dict     # lower-cased names
    body: bytes
    at: float         # time.time() at arrival

    @property
    def event_id(self) -> str:
        return self.headers.get("webhook-id", "")

    @property
    def json(self):
        return json.loads(self.body)


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, receiver: "Receiver", tls_ctx: ssl.SSLContext | None) -> None:
        self.receiver = receiver
        self.tls_ctx = tls_ctx
        super().__init__(("127.0.0.1", 0), receiver.handler_class())

    def finish_request(self, request, client_address):
        # The TLS handshake runs in the request's own thread, so a client that
        # refuses our certificate never stalls the accept loop.
        if self.tls_ctx is None:
            return super().finish_request(request, client_address)
        request.settimeout(10)
        try:
            tls = self.tls_ctx.wrap_socket(request, server_side=True)
        except OSError as e:
            self.receiver.tls_errors.append(str(e))
            return
        try:
            super().finish_request(tls, client_address)
        finally:
            try:
                tls.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            tls.close()


class Receiver:
    """A local webhook receiver on 127.0.0.1. `respond(req)` returns
    (status, headers, body) or HANG; the default answers 200."""

    def __init__(self, respond: Callable[[Request], object] | None = None,
                 tls_ctx: ssl.SSLContext | None = None) -> None:
        self.respond = respond or (lambda req: (200, {}, b"ok"))
        self.requests: list[Request] = []
        self.tls_errors: list[str] = []
        self.lock = threading.Lock()
        self.release = threading.Event()  # lets HANGing requests go (they close without answering)
        self.server = _Server(self, tls_ctx)
        self.port = self.server.server_address[1]
        self.scheme = "https" if tls_ctx else "http"
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05},
                                       daemon=True)
        self.thread.start()

    def url(self, host: str = "127.0.0.1", path: str = "/hook") -> str:
        return f"{self.scheme}://{host}:{self.port}{path}"

    def handler_class(self):
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            timeout = 30

            def log_message(self, *args):  # quiet
                pass

            def do_POST(self):
                try:
                    body = self.rfile.read(int(self.headers.get("content-length") or 0))
                    with receiver.lock:
                        req = Request(len(receiver.requests) + 1, self.path,
                                      {k.lower(): v for k, v in self.headers.items()}, body, time.time())
                        receiver.requests.append(req)
                    answer = receiver.respond(req)
                    if answer is HANG:
                        receiver.release.wait(120)
                        self.close_connection = True
                        return
                    if isinstance(answer, Held):
                        receiver.release.wait(120)
                        answer = (answer.status, {}, answer.body)
                    status, headers, out = answer
                    self.send_response(status)
                    for k, v in headers.items():
                        self.send_header(k, v)
                    self.send_header("Content-Length", str(len(out)))
                    self.end_headers()
                    self.wfile.write(out)
                except OSError:  # hookd gave up on us (timeout, kill -9)
                    self.close_connection = True

        return Handler

    def got(self) -> list[Request]:
        with self.lock:
            return list(self.requests)

    def wait(self, n: int, timeout: float = 20) -> list[Request]:
        return wait_for(lambda: len(self.got()) >= n and self.got(), timeout, what=f"{n} request(s) at :{self.port}")

    def stop(self) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()


def statuses(*codes: int, body: Callable[[int], bytes] = lambda n: b"ok", headers: dict | None = None):
    """A responder answering codes[0] to the first request, codes[1] to the
    second, ... and the last code from then on."""
    def respond(req: Request):
        code = codes[min(req.n, len(codes)) - 1]
        return code, (headers or {}) if code >= 300 else {}, body(req.n)
    return respond


@pytest.fixture
def receivers():
    made: list[Receiver] = []

    def make(respond=None, tls_ctx=None) -> Receiver:
        r = Receiver(respond, tls_ctx)
        made.append(r)
        return r

    try:
        yield make
    finally:
        for r in made:
            r.stop()


@pytest.fixture(scope="module")
def certs(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("tls")
    subprocess.run(["sh", str(ROOT / "tests" / "fixtures" / "tls" / "make-certs.sh"), str(d)], check=True,
                   capture_output=True)
    return d


def server_tls(certs: Path, name: str) -> ssl.SSLContext:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(certs / f"{name}.pem", certs / f"{name}.key")
    return ctx


# ---- config, endpoints, emitting ------------------------------------------------

def outbound_config(env, hookd_lines: tuple[str, ...] = ("allow_private_networks = true",), extra: str = "",
                    **overrides) -> Path:
    """env.config() plus keys in [hookd] (which `extra` cannot reach)."""
    cfg = env.config(extra=extra, **overrides)
    text = cfg.read_text()
    assert "[hookd]\n" in text
    cfg.write_text(text.replace("[hookd]\n", "[hookd]\n" + "".join(line + "\n" for line in hookd_lines), 1))
    return cfg


@dataclass
class Endpoint:
    name: str
    id: str
    secret: str
    url: str


def endpoint_cli(cfg: Path, *args: str):
    return run_hookd(["-c", str(cfg), "endpoint", *args])


def add_endpoint(cfg: Path, url: str, name: str, events: str = "*", *more: str) -> Endpoint:
    r = endpoint_cli(cfg, "add", "--url", url, "--events", events, "--name", name, *more)
    assert r.returncode == 0, r.stderr
    lines = dict(line.split(": ", 1) for line in r.stdout.splitlines() if ": " in line)
    first = r.stdout.splitlines()[0]
    assert first.startswith(f"endpoint {name} added (id ")
    ep_id = first.split("(id ", 1)[1].rstrip(")")
    assert lines["secret"].startswith("whsec_")
    return Endpoint(name, ep_id, lines["secret"], url)


def emit(env, event_type: str, payload: dict, aggregate_type: str = "Order", aggregate_id: str = "o1") -> str:
    """hookd_emit in its own (autocommitted) transaction; returns the event id."""
    return env.db.value("SELECT hookd_emit(%s, %s, %s, %s::jsonb)::text", aggregate_type, aggregate_id, event_type,
                        json.dumps(payload))


def delivery(env, event_id: str, endpoint: Endpoint):
    return env.db.one("SELECT * FROM outbox_deliveries WHERE event_id = %s AND endpoint_id = %s",
                      event_id, endpoint.id)


def delivery_status(env, event_id: str, endpoint: Endpoint):
    return env.db.value("SELECT status FROM outbox_deliveries WHERE event_id = %s AND endpoint_id = %s",
                        event_id, endpoint.id)


def attempts_of(env, delivery_id) -> list[dict]:
    return env.db.all("SELECT * FROM attempts WHERE source = 'delivery' AND source_id = %s ORDER BY id",
                      str(delivery_id))


def wait_status(env, event_id: str, endpoint: Endpoint, status: str, timeout: float = 20):
    wait_for(lambda: delivery_status(env, event_id, endpoint) == status, timeout,
             what=f"delivery of {event_id} to {endpoint.name} to be {status}")
    return delivery(env, event_id, endpoint)


def make_retry_due_now(env, delivery_id) -> None:
    """A delivery retrying on a long schedule: once the worker has put its
    retry an hour ahead in Redis, make it due now there and in Postgres."""
    key = env.key("{delivery}:due")
    wait_for(lambda: (env.redis.zscore(key, str(delivery_id)) or 0) > time.time() * 1000 + 600_000,
             what="the retry scheduled an hour ahead")
    env.db.all("UPDATE outbox_deliveries SET next_attempt_at = now() WHERE id = %s", delivery_id)
    env.redis.zadd(key, {str(delivery_id): int(time.time() * 1000)})


def metrics_value(w, name: str) -> float:
    text = w.admin_get("/metrics")[2].decode()
    m = re.search(rf"^{name} (\S+)$", text, flags=re.M)
    assert m, f"{name} not in /metrics"
    return float(m.group(1))


def signatures(req: Request) -> list[str]:
    return req.headers["webhook-signature"].split(" ")


def expected_signature(secret: str, req: Request) -> str:
    return sign_standard(secret, req.headers["webhook-id"], int(req.headers["webhook-timestamp"]), req.body)


def assert_signed(req: Request, secret: str, event_id: str) -> None:
    assert req.headers["webhook-id"] == event_id
    assert req.headers["content-type"] == "application/json"
    assert req.headers["user-agent"].startswith("hookd/")
    assert abs(int(req.headers["webhook-timestamp"]) - time.time()) < 300
    assert expected_signature(secret, req) in signatures(req), (req.headers, secret)


def by_event(reqs: list[Request]) -> dict[str, list[Request]]:
    out: dict[str, list[Request]] = {}
    for r in reqs:
        out.setdefault(r.event_id, []).append(r)
    return out


# ---- commit and rollback -------------------------------------------------------

def test_rolled_back_emit_is_never_sent_committed_is_sent_once_and_signed(env, receivers):
    rcv = receivers(statuses(200, body=lambda n: b"thanks"))
    cfg = outbound_config(env)
    ep = add_endpoint(cfg, rcv.url(), "shop-api", "order.*")
    env.worker(config=cfg)

    app = psycopg2.connect(env.db_url)
    try:
        with app.cursor() as cur:
            cur.execute("SELECT hookd_emit('Order', 'o1', 'order.created', '{\"id\": \"o1\", \"total\": 10}')::text")
            rolled_back = cur.fetchone()[0]
        app.rollback()
        with app.cursor() as cur:
            cur.execute("SELECT hookd_emit('Order', 'o2', 'order.created', %s::jsonb)::text",
                        (json.dumps({"id": "o2", "total": 12.5, "items": [{"sku": "a", "qty": 2}], "note": "ü"}),))
            committed = cur.fetchone()[0]
        app.commit()
    finally:
        app.close()

    first = rcv.wait(1)[0]
    row = wait_status(env, committed, ep, "SUCCEEDED")
    assert first.event_id == committed
    assert first.path == "/hook"
    assert_signed(first, ep.secret, committed)
    assert first.json == {"id": "o2", "total": 12.5, "items": [{"sku": "a", "qty": 2}], "note": "ü"}
    assert first.body.decode() == env.db.value("SELECT payload::text FROM outbox_events WHERE id = %s", committed)
    assert row["attempts"] == 1 and row["last_status_code"] == 200 and row["delivered_at"] is not None
    wait_for(lambda: env.db.value("SELECT processed_at FROM outbox_events WHERE id = %s", committed),
             what="the event to be processed")
    [att] = attempts_of(env, row["id"])
    assert (att["outcome"], att["status_code"], att["error"]) == ("succeeded", 200, None)
    assert att["response_excerpt"] == "thanks" and att["duration_ms"] > 0

    # A later event arriving proves the relay went past the first one; the
    # rolled-back intent never existed and the committed one came once.
    later = emit(env, "order.updated", {"id": "o2"})
    wait_status(env, later, ep, "SUCCEEDED")
    got = rcv.got()
    assert [r.event_id for r in got] == [committed, later]
    assert rolled_back not in {r.event_id for r in got}
    assert env.db.value("SELECT count(*) FROM outbox_events WHERE id = %s", rolled_back) == 0
    assert env.db.value("SELECT count(*) FROM outbox_deliveries") == 2


# ---- fan-out -----------------------------------------------------------------

def test_fan_out_follows_each_endpoints_filters(env, receivers):
    orders, users, everything = receivers(), receivers(), receivers()
    cfg = outbound_config(env)
    ep_orders = add_endpoint(cfg, orders.url(), "orders", "order.*")
    ep_users = add_endpoint(cfg, users.url(), "users", " user.* , account.closed ")
    env.worker(config=cfg)

    # Nobody subscribes: processed at once, no delivery rows.
    lonely = emit(env, "invoice.paid", {"n": 1})
    wait_for(lambda: env.db.value("SELECT processed_at IS NOT NULL AND fanned_out_at IS NOT NULL"
                                  " FROM outbox_events WHERE id = %s", lonely), what="unsubscribed event processed")
    assert env.db.value("SELECT count(*) FROM outbox_deliveries WHERE event_id = %s", lonely) == 0

    ep_all = add_endpoint(cfg, everything.url(), "everything", "*")
    ids = {t: emit(env, t, {"type": t}) for t in
           ("order.created", "user.created", "suborder.created", "account.closed", "order_created")}
    everything.wait(5)
    for t in ("order.created", "user.created", "account.closed"):
        ep = ep_orders if t.startswith("order") else ep_users
        wait_status(env, ids[t], ep, "SUCCEEDED")
    for event_id in ids.values():
        wait_status(env, event_id, ep_all, "SUCCEEDED")
        wait_for(lambda: env.db.value("SELECT processed_at FROM outbox_events WHERE id = %s", event_id),
                 what="event processed")

    assert sorted(r.json["type"] for r in orders.got()) == ["order.created"]
    assert sorted(r.json["type"] for r in users.got()) == ["account.closed", "user.created"]
    assert sorted(r.json["type"] for r in everything.got()) == sorted(ids)
    # fanned out when it was emitted: the endpoint added later never gets it
    assert lonely not in {r.event_id for r in everything.got()}
    per_event = {r["event_type"]: r["n"] for r in env.db.all(
        "SELECT e.event_type, count(d.id) AS n FROM outbox_events e LEFT JOIN outbox_deliveries d"
        " ON d.event_id = e.id GROUP BY e.event_type")}
    assert per_event == {"invoice.paid": 0, "order.created": 2, "user.created": 2, "suborder.created": 1,
                         "account.closed": 2, "order_created": 1}
    for rcv, ep in ((orders, ep_orders), (users, ep_users), (everything, ep_all)):
        for req in rcv.got():
            assert_signed(req, ep.secret, req.event_id)


# ---- retries, the DLQ, 410, timeouts, Retry-After ------------------------------

def test_flaky_receiver_gets_it_on_the_fourth_attempt_with_the_endpoint_schedule(env, receivers):
    big = lambda n: (f"boom {n} ".encode() + b"x" * 600)  # noqa: E731 - longer than the excerpt
    rcv = receivers(statuses(500, 500, 500, 200, body=lambda n: big(n) if n < 4 else b"finally"))
    # The global schedule would take hours: the [retry endpoint:flaky] override must be the one used.
    cfg = outbound_config(env, retry_schedule="1h, 1h, 1h",
                          extra="\n[retry endpoint:flaky]\nschedule = 100ms, 100ms, 100ms\n")
    ep = add_endpoint(cfg, rcv.url(), "flaky")
    env.worker(config=cfg)
    event_id = emit(env, "order.paid", {"id": "o7"})

    row = wait_status(env, event_id, ep, "SUCCEEDED", timeout=30)
    got = rcv.got()
    assert len(got) == 4
    assert {r.event_id for r in got} == {event_id}  # the same webhook-id on every retry
    assert len({r.body for r in got}) == 1
    for r in got:
        assert_signed(r, ep.secret, event_id)
    assert (row["attempts"], row["last_status_code"], row["last_error"]) == (4, 200, None)
    atts = attempts_of(env, row["id"])
    assert [a["status_code"] for a in atts] == [500, 500, 500, 200]
    assert [a["outcome"] for a in atts] == ["failed", "failed", "failed", "succeeded"]
    assert [a["error"] for a in atts] == ["HTTP 500", "HTTP 500", "HTTP 500", None]
    assert [a["response_excerpt"] for a in atts] == [big(1)[:512].decode(), big(2)[:512].decode(),
                                                     big(3)[:512].decode(), "finally"]
    assert env.db.value("SELECT processed_at IS NOT NULL FROM outbox_events WHERE id = %s", event_id)
    assert env.db.value("SELECT count(*) FROM dead_letters") == 0


def test_always_failing_receiver_is_dead_lettered_after_four_attempts(env, receivers):
    fixed = threading.Event()
    rcv = receivers(lambda req: (200, {}, b"ok") if fixed.is_set() else (503, {}, b"down for maintenance"))
    cfg = outbound_config(env)
    ep = add_endpoint(cfg, rcv.url(), "broken")
    alerts = env.redis.pubsub()
    alerts.subscribe(env.key("alerts"))
    wait_for(lambda: alerts.get_message(timeout=0.1), what="alert subscription")  # the subscribe confirmation
    env.worker(config=cfg)
    event_id = emit(env, "order.cancelled", {"id": "o9"})

    row = wait_status(env, event_id, ep, "DEAD", timeout=30)
    assert (row["attempts"], row["last_status_code"], row["last_error"]) == (4, 503, "HTTP 503")
    assert row["delivered_at"] is None
    dl = env.db.one("SELECT * FROM dead_letters WHERE source = 'delivery' AND source_id = %s", str(row["id"]))
    assert dl is not None
    assert (dl["reason"], dl["attempts"], dl["last_error"]) == ("retries exhausted", 4, "HTTP 503")
    atts = attempts_of(env, row["id"])
    assert [(a["outcome"], a["status_code"], a["error"]) for a in atts] == [("failed", 503, "HTTP 503")] * 4
    assert all(a["response_excerpt"] == "down for maintenance" for a in atts)
    assert env.db.value("SELECT processed_at IS NOT NULL FROM outbox_events WHERE id = %s", event_id)

    def alert():
        m = alerts.get_message(timeout=0.2)
        return m and m["type"] == "message" and json.loads(m["data"])
    msg = wait_for(alert, what="an alert on the alerts channel")
    alerts.close()
    assert msg["source"] == "delivery" and msg["id"] == str(row["id"])
    assert msg["partner"] == "broken" and msg["attempts"] == 4 and msg["severity"] == "high"
    assert event_id in json.dumps(msg)

    # Acked in Redis (nothing left to send), and the receiver saw exactly four.
    wait_for(lambda: env.redis.zscore(env.key("{delivery}:inflight"), str(row["id"])) is None
             and env.redis.zscore(env.key("{delivery}:due"), str(row["id"])) is None, what="the delivery acked")
    got = rcv.got()
    assert len(got) == 4 and {r.event_id for r in got} == {event_id}

    # Fixed receiver, replayed from the DLQ: sent again with the same webhook-id, and done.
    fixed.set()
    r = run_hookd(["-c", str(cfg), "dlq", "replay", str(dl["id"])])
    assert r.returncode == 0, r.stderr
    row = wait_status(env, event_id, ep, "SUCCEEDED")
    assert row["replayed_at"] is not None and (row["attempts"], row["last_status_code"]) == (1, 200)
    assert [r.event_id for r in rcv.got()] == [event_id] * 5
    assert_signed(rcv.got()[4], ep.secret, event_id)
    assert env.db.value("SELECT replayed_at IS NOT NULL FROM dead_letters WHERE id = %s", dl["id"])
    wait_for(lambda: env.db.value("SELECT processed_at FROM outbox_events WHERE id = %s", event_id),
             what="the event processed again after the replay")


def one_delivery_retrying(env, receivers, endpoint_name: str):
    """A receiver that always answers 500, one endpoint on an hourly retry
    schedule, a worker, and one event whose delivery has failed once:
    (receiver, config, endpoint, event id, delivery row)."""
    rcv = receivers(statuses(500))
    cfg = outbound_config(env, retry_schedule="1h, 1h, 1h")
    ep = add_endpoint(cfg, rcv.url(), endpoint_name)
    env.worker(config=cfg)
    event_id = emit(env, "order.created", {"id": "o1"})
    return rcv, cfg, ep, event_id, wait_status(env, event_id, ep, "RETRYING")


def test_delivery_pending_when_its_endpoint_is_disabled_is_dead_lettered_unsent(env, receivers):
    rcv, cfg, ep, event_id, row = one_delivery_retrying(env, receivers, "paused")
    assert endpoint_cli(cfg, "disable", "paused").returncode == 0
    make_retry_due_now(env, row["id"])

    row = wait_status(env, event_id, ep, "DEAD")
    dl = env.db.one("SELECT * FROM dead_letters WHERE source = 'delivery' AND source_id = %s", str(row["id"]))
    assert dl["reason"] == "endpoint disabled"
    assert len(rcv.got()) == 1  # the disabled endpoint was not sent the retry
    assert attempts_of(env, row["id"])[-1]["error"] == "the endpoint is disabled"


def test_410_gone_disables_the_endpoint_and_dead_letters_at_once(env, receivers):
    gone = receivers(statuses(410, body=lambda n: b"no such hook"))
    other = receivers()
    cfg = outbound_config(env)
    ep = add_endpoint(cfg, gone.url(), "gone")
    ep_other = add_endpoint(cfg, other.url(), "other")
    env.worker(config=cfg)
    event_id = emit(env, "order.created", {"id": "o1"})

    row = wait_status(env, event_id, ep, "DEAD")
    assert (row["attempts"], row["last_status_code"]) == (1, 410)
    [att] = attempts_of(env, row["id"])
    assert (att["status_code"], att["response_excerpt"]) == (410, "no such hook")
    assert att["outcome"] != "succeeded"
    endpoint = env.db.one("SELECT enabled, disabled_reason FROM webhook_endpoints WHERE id = %s", ep.id)
    assert endpoint["enabled"] is False and "410" in endpoint["disabled_reason"]
    dl = env.db.one("SELECT * FROM dead_letters WHERE source = 'delivery' AND source_id = %s", str(row["id"]))
    assert (dl["reason"], dl["attempts"]) == ("endpoint gone (410)", 1)
    wait_status(env, event_id, ep_other, "SUCCEEDED")
    wait_for(lambda: env.db.value("SELECT processed_at FROM outbox_events WHERE id = %s", event_id),
             what="event processed (one delivery succeeded, one dead)")

    # Disabled: a later event is fanned out to the other endpoint only.
    later = emit(env, "order.created", {"id": "o2"})
    wait_status(env, later, ep_other, "SUCCEEDED")
    assert delivery(env, later, ep) is None
    assert len(gone.got()) == 1
    listing = endpoint_cli(cfg, "list")
    assert listing.returncode == 0
    [line] = [l for l in listing.stdout.splitlines() if l.startswith("gone ")]
    assert " no " in line and "410" in line


def test_receiver_that_never_answers_times_out(env, receivers):
    rcv = receivers(lambda req: HANG)
    cfg = outbound_config(env, retry_schedule="100ms, 100ms, 100ms")
    ep = add_endpoint(cfg, rcv.url(), "silent", "*", "--timeout", "500ms")
    assert env.db.value("SELECT timeout_ms FROM webhook_endpoints WHERE id = %s", ep.id) == 500
    env.worker(config=cfg)
    event_id = emit(env, "order.created", {"id": "o1"})

    row = wait_status(env, event_id, ep, "DEAD", timeout=30)
    atts = attempts_of(env, row["id"])
    assert [(a["outcome"], a["status_code"], a["error"]) for a in atts] == [("failed", None, "timeout")] * 4
    assert all(a["duration_ms"] >= 400 for a in atts)  # the timeout fired, not a fast failure
    assert (row["last_error"], row["last_status_code"]) == ("timeout", None)
    dl = env.db.one("SELECT * FROM dead_letters WHERE source_id = %s", str(row["id"]))
    assert (dl["reason"], dl["last_error"]) == ("retries exhausted", "timeout")
    got = rcv.got()
    assert len(got) == 4 and {r.event_id for r in got} == {event_id}


def test_retry_after_beats_a_shorter_schedule(env, receivers):
    seconds = receivers(statuses(429, 200, headers={"Retry-After": "2"}))
    date = receivers()  # Retry-After as an HTTP date, three seconds ahead when answered
    date.respond = lambda req: ((503, {"Retry-After": formatdate(time.time() + 3, usegmt=True)}, b"later")
                                if req.n == 1 else (200, {}, b"ok"))
    cfg = outbound_config(env)  # retry schedule: 300 ms
    ep_s = add_endpoint(cfg, seconds.url(), "seconds")
    ep_d = add_endpoint(cfg, date.url(), "date")
    env.worker(config=cfg)
    event_id = emit(env, "order.created", {"id": "o1"})

    def waited(ep: Endpoint):
        def first_failure():
            row = delivery(env, event_id, ep)
            return row and row["status"] == "RETRYING" and row["attempts"] == 1 and row
        row = wait_for(first_failure, what=f"first failure of {ep.name}")
        [att] = attempts_of(env, row["id"])
        return row, att, (row["next_attempt_at"] - att["attempted_at"]).total_seconds()

    row, att, wait_s = waited(ep_s)
    assert (att["status_code"], att["error"], row["last_status_code"]) == (429, "HTTP 429", 429)
    assert 1.99 <= wait_s <= 2.01, wait_s
    row_d, att_d, wait_d = waited(ep_d)
    assert (att_d["status_code"], att_d["error"]) == (503, "HTTP 503")
    assert 1.5 <= wait_d <= 3.5, wait_d  # a date has whole seconds

    for rcv, ep, first_row in ((seconds, ep_s, row), (date, ep_d, row_d)):
        done = wait_status(env, event_id, ep, "SUCCEEDED")
        assert done["attempts"] == 2
        second = attempts_of(env, done["id"])[1]
        assert second["attempted_at"] >= first_row["next_attempt_at"]
        first, again = rcv.got()
        assert first.event_id == again.event_id == event_id
    s1, s2 = seconds.got()
    assert s2.at - s1.at >= 1.9


# ---- TLS ------------------------------------------------------------------------

def test_tls_verifies_the_receivers_certificate(env, receivers, certs):
    good = receivers(tls_ctx=server_tls(certs, "server"))
    wrong = receivers(tls_ctx=server_tls(certs, "wrong"))
    untrusted = receivers(tls_ctx=server_tls(certs, "untrusted"))
    cfg = outbound_config(env, hookd_lines=("allow_private_networks = true", f"ca_file = {certs / 'ca.pem'}"),
                          retry_schedule="1h, 1h, 1h")
    ep_good = add_endpoint(cfg, good.url("localhost"), "good")
    ep_wrong = add_endpoint(cfg, wrong.url("localhost"), "wrong")
    ep_untrusted = add_endpoint(cfg, untrusted.url("localhost"), "untrusted")
    env.worker(config=cfg)
    event_id = emit(env, "order.created", {"id": "o1", "card": "secret stuff"})

    wait_status(env, event_id, ep_good, "SUCCEEDED")
    [req] = good.got()
    assert_signed(req, ep_good.secret, event_id)
    assert req.json == {"id": "o1", "card": "secret stuff"}

    def failed_attempt(ep: Endpoint):
        row = wait_status(env, event_id, ep, "RETRYING")
        [att] = attempts_of(env, row["id"])
        assert att["status_code"] is None and row["last_error"] == att["error"]
        return att["error"]

    err = failed_attempt(ep_wrong)
    assert err.startswith("tls: certificate verify failed") and "hostname mismatch" in err, err
    err = failed_attempt(ep_untrusted)
    assert err.startswith("tls: certificate verify failed") and "self" in err and "signed" in err, err
    # the refused servers never saw the request
    assert wrong.got() == [] and untrusted.got() == []


# ---- the SSRF guard -------------------------------------------------------------

def test_private_addresses_are_refused_by_default(env, receivers):
    rcv = receivers()
    cfg = env.config(retry_schedule="1h, 1h, 1h")  # allow_private_networks stays off
    for url in (rcv.url(), rcv.url("localhost")):
        r = endpoint_cli(cfg, "add", "--url", url, "--name", "local")
        assert r.returncode != 0
        assert "private, loopback or link-local" in r.stderr and "allow_private_networks = true" in r.stderr
        assert len(r.stderr.strip().splitlines()) == 1
    assert env.db.value("SELECT count(*) FROM webhook_endpoints") == 0

    # Plain SQL skips the CLI's check; the send-time check still refuses.
    ep_id = env.db.value("INSERT INTO webhook_endpoints (name, url, secret) VALUES ('sneaky', %s, %s)"
                         " RETURNING id::text", rcv.url(), "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
    env.worker(config=cfg)
    event_id = emit(env, "order.created", {"id": "o1"})
    ep = Endpoint("sneaky", ep_id, "", rcv.url())
    row = wait_status(env, event_id, ep, "RETRYING")
    [att] = attempts_of(env, row["id"])
    assert att["status_code"] is None
    assert "127.0.0.1" in att["error"] and "allow_private_networks" in att["error"], att["error"]
    assert row["last_error"] == att["error"]
    assert rcv.got() == []


def test_a_url_invalid_at_send_time_is_dead_lettered_at_once(env):
    """A URL no request can ever be sent to - put in
    by plain SQL, which skips `endpoint add`'s check - is dead-lettered on
    its first attempt, the reason naming the problem but not the URL (it may
    hold a token), instead of spending the retry schedule. (A private address
    is different: test_private_addresses_are_refused_by_default, retried.)"""
    cfg = env.config(retry_schedule="1h, 1h, 1h")
    bad = {"ftp": "ftp://example.com/hook?token=tok-ftp-1", "userinfo": "https://user:pw-9c1@example.com/hook",
           "space": "https://example.com/a hook?token=tok-sp-2", "port": "https://example.com:99999/hook"}
    ids = {name: env.db.value("INSERT INTO webhook_endpoints (name, url, secret) VALUES (%s, %s, %s)"
                              " RETURNING id::text", name, url, "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
           for name, url in bad.items()}
    env.worker(config=cfg)
    event_id = emit(env, "order.created", {"id": "o1"})
    for name, url in bad.items():
        row = wait_status(env, event_id, Endpoint(name, ids[name], "", url), "DEAD")
        assert row["attempts"] == 1, row
        dl = env.db.one("SELECT * FROM dead_letters WHERE source = 'delivery' AND source_id = %s", str(row["id"]))
        assert dl["reason"].startswith("invalid endpoint URL: "), dl
        assert dl["attempts"] == 1 and dl["last_error"] == dl["reason"] == row["last_error"], dl
        for secret in ("tok-", "pw-9c1"):
            assert secret not in dl["reason"], dl
    wait_for(lambda: env.db.value("SELECT processed_at IS NOT NULL FROM outbox_events WHERE id = %s", event_id),
             what="the event finished: every delivery dead-lettered")


# ---- crashes and isolation --------------------------------------------------------

def assert_sent_again_by_a_new_worker(env, cfg, rcv, ep, event_id, first) -> None:
    """After a kill -9 mid-delivery: a new worker sends the same event again,
    same webhook-id and body, and records exactly one attempt."""
    env.worker(config=cfg)
    row = wait_status(env, event_id, ep, "SUCCEEDED", timeout=30)
    got = rcv.got()
    assert len(got) == 2
    assert got[0].event_id == got[1].event_id == event_id == first.event_id
    assert got[0].body == got[1].body
    assert_signed(got[1], ep.secret, event_id)
    assert row["attempts"] == 1
    [att] = attempts_of(env, row["id"])
    assert (att["outcome"], att["status_code"]) == ("succeeded", 200)
    assert env.db.value("SELECT processed_at IS NOT NULL FROM outbox_events WHERE id = %s", event_id)


def test_worker_killed_mid_delivery_sends_again_with_the_same_id(env, receivers):
    """Killed after the fan-out committed, while the first attempt (adopted by
    the regular path under this worker's lease) is still on the wire."""
    killed = threading.Event()
    rcv = receivers(lambda req: HANG if not killed.is_set() else (200, {}, b"ok"))
    cfg = outbound_config(env, ("allow_private_networks = true", "first_attempt_window = 100ms"), lease="2s")
    ep = add_endpoint(cfg, rcv.url(), "patient")
    w = env.worker(config=cfg)
    event_id = emit(env, "order.created", {"id": "o1"})

    [first] = rcv.wait(1)
    # The window closed with no answer: the delivery row is PENDING, the event fanned out.
    row = wait_for(lambda: delivery(env, event_id, ep), what="the PENDING delivery row")
    assert (row["status"], row["attempts"]) == ("PENDING", 0)
    assert env.db.value("SELECT fanned_out_at IS NOT NULL FROM outbox_events WHERE id = %s", event_id)
    w.kill9()
    killed.set()
    rcv.release.set()  # the held request closes; nobody is listening any more
    row = delivery(env, event_id, ep)
    assert (row["status"], row["attempts"]) == ("PENDING", 0)
    assert attempts_of(env, row["id"]) == []

    assert_sent_again_by_a_new_worker(env, cfg, rcv, ep, event_id, first)


def test_worker_killed_before_its_fan_out_commits_sends_again_with_the_same_id(env, receivers):
    """Killed while the fan-out's transaction still waits for the first
    attempt: nothing of the pass is written, the event is claimed again."""
    killed = threading.Event()
    rcv = receivers(lambda req: HANG if not killed.is_set() else (200, {}, b"ok"))
    cfg = outbound_config(env, ("allow_private_networks = true", "first_attempt_window = 1h"))
    ep = add_endpoint(cfg, rcv.url(), "patient")
    w = env.worker(config=cfg)
    event_id = emit(env, "order.created", {"id": "o1"})

    [first] = rcv.wait(1)
    w.kill9()
    killed.set()
    rcv.release.set()
    assert delivery(env, event_id, ep) is None
    assert env.db.value("SELECT fanned_out_at IS NULL AND processed_at IS NULL FROM outbox_events WHERE id = %s",
                        event_id)
    assert env.db.value("SELECT count(*) FROM attempts") == 0

    assert_sent_again_by_a_new_worker(env, cfg, rcv, ep, event_id, first)


def test_dead_endpoint_does_not_hold_up_a_healthy_one(env, receivers):
    dead = receivers(lambda req: HANG)
    healthy = receivers()
    cfg = outbound_config(env, lease="30s", retry_schedule="1h, 1h, 1h")
    ep_dead = add_endpoint(cfg, dead.url(), "dead", "slow.*", "--timeout", "3s", "--max-inflight", "1")
    ep_ok = add_endpoint(cfg, healthy.url(), "healthy", "fast.*")
    env.worker(config=cfg)
    slow = [emit(env, "slow.thing", {"n": i}) for i in range(4)]
    fast = [emit(env, "fast.thing", {"n": i}) for i in range(4)]

    for event_id in fast:
        wait_status(env, event_id, ep_ok, "SUCCEEDED")
    # The dead endpoint holds its request open; none of its deliveries has an outcome yet.
    dead.wait(1)
    # The fan-out inserts the rows when its pass settles (after first_attempt_window).
    dead_rows = wait_for(lambda: all(rows := [delivery(env, e, ep_dead) for e in slow]) and rows,
                         what="the dead endpoint's delivery rows")
    assert all(r["status"] == "PENDING" and r["attempts"] == 0 for r in dead_rows), dead_rows
    assert all(attempts_of(env, r["id"]) == [] for r in dead_rows)
    assert sorted(r.json["n"] for r in healthy.got()) == [0, 1, 2, 3]

    # They were truly in flight: the first one times out after the healthy ones were all delivered.
    first_fail = wait_for(lambda: env.db.one(
        "SELECT a.* FROM attempts a JOIN outbox_deliveries d ON d.id = a.source_id WHERE d.endpoint_id = %s"
        " ORDER BY a.id LIMIT 1", ep_dead.id), what="the dead endpoint's first timeout")
    assert first_fail["error"] == "timeout"
    last_ok = env.db.value("SELECT max(delivered_at) FROM outbox_deliveries WHERE endpoint_id = %s", ep_ok.id)
    assert first_fail["attempted_at"] > last_ok
    assert {r.event_id for r in dead.got()} <= set(slow)


# ---- the endpoint CLI ------------------------------------------------------------

def test_endpoint_cli_list_show_disable_enable_rotate(env, receivers):
    alpha_rcv, beta_rcv = receivers(), receivers()
    cfg = outbound_config(env)
    old = "whsec_" + "QUJDREVGR0hJSktMTU5PUFFSU1RVVldY"  # base64 of 24 bytes
    alpha = add_endpoint(cfg, alpha_rcv.url(), "alpha", "order.*,user.*", "--secret", old, "--timeout", "2s",
                         "--max-inflight", "4")
    assert alpha.secret == old
    beta = add_endpoint(cfg, beta_rcv.url(), "beta", "*")

    listing = endpoint_cli(cfg, "list")
    assert listing.returncode == 0, listing.stderr
    lines = listing.stdout.splitlines()
    assert lines[0].split() == ["NAME", "ENABLED", "EVENTS", "URL"]
    assert lines[1].split() == ["alpha", "yes", "order.*,user.*", alpha_rcv.url()]
    assert lines[2].split() == ["beta", "yes", "*", beta_rcv.url()]

    shown = endpoint_cli(cfg, "show", "alpha")
    assert shown.returncode == 0, shown.stderr
    fields = dict(l.split(": ", 1) for l in shown.stdout.splitlines())
    assert fields["id"] == alpha.id and fields["url"] == alpha_rcv.url() and fields["events"] == "order.*,user.*"
    assert (fields["enabled"], fields["timeout_ms"], fields["max_inflight"]) == ("yes", "2000", "4")
    assert old not in shown.stdout and "hidden" in fields["secret"]
    assert f"secret: {old}" in endpoint_cli(cfg, "show", "alpha", "--show-secret").stdout
    missing = endpoint_cli(cfg, "show", "nope")
    assert missing.returncode != 0 and "no endpoint named 'nope'" in missing.stderr
    bad = endpoint_cli(cfg, "add", "--url", alpha_rcv.url(), "--name", "bad", "--secret", "not-a-secret")
    assert bad.returncode != 0 and "whsec_" in bad.stderr

    env.worker(config=cfg)

    # disabled: no new deliveries (beta is the barrier proving the relay ran)
    r = endpoint_cli(cfg, "disable", "alpha")
    assert r.returncode == 0 and "disabled" in r.stdout
    assert "disabled by an operator" in endpoint_cli(cfg, "list").stdout
    assert "enabled: no" in endpoint_cli(cfg, "show", "alpha").stdout
    e1 = emit(env, "order.created", {"n": 1})
    wait_status(env, e1, beta, "SUCCEEDED")
    assert delivery(env, e1, alpha) is None and alpha_rcv.got() == []

    # enabled again: delivered, signed with the one secret
    assert endpoint_cli(cfg, "enable", "alpha").returncode == 0
    assert env.db.one("SELECT enabled, disabled_reason FROM webhook_endpoints WHERE name = 'alpha'") == \
        {"enabled": True, "disabled_reason": None}
    e2 = emit(env, "user.created", {"n": 2})
    wait_status(env, e2, alpha, "SUCCEEDED")
    [req2] = alpha_rcv.got()
    assert signatures(req2) == [expected_signature(old, req2)]

    # rotated: both signatures during the grace period, new first
    new = "whsec_" + "emFiY2RlZmdoaWprbG1ub3BxcnN0dXZ3"
    rot = endpoint_cli(cfg, "rotate-secret", "alpha", "--secret", new, "--grace", "1h")
    assert rot.returncode == 0, rot.stderr
    assert f"new secret {new}" in rot.stdout
    e3 = emit(env, "order.paid", {"n": 3})
    wait_status(env, e3, alpha, "SUCCEEDED")
    req3 = alpha_rcv.got()[1]
    assert req3.event_id == e3
    sigs = signatures(req3)
    assert sigs == [expected_signature(new, req3), expected_signature(old, req3)]

    # grace over (made so in the row rather than waited for): the new secret alone
    env.db.all("UPDATE webhook_endpoints SET previous_secret_expires_at = now() - interval '1 second'"
               " WHERE name = 'alpha'")
    e4 = emit(env, "order.paid", {"n": 4})
    wait_status(env, e4, alpha, "SUCCEEDED")
    req4 = alpha_rcv.got()[2]
    assert signatures(req4) == [expected_signature(new, req4)]

    # a generated secret is a valid whsec_ and is what gets used
    rot = endpoint_cli(cfg, "rotate-secret", "beta")
    assert rot.returncode == 0, rot.stderr
    generated = rot.stdout.split("new secret ", 1)[1].split()[0]
    assert generated.startswith("whsec_") and generated != beta.secret
    e5 = emit(env, "invoice.sent", {"n": 5})
    wait_status(env, e5, beta, "SUCCEEDED")
    req5 = next(r for r in beta_rcv.got() if r.event_id == e5)
    assert signatures(req5) == [expected_signature(generated, req5), expected_signature(beta.secret, req5)]


# ---- outbox events written by the state machine ----------------------------------

PARCEL_MACHINE = """
[machine parcel]
initial = new
transition parcel.sent = new -> sent
emit parcel.sent = parcel.notify
"""


def test_machine_emit_writes_an_outbox_event_that_is_delivered(env, receivers):
    rcv = receivers()
    cfg = outbound_config(env, extra=PARCEL_MACHINE)
    ep = add_endpoint(cfg, rcv.url(), "parcels", "parcel.*")
    w = env.worker(config=cfg)
    inbound = order_event("parcel.sent", "p1", carrier="dhl")
    status, _, body = post_standard(w, "shop", "msg-parcel-1", inbound)
    assert status == 200, body

    [req] = rcv.wait(1)
    ev = env.db.one("SELECT * FROM outbox_events WHERE event_type = 'parcel.notify'")
    assert ev is not None and (ev["aggregate_type"], ev["aggregate_id"]) == ("parcel", "p1")
    wait_status(env, ev["id"], ep, "SUCCEEDED")
    assert_signed(req, ep.secret, str(ev["id"]))
    payload = req.json
    assert payload["type"] == "parcel.notify" and payload["entity_type"] == "parcel"
    assert payload["entity_id"] == "p1" and payload["to"] == "sent" and payload["cause"] == "parcel.sent"
    assert payload["from"] == "new" and payload["data"] == json.loads(inbound)
    inbox = env.db.one("SELECT id::text, status, processed_at FROM webhook_inbox"
                       " WHERE partner_event_id = 'msg-parcel-1'")
    assert inbox["status"] == "PROCESSED" and payload["inbox_id"] == inbox["id"]
    # one transaction: the same now() for the inbox verdict and the outbox insert
    assert ev["created_at"] == inbox["processed_at"]
    assert env.db.value("SELECT state FROM hookd_entities WHERE entity_type = 'parcel' AND entity_id = 'p1'") == "sent"
    # an order event (no emit configured) writes nothing to the outbox
    status, _, _ = post_standard(w, "shop", "msg-order-1", order_event("order.started", "o1"))
    assert status == 200
    wait_for(lambda: env.db.value("SELECT status FROM webhook_inbox WHERE partner_event_id = 'msg-order-1'")
             == "PROCESSED", what="order event processed")
    assert env.db.value("SELECT count(*) FROM outbox_events") == 1
    assert len(rcv.got()) == 1



def test_every_event_is_processed_once_all_its_deliveries_finish(env, receivers):
    """processed_at must be set even when the outcomes of one event's
    deliveries are recorded by concurrent transactions."""
    rcvs = [receivers() for _ in range(3)]
    cfg = outbound_config(env)
    for i, r in enumerate(rcvs):
        add_endpoint(cfg, r.url(), f"ep{i}")
    env.worker(config=cfg)
    ids = [emit(env, "order.created", {"n": i}) for i in range(60)]
    wait_for(lambda: env.db.value("SELECT count(*) FROM outbox_deliveries WHERE status = 'SUCCEEDED'") == 3 * len(ids),
             what="every delivery to succeed")
    assert sorted(len(r.got()) for r in rcvs) == [len(ids)] * 3

    def unprocessed():
        return env.db.all("SELECT e.id, array_agg(d.status) AS deliveries FROM outbox_events e"
                          " JOIN outbox_deliveries d ON d.event_id = e.id WHERE e.processed_at IS NULL GROUP BY e.id")
    try:
        wait_for(lambda: not unprocessed(), timeout=10, what="every event to be processed")
    except AssertionError:
        stuck = unprocessed()
        raise AssertionError(f"{len(stuck)} of {len(ids)} events keep processed_at NULL although all their"
                             f" deliveries finished: {stuck[:3]}")


# ---- first attempts in the fan-out (relay.c) ------------------------------------

def test_first_attempt_success_is_one_row_with_its_attempt_and_never_scheduled(env, receivers):
    rcv = receivers(statuses(200, body=lambda n: b"fine"))
    cfg = outbound_config(env)
    ep = add_endpoint(cfg, rcv.url(), "fast")
    w = env.worker(config=cfg)
    event_id = emit(env, "order.created", {"id": "o1"})
    row = wait_status(env, event_id, ep, "SUCCEEDED")
    assert row["attempts"] == 1 and row["last_status_code"] == 200
    [att] = attempts_of(env, row["id"])
    assert (att["outcome"], att["status_code"], att["response_excerpt"]) == ("succeeded", 200, "fine")
    assert att["worker_id"]
    assert env.db.value("SELECT processed_at IS NOT NULL FROM outbox_events WHERE id = %s", event_id)
    # Delivered by the fan-out itself: the delivery queue in Redis never saw it.
    assert env.redis.zscore(env.key("{delivery}:due"), str(row["id"])) is None
    assert env.redis.zscore(env.key("{delivery}:inflight"), str(row["id"])) is None
    wait_for(lambda: metrics_value(w, "hookd_delivered_total") == 1, what="hookd_delivered_total 1")


def test_first_attempt_failure_continues_on_the_regular_path(env, receivers):
    """One event, two endpoints: the first attempt succeeds at one and fails
    at the other. The fan-out records the success; the failure is retried
    from Redis; the event is processed only when both are done."""
    ok, flaky = receivers(), receivers(statuses(503, 200))
    cfg = outbound_config(env, extra="[retry endpoint:flaky]\nschedule = 1h\n")
    ep_ok = add_endpoint(cfg, ok.url(), "ok")
    ep_flaky = add_endpoint(cfg, flaky.url(), "flaky")
    env.worker(config=cfg)
    event_id = emit(env, "order.created", {"id": "o1"})
    wait_status(env, event_id, ep_ok, "SUCCEEDED")
    row = wait_status(env, event_id, ep_flaky, "RETRYING")
    assert row["attempts"] == 1 and row["last_status_code"] == 503
    [att] = attempts_of(env, row["id"])
    assert (att["outcome"], att["status_code"]) == ("failed", 503)
    assert env.db.value("SELECT processed_at FROM outbox_events WHERE id = %s", event_id) is None

    make_retry_due_now(env, row["id"])
    row = wait_status(env, event_id, ep_flaky, "SUCCEEDED")
    assert row["attempts"] == 2
    wait_for(lambda: env.db.value("SELECT processed_at IS NOT NULL FROM outbox_events WHERE id = %s", event_id),
             what="the event processed once both deliveries are done")
    assert len(ok.got()) == 1 and len(flaky.got()) == 2
    assert flaky.got()[0].event_id == flaky.got()[1].event_id == event_id


def test_answer_after_the_window_is_recorded_by_the_regular_path(env, receivers):
    rcv = receivers(lambda req: Held(200, b"late but fine"))
    cfg = outbound_config(env, ("allow_private_networks = true", "first_attempt_window = 50ms"))
    ep = add_endpoint(cfg, rcv.url(), "late")
    w = env.worker(config=cfg)
    event_id = emit(env, "order.created", {"id": "o1"})
    rcv.wait(1)
    row = wait_for(lambda: delivery(env, event_id, ep), what="the PENDING row the window left")
    assert (row["status"], row["attempts"]) == ("PENDING", 0)
    # This worker holds it under its lease while the request is still out.
    assert env.redis.zscore(env.key("{delivery}:inflight"), str(row["id"])) is not None
    assert env.redis.zscore(env.key("{delivery}:due"), str(row["id"])) is None
    rcv.release.set()
    row = wait_status(env, event_id, ep, "SUCCEEDED")
    assert row["attempts"] == 1
    [att] = attempts_of(env, row["id"])
    assert (att["outcome"], att["status_code"]) == ("succeeded", 200)
    assert len(rcv.got()) == 1  # not sent twice
    wait_for(lambda: env.redis.zscore(env.key("{delivery}:inflight"), str(row["id"])) is None,
             what="the lease released")
    wait_for(lambda: env.db.value("SELECT processed_at IS NOT NULL FROM outbox_events WHERE id = %s", event_id),
             what="the event processed")
    wait_for(lambda: metrics_value(w, "hookd_delivered_total") == 1, what="hookd_delivered_total 1")


def test_a_window_that_runs_out_halves_the_next_passes(env, receivers):
    """A pass whose first_attempt_window runs out before its answers makes
    the next passes claim half as many deliveries (passes of a fixed size,
    on a slow spell, would keep outlasting their windows and handing most
    deliveries to the costlier regular path). Every delivery still
    arrives once, each counted on the fan-out path it took."""
    rcv = receivers(lambda req: Held(200))
    cfg = outbound_config(env, ("allow_private_networks = true", "first_attempt_window = 50ms"), log_level="debug")
    add_endpoint(cfg, rcv.url(), "held")
    w = env.worker(config=cfg)
    env.db.value("SELECT count(hookd_emit('order', 'h' || g, 'order.created', jsonb_build_object('n', g)))"
                 " FROM generate_series(1, 200) g")

    def ran_out() -> list[int]:
        return [int(m) for m in re.findall(r"event=relay\.fanned_out .*window_ran_out=true next_batch=(\d+)",
                                           w.output())]
    # the first claim probes 32 events, the second takes the other 168: both windows run out
    wait_for(lambda: len(ran_out()) >= 2, timeout=30, what="two passes whose window ran out")
    assert ran_out()[:2] == [500, 250]
    rcv.release.set()
    wait_for(lambda: env.db.value("SELECT count(*) FROM outbox_deliveries WHERE status = 'SUCCEEDED'") == 200,
             timeout=60, what="200 deliveries SUCCEEDED")
    assert len(rcv.got()) == 200 and len({r.headers["webhook-id"] for r in rcv.got()}) == 200
    assert metrics_value(w, re.escape('hookd_fanout_deliveries_total{path="handed_over"}')) == 200
    assert metrics_value(w, "hookd_fanout_window_closed_total") >= 2


def test_window_off_schedules_every_new_delivery_through_redis(env, receivers):
    rcv = receivers(lambda req: Held(200))
    cfg = outbound_config(env, ("allow_private_networks = true", "first_attempt_window = 0s"))
    ep = add_endpoint(cfg, rcv.url(), "queued")
    env.worker(config=cfg)
    event_id = emit(env, "order.created", {"id": "o1"})
    [req] = rcv.wait(1)
    # The fan-out committed before anything was sent.
    row = delivery(env, event_id, ep)
    assert (row["status"], row["attempts"]) == ("PENDING", 0)
    assert env.db.value("SELECT fanned_out_at IS NOT NULL FROM outbox_events WHERE id = %s", event_id)
    rcv.release.set()
    row = wait_status(env, event_id, ep, "SUCCEEDED")
    assert row["attempts"] == 1 and req.event_id == event_id
    assert_signed(req, ep.secret, event_id)


def test_an_event_fanned_out_again_keeps_its_existing_deliveries(env, receivers):
    """An operator resets fanned_out_at by hand: the relay claims the event
    again and sends it again (same webhook-id: at least once), but the
    existing delivery row stays the only one and keeps its history."""
    rcv = receivers()
    cfg = outbound_config(env)
    ep = add_endpoint(cfg, rcv.url(), "twice")
    env.worker(config=cfg)
    event_id = emit(env, "order.created", {"id": "o1"})
    first = wait_status(env, event_id, ep, "SUCCEEDED")
    env.db.all("UPDATE outbox_events SET fanned_out_at = NULL, processed_at = NULL WHERE id = %s", event_id)
    wait_for(lambda: env.db.value("SELECT processed_at IS NOT NULL AND fanned_out_at IS NOT NULL"
                                  " FROM outbox_events WHERE id = %s", event_id), what="the event settled again")
    assert [r.event_id for r in rcv.wait(2)] == [event_id, event_id]
    rows = env.db.all("SELECT id, status, attempts FROM outbox_deliveries WHERE event_id = %s", event_id)
    assert [(r["id"], r["status"], r["attempts"]) for r in rows] == [(first["id"], "SUCCEEDED", 1)]
    assert len(attempts_of(env, first["id"])) == 1


def test_an_event_committed_late_behind_a_running_backlog_is_still_sent(env, receivers):
    """With a backlog, a lane's claim starts after the events the other lane
    holds (relay.c, claim_after_sql) and so passes over anything older. An
    application transaction that began before the backlog was written and
    commits while it is being sent makes exactly such an event: it must
    still go out (once), and not only when the backlog has drained: every
    fourth claim starts from the oldest unfanned event again (BOUNDED_MAX)."""
    rcv = receivers()
    cfg = outbound_config(env, log_level="debug")
    add_endpoint(cfg, rcv.url(), "backlog")
    w = env.worker(config=cfg)
    late = psycopg2.connect(env.db_url)
    try:
        with late.cursor() as cur:  # created_at = this transaction's start: older than the whole backlog
            cur.execute("SELECT hookd_emit('Order', 'late', 'order.created', '{\"late\": true}'::jsonb)::text")
            late_id = cur.fetchone()[0]
            n = 6000  # six passes of 1,000
            env.db.value("SELECT count(hookd_emit('Order', 'o' || g, 'order.created', jsonb_build_object('n', g)))"
                         " FROM generate_series(1, %s) g", n)
            rcv.wait(1)  # passes are running
            late.commit()
    finally:
        late.close()
    wait_for(lambda: env.db.value("SELECT count(*) FROM outbox_deliveries WHERE status = 'SUCCEEDED'") == n + 1,
             timeout=60, what="every delivery, the late event's too")
    sent = by_event(rcv.got())
    assert len(sent) == n + 1 and len(sent[late_id]) == 1
    # Delivery ids are UUIDv7, made at the claim: they sort by when each
    # event was claimed (fanned_out_at is when its pass committed).
    later = env.db.value("SELECT count(*) FROM outbox_deliveries WHERE id >"
                         " (SELECT id FROM outbox_deliveries WHERE event_id = %s)", late_id)
    assert later >= 500, (f"the late event was claimed after all but {later} of {n}: only after the backlog; "
                          + str(re.findall(r"relay\.fanned_out (.*)", w.output())))
    assert env.db.value("SELECT count(*) FROM outbox_events WHERE processed_at IS NULL") == 0
    passes = re.findall(r"relay\.fanned_out .*claimed_after_other_pass=(\w+)", w.output())
    assert "true" in passes and "false" in passes, passes  # both kinds of claim ran


# ---- reload ---------------------------------------------------------------------------

def test_reload_turning_allow_private_networks_off_refuses_the_next_delivery(env, receivers):
    """The SSRF guard follows SIGHUP: after allow_private_networks goes from
    true to false, the next delivery to 127.0.0.1 is refused at send time,
    also over the keep-alive connection the first delivery left open."""
    rcv = receivers()
    cfg = outbound_config(env, retry_schedule="1h, 1h, 1h")
    ep = add_endpoint(cfg, rcv.url(), "local")
    w = env.worker(config=cfg)
    first = emit(env, "order.created", {"id": "o1"})
    wait_status(env, first, ep, "SUCCEEDED")

    cfg.write_text(cfg.read_text().replace("allow_private_networks = true\n", "allow_private_networks = false\n"))
    before = w.output().count("config.reloaded")
    w.signal(signal.SIGHUP)
    wait_for(lambda: w.output().count("config.reloaded") > before, what="config.reloaded")
    assert "config.restart_needed" not in w.output()

    second = emit(env, "order.created", {"id": "o2"}, aggregate_id="o2")
    row = wait_status(env, second, ep, "RETRYING")
    [att] = attempts_of(env, row["id"])
    assert att["status_code"] is None and "allow_private_networks" in att["error"], att
    assert [r.event_id for r in rcv.got()] == [first]


def test_reload_with_an_unreadable_ca_file_keeps_delivering_with_the_old_one(env, receivers, tmp_path):
    rcv = receivers()
    cfg = outbound_config(env)
    ep = add_endpoint(cfg, rcv.url(), "local")
    w = env.worker(config=cfg)
    cfg.write_text(cfg.read_text().replace("[hookd]\n", f"[hookd]\nca_file = {tmp_path / 'missing.pem'}\n", 1))
    w.signal(signal.SIGHUP)
    wait_for(lambda: "delivery.reload_failed" in w.output(), what="delivery.reload_failed")
    assert "missing.pem" in w.output()
    event_id = emit(env, "order.created", {"id": "o1"})
    wait_status(env, event_id, ep, "SUCCEEDED")


@pytest.mark.parametrize("retry_after", ["99999999999999999", "9223372036854775807", "Fri, 31 Dec 9999 23:59:59 GMT"])
def test_a_huge_retry_after_waits_the_cap_and_no_longer(env, receivers, retry_after):
    """A receiver's Retry-After is clamped before it is scaled: a number that
    would overflow (UBSan aborted the worker on it) waits the one-hour cap."""
    rcv = receivers(statuses(503, 200, headers={"Retry-After": retry_after}))
    cfg = outbound_config(env)
    ep = add_endpoint(cfg, rcv.url(), "huge")
    env.worker(config=cfg)
    event_id = emit(env, "order.created", {"id": "o1"})
    row = wait_status(env, event_id, ep, "RETRYING")
    [att] = attempts_of(env, row["id"])
    wait_s = (row["next_attempt_at"] - att["attempted_at"]).total_seconds()
    assert 3599 <= wait_s <= 3601, wait_s
