"""The `hookd` command line (cli_args.c): every command that reads a config
uses the file named with `-c FILE` (or `--config=FILE`) wherever it stands —
before the command, between the two words of a subcommand, after them, at
the end — even with a `./hookd.conf` in the working directory that points at
another, reachable database and another Redis key prefix (the decoy: if a
command used it, it would succeed there, so each test also checks that the
decoy was left alone). A named file that does not exist is an error, never a
fallback. Usage errors (unknown option, missing value) exit 2 with one line
naming the option; help goes to stdout with exit 0 and runs nothing."""
from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path

import pytest

from hookdtest.client import http
from hookdtest.paths import HOOKD_BIN
from hookdtest.services import Db
from hookdtest.util import wait_for
from hookdtest.worker import write_config

PLACES = ["before", "between", "after", "end"]


def with_hookd_keys(cfg: Path, **keys) -> Path:
    lines = "".join(f"{k} = {v}\n" for k, v in keys.items())
    cfg.write_text(cfg.read_text().replace("[hookd]\n", "[hookd]\n" + lines, 1))
    return cfg


def placed(place: str, cfg: Path, words: list[str], rest: list[str] = ()) -> list[str]:
    """The command line with the config named at one place."""
    c = str(cfg)
    if place == "before":
        return ["-c", c, *words, *rest]
    if place == "between":  # between the two words (right after a one-word command)
        return [words[0], "-c", c, *words[1:], *rest]
    if place == "after":
        return [*words, "-c", c, *rest]
    return [*words, *rest, f"--config={c}"]


class Cli:
    """A working directory whose ./hookd.conf is the decoy, and the test's own
    (named) config, database and Redis prefix."""

    def __init__(self, env, services, tmp: Path) -> None:
        self.env = env
        self.services = services
        self.cwd = tmp / "cwd"
        self.cwd.mkdir()
        self.named = with_hookd_keys(env.config(), allow_private_networks="true")
        self.decoy_dbname = services.new_database()
        self.decoy_db = Db(services.db_url(self.decoy_dbname))
        self.decoy_prefix = env.prefix + "decoy"
        decoy = write_config(tmp, services.db_url(self.decoy_dbname), services.redis_url, self.decoy_prefix)
        self.decoy = self.cwd / "hookd.conf"
        self.decoy.write_text(with_hookd_keys(decoy, allow_private_networks="true").read_text())

    def run(self, *args: str, env: dict | None = None, timeout: float = 60) -> subprocess.CompletedProcess:
        e = {k: v for k, v in os.environ.items() if k != "HOOKD_CONFIG"}
        e.update(env or {})
        return subprocess.run([HOOKD_BIN, *args], cwd=self.cwd, capture_output=True, text=True, env=e,
                              timeout=timeout)

    def ok(self, *args: str, **kw) -> subprocess.CompletedProcess:
        r = self.run(*args, **kw)
        assert r.returncode == 0, (args, r.stdout, r.stderr)
        return r

    def decoy_untouched(self) -> None:
        for table in ("webhook_endpoints", "dead_letters", "webhook_inbox", "outbox_deliveries"):
            assert self.decoy_db.value(f"SELECT count(*) FROM {table}") == 0, f"the decoy's {table} was written"
        decoy_keys = self.env.redis.keys(self.decoy_prefix + ":*")
        assert decoy_keys == [], f"the decoy's Redis keys were written: {decoy_keys}"

    def close(self) -> None:
        self.decoy_db.close()


@pytest.fixture
def cli(env, services, tmp_path):
    c = Cli(env, services, tmp_path)
    try:
        yield c
    finally:
        c.close()


def one_line(text: str) -> str:
    lines = text.strip().splitlines()
    assert len(lines) == 1, lines
    return lines[0]


# ---- every command that reads a config uses the named one --------------------

