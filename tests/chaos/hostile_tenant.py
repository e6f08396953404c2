#!/usr/bin/env python3
"""The hostile-tenant part of `make chaos`: one tenant, with nothing but its
own API token and portal session, attacks two workers (all roles) while
another tenant's messages keep flowing, for a bounded time.

The attacker's shapes:
- render: messages of arrays nested 2,040 deep (122 KB and 981 KB; indented,
  their pages were 250 MB and 2,000 MB), posted again and again; their
  portal pages and, once its failing endpoint dead-letters them, their admin
  dead-letter pages are fetched over and over; every page must stay under
  PAGE_BOUND and the portal's download must be the stored payload.
- amplification: an endpoint with 10,000 event types "*" and a 64 KB payload
  filter (one relay pass once cost 609 MiB per copy); the API may refuse it
  (422) or take it, if taking it is cheap; small messages that match it keep
  the relay passing over it.

Checked: both workers stay up (process alive, /healthz answers within 5 s
on every probe), their RSS stays under RSS_BOUND_MIB (VmRSS; a worker past
twice that is killed at once, to spare the machine), and the other tenant's
messages are all delivered, each within LATENCY_BOUND_S (latencies printed).
Exits 1 on any failure. Run it with HOOKD_BIN set and tests/ on PYTHONPATH,
as the Makefile does."""
from __future__ import annotations

import argparse
import os
import signal
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "integration"))

from hookdtest.client import deep_payload, post_message_text, read_capped  # noqa: E402
from hookdtest.services import Db, Services  # noqa: E402
from hookdtest.util import wait_for  # noqa: E402
from hookdtest.worker import Worker, write_config  # noqa: E402

from test_api import new_token, raw  # noqa: E402
from test_outbound import Receiver  # noqa: E402
from test_portal import link, open_link  # noqa: E402

RSS_BOUND_MIB = 384  # per worker: about 15 MiB at rest; see the note in tests/chaos/README.md
PAGE_BOUND = 6 * 64 * 1024 + 32 * 1024  # 64 KiB of a payload, escaped, and the page around it
LATENCY_BOUND_S = 10.0  # loose: chaos, not `make test`
ADMIN_TOKEN = "hostile-tenant-admin-token-0123456789"
SMALL = deep_payload(30)  # 122 KB
LARGE = deep_payload(240)  # 981 KB


class Checks:
    def __init__(self) -> None:
        self.rows: list[tuple[str, bool, str]] = []

    def add(self, name: str, ok: bool, detail: str = "") -> None:
        self.rows.append((name, bool(ok), detail))
        print(f"{'PASS' if ok else 'FAIL'}  {name}{'  ' + detail if detail else ''}", flush=True)

    @property
    def passed(self) -> bool:
        return all(ok for _, ok, _ in self.rows)


