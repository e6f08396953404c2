"""What a tenant token can store and how far it reaches.

- Bounded input: every list and map a tenant stores through the API (an
  endpoint's event types, channels, headers, payload filter and metadata; an
  application's metadata; a message's channels and tags) has a cap answered
  422, and the event types are stored as a set; an application has a budget
  of endpoints and of filter bytes ([hookd] tenant_max_endpoints,
  tenant_max_filter_bytes).
- The relay reads one row per endpoint and parses each endpoint's filters
  once per pass: an endpoint stored with thousands of repeated event types
  and a large payload filter costs a pass one row and little memory (the
  worker's peak RSS, from /proc, stays under a stated bound).
- Tenant references resolve the id first, in one SQL function
  (hookd_tenant_id), and uids can never look like application ids: a tenant
  cannot take another tenant's hookd_emit events by naming its uid after
  the other's id; a migration clears such uids stored before.
- A tenant token cannot change its application's uid, so the answer never
  tells whether another tenant holds a uid.
- Ordered delivery is kept per tenant: another tenant's unfanned event of
  the same aggregate holds nothing."""
from __future__ import annotations

import json
import os
import psycopg2
import pytest

from hookdtest.paths import ROOT
from hookdtest.services import Db
from hookdtest.queries import statement
from hookdtest.util import wait_for
from hookdtest.worker import run_hookd

from test_api import new_token, raw, receivers  # noqa: F401  (fixture)
from test_outbound import outbound_config
from test_retention import old_layout_database


def or_filter(nbytes: int) -> dict:
    """A valid payload filter of about nbytes as compact JSON that matches
    every payload with a key `n`."""
    clauses = [{"n": {"$exists": True}}]
    while len(json.dumps({"$or": clauses}, separators=(",", ":"))) < nbytes:
        clauses.insert(0, {f"f{len(clauses)}": "x" * 100})
    return {"$or": clauses}


def compact(v) -> str:
    return json.dumps(v, separators=(",", ":"))


@pytest.fixture
def tenants(env):
    """A worker with the API; a root token; applications acme and globex,
    each with a token of its own; the event types invoice.paid and
    invoice.sent."""
    def make(*hookd_lines: str):
        cfg = outbound_config(env, ("allow_private_networks = true",) + hookd_lines)
        # under ASan, freed memory waits in a quarantine that counts as RSS:
        # a small one keeps the RSS bound meaningful (ignored otherwise)
        asan = ":".join(filter(None, [os.environ.get("ASAN_OPTIONS"), "quarantine_size_mb=4"]))
        w = env.worker(cfg, env={"ASAN_OPTIONS": asan})
        root = new_token(cfg, "root")
        apps = {}
        for uid in ("acme", "globex"):
            st, app = raw(w, "POST", "/api/v1/app/", root, {"name": uid.title(), "uid": uid})
            assert st == 201, app
            apps[uid] = app
        for name in ("invoice.paid", "invoice.sent"):
            st, out = raw(w, "POST", "/api/v1/event-type/", root, {"name": name, "description": name})
            assert st == 201, out
        toks = {uid: new_token(cfg, f"{uid}-token", uid) for uid in apps}
        return cfg, w, root, apps, toks
    return make


def endpoints_of(env, app_id: str) -> int:
    return env.db.value("SELECT count(*) FROM webhook_endpoints WHERE tenant_id = %s", app_id)


def refused(st: int, out, field: str | None, words: str) -> bool:
    """A 422 whose detail names the field (None: the body) and says words."""
    if st != 422 or not isinstance(out, dict):
        return False
    for d in out.get("detail", []):
        if d["loc"] == (["body", field] if field else ["body"]) and words in d["msg"]:
            return True
    return False


# ---- bounded input ------------------------------------------------------------------

