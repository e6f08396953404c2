"""Operating hookd: the DLQ command line (list, show, replay, purge), dead
letter alerts on Redis and to an alert webhook (coalesced, retried),
`hookd status` over a two-worker cluster, and /metrics read with a real
Prometheus text parser and checked against the database."""
import json
import signal
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from hookdtest.client import order_event, post_standard
from hookdtest.signing import SW_SECRET
from hookdtest.util import free_port, wait_for
from hookdtest.worker import run_hookd

OPEN_DLQ = "SELECT count(*) FROM dead_letters WHERE replayed_at IS NULL"

# A second partner, so that filters have something to tell apart.
ACME = """
[partner acme]
scheme = standard-webhooks
secret = {secret}
event_type = json:type
entity_id = json:data.order_id
"""

# The fix for `order.bogus`: a machine that names it.
BOGUS_MACHINE = """
[machine bogus]
initial = draft
transition order.bogus = draft -> done
"""


# ---- helpers ------------------------------------------------------------------

def with_hookd_keys(cfg: Path, **keys) -> Path:
    """Adds keys to the [hookd] section of a written config (the harness
    template has no placeholder for them)."""
    lines = "".join(f"{k} = {v}\n" for k, v in keys.items())
    cfg.write_text(cfg.read_text().replace("[hookd]\n", "[hookd]\n" + lines, 1))
    return cfg


def hookd(cfg: Path, *args: str):
    return run_hookd(["-c", str(cfg), *args])


def dlq_list(cfg: Path, *filters: str) -> list[dict]:
    r = hookd(cfg, "dlq", "list", "--json", *filters)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def dlq_show(cfg: Path, ident: str) -> dict:
    r = hookd(cfg, "dlq", "show", "--json", ident)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def status_json(cfg: Path) -> dict:
    r = hookd(cfg, "status", "--json")
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def post(w, msg_id: str, event_type: str, order_id: str, partner: str = "shop") -> dict:
    status, _, body = post_standard(w, partner, msg_id, order_event(event_type, order_id))
    assert status == 200, (msg_id, status, body)
    return json.loads(body)


def row(env, msg_id: str):
    return env.db.one("SELECT * FROM webhook_inbox WHERE partner_event_id = %s", msg_id)


def dead_letter_of(env, msg_id: str):
    return env.db.one("SELECT d.* FROM dead_letters d JOIN webhook_inbox i ON i.id = d.source_id"
                      " WHERE d.source = 'inbox' AND i.partner_event_id = %s ORDER BY d.dead_at DESC LIMIT 1", msg_id)


def wait_open_dlq(env, n: int, timeout: float = 20) -> None:
    wait_for(lambda: env.db.value(OPEN_DLQ) == n, timeout=timeout, interval=0.1, what=f"{n} open dead letter(s)")


def poison(w, msg_id: str, order_id: str, partner: str = "shop") -> None:
    """An event no machine names: four failed attempts, then the DLQ."""
    post(w, msg_id, "order.bogus", order_id, partner)


def conflict(env, w, order_id: str, partner: str = "shop") -> str:
    """`paid` after `cancelled`: dead-lettered at once (reason conflict).
    Returns the message id of the dead one."""
    post(w, f"{order_id}-cancelled", "order.cancelled", order_id, partner)
    wait_for(lambda: (r := row(env, f"{order_id}-cancelled")) and r["status"] == "PROCESSED",
             what=f"{order_id} cancelled")
    post(w, f"{order_id}-paid", "order.paid", order_id, partner)
    return f"{order_id}-paid"


def subscribe_alerts(env):
    """A pubsub on the alerts channel, subscribed before it returns."""
    channel = env.key("alerts")
    sub = env.redis.pubsub(ignore_subscribe_messages=True)
    sub.subscribe(channel)
    wait_for(lambda: dict(env.redis.pubsub_numsub(channel)).get(channel, 0) >= 1, what="alert subscription")
    return sub


def collect_alerts(sub, n: int, timeout: float = 20) -> list[dict]:
    alerts = []

    def more():
        m = sub.get_message(timeout=0.1)
        if m:
            alerts.append(json.loads(m["data"]))
        return len(alerts) >= n
    wait_for(more, timeout=timeout, what=f"{n} alert(s)")
    return alerts


