"""Dedicated Redis processes for the Redis-mode tests: a plain or TLS server,
a replica, sentinels, a Redis Cluster (masters with a replica each, made by
`redis-cli --cluster create`), and the throw-away certificates they use. Every
process is started on a free loopback port in the test's directory; callers
stop them in a `finally` (RedisGroup.stop() stops all it started)."""
from __future__ import annotations

import datetime
import os
import random
import socket
import subprocess
import time
from pathlib import Path

import redis

from hookdtest.util import free_port, wait_for

REPO = Path(__file__).resolve().parents[2]
MAKE_CERTS = REPO / "tests" / "fixtures" / "tls" / "make-certs.sh"


def make_certs(dir: Path) -> Path:
    """tests/fixtures/tls/make-certs.sh's CA and leaves, plus an expired
    server certificate, a client certificate and a cluster node's certificate
    (server and client), all signed by that CA."""
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
             .add_extension(x509.ExtendedKeyUsage(usage if isinstance(usage, list) else [usage]), critical=False))
        if san:  # True: localhost and 127.0.0.1; "dns": the name only
            names = [x509.DNSName("localhost")]
            if san is True:
                names.append(x509.IPAddress(ipaddress.ip_address("127.0.0.1")))
            b = b.add_extension(x509.SubjectAlternativeName(names), critical=False)
        cert = b.sign(ca_key, hashes.SHA256())
        (dir / f"{name}.pem").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        (dir / f"{name}.key").write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                                            serialization.PrivateFormat.PKCS8,
                                                            serialization.NoEncryption()))

    leaf("expired", "localhost", now - datetime.timedelta(days=10), now - datetime.timedelta(days=1),
         ExtendedKeyUsageOID.SERVER_AUTH, True)
    leaf("client", "hookd", now - datetime.timedelta(hours=1), now + datetime.timedelta(days=2),
         ExtendedKeyUsageOID.CLIENT_AUTH, False)
    # a cluster node is a client of its peers too (the bus always asks for a certificate)
    leaf("node", "localhost", now - datetime.timedelta(hours=1), now + datetime.timedelta(days=2),
         [ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH], True)
    # the same naming localhost only: nodes announced by address behind one name (as Azure's)
    leaf("node-dns", "localhost", now - datetime.timedelta(hours=1), now + datetime.timedelta(days=2),
         [ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH], "dns")
    return dir


class RedisProc:
    """One redis-server (or sentinel) process."""

    def __init__(self, dir: Path, name: str, args: list[str], port: int, tls: dict | None = None,
                 sentinel: bool = False, conf: str = "", password: str | None = None) -> None:
        self.dir = dir / name
        self.dir.mkdir(parents=True, exist_ok=True)
        self.name = name
        self.port = port
        self.tls = tls
        self.password = password
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
        if self.password is not None:
            kw.setdefault("password", self.password)
        if self.tls:
            kw.setdefault("ssl", True)
            kw.setdefault("ssl_ca_certs", self.tls["ca"])
            if self.tls.get("auth_clients"):
                kw.setdefault("ssl_certfile", self.tls["client_cert"])
                kw.setdefault("ssl_keyfile", self.tls["client_key"])
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
        self.nclusters = 0

    def server(self, name: str, args: list[str] | None = None, tls: dict | None = None, conf: str = "",
               password: str | None = None, port: int | None = None) -> RedisProc:
        p = RedisProc(self.dir, name, args or [], port or free_port(), tls=tls, conf=conf, password=password)
        self.procs.append(p)
        return p

    def cluster(self, masters: int = 3, replicas: int = 1, tls: dict | None = None, password: str | None = None,
                node_timeout_ms: int = 1000) -> "Cluster":
        """A Redis Cluster on loopback: masters * (1 + replicas) nodes joined
        by `redis-cli --cluster create`, ready (cluster_state:ok on every
        node, every replica synced) when this returns."""
        args = ["--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf", "--cluster-node-timeout",
                str(node_timeout_ms), "--cluster-replica-validity-factor", "0"]
        if tls:
            args += ["--tls-cluster", "yes", "--tls-replication", "yes"]
        if password:
            args += ["--requirepass", password, "--masterauth", password]
        nodes = []
        for i in range(masters * (1 + replicas)):
            port = cluster_port()  # the bus is port + 10000 (said outright: a TLS-only node has port 0)
            nodes.append(self.server(f"cluster{self.nclusters}-node{i}", args + ["--cluster-port", str(port + 10000)], tls=tls,
                                     password=password, port=port))
        cmd = ["redis-cli", "--cluster", "create", *[f"127.0.0.1:{n.port}" for n in nodes], "--cluster-replicas",
               str(replicas), "--cluster-yes"] + cli_tls_args(tls)
        env = dict(os.environ, REDISCLI_AUTH=password) if password else None
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=env)
        assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
        self.nclusters += 1
        c = Cluster(nodes, tls, password)
        wait_for(c.healthy, timeout=60, what="the cluster to agree (cluster_state:ok, replicas synced)")
        return c


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


def _port_free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
            return True
        except OSError:
            return False


