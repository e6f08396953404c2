"""The scheduler's Lua scripts (lua/*.lua), called directly against the test
Redis with keys under the test's own prefix: claim, ack, reschedule, reap and
seed, and the atomicity of claim under many concurrent claimers."""
import threading

import pytest

from hookdtest.paths import ROOT

LUA = ROOT / "lua"


class Scripts:
    """The scripts of lua/, registered on one Redis client, with the inbox
    queue's keys of one test prefix."""

    def __init__(self, r, prefix: str) -> None:
        self.r = r
        self.due = f"{prefix}:{{inbox}}:due"
        self.inflight = f"{prefix}:{{inbox}}:inflight"
        self._s = {name: r.register_script((LUA / f"{name}.lua").read_text())
                   for name in ("claim", "ack", "reschedule", "reap", "seed")}

    def claim(self, now: int, n: int, lease: int) -> list[tuple[str, int]]:
        flat = self._s["claim"](keys=[self.due, self.inflight], args=[now, n, lease])
        return [(flat[i], int(float(flat[i + 1]))) for i in range(0, len(flat), 2)]

    def ack(self, *members: str) -> int:
        return self._s["ack"](keys=[self.inflight], args=list(members))

    def reschedule(self, pairs: dict) -> int:
        args = [x for m, s in pairs.items() for x in (m, s)]
        return self._s["reschedule"](keys=[self.inflight, self.due], args=args)

    def reap(self, now: int, n: int) -> list[str]:
        return self._s["reap"](keys=[self.inflight, self.due], args=[now, n])

    def seed(self, mode: str, pairs: dict) -> int:
        args = [mode] + [x for m, s in pairs.items() for x in (m, s)]
        return self._s["seed"](keys=[self.due, self.inflight], args=args)

    def due_set(self) -> dict:
        return {m: int(s) for m, s in self.r.zrange(self.due, 0, -1, withscores=True)}

    def inflight_set(self) -> dict:
        return {m: int(s) for m, s in self.r.zrange(self.inflight, 0, -1, withscores=True)}


@pytest.fixture
def lua(env):
    s = Scripts(env.redis, env.prefix)
    yield s
    env.redis.delete(s.due, s.inflight)


def test_claim_moves_at_most_n_due_members_with_the_lease(lua):
    lua.r.zadd(lua.due, {"a": 100, "b": 200, "c": 300, "d": 400, "later": 5000})
    got = lua.claim(now=1000, n=3, lease=31000)
    # the earliest three, each with its due score
    assert got == [("a", 100), ("b", 200), ("c", 300)]
    assert lua.inflight_set() == {"a": 31000, "b": 31000, "c": 31000}
    assert lua.due_set() == {"d": 400, "later": 5000}
    # the next claim takes what is due and leaves what is not yet due
    assert lua.claim(now=1000, n=10, lease=32000) == [("d", 400)]
    assert lua.due_set() == {"later": 5000}
    assert lua.inflight_set()["d"] == 32000
    # nothing due: nothing moves
    assert lua.claim(now=1000, n=10, lease=33000) == []
    assert lua.due_set() == {"later": 5000}
    assert len(lua.inflight_set()) == 4


def test_claim_includes_a_member_due_exactly_now(lua):
    lua.r.zadd(lua.due, {"edge": 1000, "after": 1001})
    assert lua.claim(now=1000, n=10, lease=2000) == [("edge", 1000)]
    assert lua.due_set() == {"after": 1001}


def test_claim_on_empty_keys_returns_nothing(lua):
    assert lua.claim(now=10**13, n=100, lease=10**13 + 1) == []
    assert not lua.r.exists(lua.due) and not lua.r.exists(lua.inflight)


def test_ack_removes_from_inflight_only(lua):
    lua.r.zadd(lua.inflight, {"a": 100, "b": 200, "c": 300})
    lua.r.zadd(lua.due, {"a": 50})
    assert lua.ack("a", "b", "not-there") == 2
    assert lua.inflight_set() == {"c": 300}
    assert lua.due_set() == {"a": 50}  # ack touches the inflight set alone
    assert lua.ack("c") == 1
    assert lua.inflight_set() == {}


def test_reschedule_moves_inflight_back_to_due_at_the_new_score(lua):
    lua.r.zadd(lua.inflight, {"a": 9000, "b": 9000, "c": 9000})
    lua.r.zadd(lua.due, {"b": 10})  # an older due entry is replaced by the new score
    assert lua.reschedule({"a": 1500, "b": 2500}) == 2
    assert lua.due_set() == {"a": 1500, "b": 2500}
    assert lua.inflight_set() == {"c": 9000}