class Receiver:
    """A local HTTP receiver (alert webhook or delivery endpoint) that records
    every POST and answers with the statuses it is told, then 200."""

    def __init__(self, statuses: list[int] | None = None, always: int | None = None) -> None:
        self.statuses = list(statuses or [])
        self.always = always
        self.posts: list[dict] = []
        self.lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("content-length", 0)))
                with receiver.lock:
                    receiver.posts.append({"path": self.path, "headers": dict(self.headers), "body": body})
                    code = receiver.statuses.pop(0) if receiver.statuses else (receiver.always or 200)
                self.send_response(code)
                self.send_header("content-length", "2")
                self.end_headers()
                self.wfile.write(b"ok")

            def log_message(self, *args):
                pass

        self.port = free_port()
        self.server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def bodies(self) -> list[dict]:
        with self.lock:
            return [json.loads(p["body"]) for p in self.posts]

    def count(self) -> int:
        with self.lock:
            return len(self.posts)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receiver():
    made = []

    def make(**kw) -> Receiver:
        r = Receiver(**kw)
        made.append(r)
        return r
    yield make
    for r in made:
        r.close()


# ---- dlq list / show ----------------------------------------------------------

def test_dlq_list_shows_entries_and_filters_them(env, receiver):
    flaky = receiver(always=500)
    cfg = with_hookd_keys(env.config(extra=ACME.format(secret=SW_SECRET)), allow_private_networks="true")
    w = env.worker(config=cfg)
    add = hookd(cfg, "endpoint", "add", "--url", flaky.url("/hook"), "--events", "order.*", "--name", "flaky")
    assert add.returncode == 0, add.stderr
    poison(w, "p1", "o1")
    poison(w, "p2", "o2", partner="acme")
    paid = conflict(env, w, "o3")
    env.db.value("SELECT hookd_emit('order', 'o9', 'order.shipped', '{\"n\": 9}'::jsonb)")
    wait_open_dlq(env, 4)

    everything = dlq_list(cfg)
    assert len(everything) == 4
    by_source = {}
    for e in everything:
        assert set(e) >= {"id", "source", "source_id", "partner", "event_type", "entity", "attempts", "reason",
                          "last_error", "dead_at", "replay_count"}, e
        db = env.db.one("SELECT * FROM dead_letters WHERE id = %s", e["id"])
        assert db is not None, e
        assert (e["source"], e["source_id"], e["reason"], e["attempts"], e["replay_count"]) == \
            (db["source"], str(db["source_id"]), db["reason"], db["attempts"], 0)
        by_source.setdefault(e["source"], []).append(e)
    # newest first
    assert [e["dead_at"] for e in everything] == sorted((e["dead_at"] for e in everything), reverse=True)

    inbox = {e["event_type"]: e for e in by_source["inbox"] if e["event_type"] != "order.bogus"}
    bogus = sorted((e for e in by_source["inbox"] if e["event_type"] == "order.bogus"), key=lambda e: e["partner"])
    assert [(e["partner"], e["reason"], e["attempts"]) for e in bogus] == \
        [("acme", "retries exhausted", 4), ("shop", "retries exhausted", 4)]
    assert all("order.bogus" in e["last_error"] for e in bogus)
    assert bogus[1]["entity"].endswith("o1") and bogus[0]["entity"].endswith("o2")
    assert (inbox["order.paid"]["reason"], inbox["order.paid"]["entity"]) == ("conflict", "order:o3")
    assert inbox["order.paid"]["source_id"] == str(row(env, paid)["id"])
    [delivery] = by_source["delivery"]
    assert (delivery["partner"], delivery["event_type"], delivery["attempts"]) == ("flaky", "order.shipped", 4)
    assert delivery["entity"] == "order:o9"

    # filters
    assert {e["source"] for e in dlq_list(cfg, "--source", "inbox")} == {"inbox"}
    assert len(dlq_list(cfg, "--source", "inbox")) == 3
    assert [e["id"] for e in dlq_list(cfg, "--source", "delivery")] == [delivery["id"]]
    assert [e["source_id"] for e in dlq_list(cfg, "--partner", "acme")] == [str(row(env, "p2")["id"])]
    assert [e["id"] for e in dlq_list(cfg, "--partner", "flaky")] == [delivery["id"]]
    assert dlq_list(cfg, "--partner", "nobody") == []
    assert len(dlq_list(cfg, "--event-type", "order.*")) == 4
    assert {e["partner"] for e in dlq_list(cfg, "--event-type", "order.bog*")} == {"shop", "acme"}
    assert [e["reason"] for e in dlq_list(cfg, "--event-type", "order.paid")] == ["conflict"]
    assert dlq_list(cfg, "--event-type", "order") == []  # a glob, not a prefix
    assert dlq_list(cfg, "--limit", "2") == everything[:2]
    assert dlq_list(cfg, "--source", "inbox", "--partner", "shop", "--event-type", "order.bogus")[0]["source_id"] \
        == str(row(env, "p1")["id"])
    # --since: one entry dead for two hours drops out of the last hour
    env.db.all("UPDATE dead_letters SET dead_at = now() - interval '2 hours' WHERE id = %s", bogus[0]["id"])
    recent = dlq_list(cfg, "--since", "1h")
    assert len(recent) == 3 and bogus[0]["id"] not in {e["id"] for e in recent}
    assert len(dlq_list(cfg, "--since", "3h")) == 4

    # the table
    table = hookd(cfg, "dlq", "list")
    assert table.returncode == 0, table.stderr
    lines = table.stdout.strip().splitlines()
    assert lines[0].split()[:3] == ["ID", "SOURCE", "PARTNER"]
    assert lines[-1] == "(4 dead letters)"
    for e in everything:
        assert any(l.startswith(e["id"]) and e["source"] in l and e["partner"] in l for l in lines[1:-1]), (e, lines)
    assert hookd(cfg, "dlq", "list", "--source", "delivery").stdout.strip().splitlines()[-1] == "(1 dead letter)"

    # bad options
    bad = hookd(cfg, "dlq", "list", "--source", "outbox")
    assert bad.returncode != 0 and "--source must be inbox or delivery" in bad.stderr
    bad = hookd(cfg, "dlq", "list", "--since", "soon")
    assert bad.returncode != 0 and "--since" in bad.stderr
    bad = hookd(cfg, "dlq", "list", "--limit", "0")
    assert bad.returncode != 0 and "--limit" in bad.stderr
    bad = hookd(cfg, "dlq", "frobnicate")
    assert bad.returncode != 0 and "unknown subcommand" in bad.stderr


