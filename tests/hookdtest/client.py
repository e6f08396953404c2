"""HTTP to a hookd worker: a plain request that never raises for an error
status, and a signed order event posted as the `shop` partner would."""
from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from typing import TYPE_CHECKING

from hookdtest.signing import SW_SECRET, sign_standard

if TYPE_CHECKING:
    from hookdtest.worker import Worker


def http(method: str, url: str, body: bytes | None = None, headers: dict | None = None, timeout: float = 10):
    """(status, headers, body bytes); never raises for HTTP error statuses."""
    req = urllib.request.Request(url, data=body, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, dict(r.headers), r.read()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read()


def order_event(event_type: str, order_id: str, **extra) -> bytes:
    return json.dumps({"type": event_type, "data": dict(order_id=order_id, **extra)}).encode()


def post_standard(worker: Worker, partner: str, msg_id: str, body: bytes, secret: str = SW_SECRET,
                  ts: int | None = None, headers: dict | None = None):
    ts = int(time.time()) if ts is None else ts
    h = {"content-type": "application/json", "webhook-id": msg_id, "webhook-timestamp": str(ts),
         "webhook-signature": sign_standard(secret, msg_id, ts, body)}
    h.update(headers or {})
    return http("POST", f"{worker.url}/v1/inbox/{partner}", body, h)
