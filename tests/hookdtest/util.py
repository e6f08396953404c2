"""Small helpers every harness user needs: a free loopback port and polling
until a condition holds."""
from __future__ import annotations

import socket
import time
from typing import Callable


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(cond: Callable[[], object], timeout: float = 20.0, interval: float = 0.05, what: str = "condition"):
    """Polls cond until it returns a truthy value; returns that value."""
    deadline = time.monotonic() + timeout
    last_exc = None
    while time.monotonic() < deadline:
        try:
            v = cond()
            if v:
                return v
        except Exception as e:  # the thing awaited may not be up yet
            last_exc = e
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}" + (f" (last error: {last_exc})" if last_exc else ""))
