"""Signers for the public-key presets (SendGrid's ECDSA P-256, Discord's
Ed25519) and the handshake tests' other signers, plus `sdk_accepts`: one
node process that runs the providers' own verifiers
(@sendgrid/eventwebhook, discord-interactions, @slack/bolt) over a batch of
signed requests, so a test proves its signer is the provider's algorithm
before hookd sees the request."""
from __future__ import annotations

import base64
import hashlib
import hmac
import json
import subprocess
from dataclasses import dataclass

from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519

from hookdtest.paths import ROOT

NODE_DIR = ROOT / "tests" / "node"


@dataclass
class SendgridKey:
    private: ec.EllipticCurvePrivateKey

    @classmethod
    def new(cls) -> "SendgridKey":
        return cls(ec.generate_private_key(ec.SECP256R1()))

    @property
    def public(self) -> str:
        """base64 of the DER SubjectPublicKeyInfo, as SendGrid's console shows it."""
        der = self.private.public_key().public_bytes(serialization.Encoding.DER,
                                                     serialization.PublicFormat.SubjectPublicKeyInfo)
        return base64.b64encode(der).decode()

    def sign(self, ts: str, body: bytes) -> str:
        return base64.b64encode(self.private.sign(ts.encode() + body, ec.ECDSA(hashes.SHA256()))).decode()

    def headers(self, ts: int, body: bytes) -> dict:
        return {"X-Twilio-Email-Event-Webhook-Signature": self.sign(str(ts), body),
                "X-Twilio-Email-Event-Webhook-Timestamp": str(ts)}


@dataclass
class DiscordKey:
    private: ed25519.Ed25519PrivateKey

    @classmethod
    def new(cls) -> "DiscordKey":
        return cls(ed25519.Ed25519PrivateKey.generate())

    @property
    def public(self) -> str:
        """The raw 32-byte key in hex, as Discord's developer portal shows it."""
        return self.private.public_key().public_bytes(serialization.Encoding.Raw,
                                                      serialization.PublicFormat.Raw).hex()

    def sign(self, ts: str, body: bytes) -> str:
        return self.private.sign(ts.encode() + body).hex()

    def headers(self, ts: int, body: bytes) -> dict:
        return {"X-Signature-Ed25519": self.sign(str(ts), body), "X-Signature-Timestamp": str(ts)}


def sign_slack(secret: str, ts: int, body: bytes) -> dict:
    mac = hmac.new(secret.encode(), f"v0:{ts}:".encode() + body, hashlib.sha256).hexdigest()
    return {"X-Slack-Signature": "v0=" + mac, "X-Slack-Request-Timestamp": str(ts)}


def sign_zoom(secret: str, ts: int, body: bytes) -> dict:
    mac = hmac.new(secret.encode(), f"v0:{ts}:".encode() + body, hashlib.sha256).hexdigest()
    return {"x-zm-signature": "v0=" + mac, "x-zm-request-timestamp": str(ts)}


def sign_twitch(secret: str, msg_id: str, ts: str, body: bytes, msg_type: str) -> dict:
    mac = hmac.new(secret.encode(), msg_id.encode() + ts.encode() + body, hashlib.sha256).hexdigest()
    return {"Twitch-Eventsub-Message-Id": msg_id, "Twitch-Eventsub-Message-Timestamp": ts,
            "Twitch-Eventsub-Message-Signature": "sha256=" + mac, "Twitch-Eventsub-Message-Type": msg_type,
            "Twitch-Eventsub-Subscription-Type": "channel.follow"}


def sign_hub256(secret: str, body: bytes) -> dict:
    return {"X-Hub-Signature-256": "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()}


def sdk_accepts(items: list[dict]) -> list[bool]:
    """Runs tests/node/verify_signed.js over items (see there); bodies are bytes here."""
    payload = [dict(i, body=base64.b64encode(i["body"]).decode()) for i in items]
    r = subprocess.run(["node", "verify_signed.js"], cwd=NODE_DIR, input=json.dumps(payload), capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)
