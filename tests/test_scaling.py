"""Per-service scaling as a user runs it: `shiftstream dev --scale solver=3`."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
import redis

from shared.cli.devrunner import EmbeddedServer
from shared.names import Names
from shared.settings import Settings
from tests.conftest import FAST_ENV, ROOT, processes_started, request_json

pytestmark = pytest.mark.redis


def test_three_solver_consumers_share_a_burst_each_job_once(
    redis_server: EmbeddedServer, tmp_path: Path
) -> None:
    prefix = f"s{uuid.uuid4().hex[:8]}:"
    env = {
        **os.environ,
        **FAST_ENV,
        "PYTHONPATH": str(ROOT),
        "SHIFTSTREAM_PREFIX": prefix,
        "WORKER_CONCURRENCY": "1",  # one solve per process: the burst must spread over three
    }
    names = Names.from_settings(Settings(redis_url=redis_server.url, shiftstream_prefix=prefix))
    r = redis.Redis.from_url(redis_server.url, decode_responses=True)
    dev = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "shared.cli.main",
            "dev",
            "--scale",
            "solver=3",
            "--redis-url",
            redis_server.url,
            "--log-dir",
            str(tmp_path),
        ],
        env=env,
        cwd=tmp_path,
        stderr=subprocess.DEVNULL,
    )
    try:
        # The burst waits for the three solvers: one that is still importing when it lands
        # finds it already shared by the other two (a loaded machine takes seconds a process).
        deadline = time.monotonic() + 60
        while (up := processes_started(tmp_path, "solver")) < 3:
            assert dev.poll() is None, "the dev runner exited"
            assert time.monotonic() < deadline, f"{up} of 3 solvers started"
            time.sleep(0.1)
        jobs = [f"burst-{i}" for i in range(12)]
        for i, job in enumerate(jobs):
            payload = request_json(seed=i, time_limit=1.0)
            r.xadd(names.intake, {"type": "solve", "job_id": job, "payload": payload})

        def terminal() -> dict[str, list[str]]:
            out: dict[str, list[str]] = {j: [] for j in jobs}
            for _, f in r.xrange(names.events):
                if f["type"] in ("solver.completed", "solver.failed") and f["job_id"] in out:
                    out[f["job_id"]].append(f["type"])
            return out

        deadline = time.monotonic() + 120
        while not all(terminal().values()):
            assert dev.poll() is None, "the dev runner exited"
            assert time.monotonic() < deadline, f"unfinished: {terminal()}"
            time.sleep(0.2)
        time.sleep(0.5)  # a duplicate would show up now

        assert all(t == ["solver.completed"] for t in terminal().values()), terminal()
        consumers = r.xinfo_consumers(names.jobs, "solver")
        assert len(consumers) == 3, consumers
        workers = {r.hget(names.job(j), "worker") for j in jobs}
        assert len(workers) == 3, workers  # every consumer took part of the burst
        assert int(r.xpending(names.jobs, "solver")["pending"]) == 0
    finally:
        dev.send_signal(signal.SIGTERM)
        dev.wait(60)
        r.close()
