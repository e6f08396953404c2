"""Where things are: the source tree, the services script and the hookd
binary under test (HOOKD_BIN, default build/hookd)."""
from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SERVICES = ROOT / "scripts" / "services.sh"
HOOKD_BIN = os.environ.get("HOOKD_BIN", str(ROOT / "build" / "hookd"))