@pytest.mark.parametrize("place", PLACES)
def test_endpoint_commands_use_the_named_config(cli, place):
    name = f"ep-{place}"
    add = cli.ok(*placed(place, cli.named, ["endpoint", "add"],
                         ["--url", "http://127.0.0.1:9/hook", "--events", "order.*", "--name", name]))
    assert add.stdout.startswith(f"endpoint {name} added (id ")
    db = cli.env.db
    row = db.one("SELECT * FROM webhook_endpoints WHERE name = %s", name)
    assert row and row["url"] == "http://127.0.0.1:9/hook" and row["event_types"] == ["order.*"]

    listed = cli.ok(*placed(place, cli.named, ["endpoint", "list"]))
    assert any(l.split()[:1] == [name] for l in listed.stdout.splitlines()), listed.stdout

    shown = cli.ok(*placed(place, cli.named, ["endpoint", "show"], [name, "--show-secret"]))
    assert f"name: {name}" in shown.stdout and f"secret: {row['secret']}" in shown.stdout

    cli.ok(*placed(place, cli.named, ["endpoint", "disable"], [name]))
    assert db.value("SELECT enabled FROM webhook_endpoints WHERE name = %s", name) is False
    cli.ok(*placed(place, cli.named, ["endpoint", "enable"], [name]))
    assert db.value("SELECT enabled FROM webhook_endpoints WHERE name = %s", name) is True

    rotated = cli.ok(*placed(place, cli.named, ["endpoint", "rotate-secret"], [name, "--grace", "1h"]))
    after = db.one("SELECT secret, previous_secret FROM webhook_endpoints WHERE name = %s", name)
    assert after["previous_secret"] == row["secret"] and after["secret"] != row["secret"]
    assert f"new secret {after['secret']}" in rotated.stdout
    cli.decoy_untouched()


def dead_inbox_row(db: Db, msg_id: str, dead_for: str = "1 minute") -> tuple[str, str]:
    """A quarantined inbox row and its open dead letter; (dead letter id, row id)."""
    rid = db.value("INSERT INTO webhook_inbox (partner_name, partner_event_id, payload, event_type, status,"
                   " attempts, outcome) VALUES ('shop', %s, '{\"type\": \"order.bogus\"}', 'order.bogus',"
                   " 'QUARANTINED', 4, 'dead') RETURNING id::text", msg_id)
    did = db.value("INSERT INTO dead_letters (source, source_id, reason, attempts, dead_at)"
                   " VALUES ('inbox', %s, 'retries exhausted', 4, now() - %s::interval) RETURNING id::text",
                   rid, dead_for)
    return did, rid


@pytest.mark.parametrize("place", PLACES)
def test_dlq_commands_use_the_named_config(cli, place):
    db = cli.env.db
    did, rid = dead_inbox_row(db, "m1")
    old, _ = dead_inbox_row(db, "m2", dead_for="2 days")

    listed = json.loads(cli.ok(*placed(place, cli.named, ["dlq", "list"], ["--json"])).stdout)
    assert sorted(e["id"] for e in listed) == sorted([did, old])
    listed = json.loads(cli.ok(*placed(place, cli.named, ["dlq", "list"], ["--since", "1h", "--json"])).stdout)
    assert [e["id"] for e in listed] == [did]

    shown = json.loads(cli.ok(*placed(place, cli.named, ["dlq", "show"], [did, "--json"])).stdout)
    assert (shown["id"], shown["source_id"]) == (did, rid)

    dry = cli.ok(*placed(place, cli.named, ["dlq", "replay"], [did, "--dry-run"]))
    assert f"would replay {did}" in dry.stdout
    assert db.value("SELECT status FROM webhook_inbox WHERE id = %s", rid) == "QUARANTINED"

    replayed = cli.ok(*placed(place, cli.named, ["dlq", "replay"], [did]))
    assert f"replayed {did}" in replayed.stdout
    assert db.value("SELECT status FROM webhook_inbox WHERE id = %s", rid) == "PENDING"
    # scheduled in the named config's Redis keys
    assert cli.env.redis.zscore(cli.env.key("{inbox}:due"), rid) is not None

    purge = cli.ok(*placed(place, cli.named, ["dlq", "purge"], ["--older-than", "1d", "--dry-run"]))
    assert purge.stdout.strip() == "1 dead letter would be purged"
    purge = cli.ok(*placed(place, cli.named, ["dlq", "purge"], ["--older-than", "1d"]))
    assert purge.stdout.strip() == "1 dead letter purged"
    assert db.value("SELECT count(*) FROM dead_letters WHERE id = %s", old) == 0
    cli.decoy_untouched()