def test_the_amplification_shapes_and_every_list_past_its_cap_are_refused(env, tenants):
    cfg, w, root, apps, toks = tenants()
    acme = toks["acme"]
    url = "http://127.0.0.1:9/hook"
    path = "/api/v1/app/acme/endpoint/"
    # the crash-loop shape: 10,000 x "*" and a 64 KB filter; and the smaller one
    st, out = raw(w, "POST", path, acme, {"url": url, "filterTypes": ["*"] * 10000, "payloadFilter": or_filter(65536)})
    assert refused(st, out, "payloadFilter", "at most 16384 bytes"), (st, out)
    st, out = raw(w, "POST", path, acme, {"url": url, "filterTypes": ["*"] * 10000})
    assert refused(st, out, "filterTypes", "at most 256 items"), (st, out)
    st, out = raw(w, "POST", path, acme, {"url": url, "filterTypes": ["*"] * 2000, "payloadFilter": or_filter(12288)})
    assert refused(st, out, "filterTypes", "at most 256 items"), (st, out)
    assert endpoints_of(env, apps["acme"]["id"]) == 0
    # each cap on its own
    cases = [
        ({"filterTypes": ["invoice.*"] * 257}, "filterTypes", "at most 256 items"),
        ({"eventTypes": ["invoice." + "p" * 300]}, "eventTypes", "1 to 256 characters"),
        ({"payloadFilter": or_filter(16385)}, "payloadFilter", "at most 16384 bytes"),
        ({"channels": [f"c{i}" for i in range(11)]}, "channels", "at most 10 items"),
        ({"headers": {f"X-H{i}": "v" for i in range(33)}}, "headers", "at most 32 headers"),
        ({"headers": {f"X-H{i}": "v" * 1100 for i in range(8)}}, "headers", "at most 8192 bytes"),
        ({"headers": {"X-Key": "a", "x-key": "b"}}, "headers", "name the same header"),
        ({"metadata": {f"k{i}": "v" for i in range(65)}}, "metadata", "at most 64 keys"),
        ({"metadata": {f"k{i}": "v" * 1000 for i in range(17)}}, "metadata", "at most 16384 bytes"),
        ({"uid": "ep_1"}, "uid", "must not start with 'ep_'"),
    ]
    for extra, field, words in cases:
        st, out = raw(w, "POST", path, acme, {"url": url, **extra})
        assert refused(st, out, field, words), (extra.keys(), st, out)
    assert endpoints_of(env, apps["acme"]["id"]) == 0
    # at the caps: accepted; the event types stored once each, in order
    st, ep = raw(w, "POST", path, acme, {
        "url": url, "filterTypes": ["invoice.sent", "invoice.*"] * 128, "payloadFilter": or_filter(16000),
        "headers": {f"X-H{i}": "v" * 1000 for i in range(8)}, "metadata": {f"k{i}": "v" for i in range(64)}})
    assert st == 201, ep
    assert ep["filterTypes"] == ["invoice.sent", "invoice.*"]
    assert env.db.value("SELECT event_types FROM webhook_endpoints WHERE tenant_id = %s",
                        apps["acme"]["id"]) == ["invoice.sent", "invoice.*"]
    # a PATCH and a header patch meet the same caps
    st, out = raw(w, "PATCH", f"{path}{ep['id']}/", acme, {"filterTypes": ["*"] * 10000})
    assert refused(st, out, "filterTypes", "at most 256 items"), (st, out)
    st, out = raw(w, "PATCH", f"{path}{ep['id']}/headers/", acme, {"headers": {"X-More": "v" * 300}})
    assert refused(st, out, "headers", "at most 8192 bytes"), (st, out)
    # an application's metadata, a message's channels and tags, an event type's feature flags
    st, out = raw(w, "PATCH", "/api/v1/app/acme/", acme, {"metadata": {f"k{i}": "v" for i in range(65)}})
    assert refused(st, out, "metadata", "at most 64 keys"), (st, out)
    for field in ("channels", "tags"):
        st, out = raw(w, "POST", "/api/v1/app/acme/msg/", acme,
                      {"eventType": "invoice.paid", "payload": {}, field: [f"x{i}" for i in range(6)]})
        assert st == 422 and "at most 5 items" in out["detail"][0]["msg"], (field, st, out)
    st, out = raw(w, "POST", "/api/v1/event-type/", root,
                  {"name": "invoice.flagged", "description": "x", "featureFlags": [f"f{i}" for i in range(33)]})
    assert refused(st, out, "featureFlags", "at most 32 items"), (st, out)