def test_reap_returns_expired_leases_to_due(lua):
    lua.r.zadd(lua.inflight, {"expired1": 900, "expired2": 1000, "alive": 1001})
    lua.r.zadd(lua.due, {"expired2": 50})  # already due (re-seeded): keeps its earlier score
    got = lua.reap(now=1000, n=100)
    assert sorted(got) == ["expired1", "expired2"]
    assert lua.inflight_set() == {"alive": 1001}
    assert lua.due_set() == {"expired1": 1000, "expired2": 50}


def test_reap_keeps_an_earlier_due_score_but_not_a_later_one(lua):
    # NX: a member already in due is left exactly as it is, even at a later score
    lua.r.zadd(lua.inflight, {"m": 100})
    lua.r.zadd(lua.due, {"m": 7000})
    assert lua.reap(now=1000, n=10) == ["m"]
    assert lua.due_set() == {"m": 7000}
    assert lua.inflight_set() == {}


def test_reap_moves_at_most_n(lua):
    lua.r.zadd(lua.inflight, {f"m{i}": i for i in range(10)})
    got = lua.reap(now=100, n=4)
    assert got == ["m0", "m1", "m2", "m3"]
    assert len(lua.inflight_set()) == 6
    assert lua.due_set() == {m: 100 for m in got}


def test_seed_only_missing_keeps_due_scores_and_skips_inflight(lua):
    lua.r.zadd(lua.due, {"queued": 500})
    lua.r.zadd(lua.inflight, {"held": 9000})
    n = lua.seed("only_missing", {"queued": 100, "held": 100, "new": 300})
    assert n == 1
    assert lua.due_set() == {"queued": 500, "new": 300}
    assert lua.inflight_set() == {"held": 9000}


def test_seed_set_overwrites_due_scores_but_skips_inflight(lua):
    lua.r.zadd(lua.due, {"queued": 500})
    lua.r.zadd(lua.inflight, {"held": 9000})
    n = lua.seed("set", {"queued": 100, "held": 100, "new": 300})
    assert n == 2
    assert lua.due_set() == {"queued": 100, "new": 300}
    assert lua.inflight_set() == {"held": 9000}
    # 'set' also moves a score later (a deferral re-seeded from Postgres)
    assert lua.seed("set", {"queued": 8000}) == 1
    assert lua.due_set()["queued"] == 8000


def test_full_cycle_claim_reschedule_claim_ack(lua):
    lua.seed("set", {"x": 100})
    assert lua.claim(now=200, n=10, lease=3200) == [("x", 100)]
    assert lua.reschedule({"x": 700}) == 1
    assert lua.claim(now=600, n=10, lease=3600) == []  # not due again yet
    assert lua.claim(now=700, n=10, lease=3700) == [("x", 700)]
    assert lua.ack("x") == 1
    assert lua.due_set() == {} and lua.inflight_set() == {}