@pytest.mark.parametrize("place", PLACES)
def test_status_uses_the_named_config(cli, place):
    cli.env.redis.hset(cli.env.key("stats"), mapping={"ingested": 11, "applied": 7})
    cli.env.redis.set(cli.env.key("dlq_size"), 3)
    s = json.loads(cli.ok(*placed(place, cli.named, ["status"], ["--json"])).stdout)
    assert s["counters"] == {"ingested": 11, "applied": 7} and s["dlq_size"] == 3
    text = cli.ok(*placed(place, cli.named, ["status"])).stdout
    assert "DLQ: 3 open dead letters" in text
    cli.decoy_untouched()


@pytest.mark.parametrize("place", PLACES)
def test_migrate_uses_the_named_config(cli, services, place):
    fresh = services.new_database(migrated=False)
    cfg = cli.env.config(database=services.db_url(fresh))
    r = cli.ok(*placed(place, cfg, ["migrate"]))
    assert "applied" in r.stdout, r.stdout
    fresh_db = Db(services.db_url(fresh))
    try:
        assert fresh_db.value("SELECT count(*) FROM schema_migrations") > 0
    finally:
        fresh_db.close()
    assert "up to date" in cli.ok(*placed(place, cfg, ["migrate"])).stdout


@pytest.mark.parametrize("place", PLACES)
def test_config_check_uses_the_named_config(cli, place):
    r = cli.ok(*placed(place, cli.named, ["config", "check"]))
    assert r.stdout.splitlines()[0] == f"; {cli.named}: OK"
    assert f"key_prefix = {cli.env.prefix}\n" in r.stdout
    # a FILE argument is checked instead, wherever -c stands
    other = cli.env.config()
    r = cli.ok(*placed(place, cli.named, ["config", "check"], [str(other)]))
    assert r.stdout.splitlines()[0] == f"; {other}: OK"


@pytest.mark.parametrize("place", ["before", "after", "end"])
def test_run_uses_the_named_config(cli, place):
    port = int(next(l for l in cli.named.read_text().splitlines() if l.startswith("listen")).rsplit(":", 1)[1])
    log = open(cli.cwd / f"run-{place}.log", "wb")
    proc = subprocess.Popen([HOOKD_BIN, *placed(place, cli.named, ["run"])], cwd=cli.cwd, stdout=log,
                            stderr=subprocess.STDOUT,
                            env={k: v for k, v in os.environ.items() if k != "HOOKD_CONFIG"})
    try:
        def ready():
            assert proc.poll() is None, (cli.cwd / f"run-{place}.log").read_text()
            return http("GET", f"http://127.0.0.1:{port}/readyz", timeout=2)[0] == 200
        wait_for(ready, timeout=30, what="the worker of the named config")
        wait_for(lambda: cli.env.redis.zcard(cli.env.key("workers")) == 1, what="its heartbeat under the named prefix")
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            rc = proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            rc = proc.wait()
        log.close()
    assert rc == 0
    cli.decoy_untouched()