def test_an_application_has_a_budget_of_endpoints_and_filter_bytes(env, tenants):
    cfg, w, root, apps, toks = tenants("tenant_max_endpoints = 3", "tenant_max_filter_bytes = 20KiB")
    acme, globex = toks["acme"], toks["globex"]
    path = "/api/v1/app/acme/endpoint/"
    made = []
    for i in range(3):
        st, ep = raw(w, "POST", path, acme, {"url": f"http://127.0.0.1:9/{i}", "filterTypes": ["invoice.paid"]})
        assert st == 201, ep
        made.append(ep["id"])
    st, out = raw(w, "POST", path, acme, {"url": "http://127.0.0.1:9/3"})
    assert refused(st, out, None, "at most 3 endpoints ([hookd] tenant_max_endpoints)"), (st, out)
    assert endpoints_of(env, apps["acme"]["id"]) == 3
    # the filter bytes: a change that would pass them is refused and stores nothing
    st, _ = raw(w, "PATCH", f"{path}{made[0]}/", acme, {"payloadFilter": or_filter(12000)})
    assert st == 200
    st, out = raw(w, "PATCH", f"{path}{made[1]}/", acme, {"payloadFilter": or_filter(12000)})
    assert refused(st, out, None, "tenant_max_filter_bytes"), (st, out)
    assert env.db.value("SELECT payload_filter FROM webhook_endpoints WHERE id = hookd_api_uuid('ep', %s)",
                        made[1]) is None
    # an operator who lowers the budget: changes that grow nothing still pass, growth does not
    cfg.write_text(cfg.read_text().replace("tenant_max_filter_bytes = 20KiB", "tenant_max_filter_bytes = 4KiB"))
    w.signal(1)  # SIGHUP
    wait_for(lambda: "config.reloaded" in w.output(), what="the lowered budget loaded")
    st, out = raw(w, "PATCH", f"{path}{made[1]}/", acme, {"payloadFilter": or_filter(1000)})
    assert refused(st, out, None, "tenant_max_filter_bytes"), (st, out)
    st, _ = raw(w, "PATCH", f"{path}{made[0]}/", acme, {"disabled": True})
    assert st == 200
    st, _ = raw(w, "PATCH", f"{path}{made[0]}/", acme, {"payloadFilter": or_filter(6000)})
    assert st == 200
    # another application has a budget of its own
    st, _ = raw(w, "POST", "/api/v1/app/globex/endpoint/", globex, {"url": "http://127.0.0.1:9/g"})
    assert st == 201


# ---- the relay: one row per endpoint -------------------------------------------------

def vm_hwm_kib(w) -> int:
    with open(f"/proc/{w.proc.pid}/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmHWM:"))


# A stored endpoint with these filters (what the API accepted before it had
# caps) costs a relay pass one row and one parse of each; before, a pass read
# one row per event type and parsed the filter for each (about 185 KB of
# parsed JSON per copy of this filter, 370 MB a pass).
HOSTILE_TYPES = 2000
HOSTILE_FILTER_BYTES = 12288
# What the passes below may add to the worker's peak RSS.
RSS_BOUND_KIB = 48 * 1024