def test_dlq_show_has_payload_headers_and_attempt_history(env):
    cfg = env.config()
    w = env.worker(config=cfg)
    poison(w, "p1", "o1")
    wait_open_dlq(env, 1)
    r = row(env, "p1")
    dl = dead_letter_of(env, "p1")

    e = dlq_show(cfg, str(dl["id"]))
    assert (e["id"], e["source"], e["source_id"]) == (str(dl["id"]), "inbox", str(r["id"]))
    assert (e["partner"], e["event_type"], e["reason"], e["attempts"]) == ("shop", "order.bogus",
                                                                           "retries exhausted", 4)
    assert e["payload"] == json.loads(order_event("order.bogus", "o1"))
    assert e["replayed_at"] is None and e["replay_count"] == 0
    headers = {k.lower(): v for k, v in e["headers"].items()}
    assert headers.get("webhook-id") == "p1", headers
    hist = e["attempts_history"]
    assert [a["outcome"] for a in hist] == ["retry", "retry", "retry", "dead"]
    for a in hist:
        assert set(a) >= {"at", "outcome", "duration_ms", "status_code", "error", "response", "worker"}, a
        assert "order.bogus" in a["error"] and a["worker"] and a["status_code"] is None
        assert a["duration_ms"] >= 0
    assert [a["at"] for a in hist] == sorted(a["at"] for a in hist)

    # by the source row's id: the same entry
    assert dlq_show(cfg, str(r["id"])) == e

    text = hookd(cfg, "dlq", "show", str(dl["id"]))
    assert text.returncode == 0, text.stderr
    assert f"source_id    {r['id']}" in text.stdout
    assert "reason       retries exhausted" in text.stdout
    assert "attempt history:" in text.stdout and '"order_id": "o1"' in text.stdout
    history = text.stdout.split("attempt history:")[1].strip().splitlines()
    assert [l.split()[0] for l in history] == ["1.", "2.", "3.", "4."]

    missing = hookd(cfg, "dlq", "show", "00000000-0000-0000-0000-000000000000")
    assert missing.returncode == 1 and "no dead letter" in missing.stderr
    bad = hookd(cfg, "dlq", "show", "nonsense")
    assert bad.returncode == 1 and "not a dead letter id" in bad.stderr
    usage = hookd(cfg, "dlq", "show")
    assert usage.returncode != 0 and "usage" in usage.stderr


def test_options_after_the_id_are_options(env):
    """`dlq show ID --json` and `dlq replay ID --dry-run`, as the usage
    lines spell them: an option after the id is still an option (and above
    all, a dry run after the id must not replay)."""
    cfg = env.config()
    w = env.worker(config=cfg)
    paid = conflict(env, w, "o1")
    wait_open_dlq(env, 1)
    dl = str(dead_letter_of(env, paid)["id"])
    dry = hookd(cfg, "dlq", "replay", dl, "--dry-run")
    assert row(env, paid)["status"] == "QUARANTINED", f"a dry run replayed the event: {dry}"
    assert env.db.value("SELECT replayed_at IS NULL FROM dead_letters WHERE id = %s", dl)
    assert dry.returncode == 0, dry.stderr
    assert f"would replay {dl}" in dry.stdout
    show = hookd(cfg, "dlq", "show", dl, "--json")
    assert show.returncode == 0, show.stderr
    assert json.loads(show.stdout)["id"] == dl
    listed = hookd(cfg, "dlq", "list", "--source", "inbox", "--json")
    assert listed.returncode == 0 and [e["id"] for e in json.loads(listed.stdout)] == [dl], listed.stderr