def test_concurrent_claimers_never_share_a_member(env, services):
    members = {f"id-{i:04d}": i for i in range(1000)}
    env.redis.zadd(f"{env.prefix}:{{inbox}}:due", members)
    nthreads = 8
    results: list[list[tuple[str, int]]] = [[] for _ in range(nthreads)]
    errors: list[BaseException] = []
    start = threading.Barrier(nthreads)

    def claimer(k: int) -> None:
        try:
            s = Scripts(services.redis_client(), env.prefix)  # one connection per claimer
            start.wait()
            while True:
                got = s.claim(now=10**6, n=7, lease=10**7)
                if not got:
                    break
                results[k].extend(got)
        except BaseException as e:  # surfaced below
            errors.append(e)

    threads = [threading.Thread(target=claimer, args=(k,)) for k in range(nthreads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors, errors
    assert not any(t.is_alive() for t in threads)
    claimed = [m for r in results for m, _ in r]
    assert len(claimed) == len(set(claimed)), "a member was claimed twice"
    assert set(claimed) == set(members)
    assert all(score == members[m] for r in results for m, score in r)
    assert sum(1 for r in results if r) > 1, "only one claimer got work: the check proved nothing"
    s = Scripts(env.redis, env.prefix)
    assert s.due_set() == {}
    assert len(s.inflight_set()) == 1000
    env.redis.delete(s.due, s.inflight)


def test_seed_only_missing_leaves_members_parked_under_an_open_circuit(env, lua):
    """The reconciler's seed ('only_missing') with the delivery queue's
    parked ids and open circuits: a member parked under an open circuit
    stays parked (not due); one whose circuit is not open is seeded; 'set'
    (new work) ignores both."""
    parked, open_ = f"{env.prefix}:{{inbox}}:parked_ids", f"{env.prefix}:{{inbox}}:circuit:open"
    lua.r.hset(parked, mapping={"p1": "down", "p2": "closed"})
    lua.r.hset(open_, "down", 99999)
    seed = lua._s["seed"]
    try:
        n = seed(keys=[lua.due, lua.inflight, f"{env.prefix}:{{inbox}}:woken", parked, open_],
                 args=["only_missing", "p1", 100, "p2", 200, "new", 300])
        assert n == 2
        assert lua.due_set() == {"p2": 200, "new": 300}
        assert seed(keys=[lua.due, lua.inflight, f"{env.prefix}:{{inbox}}:woken", parked, open_],
                    args=["set", "p1", 100]) == 1
        assert lua.due_set()["p1"] == 100
    finally:
        env.redis.delete(parked, open_)


def test_a_large_park_goes_back_to_due_in_bounded_chunks(env):
    """A circuit closing over 25,000 parked deliveries: circuit_report only
    marks the endpoint draining; circuit_unpark moves them 1,000 per call, every member exactly once, at its own score,
    except one a worker holds (only unparked); the mark goes with the last
    chunk. If the circuit opens again mid-way, the rest stays parked."""
    r = env.redis
    scripts = {n: r.register_script((LUA / f"{n}.lua").read_text()) for n in ("circuit_report", "circuit_unpark")}
    k = {n: f"{env.prefix}:{{delivery}}:{n}" for n in ("circuit:failures", "circuit:open", "circuit:probe", "due",
                                                       "inflight", "parked:ep", "parked_ids", "circuit:draining",
                                                       "circuit:since")}
    n = 25000
    try:
        members = {f"m{i:05d}": 1000 + i for i in range(n)}
        pipe = r.pipeline(transaction=False)
        for i in range(0, n, 5000):
            chunk = dict(list(members.items())[i:i + 5000])
            pipe.zadd(k["parked:ep"], chunk)
            pipe.hset(k["parked_ids"], mapping={m: "ep" for m in chunk})
        pipe.execute()
        r.hset(k["circuit:open"], "ep", 5000)
        r.zadd(k["inflight"], {"m00007": 99999})  # seeded by the reconciler and claimed meanwhile
        report_keys = [k["circuit:failures"], k["circuit:open"], k["circuit:probe"], k["due"], k["parked:ep"],
                       k["parked_ids"], k["circuit:draining"], k["circuit:since"]]
        assert scripts["circuit_report"](keys=report_keys, args=[6000, "ep", 1, 0, 3, 1000]) == ["ep", 0, 1]
        assert r.zcard(k["due"]) == 0 and r.zcard(k["parked:ep"]) == n
        assert r.hget(k["circuit:draining"], "ep") == "6000"
        unpark_keys = [k["circuit:open"], k["circuit:draining"], k["parked:ep"], k["due"], k["inflight"],
                       k["parked_ids"]]
        calls = []
        while True:
            moved, left = scripts["circuit_unpark"](keys=unpark_keys, args=["ep", 1000])
            calls.append(moved)
            if left == 0:
                break
        assert calls == [1000] * 25
        assert r.zcard(k["parked:ep"]) == 0 and r.hlen(k["parked_ids"]) == 0
        assert r.hget(k["circuit:draining"], "ep") is None
        due = {m: int(s) for m, s in r.zrange(k["due"], 0, -1, withscores=True)}
        expect = {m: s for m, s in members.items() if m != "m00007"}
        assert due == expect
        # Opened again half-way: the rest stays parked, draining ends.
        r.delete(k["due"])
        r.zadd(k["parked:ep"], {f"x{i}": i for i in range(3000)})
        r.hset(k["circuit:draining"], "ep", 1)
        assert scripts["circuit_unpark"](keys=unpark_keys, args=["ep", 1000]) == [1000, 2000]
        r.hset(k["circuit:open"], "ep", 9999)
        assert scripts["circuit_unpark"](keys=unpark_keys, args=["ep", 1000]) == [0, 0]
        assert r.zcard(k["parked:ep"]) == 2000 and r.hget(k["circuit:draining"], "ep") is None
    finally:
        r.delete(*k.values())