def test_a_stored_hostile_endpoint_costs_a_pass_one_row_and_bounded_memory(env, tenants, receivers):  # noqa: F811
    rx = receivers()
    cfg, w, root, apps, toks = tenants()
    acme = apps["acme"]["id"]
    st, ep = raw(w, "POST", "/api/v1/app/acme/endpoint/", toks["acme"], {"url": rx.url()})
    assert st == 201, ep
    # warm: one delivery through the relay before the baseline
    env.db.value("SELECT hookd_emit('invoice', 'w', 'invoice.paid', '{\"n\": 0}', p_tenant => 'acme')")
    rx.wait(1)
    base = vm_hwm_kib(w)
    env.db.all("UPDATE webhook_endpoints SET event_types = array_fill('*'::text, ARRAY[%s]), payload_filter = %s"
               " WHERE id = hookd_api_uuid('ep', %s)", HOSTILE_TYPES, compact(or_filter(HOSTILE_FILTER_BYTES)),
               ep["id"])
    # the relay's statement: one row for the endpoint, carrying its filters once
    sql = statement("relay_endpoints")
    with env.db.conn.cursor() as cur:
        cur.execute("BEGIN")
        cur.execute(sql.replace("$1::text[]", "%s::text[]"), ([acme],))
        rows = cur.fetchall()
        cur.execute("ROLLBACK")
    assert len(rows) == 1, len(rows)
    # passes of the worker: each event delivered once, the peak RSS bounded
    for i in range(1, 4):
        env.db.value("SELECT hookd_emit('invoice', %s, 'invoice.paid', %s::jsonb, p_tenant => 'acme')", f"h{i}",
                     json.dumps({"n": i}))
        rx.wait(1 + i)
    assert len(rx.got()) == 4
    grew = vm_hwm_kib(w) - base
    assert grew < RSS_BOUND_KIB, f"peak RSS grew by {grew} KiB over {base} KiB (bound {RSS_BOUND_KIB} KiB)"
    assert w.alive()


# ---- tenant references ---------------------------------------------------------------

def test_a_uid_never_names_another_tenants_id(env, tenants):
    cfg, w, root, apps, toks = tenants()
    acme_id = apps["acme"]["id"]
    # globex cannot take acme's id as its uid ...
    st, out = raw(w, "PATCH", "/api/v1/app/globex/", toks["globex"], {"uid": acme_id})
    assert refused(st, out, "uid", "must not start with 'app_'"), (st, out)
    st, out = raw(w, "POST", "/api/v1/app/", root, {"name": "X", "uid": "app_x"})
    assert refused(st, out, "uid", "must not start with 'app_'"), (st, out)
    # ... nor can the CLI or SQL store one
    r = run_hookd(["-c", str(cfg), "tenant", "add", acme_id])
    assert r.returncode != 0
    with pytest.raises(psycopg2.errors.CheckViolation):
        env.db.all("UPDATE hookd_tenants SET uid = %s WHERE uid = 'globex'", acme_id)
    # every lookup resolves the id first, in one function
    assert env.db.value("SELECT hookd_tenant_id(%s)", acme_id) == acme_id
    assert env.db.value("SELECT hookd_tenant_id('acme')") == acme_id
    assert env.db.value("SELECT hookd_tenant_id('nobody')") is None
    ev = env.db.value("SELECT hookd_emit('invoice', '1', 'invoice.paid', '{}', p_tenant => %s)::text", acme_id)
    assert env.db.value("SELECT tenant_id FROM outbox_events WHERE id = %s", ev) == acme_id
    st, out = raw(w, "GET", f"/api/v1/app/{acme_id}/", root)
    assert st == 200 and out["uid"] == "acme"


def test_a_tenant_learns_nothing_of_other_tenants_uids(env, tenants):
    cfg, w, root, apps, toks = tenants()
    globex = toks["globex"]
    taken = raw(w, "PATCH", "/api/v1/app/globex/", globex, {"uid": "acme"})
    free = raw(w, "PATCH", "/api/v1/app/globex/", globex, {"uid": "no-one-has-it"})
    assert taken == free and taken[0] == 403, (taken, free)
    assert env.db.value("SELECT uid FROM hookd_tenants WHERE id = %s", apps["globex"]["id"]) == "globex"
    # its own uid sent back (a PUT of the whole application) passes; left out, it is kept
    st, out = raw(w, "PUT", "/api/v1/app/globex/", globex, {"name": "Globex Inc", "uid": "globex"})
    assert st == 200 and out["uid"] == "globex" and out["name"] == "Globex Inc", out
    st, out = raw(w, "PUT", "/api/v1/app/globex/", globex, {"name": "Globex"})
    assert st == 200 and out["uid"] == "globex", out
    # the operator, who sees every tenant, may rename, and is told of a collision
    assert raw(w, "PATCH", "/api/v1/app/globex/", root, {"uid": "acme"})[0] == 409
    st, out = raw(w, "PATCH", "/api/v1/app/globex/", root, {"uid": "globex-2"})
    assert st == 200 and out["uid"] == "globex-2"