# ---- replay ------------------------------------------------------------------

def test_replay_after_config_fix_applies_the_event(env):
    cfg = env.config()
    w = env.worker(config=cfg)
    poison(w, "p1", "o1")
    wait_open_dlq(env, 1)
    dl = dead_letter_of(env, "p1")
    source_id = str(row(env, "p1")["id"])

    # a dry run changes nothing
    dry = hookd(cfg, "dlq", "replay", "--dry-run", str(dl["id"]))
    assert dry.returncode == 0, dry.stderr
    assert f"would replay {dl['id']} (inbox {source_id})" in dry.stdout
    assert row(env, "p1")["status"] == "QUARANTINED"
    assert dead_letter_of(env, "p1")["replayed_at"] is None
    assert env.redis.zscore(env.key("{inbox}:due"), source_id) is None

    # fix the config: a machine that names order.bogus; reload
    cfg.write_text(cfg.read_text() + BOGUS_MACHINE)
    w.signal(signal.SIGHUP)
    wait_for(lambda: "config.reloaded" in w.output(), what="config.reloaded")

    r = hookd(cfg, "dlq", "replay", str(dl["id"]))
    assert r.returncode == 0, r.stderr
    assert f"replayed {dl['id']} (inbox {source_id})" in r.stdout and "1 replayed, 0 refused" in r.stdout
    wait_for(lambda: row(env, "p1")["status"] == "PROCESSED", what="the replayed event to be processed")
    after = row(env, "p1")
    assert after["outcome"] == "applied" and after["replayed_at"] is not None, after
    assert env.db.value("SELECT state FROM hookd_entities WHERE entity_type = 'bogus' AND entity_id = 'o1'") == "done"
    replayed = env.db.one("SELECT * FROM dead_letters WHERE id = %s", dl["id"])
    assert replayed["replayed_at"] is not None and replayed["replay_count"] == 1
    assert env.db.value("SELECT count(*) FROM dead_letters") == 1
    outcomes = [a["outcome"] for a in dlq_show(cfg, str(dl["id"]))["attempts_history"]]
    assert outcomes == ["retry", "retry", "retry", "dead", "applied"]
    assert dlq_list(cfg) == []  # replayed entries are not open any more
    wait_for(lambda: env.redis.hget(env.key("stats"), "replayed") == "1", what="the replay counted")

    # twice: refused, with exit status 1
    again = hookd(cfg, "dlq", "replay", str(dl["id"]))
    assert again.returncode == 1
    assert "already replayed" in again.stderr and "0 replayed, 1 refused" in again.stdout
    assert env.db.value("SELECT replay_count FROM dead_letters WHERE id = %s", dl["id"]) == 1


def test_replay_without_a_fix_dead_letters_again(env):
    cfg = env.config()
    w = env.worker(config=cfg)
    poison(w, "p1", "o1")
    wait_open_dlq(env, 1)
    first = dead_letter_of(env, "p1")
    r = hookd(cfg, "dlq", "replay", str(first["id"]))
    assert r.returncode == 0, r.stderr
    # a fresh budget of four attempts, then a new entry; the old one records the replay
    wait_for(lambda: env.db.value("SELECT count(*) FROM dead_letters") == 2, what="a second dead letter")
    wait_open_dlq(env, 1)
    second = dead_letter_of(env, "p1")
    assert second["id"] != first["id"] and second["reason"] == "retries exhausted" and second["attempts"] == 4
    outcomes = [a["outcome"] for a in dlq_show(cfg, str(second["id"]))["attempts_history"]]
    assert outcomes == ["retry", "retry", "retry", "dead"] * 2
    assert w.output().count("event=dlq.dead_letter") == 2
    assert [e["id"] for e in dlq_list(cfg)] == [str(second["id"])]