def test_hookd_config_environment_variable(cli):
    """$HOOKD_CONFIG beats ./hookd.conf, and -c beats $HOOKD_CONFIG."""
    cli.ok("endpoint", "add", "--url", "http://127.0.0.1:9/a", "--name", "from-env",
           env={"HOOKD_CONFIG": str(cli.named)})
    assert cli.env.db.value("SELECT count(*) FROM webhook_endpoints WHERE name = 'from-env'") == 1
    r = cli.run("endpoint", "list", "-c", str(cli.named), env={"HOOKD_CONFIG": str(cli.cwd / "nope.conf")})
    assert r.returncode == 0 and "from-env" in r.stdout, r.stderr
    cli.decoy_untouched()


# ---- errors -----------------------------------------------------------------------

COMMANDS = [
    ["run"], ["migrate"], ["config", "check"], ["endpoint", "add", "--url", "http://127.0.0.1:9/x"],
    ["endpoint", "list"], ["endpoint", "show", "x"], ["endpoint", "disable", "x"], ["endpoint", "enable", "x"],
    ["endpoint", "rotate-secret", "x"], ["dlq", "list"], ["dlq", "show", "00000000-0000-0000-0000-000000000000"],
    ["dlq", "replay", "--all"], ["dlq", "purge", "--older-than", "1s"], ["status"],
]


@pytest.mark.parametrize("words", COMMANDS, ids=lambda w: " ".join(w[:2]))
def test_a_named_config_that_does_not_exist_is_an_error_not_a_fallback(cli, words):
    nope = cli.cwd / "nope.conf"
    for args in (placed("after", nope, words), placed("before", nope, words)):
        r = cli.run(*args, timeout=20)
        assert r.returncode == 2, (args, r.stdout, r.stderr)
        assert one_line(r.stderr) == f"hookd: {nope}: cannot open: No such file or directory"
        assert r.stdout == ""
    r = cli.run(*words, env={"HOOKD_CONFIG": str(nope)}, timeout=20)
    assert r.returncode == 2 and str(nope) in one_line(r.stderr)
    cli.decoy_untouched()


@pytest.mark.parametrize("args, message", [
    (["endpoint", "add", "--url", "http://127.0.0.1:9/x", "--bogus"],
     "hookd endpoint add: unknown option '--bogus'"),
    (["endpoint", "add", "--url"], "hookd endpoint add: option '--url' needs a value"),
    (["endpoint", "add", "--url", "--name", "n"], "option '--url' needs a value"),
    (["endpoint", "--url", "http://127.0.0.1:9/x", "add"], "hookd endpoint: unknown option '--url'"),
    (["dlq", "list", "--source"], "hookd dlq list: option '--source' needs a value"),
    (["dlq", "list", "--frob"], "hookd dlq list: unknown option '--frob'"),
    (["dlq", "purge", "--older-than", "1d", "--source", "inbox"], "hookd dlq purge: unknown option '--source'"),
    (["status", "--bogus"], "hookd status: unknown option '--bogus'"),
    (["status", "--json=yes"], "hookd status: option '--json' takes no value"),
    (["endpoint", "list", "-c"], "option '-c' needs a value"),
    (["endpoint", "list", "-c", "--json"], "option '-c' needs a value"),
    (["-c", "a.conf", "endpoint", "list", "-c", "b.conf"], "option '-c' given twice, as 'a.conf' and 'b.conf'"),
    (["endpoint", "frobnicate"], "hookd endpoint: unknown subcommand 'frobnicate'"),
    (["dlq"], "hookd dlq: missing subcommand"),
    (["frobnicate"], "hookd: unknown command 'frobnicate'"),
    ([], "hookd: missing command"),
    (["endpoint", "show"], "hookd endpoint show: missing NAME"),
    (["migrate", "now"], "hookd migrate: unexpected argument 'now'"),
])
def test_usage_errors_name_the_word_and_exit_2(cli, args, message):
    r = cli.run(*args)
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert message in one_line(r.stderr)
    assert r.stdout == ""
    cli.decoy_untouched()


