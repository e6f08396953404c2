"""`make demo` is the README's first command: it must keep working. It runs
the whole story on its own services and checks its own summary table; a
failed check exits non-zero."""
import os
import subprocess
import sys

from hookdtest.paths import HOOKD_BIN, ROOT


def test_demo_runs_and_all_its_checks_pass():
    pythonpath = os.pathsep.join(filter(None, [str(ROOT / "tests"), os.environ.get("PYTHONPATH")]))
    r = subprocess.run([sys.executable, str(ROOT / "scripts" / "demo.py")], capture_output=True, text=True,
                       timeout=300, env=dict(os.environ, HOOKD_BIN=HOOKD_BIN, PYTHONPATH=pythonpath))
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-4000:]
    assert "all checks passed" in r.stdout
    for line in ("orders in their final state", "DLQ entries replayed", "signatures that did not verify"):
        row = next(l for l in r.stdout.splitlines() if l.startswith(line))
        assert row.rstrip().endswith("ok"), row
