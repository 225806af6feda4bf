"""Redis going away: the services survive a restart of an AOF Redis and resume on their own;
the health probe reports a service that is not consuming."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from shared.cli.devrunner import EmbeddedServer
from tests.conftest import FAST_ENV, ROOT, Stack, curtois_json, request_json

pytestmark = pytest.mark.redis


@pytest.fixture
def aof_stack(tmp_path: Path) -> Iterator[tuple[EmbeddedServer, Stack]]:
    server = EmbeddedServer(aof=True).start()
    # Every subscriber started before a test takes anything away: a FastStream subscriber
    # that starts creates its group at "$" when it finds none, so a group destroyed while the
    # solver still starts came back past the next job (the job was never read, or nothing met
    # NOGROUP and the solver never exited: both seen under load).
    stack = Stack(server.url, tmp_path / "logs").start()
    stop = threading.Event()

    def supervise() -> None:  # what the dev runner's loop does
        while not stop.wait(0.3):
            stack.supervisor.check()

    loop = threading.Thread(target=supervise, daemon=True)
    try:
        stack.wait_started()
        loop.start()
        yield server, stack
    finally:
        stop.set()
        if loop.is_alive():
            loop.join()
        stack.stop()
        server.stop()


def test_services_resume_after_a_redis_restart(
    aof_stack: tuple[EmbeddedServer, Stack],
) -> None:
    server, stack = aof_stack
    warm = stack.submit(request_json(implementation="greedy"))
    stack.wait_terminal(warm, timeout=60)
    inflight = stack.submit(curtois_json(8, time_limit=4))
    stack.wait_for(lambda: stack.job(inflight).get("state") == "running", what="running")
    pids = stack.supervisor.pids()

    server.bounce(down=1.5)
    stack.redis.connection_pool.reset()
    stack.raw.connection_pool.reset()

    after = [stack.submit(request_json(seed=i, time_limit=0.5)) for i in range(3)]
    found = stack.wait_terminal(inflight, *after, timeout=90)
    assert all(e["type"] == "solver.completed" for e in found.values()), found
    time.sleep(1.0)  # room for a wrong second terminal event
    for job in (warm, inflight, *after):
        assert len(stack.terminal(job)) == 1, job
    for service in ("intake", "solver", "fallback", "triage", "notifier"):
        stack.wait_for(lambda s=service: stack.pending(s) == 0, what=f"{service} pending")
    restarted = set(pids) - set(stack.supervisor.pids())
    print(f"processes restarted by the supervisor after the Redis restart: {len(restarted)}")


def health(stack: Stack, service: str, max_idle: float) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        **FAST_ENV,
        "REDIS_URL": stack.settings.redis_url,
        "SHIFTSTREAM_PREFIX": stack.prefix,
        # The supervisor names consumers `<service>-<index>-<ms>-<reader>`.
        "CONSUMER_NAME": f"{service}-0",
        "PYTHONPATH": str(ROOT),
    }
    return subprocess.run(
        [sys.executable, "-m", "shared.observability.health", "--service", service,
         "--check", "live", "--max-idle", str(max_idle)],
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
    )


def test_health_reports_a_solver_that_stopped_consuming(
    aof_stack: tuple[EmbeddedServer, Stack],
) -> None:
    _, stack = aof_stack
    first = stack.submit(request_json(implementation="greedy"))
    stack.wait_terminal(first, timeout=60)
    assert health(stack, "solver", 2).returncode == 0
    [pid] = stack.supervisor.pids("solver")
    os.kill(pid, signal.SIGSTOP)  # a consume loop that hangs: the process is up, reads nothing
    try:
        waiting = stack.submit(request_json(implementation="greedy"))
        stack.wait_for(
            lambda: health(stack, "solver", 2).returncode == 1, timeout=20, what="probe FAIL"
        )
        verdict = health(stack, "solver", 2)
        print(verdict.stdout)
        assert "not reading" in verdict.stdout
    finally:
        os.kill(pid, signal.SIGCONT)
    stack.wait_terminal(waiting, timeout=60)
    assert health(stack, "solver", 2).returncode == 0


def _wait_for_exit(stack: Stack, proc: subprocess.Popen[bytes], service: str) -> None:
    """Wait for `proc` to exit. If it does not, its asyncio task stacks (SIGUSR1) and the
    state of its groups go into the failure, so that a miss can be read afterwards."""
    try:
        stack.wait_for(lambda: proc.poll() is not None, timeout=30, what=f"{service} exit")
        return
    except pytest.fail.Exception:
        if proc.poll() is not None:
            return
    proc.send_signal(signal.SIGUSR1)
    time.sleep(1.0)
    groups = {s: stack.redis.xinfo_groups(s) for s, _ in stack.names.inputs(service)}
    pytest.fail(f"{service} did not exit; its groups: {groups}\n{stack.logs()}")


def test_a_subscriber_stopped_for_good_exits_non_zero_and_comes_back(
    aof_stack: tuple[EmbeddedServer, Stack],
) -> None:
    """Redis back without its data (here: the group destroyed): exit non-zero, not a stall."""
    _, stack = aof_stack
    first = stack.submit(request_json(implementation="greedy"))
    stack.wait_terminal(first, timeout=60)
    [old] = [p.popen for p in stack.supervisor.procs if p.service == "solver"]
    stream, group = stack.names.groups["solver"]
    stack.redis.xgroup_destroy(stream, group)
    # A new job wakes the blocked readers, whose next read meets NOGROUP.
    job = stack.submit(request_json(implementation="greedy"))
    _wait_for_exit(stack, old, "solver")
    assert old.returncode == 70, old.returncode
    # Restarted by the supervisor, it creates the group again (at 0) and serves the job.
    assert stack.wait_terminal(job, timeout=60)[job]["type"] == "solver.completed"
    assert len(stack.terminal(first)) == 1  # re-read from 0, skipped as already terminal
