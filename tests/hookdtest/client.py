"""HTTP to a hookd worker: a plain request that never raises for an error
status, a request whose answer is read only up to a limit, a signed order
event posted as the `shop` partner would, and a payload nested too deep to
indent."""
from __future__ import annotations

import json
import re
import time
from http.client import HTTPConnection
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


def post_message_text(port: int, token: str, app: str, event_type: str, payload: bytes) -> str:
    """Creates a message through the API with a payload given as JSON text;
    its id. The answer is not parsed as JSON: it echoes the payload, which
    may be deeper than Python's json module goes."""
    conn = HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        body = b'{"eventType": "' + event_type.encode() + b'", "payload": ' + payload + b"}"
        conn.request("POST", f"/api/v1/app/{app}/msg", body=body,
                     headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"})
        r = conn.getresponse()
        answer = r.read()
    finally:
        conn.close()
    assert r.status == 202, (r.status, answer[:500])
    return re.search(rb'"id": ?"(msg_[A-Za-z0-9]+)"', answer).group(1).decode()


def read_capped(port: int, path: str, headers: dict, limit: int) -> tuple[int, dict, bytes]:
    """(status, headers with lower-case names, at most limit + 1 bytes of the
    body): a page that is too large is not read whole."""
    conn = HTTPConnection("127.0.0.1", port, timeout=120)
    try:
        conn.request("GET", path, headers=headers)
        r = conn.getresponse()
        body = b""
        while len(body) <= limit:
            chunk = r.read(limit + 1 - len(body))  # may return less than asked
            if not chunk:
                break
            body += chunk
        return r.status, {k.lower(): v for k, v in r.getheaders()}, body
    finally:
        conn.close()


def deep_payload(arrays: int = 30, depth: int = 2040) -> bytes:
    """JSON text: an object whose one field holds `arrays` arrays, each
    nested `depth` deep (122 KB by default). Built as text: Python's json
    module stops at about 1,000 levels."""
    one = b"[" * depth + b"]" * depth
    return b'{"a": [' + b",".join([one] * arrays) + b"]}"