def rss_mib(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:")) / 1024


class Watch(threading.Thread):
    """Every 100 ms: each worker's RSS (peak kept; past twice the bound the
    worker is killed) and its /healthz (failures kept)."""

    def __init__(self, workers: list[Worker]) -> None:
        super().__init__(daemon=True)
        self.workers = workers
        self.peak = {w.port: 0.0 for w in workers}
        self.killed: list[str] = []
        self.probe_failures: list[str] = []
        self.probes = 0
        self.stop_flag = threading.Event()

    def run(self) -> None:
        while not self.stop_flag.wait(0.1):
            for w in self.workers:
                if w.proc.poll() is not None:
                    continue
                try:
                    rss = rss_mib(w.proc.pid)
                except (OSError, StopIteration):
                    continue
                self.peak[w.port] = max(self.peak[w.port], rss)
                if rss > 2 * RSS_BOUND_MIB:
                    w.proc.kill()
                    self.killed.append(f"worker :{w.port} killed at {rss:.0f} MiB")
                    continue
                t0 = time.monotonic()
                try:
                    status = w.get("/healthz", timeout=5)[0]
                except OSError as e:
                    status = str(e)
                self.probes += 1
                if status != 200:
                    self.probe_failures.append(f":{w.port} {status} after {time.monotonic() - t0:.1f}s")


class Attack:
    def __init__(self, seconds: float, types: int, filter_kb: int) -> None:
        self.seconds, self.types, self.filter_kb = seconds, types, filter_kb
        self.checks = Checks()
        self.tmp = Path(tempfile.mkdtemp(prefix="hookd-hostile-tenant-"))
        self.services = Services(prefix="hookd-hostile-tenant-")
        self.db_url = self.services.db_url(self.services.new_database())
        self.db = Db(self.db_url)
        self.workers: list[Worker] = []
        self.good_sent: dict[str, float] = {}
        self.pages: list[tuple[str, int, int, float]] = []  # kind, status, bytes, seconds
        self.errors: list[str] = []
        self.deep_refused = False
        self.stop_flag = threading.Event()

    # ---- set-up ----------------------------------------------------------------

    def worker(self, n: int) -> Worker:
        cfg = write_config(self.tmp, self.db_url, self.services.redis_url, "hostile")
        lines = f"admin_token = {ADMIN_TOKEN}\nallow_private_networks = true\n"
        cfg.write_text(cfg.read_text().replace("[hookd]\n", "[hookd]\n" + lines, 1))
        port = int(next(l for l in cfg.read_text().splitlines() if l.startswith("listen")).rsplit(":", 1)[1])
        w = Worker(config=cfg, port=port, log_path=self.tmp / f"worker-{n}.log")
        self.workers.append(w)
        return w.start()

    def api(self, token: str, method: str, path: str, body=None, want=(200, 201, 202, 204)):
        status, answer = raw(self.workers[0], method, path, token, body)
        if status not in want:
            raise AssertionError(f"{method} {path}: {status} {str(answer)[:300]}")
        return answer

    def setup(self) -> None:
        w = self.worker(0)
        self.worker(1)
        self.root = new_token(w.config, "root")
        for name in ("evil.thing", "good.thing"):
            self.api(self.root, "POST", "/api/v1/event-type", {"name": name, "description": name})
        for uid in ("evil", "good"):
            self.api(self.root, "POST", "/api/v1/app", {"name": uid.title(), "uid": uid})
        self.good = new_token(w.config, "good", "good")
        self.evil = new_token(w.config, "evil", "evil")
        self.ok_rcv = Receiver()
        self.fail_rcv = Receiver(lambda req: (500, {}, b"no"))
        self.api(self.good, "POST", "/api/v1/app/good/endpoint", {"url": self.ok_rcv.url()})
        self.api(self.evil, "POST", "/api/v1/app/evil/endpoint", {"url": self.fail_rcv.url("127.0.0.1", "/fail")})
        self.session = {"Cookie": f"hookd_portal={open_link(w, link(w, self.root, 'evil'))}"}

    # ---- the shapes --------------------------------------------------------------

    def amplification(self) -> None:
        types = ["*"] * self.types
        values = [f"v{i:06d}" for i in range(self.filter_kb * 1024 // 11)]  # '"v000000", ': 11 bytes each
        body = {"url": self.fail_rcv.url("127.0.0.1", "/amplified"), "filterTypes": types,
                "payloadFilter": {"$or": [{"data.id": {"$in": values}}, {"kind": "evil"}]}}
        t0 = time.monotonic()
        status, answer = raw(self.workers[0], "POST", "/api/v1/app/evil/endpoint", self.evil, body)
        took = time.monotonic() - t0
        print(f"amplification: {status} in {took:.2f}s ({str(answer)[:160]})", flush=True)
        self.checks.add("amplifying endpoint refused (422) or taken", status in (201, 422), f"status {status}")

    def post(self, token: str, app: str, kind: str, payload: bytes) -> str:
        return post_message_text(self.workers[0].port, token, app, kind, payload)

    def post_deep(self, payload: bytes) -> str:
        """A deep message through the API; if the API refuses payloads that
        deep (422), as the application would emit it for the tenant, so
        that its pages are still shown."""
        try:
            return self.post(self.evil, "evil", "evil.thing", payload)
        except AssertionError as e:
            if not (e.args and isinstance(e.args[0], tuple) and e.args[0][0] == 422):
                raise
        self.deep_refused = True
        return self.db.value("SELECT hookd_api_id('msg', hookd_emit('Evil', 'deep', 'evil.thing', %s::jsonb,"
                             " (SELECT id FROM hookd_tenants WHERE uid = 'evil')))", payload.decode())

    def evil_messages(self) -> None:
        """Deep messages in turn, and small ones that match the amplifying
        endpoint's filter."""
        self.deep = [self.post_deep(SMALL), self.post_deep(LARGE)]
        i = 0
        while not self.stop_flag.wait(0.5):
            try:
                self.post(self.evil, "evil", "evil.thing", b'{"kind": "evil", "i": %d}' % i)
                if i % 8 == 0:  # every 4 s: the pages need a few, and each costs the API parses of its own
                    self.deep.append(self.post_deep(LARGE if i % 16 else SMALL))
            except (AssertionError, OSError) as e:
                self.errors.append(f"evil post: {e}")
            i += 1

    def good_messages(self) -> None:
        i = 0
        while not self.stop_flag.wait(0.2):
            try:
                msg = self.post(self.good, "good", "good.thing", b'{"n": %d}' % i)
                self.good_sent[msg] = time.time()
            except (AssertionError, OSError) as e:
                self.errors.append(f"good post: {e}")
            i += 1

    def page(self, kind: str, port: int, path: str, headers: dict) -> None:
        t0 = time.monotonic()
        status, _, body = read_capped(port, path, headers, PAGE_BOUND)
        self.pages.append((kind, status, len(body), time.monotonic() - t0))

    def renders(self, n: int) -> None:
        admin = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
        while not self.stop_flag.is_set():
            w = self.workers[n % len(self.workers)]
            n += 1
            try:
                for msg in list(self.deep)[-2:]:
                    self.page("portal", w.port, f"/portal/message/{msg}", self.session)
                dead = self.db.value("SELECT d.id::text FROM dead_letters d ORDER BY d.dead_at DESC LIMIT 1")
                if dead:
                    self.page("admin", w.admin_port, f"/admin/dlq/{dead}", admin)
            except OSError as e:
                self.errors.append(f"render: {e}")

    # ---- the run -------------------------------------------------------------------

    def run(self) -> "Attack":
        try:
            self.setup()
            base = {w.port: rss_mib(w.proc.pid) for w in self.workers}
            watch = Watch(self.workers)
            watch.start()
            self.amplification()
            self.deep: list[str] = []
            threads = [threading.Thread(target=self.evil_messages), threading.Thread(target=self.good_messages)]
            threads[0].start()
            wait_for(lambda: len(self.deep) >= 2, 60, what="the first deep messages")
            threads[1].start()
            threads += [threading.Thread(target=self.renders, args=(n,)) for n in range(2)]
            for t in threads[2:]:
                t.start()
            self.stop_flag.wait(self.seconds)
            self.stop_flag.set()
            for t in threads:
                t.join(60)
            self.settle(watch, base)
        finally:
            for w in self.workers:
                if w.proc and w.proc.poll() is None:
                    w.stop()
            self.db.close()
            self.services.stop()
        return self

    def settle(self, watch: Watch, base: dict) -> None:
        sent = dict(self.good_sent)
        seen: dict[str, float] = {}

        def delivered() -> bool:
            for r in self.ok_rcv.got():
                seen.setdefault(r.headers.get("webhook-id"), r.at)
            return set(sent) <= set(seen)

        try:
            wait_for(delivered, 60, what="the other tenant's messages")
        except AssertionError:
            pass
        watch.stop_flag.set()
        watch.join(5)
        c = self.checks
        for w in self.workers:
            alive = w.proc.poll() is None
            health = w.get("/healthz")[0] if alive else None
            c.add(f"worker :{w.port} up", alive and health == 200, f"exit {w.proc.returncode}" if not alive else "")
            c.add(f"worker :{w.port} RSS under {RSS_BOUND_MIB} MiB", watch.peak[w.port] < RSS_BOUND_MIB,
                  f"{base[w.port]:.0f} MiB at start, peak {watch.peak[w.port]:.0f} MiB")
        c.add("no worker killed for its RSS", not watch.killed, "; ".join(watch.killed))
        c.add("/healthz answered every probe within 5 s", not watch.probe_failures,
              f"{watch.probes} probes; failed: {watch.probe_failures[:5]}")
        bad = [p for p in self.pages if p[1] != 200 or p[2] > PAGE_BOUND]
        for kind in ("portal", "admin"):
            mine = [p for p in self.pages if p[0] == kind]
            worst = max((p[3] for p in mine), default=0.0)
            print(f"{kind} pages: {len(mine)}, largest {max((p[2] for p in mine), default=0)} bytes, "
                  f"slowest {worst:.2f}s", flush=True)
            c.add(f"{kind} pages fetched", mine, f"{len(mine)}")
        c.add(f"every page 200 and under {PAGE_BOUND} bytes", not bad, str(bad[:5]))
        if self.deep_refused:
            print("the API refused the deep payloads (422): the application emitted them", flush=True)
        up = [w for w in self.workers if w.proc.poll() is None]
        if self.deep and up:
            status, _, data = read_capped(up[0].port, f"/portal/message/{self.deep[1]}/payload", self.session, 2 << 20)
            stored = self.db.value("SELECT payload::text FROM outbox_events WHERE id = hookd_api_uuid('msg', %s)",
                                   self.deep[1])
            c.add("the portal's download is the stored payload", status == 200 and data.decode() == stored,
                  f"status {status}, {len(data)} bytes")
        missing = set(sent) - set(seen)
        lat = sorted(seen[m] - sent[m] for m in sent if m in seen)
        if lat:
            print(f"other tenant: {len(sent)} messages, latency p50 {statistics.median(lat) * 1000:.0f} ms, "
                  f"p95 {lat[int(len(lat) * 0.95) - 1] * 1000:.0f} ms, max {lat[-1] * 1000:.0f} ms", flush=True)
        c.add("the other tenant's messages all delivered", sent and not missing, f"{len(missing)} of {len(sent)} missing")
        c.add(f"the other tenant's latency under {LATENCY_BOUND_S:.0f} s", lat and lat[-1] < LATENCY_BOUND_S,
              f"max {lat[-1]:.2f}s" if lat else "none delivered")
        c.add("the attacker's own requests answered", not self.errors, "; ".join(self.errors[:3]))
        if not c.passed:
            print(f"worker logs kept in {self.tmp}", flush=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=30, help="how long the attack runs (default 30)")
    ap.add_argument("--types", type=int, default=10_000, help="the amplifying endpoint's event types (default 10000)")
    ap.add_argument("--filter-kb", type=int, default=64, help="the size of its payload filter (default 64)")
    ap.add_argument("--deadline", type=int, default=300, help="the whole run's limit in seconds (default 300)")
    args = ap.parse_args(argv)

    def too_long(signum, frame):
        raise TimeoutError(f"the hostile-tenant run took more than {args.deadline}s")

    signal.signal(signal.SIGALRM, too_long)
    signal.alarm(args.deadline)
    attack = Attack(args.seconds, args.types, args.filter_kb).run()
    signal.alarm(0)
    print("hostile tenant:", "PASS" if attack.checks.passed else "FAIL", flush=True)
    return 0 if attack.checks.passed else 1


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