# ---- help ------------------------------------------------------------------------

@pytest.mark.parametrize("args, usage", [
    (["help"], "usage: hookd [OPTIONS] COMMAND [ARGS]"),
    (["--help"], "usage: hookd [OPTIONS] COMMAND [ARGS]"),
    (["-h"], "usage: hookd [OPTIONS] COMMAND [ARGS]"),
    (["help", "endpoint"], "usage: hookd endpoint [OPTIONS] SUBCOMMAND [ARGS]"),
    (["endpoint", "--help"], "usage: hookd endpoint [OPTIONS] SUBCOMMAND [ARGS]"),
    (["help", "endpoint", "add"], "usage: hookd endpoint add --url URL"),
    (["endpoint", "add", "--help"], "usage: hookd endpoint add --url URL"),
    (["endpoint", "-h", "add"], "usage: hookd endpoint add --url URL"),
    (["help", "dlq", "replay"], "usage: hookd dlq replay ID... | --all [filters] [--dry-run]"),
    (["dlq", "show", "--help"], "usage: hookd dlq show ID [--json]"),
    (["help", "status"], "usage: hookd status [--json] [--watch]"),
    (["status", "--help"], "usage: hookd status [--json] [--watch]"),
    (["help", "config", "check"], "usage: hookd config check [FILE]"),
    (["migrate", "--help"], "usage: hookd migrate"),
    (["run", "--help"], "usage: hookd run"),
])
def test_help_prints_usage_to_stdout(cli, args, usage):
    r = cli.run(*args)
    assert r.returncode == 0 and r.stderr == "", r.stderr
    assert r.stdout.splitlines()[0].startswith(usage), r.stdout
    assert "-c, --config FILE" in r.stdout


def test_help_lists_every_command_and_option(cli):
    top = cli.ok("help").stdout
    for line in ("run", "migrate", "config check [FILE]", "endpoint add --url URL", "endpoint list",
                 "endpoint show NAME [--show-secret]", "endpoint disable NAME", "endpoint enable NAME",
                 "endpoint rotate-secret NAME [--secret whsec_...] [--grace 24h]", "dlq list [--source inbox|delivery]",
                 "dlq show ID [--json]", "dlq replay ID... | --all", "dlq purge --older-than 30d [--dry-run]",
                 "status [--json] [--watch]", "version", "help [COMMAND [SUBCOMMAND]]"):
        assert f"\n  {line}" in top, line
    add = cli.ok("endpoint", "add", "--help").stdout
    for opt in ("--url URL", "--events", "--secret whsec_...", "--name N", "--timeout 10s", "--max-inflight 16"):
        assert f"\n  {opt}" in add, opt
    dlq_list = cli.ok("help", "dlq", "list").stdout
    for opt in ("--source inbox|delivery", "--partner P", "--endpoint P", "--event-type", "--since 1h", "--limit N"):
        assert f"\n  {opt}" in dlq_list, opt


def test_help_runs_nothing(cli):
    """--help anywhere wins: the command is not run (and no config is read)."""
    r = cli.ok("endpoint", "add", "--url", "http://127.0.0.1:9/x", "--name", "not-added", "-c", str(cli.named),
               "--help")
    assert r.stdout.startswith("usage: hookd endpoint add")
    r = cli.ok("-c", str(cli.cwd / "nope.conf"), "dlq", "purge", "--older-than", "1s", "--help")
    assert r.stdout.startswith("usage: hookd dlq purge")
    assert cli.env.db.value("SELECT count(*) FROM webhook_endpoints") == 0
    assert cli.run("help", "frobnicate").returncode == 2
    cli.decoy_untouched()


def test_version(cli):
    for args in (["--version"], ["version"], ["-V"], ["-c", str(cli.cwd / "nope.conf"), "version"]):
        r = cli.ok(*args)
        assert r.stdout.startswith("hookd ") and r.stderr == ""
