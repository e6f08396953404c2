"""docs/reference/ says what the binary's tables say (scripts/gen_reference.py,
`make reference-check`): the committed files pass the check; a default, key
or command that changes in the binary but not in the committed reference
fails it, naming the stale file and the key or command; every key and
command of the binary is in the references; and hookd(1) renders without a
groff warning."""
from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from hookdtest.paths import HOOKD_BIN, ROOT

GEN = ROOT / "scripts" / "gen_reference.py"
REFERENCE = ROOT / "docs" / "reference"


def gen(*args: str, binary: str = HOOKD_BIN) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(GEN), "--bin", binary, *args], capture_output=True, text=True,
                          timeout=60)


def hookd_json(*args: str) -> dict:
    out = subprocess.run([HOOKD_BIN, *args], capture_output=True, text=True, check=True, timeout=30)
    return json.loads(out.stdout)


def changed_binary(tmp_path: Path, edit: str) -> str:
    """A stand-in for a rebuilt hookd: the real binary, with its JSON for
    `config keys` / `help` changed by `edit` (Python acting on `doc`)."""
    script = tmp_path / "hookd"
    script.write_text(f"""#!{sys.executable}
import json, subprocess, sys
out = subprocess.run([{HOOKD_BIN!r}] + sys.argv[1:], capture_output=True, text=True, check=True).stdout
doc = json.loads(out)
args = sys.argv[1:]
{edit}
json.dump(doc, sys.stdout)
""")
    script.chmod(0o755)
    return str(script)


def test_committed_reference_is_current():
    res = gen("--check")
    assert res.returncode == 0, res.stdout + res.stderr
    assert re.search(r"reference: (\d+) files up to date", res.stdout), res.stdout
    assert int(re.search(r"(\d+) files up to date", res.stdout).group(1)) >= 5  # config, cli, man, metrics, api


def test_check_fails_when_a_default_changes_in_the_binary(tmp_path):
    binary = changed_binary(tmp_path, """
if args[:2] == ["config", "keys"]:
    retry = next(s for s in doc["sections"] if s["section"] == "retry")
    next(k for k in retry["keys"] if k["name"] == "max_attempts")["default"] = "5"
""")
    res = gen("--check", binary=binary)
    assert res.returncode == 1, res.stdout
    assert "docs/reference/configuration.md: stale" in res.stdout
    assert "[retry] max_attempts" in res.stdout
    assert "[retry] schedule" not in res.stdout  # only the changed key is named
    assert "cli.md" not in res.stdout and "hookd.1" not in res.stdout


def test_check_fails_when_a_key_or_command_goes_missing(tmp_path):
    binary = changed_binary(tmp_path, """
if args[:2] == ["config", "keys"]:
    hookd = next(s for s in doc["sections"] if s["section"] == "hookd")
    hookd["keys"] = [k for k in hookd["keys"] if k["name"] != "lease"]
if args[:1] == ["help"]:
    dlq = next(c for c in doc["subcommands"] if c["name"] == "dlq")
    dlq["subcommands"] = [c for c in dlq["subcommands"] if c["name"] != "purge"]
""")
    res = gen("--check", binary=binary)
    assert res.returncode == 1, res.stdout
    lines = {line.split(":")[0]: line for line in res.stdout.splitlines()}
    assert "[hookd] lease" in lines["docs/reference/configuration.md"]
    assert "hookd dlq purge" in lines["docs/reference/cli.md"]
    assert "hookd dlq purge" in lines["docs/reference/hookd.1"]


def test_check_fails_on_a_hand_edited_reference(tmp_path):
    out = tmp_path / "reference"
    shutil.copytree(REFERENCE, out)
    conf = out / "configuration.md"
    text = conf.read_text()
    assert "| `lease` | duration | `30s` |" in text
    conf.write_text(text.replace("| `lease` | duration | `30s` |", "| `lease` | duration | `45s` |"))
    (out / "hookd.1").unlink()
    res = gen("--check", "--out", str(out))
    assert res.returncode == 1
    assert "configuration.md: stale" in res.stdout and "[hookd] lease" in res.stdout
    assert "hookd.1: missing" in res.stdout


def leaves(cmd: dict) -> list[dict]:
    out = []
    for sub in cmd["subcommands"]:
        out.extend(leaves(sub) if sub["subcommands"] else [sub])
    return out


def test_reference_names_every_key_and_command():
    conf = (REFERENCE / "configuration.md").read_text()
    for section in hookd_json("config", "keys", "--json")["sections"]:
        start = conf.index("## `[%s]`" % section["section"])
        end = conf.find("\n## ", start + 1)
        body = conf[start:end if end > 0 else None]
        for key in section["keys"] if not section["keys_of"] else []:
            assert "| `%s` |" % key["name"] in body, (section["section"], key["name"])
    cli, man = (REFERENCE / "cli.md").read_text(), (REFERENCE / "hookd.1").read_text()
    commands = leaves(hookd_json("help", "--json"))
    assert len(commands) > 25
    for c in commands:
        assert "### `hookd %s`" % c["words"] in cli
        assert "\\fBhookd %s\\fR" % c["words"] in man
        for opt in c["options"]:
            assert "--" + opt["name"] in cli and "\\-\\-" + opt["name"].replace("-", "\\-") in man


@pytest.mark.skipif(not shutil.which("groff") or not shutil.which("man"), reason="groff or man not installed")
def test_man_page_renders_cleanly():
    page = REFERENCE / "hookd.1"
    res = subprocess.run(["groff", "-ww", "-z", "-man", str(page)], capture_output=True, text=True, timeout=60)
    assert res.returncode == 0 and res.stderr == "", res.stderr
    res = subprocess.run(["man", "-l", str(page)], capture_output=True, text=True, timeout=60,
                         env={"MANWIDTH": "80", "MANPAGER": "cat", "PATH": "/usr/bin:/bin"})
    assert res.returncode == 0, res.stderr
    for heading in ("NAME", "SYNOPSIS", "DESCRIPTION", "COMMANDS", "OPTIONS", "FILES", "SEE ALSO"):
        assert "\n%s\n" % heading in res.stdout, heading
    assert "hookd - a webhook reliability engine" in res.stdout
    assert "hookd config keys [--json]" in res.stdout


def test_every_metric_and_api_operation_is_in_its_reference():
    """docs/reference/metrics.md names every metric the binary exports, and
    api-operations.md every route of its table, with whether it is
    implemented."""
    metrics = json.loads(subprocess.run([HOOKD_BIN, "reference", "metrics"], capture_output=True, text=True,
                                        check=True).stdout)["items"]
    text = (ROOT / "docs" / "reference" / "metrics.md").read_text()
    assert len(metrics) > 30
    for m in metrics:
        assert f"| `{m['name']}` | " in text, m["name"]
    ops = json.loads(subprocess.run([HOOKD_BIN, "reference", "api"], capture_output=True, text=True,
                                    check=True).stdout)["items"]
    text = (ROOT / "docs" / "reference" / "api-operations.md").read_text()
    implemented = text[text.index("## Implemented"):text.index("## Answered 501")]
    for op in ops:
        where = implemented if op["implemented"] else text[text.index("## Answered 501"):]
        assert f"| `{op['operation']}` | {op['method']} | " in where, op["operation"]
