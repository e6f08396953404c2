"""What every scenario of the benchmark suite shares: the sizes (scaled by
BENCH_SCALE), the bookkeeping the report is written from (commands run,
pgbench scripts, result rows, notes, details), services with fsync on, and
Bench, which starts workers, pgbench and loadgen and stops them all.

Bench also watches its hookd workers: every wait of a scenario (Bench.wait_for,
Bench.pause, Bench.loadgen, a worker's start) polls them, and a worker that
exited on its own - a crash, or any exit but the 0 of a SIGTERM the scenario
sent - raises WorkerDied at once, naming the scenario, the worker and its exit
status or signal, instead of waiting for a condition a dead worker can never
meet."""
from __future__ import annotations

import json
import os
import re
import resource
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path

from hookdtest.paths import ROOT
from hookdtest.services import Db, Services
from hookdtest.util import free_port
from hookdtest.worker import VALGRIND_SLOWDOWN, Worker, write_config

TOOLS = Path(os.environ.get("HOOKD_TOOLS", ROOT / "build" / "tools"))
PGBIN = Path(os.environ.get("PGBIN", "/usr/lib/postgresql/15/bin"))
SCALE = float(os.environ.get("BENCH_SCALE", "1.0"))
# Where a run's report goes (make bench, make bench-redis): the table, the
# machine, the details and the exact commands of that run. docs/benchmarks.md
# is written by hand from these reports.
REPORT_DIR = Path(os.environ.get("BENCH_REPORT_DIR", ROOT / "build" / "bench"))
REPORT = REPORT_DIR / "report.md"

# Sizes (scaled by BENCH_SCALE).
INGEST_REQUESTS = int(20000 * SCALE)
INGEST_CONNECTIONS = 32
INGEST_ENTITIES = max(1, int(10000 * SCALE))
PROC_ENTITIES = max(1, int(25000 * SCALE))  # x 4 events = 100,000 rows
PROC_EVENTS_PER_ENTITY = 4
PROC_WORKERS = [int(x) for x in os.environ.get("BENCH_PROC_WORKERS", "1,2,4").split(",")]  # diagnosis: fewer runs
LATENESS_ROWS = int(20000 * SCALE)
LATENESS_SPREAD_S = 10.0
DELIVERY_EVENTS = int(50000 * SCALE)
PACED_RATE = 1000
PACED_SECONDS = 10
PGBENCH_SECONDS = 10
# BENCH_ONLY=processing,delivery runs those scenarios only (ingest, processing,
# delivery, claim) and prints their rows without rewriting the report.
ONLY = {x.strip() for x in os.environ.get("BENCH_ONLY", "").split(",") if x.strip()}
RUN_CAP_S = 60  # no single measured run waits longer than this
CLAIM_MEMBERS = int(200000 * SCALE)

BODY_TEMPLATE = '{"type":"order.started","data":{"order_id":"o%d"}}'

# ---- bookkeeping ------------------------------------------------------------------

COMMANDS: list[str] = []  # exactly what ran, for the report
SCRIPTS: dict[str, str] = {}  # pgbench scripts by file name
ROWS: list[dict] = []  # the results table
NOTES: list[str] = []  # observations worth a reader's attention
EXTRA: dict = {}  # figures for the chart and details