def test_replay_schedules_through_redis_and_refuses_what_is_not_dead(env):
    cfg = env.config()
    w = env.worker(config=cfg)
    poison(w, "p1", "o1")
    poison(w, "p2", "o2")
    paid = conflict(env, w, "o3")
    wait_open_dlq(env, 3)
    assert w.stop() == 0  # nothing may pick replayed rows up: only the CLI acts
    d1, d2, d3 = (dead_letter_of(env, m) for m in ("p1", "p2", paid))

    # --all with a filter, dry run: lists what it would do, changes nothing
    dry = hookd(cfg, "dlq", "replay", "--all", "--event-type", "order.bog*", "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert f"would replay {d1['id']}" in dry.stdout and f"would replay {d2['id']}" in dry.stdout
    assert str(d3["id"]) not in dry.stdout and "2 would be replayed, 0 refused" in dry.stdout
    assert env.db.value(OPEN_DLQ) == 3
    assert env.db.value("SELECT count(*) FROM webhook_inbox WHERE status = 'QUARANTINED'") == 3

    # p2's row was dealt with meanwhile (by hand): its entry is refused, p1's is replayed
    env.db.all("UPDATE webhook_inbox SET status = 'PROCESSED', outcome = 'applied' WHERE partner_event_id = 'p2'")
    r = hookd(cfg, "dlq", "replay", str(d1["id"]), str(d2["id"]))
    assert r.returncode == 1
    assert f"refused {d2['id']}" in r.stderr and "not dead-lettered" in r.stderr
    assert "1 replayed, 1 refused" in r.stdout
    p1 = row(env, "p1")
    assert (p1["status"], p1["attempts"]) == ("PENDING", 0) and p1["replayed_at"] is not None
    assert p1["last_error"] is None
    assert env.db.value("SELECT replayed_at IS NULL FROM dead_letters WHERE id = %s", d2["id"])
    # scheduled in Redis, due now
    score = env.redis.zscore(env.key("{inbox}:due"), str(p1["id"]))
    assert score is not None
    assert abs(score - float(env.db.value("SELECT extract(epoch FROM now()) * 1000"))) < 60_000

    # --all: only what is still open (the conflict and p2's entry), p2's refused
    r = hookd(cfg, "dlq", "replay", "--all")
    assert r.returncode == 1
    assert f"replayed {d3['id']}" in r.stdout and f"refused {d2['id']}" in r.stderr
    assert str(d1["id"]) not in r.stdout + r.stderr
    assert row(env, paid)["status"] == "PENDING"
    assert env.redis.zscore(env.key("{inbox}:due"), str(row(env, paid)["id"])) is not None

    for bad in (["dlq", "replay"], ["dlq", "replay", "--all", str(d1["id"])]):
        res = hookd(cfg, *bad)
        assert res.returncode != 0 and res.stderr, bad
    res = hookd(cfg, "dlq", "replay", "00000000-0000-0000-0000-000000000000")
    assert res.returncode == 1 and "no dead letter" in res.stderr


def test_replay_of_a_delivery_needs_its_endpoint_enabled(env, receiver):
    flaky = receiver(statuses=[500, 500, 500, 500])
    cfg = with_hookd_keys(env.config(), allow_private_networks="true")
    w = env.worker(config=cfg)
    add = hookd(cfg, "endpoint", "add", "--url", flaky.url("/hook"), "--events", "order.*", "--name", "flaky")
    assert add.returncode == 0, add.stderr
    env.db.value("SELECT hookd_emit('order', 'o9', 'order.shipped', '{\"n\": 9}'::jsonb)")
    wait_open_dlq(env, 1)
    [e] = dlq_list(cfg, "--source", "delivery")
    shown = dlq_show(cfg, e["id"])
    assert shown["payload"] == {"n": 9} and shown["endpoint_url"] == flaky.url("/hook")
    assert [a["status_code"] for a in shown["attempts_history"]] == [500] * 4
    assert hookd(cfg, "endpoint", "disable", "flaky").returncode == 0
    r = hookd(cfg, "dlq", "replay", e["id"])
    assert r.returncode == 1 and "disabled" in r.stderr
    assert hookd(cfg, "endpoint", "enable", "flaky").returncode == 0
    r = hookd(cfg, "dlq", "replay", e["id"])
    assert r.returncode == 0, r.stderr
    wait_for(lambda: env.db.value("SELECT status FROM outbox_deliveries WHERE id = %s", e["source_id"]) == "SUCCEEDED",
             what="the replayed delivery to succeed")
    assert flaky.count() == 5
    assert env.db.value("SELECT processed_at IS NOT NULL FROM outbox_events WHERE aggregate_id = 'o9'")
    w.alive()


# ---- purge -------------------------------------------------------------------

def test_purge_older_than(env):
    cfg = env.config()
    w = env.worker(config=cfg)
    for o in ("o1", "o2", "o3"):
        conflict(env, w, o)
    wait_open_dlq(env, 3)
    old = dead_letter_of(env, "o1-paid")
    env.db.all("UPDATE dead_letters SET dead_at = now() - interval '40 days' WHERE id = %s", old["id"])

    dry = hookd(cfg, "dlq", "purge", "--older-than", "30d", "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert dry.stdout.strip() == "1 dead letter would be purged"
    assert env.db.value("SELECT count(*) FROM dead_letters") == 3

    r = hookd(cfg, "dlq", "purge", "--older-than", "30d")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "1 dead letter purged"
    assert env.db.value("SELECT count(*) FROM dead_letters WHERE id = %s", old["id"]) == 0
    assert env.db.value("SELECT count(*) FROM dead_letters") == 2
    assert row(env, "o1-paid")["status"] == "QUARANTINED"  # the source row stays as the audit trail
    assert hookd(cfg, "dlq", "purge", "--older-than", "30d").stdout.strip() == "0 dead letters purged"

    usage = hookd(cfg, "dlq", "purge")
    assert usage.returncode != 0 and "--older-than" in usage.stderr
    assert env.db.value("SELECT count(*) FROM dead_letters") == 2


# ---- alerts ------------------------------------------------------------------

def test_every_dead_letter_is_published_and_logged(env):
    w = env.worker()
    sub = subscribe_alerts(env)
    try:
        paid = conflict(env, w, "o1")
        poison(w, "p1", "o2")
        alerts = {a["event_type"]: a for a in collect_alerts(sub, 2)}
        assert sub.get_message(timeout=0.3) is None
    finally:
        sub.close()
    c, p = alerts["order.paid"], alerts["order.bogus"]
    assert (c["source"], c["id"], c["partner"], c["severity"]) == ("inbox", str(row(env, paid)["id"]), "shop", "high")
    assert "conflict" in c["reason"] and c["entity"] == "o1" and c["worker"], c
    assert c["attempts"] == dead_letter_of(env, paid)["attempts"]
    assert (p["source"], p["id"], p["partner"], p["attempts"]) == ("inbox", str(row(env, "p1")["id"]), "shop", 4), p
    assert "order.bogus" in p["reason"] and p["entity"] == "o2" and p["dead_at_ms"] > 0, p
    lines = [l for l in w.output().splitlines() if "event=dlq.dead_letter" in l]
    assert len(lines) == 2 and all("level=error" in l for l in lines), lines
    assert any(f"id={row(env, paid)['id']}" in l and "partner=shop" in l for l in lines)


def alerting_config(env, receiver_url: str, interval: str):
    return with_hookd_keys(env.config(), alert_webhook=receiver_url, allow_private_networks="true",
                           alert_interval=interval)


def test_alert_webhook_coalesces_dead_letters(env, receiver):
    alerts = receiver()
    w = env.worker(config=alerting_config(env, alerts.url("/alert"), "3s"))
    # the cancellations first, so that the conflicts later dead-letter at once
    for o in ("o2", "o3", "o4"):
        post(w, f"{o}-cancelled", "order.cancelled", o)
    conflict(env, w, "o1")
    wait_for(lambda: alerts.count() >= 1, what="the first alert")
    [first] = alerts.bodies()
    assert first["hookd"]["count"] == 1 and first["hookd"]["severity"] == "high"
    assert first["hookd"]["latest"]["event_type"] == "order.paid" and first["hookd"]["latest"]["entity"] == "o1"
    assert "1 event dead-lettered" in first["text"]
    assert alerts.posts[0]["headers"].get("Content-Type") == "application/json"

    wait_for(lambda: env.db.value("SELECT count(*) FROM webhook_inbox WHERE status = 'PROCESSED'") == 4,
             what="the cancellations")
    for o in ("o2", "o3", "o4"):
        post(w, f"{o}-paid", "order.paid", o)
    wait_open_dlq(env, 4)
    assert alerts.count() == 1  # inside the window: held back
    wait_for(lambda: alerts.count() >= 2, timeout=10, what="the summary alert")
    summary = alerts.bodies()[1]
    assert summary["hookd"]["count"] == 3, summary
    assert "3 events dead-lettered" in summary["text"]
    assert summary["hookd"]["latest"]["entity"] in ("o2", "o3", "o4")
    assert "conflict" in summary["hookd"]["latest"]["reason"]
    # every dead letter is in exactly one alert
    assert sum(b["hookd"]["count"] for b in alerts.bodies()) == env.db.value(OPEN_DLQ) == 4


def test_failed_alert_webhook_is_retried(env, receiver):
    alerts = receiver(statuses=[500])
    w = env.worker(config=alerting_config(env, alerts.url("/alert"), "2s"))
    conflict(env, w, "o1")
    wait_for(lambda: alerts.count() >= 2, timeout=15, what="the alert to be retried")
    failed, delivered = alerts.bodies()[:2]
    assert failed == delivered
    assert delivered["hookd"]["count"] == 1 and delivered["hookd"]["latest"]["entity"] == "o1"
    assert "event=alert.webhook_failed" in w.output() and "status=500" in w.output()


# ---- status ------------------------------------------------------------------

def test_status_of_a_two_worker_cluster(env):
    w1 = env.worker()
    w2 = env.worker()
    cfg = w1.config
    for i in range(3):
        post(w1 if i % 2 else w2, f"s{i}", "order.started", f"o{i}")
    post(w1, "s0", "order.started", "o0")  # a duplicate
    status, _, _ = post_standard(w2, "shop", "forged", order_event("order.started", "o9"),
                                 secret="whsec_" + "A" * 32)
    assert status == 401
    conflict(env, w2, "o5")
    wait_open_dlq(env, 1)
    wait_for(lambda: env.db.value("SELECT count(*) FROM webhook_inbox WHERE status NOT IN"
                                  " ('PROCESSED', 'QUARANTINED')") == 0, what="all events finished")
    ingested = env.db.value("SELECT count(*) FROM webhook_inbox")
    applied = env.db.value("SELECT count(*) FROM webhook_inbox WHERE outcome = 'applied'")
    assert (ingested, applied) == (5, 4)

    def settled():
        s = status_json(cfg)
        c = s["counters"]
        return s if (c.get("ingested"), c.get("applied"), c.get("dead"), c.get("duplicate"),
                     s["dlq_size"], len(s["workers"])) == (ingested, applied, 1, 1, 1, 2) else None
    s = wait_for(settled, what="the counters flushed by the heartbeats")
    assert s["counters"]["rejected"] == 1 and s["counters"]["rejected_bad_signature"] == 1
    pids = {str(w1.proc.pid), str(w2.proc.pid)}
    assert {w["pid"] for w in s["workers"]} == pids
    for wk in s["workers"]:
        assert wk["state"] == "live" and wk["host"] and wk["roles"] == "ingest,inbox,relay", wk
        assert wk["config_generation"] == "1" and wk["uptime_s"] >= 0
    for q in ("inbox", "delivery"):
        assert set(s["queues"][q]) == {"due", "inflight", "oldest_overdue_ms"}
        assert s["queues"][q]["due"] == 0 and s["queues"][q]["inflight"] == 0

    text = hookd(cfg, "status")
    assert text.returncode == 0, text.stderr
    for section in ("WORKERS (2)", "QUEUES", "COUNTERS", "DLQ: 1 open dead letter"):
        assert section in text.stdout, text.stdout
    assert any(l.split()[:1] == ["ingested"] and l.split()[1] == str(ingested) for l in text.stdout.splitlines())
    assert sum(1 for l in text.stdout.splitlines() if " live " in l) == 2

    killed = str(w2.proc.pid)
    w2.kill9()
    s = wait_for(lambda: (s := status_json(cfg)) and
                 {w["state"] for w in s["workers"] if w.get("pid", killed) == killed} == {"stale"} and s,
                 timeout=15, what="the killed worker to turn stale")
    states = sorted(w["state"] for w in s["workers"])
    assert states == ["live", "stale"], s["workers"]
    assert [w["pid"] for w in s["workers"] if w["state"] == "live"] == [str(w1.proc.pid)]

    bad = hookd(cfg, "status", "--bogus")
    assert bad.returncode == 2 and "unknown option" in bad.stderr


# ---- metrics -----------------------------------------------------------------

def scrape(w) -> dict:
    """/metrics through the Prometheus text parser: {(name, labels): value}
    plus the families by name."""
    status, headers, body = w.admin_get("/metrics")
    assert status == 200
    assert headers.get("Content-Type", "").startswith("text/plain")
    text = body.decode()
    try:
        families = list(text_string_to_metric_families(text))
    except Exception as e:  # noqa: BLE001 - report the exact text
        raise AssertionError(f"/metrics is not valid Prometheus text ({e}):\n{text}")
    samples = {}
    for f in families:
        for s in f.samples:
            key = (s.name, tuple(sorted(s.labels.items())))
            assert key not in samples, f"duplicate sample {key}"
            samples[key] = s.value
    return {"samples": samples, "families": {f.name: f for f in families}, "text": text}


def check_histogram(m: dict, name: str) -> int:
    fam = m["families"][name]
    assert fam.type == "histogram"
    buckets = [(s.labels["le"], s.value) for s in fam.samples if s.name == f"{name}_bucket"]
    assert buckets[-1][0] == "+Inf"
    bounds = [float(le) for le, _ in buckets]
    assert bounds == sorted(bounds) and len(set(bounds)) == len(bounds)
    counts = [v for _, v in buckets]
    assert counts == sorted(counts), f"{name} buckets are not cumulative: {buckets}"
    count = m["samples"][(f"{name}_count", ())]
    assert counts[-1] == count
    assert m["samples"][(f"{name}_sum", ())] >= 0
    return int(count)


def test_metrics_parse_and_match_the_database(env, receiver):
    hooks = receiver()
    cfg = with_hookd_keys(env.config(), allow_private_networks="true")
    w = env.worker(config=cfg)
    add = hookd(cfg, "endpoint", "add", "--url", hooks.url("/hook"), "--events", "order.*", "--name", "hooks")
    assert add.returncode == 0, add.stderr
    for o in ("o1", "o2"):
        for t in ("order.started", "order.paid", "order.shipped"):
            post(w, f"{o}-{t}", t, o)
    post(w, "o1-order.started", "order.started", "o1")  # duplicate
    status, _, _ = post_standard(w, "shop", "forged", order_event("order.started", "o9"), secret="whsec_" + "A" * 32)
    assert status == 401
    status, _, _ = post_standard(w, "nobody", "x1", order_event("order.started", "o9"))
    assert status == 404
    conflict(env, w, "o3")
    for i in range(3):
        env.db.value("SELECT hookd_emit('order', %s, 'order.note', '{}'::jsonb)", f"n{i}")
    wait_open_dlq(env, 1)
    wait_for(lambda: env.db.value("SELECT count(*) FROM webhook_inbox WHERE status NOT IN"
                                  " ('PROCESSED', 'QUARANTINED')") == 0, what="all events finished")
    wait_for(lambda: env.db.value("SELECT count(*) FROM outbox_deliveries WHERE status = 'SUCCEEDED'") == 3,
             what="the deliveries")

    ingested = env.db.value("SELECT count(*) FROM webhook_inbox")
    applied = env.db.value("SELECT count(*) FROM webhook_inbox WHERE outcome = 'applied'")
    dead = env.db.value("SELECT count(*) FROM dead_letters")
    assert (ingested, applied, dead) == (8, 7, 1)

    def current():
        m = scrape(w)
        s = m["samples"]
        return m if s.get(("hookd_dlq_size", ())) == dead and s.get(("hookd_delivered_total", ())) == 3 else None
    m = wait_for(current, what="the DLQ size in /metrics")
    s = m["samples"]
    assert s[("hookd_ingested_total", ())] == ingested
    assert s[("hookd_duplicate_total", ())] == 1
    assert s[("hookd_applied_total", ())] == applied
    assert s[("hookd_dead_total", ())] == dead
    assert s[("hookd_rejected_total", (("reason", "bad_signature"),))] == 1
    assert s[("hookd_rejected_total", (("reason", "unknown_partner"),))] == 1
    assert sum(v for (n, _), v in s.items() if n == "hookd_rejected_total") == 2
    assert s[("hookd_ready", ())] == 1
    assert m["families"]["hookd_ingested"].type == "counter"
    assert m["families"]["hookd_dlq_size"].type == "gauge"

    answered = check_histogram(m, "hookd_ingest_seconds")
    assert ingested + 1 <= answered <= ingested + 1 + 2  # accepted + duplicate (+ rejections, if timed)
    assert check_histogram(m, "hookd_delivery_seconds") == 3
    # every sample belongs to a family announced with # TYPE
    typed = {l.split()[2] for l in m["text"].splitlines() if l.startswith("# TYPE ")}
    for line in m["text"].splitlines():
        if line and not line.startswith("#"):
            name = line.split("{")[0].split()[0]
            assert any(name == t or (name.startswith(t + "_") and name[len(t) + 1:] in ("bucket", "sum", "count"))
                       for t in typed), line


# ---- reload: the key table decides what needs a restart --------------------------

def test_reload_names_exactly_the_changed_keys_that_need_a_restart(env):
    cfg = env.config()
    w = env.worker(config=cfg)
    text = cfg.read_text()
    assert "[hookd]\n" in text

    # Only reloadable keys changed: no restart warning.
    cfg.write_text(text.replace("[hookd]\n", "[hookd]\nbatch_size = 17\nreconcile_horizon = 2h\n", 1))
    w.signal(signal.SIGHUP)
    wait_for(lambda: w.output().count("config.reloaded") == 1, what="first reload")
    assert "config.restart_needed" not in w.output()

    # Two restart-only keys changed (and a reloadable one): both named, nothing else.
    cfg.write_text(text.replace("[hookd]\n", "[hookd]\nbatch_size = 18\ndb_pool_size = 3\n"
                                             "ingest_concurrency = 5\n", 1))
    w.signal(signal.SIGHUP)
    wait_for(lambda: w.output().count("config.reloaded") == 2, what="second reload")
    [line] = [l for l in w.output().splitlines() if "config.restart_needed" in l]
    assert 'keys="db_pool_size, ingest_concurrency"' in line, line