def cluster_port() -> int:
    """A free port whose cluster bus port (+10000) is free too: below the
    ephemeral range, so the bus port exists."""
    for _ in range(200):
        p = random.randrange(20000, 30000)
        if _port_free(p) and _port_free(p + 10000):
            return p
    raise RuntimeError("no free port pair for a cluster node")


def cli_tls_args(tls: dict | None) -> list[str]:
    if not tls:
        return []
    a = ["--tls", "--cacert", tls["ca"]]
    if tls.get("auth_clients"):
        a += ["--cert", tls["client_cert"], "--key", tls["client_key"]]
    return a


class Cluster:
    """The nodes of one Redis Cluster and the operations the tests run on it:
    who serves a key's slot, a slot moved by hand (the way `redis-cli
    --cluster reshard` moves it, key by key), a replica taking over."""

    def __init__(self, nodes: list[RedisProc], tls: dict | None, password: str | None) -> None:
        self.nodes = nodes
        self.tls = tls
        self.password = password

    def url(self, scheme: str = "redis+cluster", user: str = "", password: str | None = None, hosts: int = 3,
            host: str = "127.0.0.1") -> str:
        pw = self.password if password is None else password
        auth = f"{user}:{pw}@" if pw else ""
        return f"{scheme}://{auth}" + ",".join(f"{host}:{n.port}" for n in self.nodes[:hosts])

    def alive(self) -> list[RedisProc]:
        return [n for n in self.nodes if n.proc.poll() is None]

    def by_port(self, port: int) -> RedisProc:
        return next(n for n in self.nodes if n.port == port)

    def node_id(self, n: RedisProc) -> str:
        return n.client().execute_command("CLUSTER", "MYID")

    def role(self, n: RedisProc) -> str:
        return n.client().execute_command("ROLE")[0]

    def masters(self) -> list[RedisProc]:
        return [n for n in self.alive() if self.role(n) == "master"]

    def keyslot(self, key: str) -> int:
        return int(self.alive()[0].client().execute_command("CLUSTER", "KEYSLOT", key))

    def owner(self, slot: int) -> RedisProc:
        """The master serving slot, as a live node's CLUSTER SLOTS says."""
        for n in self.alive():
            try:
                for start, end, master, *_ in n.client().execute_command("CLUSTER", "SLOTS"):
                    if start <= slot <= end:
                        return self.by_port(int(master[1]))
            except redis.RedisError:
                continue
        raise AssertionError(f"no node serves slot {slot}")

    def replica_of(self, master: RedisProc) -> RedisProc:
        mid = self.node_id(master)
        for n in self.alive():
            r = n.client().execute_command("ROLE")
            if r[0] == "slave" and int(r[2]) == master.port:
                return n
        raise AssertionError(f"{master.name} ({mid}) has no replica")

    def healthy(self) -> bool:
        try:
            for n in self.alive():
                info = n.client().execute_command("CLUSTER", "INFO")
                if isinstance(info, bytes):
                    info = info.decode()
                if "cluster_state:ok" not in info:
                    return False
                r = n.client().execute_command("ROLE")
                if r[0] == "slave" and r[3] != "connected":
                    return False
            return True
        except redis.RedisError:
            return False

    def migrate_slot(self, slot: int, to: RedisProc, pause: float = 0.05) -> RedisProc:
        """Moves slot to master `to` while clients run: IMPORTING on the
        target, MIGRATING on the source, the keys one by one with MIGRATE
        (a client meanwhile gets ASK for a moved key, TRYAGAIN for a script
        whose keys are split), then the slot's new owner told to every
        master. Returns the former owner."""
        src = self.owner(slot)
        assert src.port != to.port
        sid, tid = self.node_id(src), self.node_id(to)
        to.client().execute_command("CLUSTER", "SETSLOT", slot, "IMPORTING", sid)
        src.client().execute_command("CLUSTER", "SETSLOT", slot, "MIGRATING", tid)
        auth = ["AUTH", self.password] if self.password else []
        while True:
            keys = src.client().execute_command("CLUSTER", "GETKEYSINSLOT", slot, 10)
            if not keys:
                break
            for k in keys:
                src.client().execute_command("MIGRATE", "127.0.0.1", to.port, "", 0, 5000, *auth, "KEYS", k)
                time.sleep(pause)
        for n in [to, src] + [m for m in self.masters() if m.port not in (to.port, src.port)]:
            n.client().execute_command("CLUSTER", "SETSLOT", slot, "NODE", tid)
        return src

    def failover(self, master: RedisProc, timeout: float = 30) -> RedisProc:
        """CLUSTER FAILOVER on master's replica: a coordinated switch, the
        old master becomes its replica. Returns the new master."""
        rep = self.replica_of(master)
        rep.client().execute_command("CLUSTER", "FAILOVER")
        wait_for(lambda: self.role(rep) == "master" and self.role(master) == "slave", timeout=timeout,
                 what=f"{rep.name} to take over from {master.name}")
        wait_for(self.healthy, timeout=timeout, what="the cluster healthy after the failover")
        return rep


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
