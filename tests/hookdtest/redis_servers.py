"""Dedicated Redis processes for the Redis-mode tests: a plain or TLS server,
a replica, sentinels, and the throw-away certificates they use. Every
process is started on a free loopback port in the test's directory; callers
stop them in a `finally` (RedisGroup.stop() stops all it started)."""
from __future__ import annotations

import datetime
import subprocess
import time
from pathlib import Path

import redis

from hookdtest.util import free_port, wait_for

REPO = Path(__file__).resolve().parents[2]
MAKE_CERTS = REPO / "tests" / "fixtures" / "tls" / "make-certs.sh"


def make_certs(dir: Path) -> Path:
    """tests/fixtures/tls/make-certs.sh's CA and leaves, plus an expired
    server certificate and a client certificate, both signed by that CA."""
    subprocess.run(["sh", str(MAKE_CERTS), str(dir)], check=True, capture_output=True)
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID
    import ipaddress

    ca_key = serialization.load_pem_private_key((dir / "ca.key").read_bytes(), None)
    ca = x509.load_pem_x509_certificate((dir / "ca.pem").read_bytes())
    now = datetime.datetime.now(datetime.timezone.utc)

    def leaf(name: str, cn: str, start, end, usage, san: bool) -> None:
        key = ec.generate_private_key(ec.SECP256R1())
        b = (x509.CertificateBuilder().subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)]))
             .issuer_name(ca.subject).public_key(key.public_key()).serial_number(x509.random_serial_number())
             .not_valid_before(start).not_valid_after(end)
             .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
             .add_extension(x509.ExtendedKeyUsage([usage]), critical=False))
        if san:
            b = b.add_extension(x509.SubjectAlternativeName(
                [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
        cert = b.sign(ca_key, hashes.SHA256())
        (dir / f"{name}.pem").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        (dir / f"{name}.key").write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                                            serialization.PrivateFormat.PKCS8,
                                                            serialization.NoEncryption()))

    leaf("expired", "localhost", now - datetime.timedelta(days=10), now - datetime.timedelta(days=1),
         ExtendedKeyUsageOID.SERVER_AUTH, True)
    leaf("client", "hookd", now - datetime.timedelta(hours=1), now + datetime.timedelta(days=2),
         ExtendedKeyUsageOID.CLIENT_AUTH, False)
    return dir


class RedisProc:
    """One redis-server (or sentinel) process."""

    def __init__(self, dir: Path, name: str, args: list[str], port: int, tls: dict | None = None,
                 sentinel: bool = False, conf: str = "") -> None:
        self.dir = dir / name
        self.dir.mkdir(parents=True, exist_ok=True)
        self.name = name
        self.port = port
        self.tls = tls
        conf_path = self.dir / "redis.conf"
        conf_path.write_text(conf)
        cmd = ["redis-server", str(conf_path)]
        if sentinel:
            cmd.append("--sentinel")
        cmd += ["--bind", "127.0.0.1", "--dir", str(self.dir), "--save", "", "--appendonly", "no",
                "--logfile", str(self.dir / "log")]
        if tls:
            cmd += ["--port", "0", "--tls-port", str(port), "--tls-cert-file", tls["cert"], "--tls-key-file",
                    tls["key"], "--tls-ca-cert-file", tls["ca"], "--tls-auth-clients",
                    "yes" if tls.get("auth_clients") else "no"]
        else:
            cmd += ["--port", str(port)]
        self.proc = subprocess.Popen(cmd + args, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
        if not tls:
            wait_for(lambda: self.client().ping(), timeout=10, what=f"{name} to answer PING")
        else:
            wait_for(lambda: self._listening(), timeout=10, what=f"{name} to listen")

    def _listening(self) -> bool:
        import socket
        with socket.socket() as s:
            return s.connect_ex(("127.0.0.1", self.port)) == 0

    def client(self, **kw) -> redis.Redis:
        return redis.Redis(host="127.0.0.1", port=self.port, decode_responses=True, socket_timeout=2, **kw)

    def kill9(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


class RedisGroup:
    """The processes one test started; stop() stops them all."""

    def __init__(self, dir: Path) -> None:
        self.dir = dir
        self.procs: list[RedisProc] = []

    def server(self, name: str, args: list[str] | None = None, tls: dict | None = None, conf: str = "") -> RedisProc:
        p = RedisProc(self.dir, name, args or [], free_port(), tls=tls, conf=conf)
        self.procs.append(p)
        return p

    def sentinel(self, name: str, master_port: int, service: str = "mymaster", down_after_ms: int = 1000,
                 failover_timeout_ms: int = 5000) -> RedisProc:
        conf = (f"sentinel monitor {service} 127.0.0.1 {master_port} 2\n"
                f"sentinel down-after-milliseconds {service} {down_after_ms}\n"
                f"sentinel failover-timeout {service} {failover_timeout_ms}\n"
                f"sentinel parallel-syncs {service} 1\n")
        p = RedisProc(self.dir, name, [], free_port(), sentinel=True, conf=conf)
        self.procs.append(p)
        return p

    def stop(self) -> None:
        for p in reversed(self.procs):
            p.stop()


def wait_replicated(replica: RedisProc, timeout: float = 20) -> None:
    wait_for(lambda: replica.client().info("replication").get("master_link_status") == "up", timeout=timeout,
             what="the replica to sync")


def sentinels_agree(sentinels: list[RedisProc], service: str = "mymaster", replicas: int = 1) -> bool:
    for s in sentinels:
        c = s.client()
        if len(c.execute_command("SENTINEL", "REPLICAS", service)) < replicas:
            return False
        if len(c.execute_command("SENTINEL", "SENTINELS", service)) < len(sentinels) - 1:
            return False
    return True


def master_of(sentinels: list[RedisProc], service: str = "mymaster") -> int | None:
    for s in sentinels:
        try:
            addr = s.client().execute_command("SENTINEL", "GET-MASTER-ADDR-BY-NAME", service)
            if addr:
                return int(addr[1])
        except Exception:
            continue
    return None


def monotonic() -> float:
    return time.monotonic()