def test_migrate_clears_uids_shaped_like_application_ids(env):
    name = old_layout_database(env, before="0027")
    db = Db(env.services.db_url(name))
    try:
        a = db.value("INSERT INTO hookd_tenants (id, uid, name) VALUES (hookd_api_id('app', hookd_uuid7()), 'a',"
                     " 'A') RETURNING id")
        squat = db.value("INSERT INTO hookd_tenants (id, uid, name) VALUES (hookd_api_id('app', hookd_uuid7()),"
                         " %s, 'Squat') RETURNING id", a)
        gone = db.value("INSERT INTO hookd_tenants (id, uid, name, metadata) VALUES"
                        " (hookd_api_id('app', hookd_uuid7()), 'app_deleted', 'Gone', '{\"k\": \"v\"}') RETURNING id")
        # before: the squatter received the events emitted for a's id
        ev = db.value("SELECT hookd_emit('x', '1', 'x.y', '{}', p_tenant => %s)::text", a)
        assert db.value("SELECT tenant_id FROM outbox_events WHERE id = %s", ev) == squat
        r = run_hookd(["-c", str(env.config(database=env.services.db_url(name))), "migrate"])
        assert r.returncode == 0, r.stderr
        assert "applied 0027_tenant_resolution" in r.stdout
        rows = {t["id"]: t for t in db.all("SELECT id, uid, metadata FROM hookd_tenants")}
        assert rows[a]["uid"] == "a" and rows[a]["metadata"] == {}
        assert rows[squat]["uid"] is None and rows[squat]["metadata"] == {"hookdFormerUid": a}
        assert rows[gone]["uid"] is None and rows[gone]["metadata"] == {"k": "v", "hookdFormerUid": "app_deleted"}
        ev = db.value("SELECT hookd_emit('x', '1', 'x.y', '{}', p_tenant => %s)::text", a)
        assert db.value("SELECT tenant_id FROM outbox_events WHERE id = %s", ev) == a
        with pytest.raises(psycopg2.errors.ForeignKeyViolation, match="no tenant app_deleted"):
            db.value("SELECT hookd_emit('x', '1', 'x.y', '{}', p_tenant => 'app_deleted')")
    finally:
        db.close()


# ---- ordered delivery per tenant -----------------------------------------------------

def test_another_tenants_unfanned_event_of_the_same_aggregate_holds_nothing(env, receivers):  # noqa: F811
    """acme's invoice 1 is committed but its fan-out is held (its row is
    locked, as a slow pass holds it): acme's later invoice-1 event waits
    behind it, globex's invoice-1 events do not."""
    rx_acme, rx_globex = receivers(), receivers()
    cfg = outbound_config(env)
    for uid in ("acme", "globex"):
        assert run_hookd(["-c", str(cfg), "tenant", "add", uid]).returncode == 0
    for uid, rx in (("acme", rx_acme), ("globex", rx_globex)):
        r = run_hookd(["-c", str(cfg), "endpoint", "add", "--url", rx.url(), "--name", uid, "--tenant", uid,
                       "--ordered"])
        assert r.returncode == 0, r.stderr

    def emit(tenant: str, n: int) -> str:
        return env.db.value("SELECT hookd_emit('invoice', '1', 'invoice.paid', %s::jsonb, p_tenant => %s)::text",
                            json.dumps({"n": n}), tenant)

    head = emit("acme", 0)
    holder = psycopg2.connect(env.db_url)
    try:
        with holder.cursor() as cur:
            cur.execute("SELECT 1 FROM outbox_events WHERE id = %s FOR UPDATE", (head,))
        w = env.worker(cfg)
        behind = emit("acme", 1)
        emit("globex", 0)
        emit("globex", 1)
        got = rx_globex.wait(2)
        assert [r.json["n"] for r in got] == [0, 1]
        # acme's second event is fanned out but held behind its unfanned head
        assert env.db.value("SELECT status FROM outbox_deliveries WHERE event_id = %s", behind) in ("PENDING", None)
        assert rx_acme.got() == []
    finally:
        holder.rollback()
        holder.close()
    got = rx_acme.wait(2)
    assert [r.json["n"] for r in got] == [0, 1]
    assert w.alive()