def log(msg: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {msg}", flush=True)


def row(scenario: str, figure: str, value: float | None, unit: str, ceiling: float | None = None,
        ceiling_what: str = "", target: str = "", ok: bool | None = None, cpu: dict | None = None) -> None:
    """One line of the results table; `cpu` is SystemCpu.per_event()'s answer for the figure."""
    ratio = (value / ceiling) if (value is not None and ceiling) else None
    ROWS.append(dict(scenario=scenario, figure=figure, value=value, unit=unit, ceiling=ceiling,
                     ceiling_what=ceiling_what, ratio=ratio, target=target,
                     verdict="info" if ok is None else ("pass" if ok else "MISS"), cpu=cpu))


def sh(cmd: list[str], record: bool = True, **kw) -> subprocess.CompletedProcess:
    if record:
        COMMANDS.append(" ".join(shlex_quote(c) for c in cmd))
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


def shlex_quote(s: str) -> str:
    import shlex
    return shlex.quote(str(s))


# ---- services with fsync on ------------------------------------------------------------


class BenchServices(Services):
    """hookdtest Services, but Postgres keeps fsync on: durability costs are the point."""

    def __init__(self, pg_settings: dict | None = None) -> None:
        super().__init__(fsync=True, prefix="hookd-bench-", pg_settings=pg_settings)


class WorkerDied(RuntimeError):
    """A hookd worker of the benchmark exited while its scenario ran."""


def exit_text(returncode: int) -> str:
    """'killed by signal 11 (SIGSEGV)' or 'exited with status 1'."""
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = "unknown signal"
        return f"killed by signal {-returncode} ({name})"
    return f"exited with status {returncode}"


class Bench:
    def __init__(self, pg_settings: dict | None = None) -> None:
        self.pg_settings = pg_settings
        self.work = Path(tempfile.mkdtemp(prefix="hookd-bench-work-"))
        self.services: BenchServices | None = None
        self.workers: list[Worker] = []
        self.procs: list[subprocess.Popen] = []
        self.nprefix = 0
        self.scenario = "setup"  # the scenario running now, named in a WorkerDied
        self.dead: set[int] = set()  # pids already reported dead

    # -- the workers' liveness

    def check_workers(self) -> None:
        """Raises WorkerDied if a worker this run started exited on its own: any
        exit but status 0, which a worker gives after the SIGTERM of
        Worker.stop. Each dead worker is reported once."""
        for w in self.workers:
            p = w.proc
            if p is None or p.pid in self.dead:
                continue
            rc = p.poll()
            if rc is None or rc == 0:
                continue
            self.dead.add(p.pid)
            try:
                tail = "\n".join(w.output().splitlines()[-15:])
            except OSError:
                tail = "(no log)"
            raise WorkerDied(f"scenario {self.scenario}: hookd worker {w.log_path.stem} (pid {p.pid})"
                             f" {exit_text(rc)}; the end of {w.log_path}:\n{tail}")

    def pause(self, seconds: float) -> None:
        """Sleeps between two polls of a condition, checking the workers first."""
        self.check_workers()
        time.sleep(seconds)

    def wait_for(self, cond, timeout: float = 20.0, interval: float = 0.05, what: str = "condition"):
        """hookdtest.util.wait_for that also polls the workers: returns cond's
        first truthy value; WorkerDied as soon as a worker is dead (not after
        the timeout), AssertionError after the timeout."""
        deadline = time.monotonic() + timeout
        last_exc = None
        while True:
            self.check_workers()
            try:
                v = cond()
                if v:
                    return v
            except WorkerDied:
                raise
            except Exception as e:  # the thing awaited may not be up yet
                last_exc = e
            if time.monotonic() >= deadline:
                break
            time.sleep(interval)
        raise AssertionError(f"timed out after {timeout}s waiting for {what}"
                             + (f" (last error: {last_exc})" if last_exc else ""))

    # -- setup / teardown

    def start(self) -> None:
        log("starting Postgres (fsync on) and Redis")
        self.services = BenchServices(self.pg_settings)
        admin = Db(self.services.pg_admin_url)
        EXTRA["pg_settings"] = {k: admin.value(f"SHOW {k}") for k in
                                ("fsync", "synchronous_commit", "shared_buffers", "wal_level", "max_connections")}
        EXTRA["pg_version"] = admin.value("SHOW server_version")
        admin.close()
        EXTRA["redis_version"] = self.services.redis_client().info("server")["redis_version"]
        assert EXTRA["pg_settings"]["fsync"] == "on", EXTRA["pg_settings"]

    def stop(self) -> None:
        for w in self.workers:
            try:
                if w.proc and w.proc.poll() is None:
                    w.stop(timeout=20)
            except Exception as e:  # keep stopping the rest
                log(f"worker stop: {e}")
        for p in self.procs:
            if p.poll() is None:
                p.terminate()
                try:
                    p.wait(10)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
        if self.services:
            self.services.stop()
        if os.environ.get("BENCH_KEEP") == "1":
            log(f"work directory kept: {self.work}")
        else:
            shutil.rmtree(self.work, ignore_errors=True)

    # -- helpers

    def new_db(self) -> tuple[str, Db]:
        name = self.services.new_database()
        url = self.services.db_url(name)
        return url, Db(url)

    def prefix(self) -> str:
        self.nprefix += 1
        return f"bench{os.getpid()}x{self.nprefix}"

    def config(self, db_url: str, prefix: str, roles: str, reconcile_interval: str = "30s",
               hookd_keys: dict | None = None, port: int | None = None) -> tuple[Path, int]:
        port = port or free_port()
        cfg = write_config(self.work, db_url, self.services.redis_url, prefix, port=port,
                           reconcile_interval=reconcile_interval, lease="30s", log_level="info")
        keys = {"roles": roles, "max_sleep": "1s", "heartbeat_interval": "2s"}
        keys.update(hookd_keys or {})
        text = cfg.read_text()
        for k, v in keys.items():
            if re.search(rf"^{k} = .*$", text, flags=re.M):
                text = re.sub(rf"^{k} = .*$", f"{k} = {v}", text, count=1, flags=re.M)
            else:
                text = text.replace("[hookd]\n", f"[hookd]\n{k} = {v}\n", 1)
        cfg.write_text(text)
        EXTRA.setdefault("configs", {}).setdefault(roles, text)
        return cfg, port

    def worker(self, cfg: Path, port: int, name: str) -> Worker:
        w = Worker(config=cfg, port=port, log_path=self.work / f"{name}.log")
        self.workers.append(w)
        w.start(wait_ready=False)
        self.wait_for(w.ready, 30 * VALGRIND_SLOWDOWN, what=f"worker {name} on port {port} to be ready")
        return w

    def pg_log_counts(self) -> dict[str, int]:
        """Lock trouble Postgres logged so far (deadlocks, NOWAIT refusals)."""
        try:
            text = (self.services.dir / "pg" / "server.log").read_text(errors="replace")
        except OSError:
            return {}
        return {"deadlocks": text.count("ERROR:  deadlock detected"),
                "lock_not_available": text.count("ERROR:  could not obtain lock")}

    def pg_cmd(self, db_name: str) -> list[str]:
        return ["-h", "127.0.0.1", "-p", str(self.services.pg_port), "-U", "postgres", db_name]

    def pgbench(self, db_url: str, script_name: str, script: str, clients: int, seconds: int,
                extra: list[str] | None = None) -> dict:
        SCRIPTS[script_name] = script
        path = self.work / script_name
        path.write_text(script)
        db_name = db_url.rsplit("/", 1)[1]
        cmd = [str(PGBIN / "pgbench"), "-n", "-c", str(clients), "-j", "2", "-T", str(seconds)] + (extra or []) + \
              ["-f", str(path)] + self.pg_cmd(db_name)
        r = sh(cmd, timeout=seconds + 60)
        out = r.stdout + r.stderr
        if r.returncode != 0:
            raise RuntimeError(f"pgbench failed ({r.returncode}):\n{out[-3000:]}")
        tps = float(re.search(r"tps = ([\d.]+)", out).group(1))
        lat = re.search(r"latency average = ([\d.]+) ms", out)
        failed = re.search(r"number of failed transactions: (\d+)", out)
        lag = re.search(r"schedule lag: avg ([\d.]+)", out)
        return dict(tps=tps, latency_avg_ms=float(lat.group(1)) if lat else None,
                    failed=int(failed.group(1)) if failed else 0,
                    lag_avg_ms=float(lag.group(1)) if lag else None, output=out)

    def loadgen(self, args: list[str], timeout: float = 180) -> dict:
        """Runs loadgen against a worker, polling the workers meanwhile: a dead
        one stops loadgen and raises WorkerDied."""
        cmd = [str(TOOLS / "loadgen")] + args
        COMMANDS.append(" ".join(shlex_quote(c) for c in cmd))
        with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
            p = subprocess.Popen(cmd, stdout=out, stderr=err, text=True)
            deadline = time.monotonic() + timeout
            try:
                while p.poll() is None:
                    if time.monotonic() > deadline:
                        raise subprocess.TimeoutExpired(cmd, timeout)
                    self.pause(0.1)
            finally:
                if p.poll() is None:
                    p.kill()
                    p.wait()
            self.check_workers()  # a worker that died as loadgen ended
            out.seek(0)
            err.seek(0)
            stdout, stderr = out.read(), err.read()
        try:
            return json.loads(stdout.strip().splitlines()[-1])
        except Exception:
            raise RuntimeError(f"loadgen printed no result ({p.returncode}): {stdout[-500:]} {stderr[-1500:]}")


def metrics(worker: Worker) -> dict[str, float]:
    with urllib.request.urlopen(worker.admin_url + "/metrics", timeout=5) as r:
        text = r.read().decode()
    out = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            k, _, v = line.rpartition(" ")
            try:
                out[k] = float(v)
            except ValueError:
                pass
    return out


def vm_hwm_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024.0
    return float("nan")


def _stat(pid: int) -> list[str]:
    """/proc/PID/stat's fields after the command name: [0] state, [1] ppid,
    [11] utime, [12] stime, [13] cutime, [14] cstime (clock ticks)."""
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


def cpu_seconds(pid: int) -> float:
    fields = _stat(pid)
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def tree_cpu_seconds(pid: int) -> float:
    """CPU of a process and every descendant, live or already reaped (a
    reaped child's time is in its parent's cutime/cstime): Postgres's
    postmaster and its backends."""
    children: dict[int, list[int]] = {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                children.setdefault(int(_stat(int(d.name))[1]), []).append(int(d.name))
            except (OSError, IndexError, ValueError):
                continue  # gone meanwhile
    total, todo = 0.0, [pid]
    while todo:
        p = todo.pop()
        try:
            f = _stat(p)
        except OSError:
            continue
        total += sum(int(f[i]) for i in (11, 12, 13, 14)) / os.sysconf("SC_CLK_TCK")
        todo.extend(children.get(p, []))
    return total


class SystemCpu:
    """CPU seconds of the whole system doing one figure's work: hookd's
    workers (or a peer's node process, a child of this one), Postgres with
    every backend, and Redis, read from /proc before and after; per_event()
    turns the difference into microseconds of each per event."""

    def __init__(self, b: "Bench", pids: list[int] | None = None) -> None:
        self.b, self.pids = b, list(pids or [])
        self.t0 = self._now()

    def _now(self) -> dict[str, float]:
        d = self.b.services.dir
        pm = int((d / "pg" / "postmaster.pid").read_text().split()[0])
        rd = int((d / "redis.pid").read_text().split()[0])
        kids = resource.getrusage(resource.RUSAGE_CHILDREN)
        return dict(app=sum(cpu_seconds(p) for p in self.pids), children=kids.ru_utime + kids.ru_stime,
                    postgres=tree_cpu_seconds(pm), redis=cpu_seconds(rd))

    def per_event(self, events: int, app: str = "hookd") -> dict[str, float]:
        """{app, postgres, redis, total}: microseconds per event. The app's
        CPU is its pids' (read before they stop), else this process's reaped
        children's (a peer's node, run to its end)."""
        t1 = self._now()
        d = {k: t1[k] - self.t0[k] for k in t1}
        app_s = d["app"] if self.pids else d["children"]
        n = max(events, 1)
        out = {app: app_s * 1e6 / n, "postgres": d["postgres"] * 1e6 / n, "redis": d["redis"] * 1e6 / n}
        out["total"] = sum(out.values())
        return out


def cpu_text(cpu: dict[str, float] | None) -> str:
    """'41 (hookd 25 + pg 14 + redis 2)' microseconds an event, or '-'."""
    if not cpu:
        return "-"
    parts = " + ".join(f"{'pg' if k == 'postgres' else k} {v:,.0f}" for k, v in cpu.items() if k != "total")
    return f"{cpu['total']:,.0f} ({parts})"
