"""The BullMQ bridge against real Redis, the real services and the official `bullmq` package.

Jobs are added with the Python `bullmq` Queue (the same Lua scripts as Node's; the Node
monolith itself runs in tests/test_monolith_bullmq.py). Each stack gets its own BullMQ key
prefix, so stacks never see each other's queues; lock and stall times are short so that the
crash paths finish in seconds.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from bullmq import Queue

from shared.names import READ_ORDER
from shared.roster.compiled import compile_request
from shared.roster.evaluator import evaluate
from shared.roster.model import SolveRequest, SolveResult
from tests.conftest import ROOT, Stack, StackFactory, curtois_json, request_json

pytestmark = pytest.mark.redis

QUEUE = "workforce-solver"  # the issue's queue name; stacks differ by BullMQ prefix
FINISHED = ("completed", "failed")


def bridge_env(**extra: str) -> dict[str, str]:
    return {
        "BULLMQ_QUEUES": QUEUE,
        "BULLMQ_PREFIX": f"bull{uuid.uuid4().hex[:8]}",
        "BULLMQ_LOCK_DURATION_MS": "2000",
        "BULLMQ_STALLED_INTERVAL_MS": "1000",
        **extra,
    }


def bull_prefix(stack: Stack) -> str:
    return str(stack.supervisor.env["BULLMQ_PREFIX"])


def run(stack: Stack, scenario: Callable[[Queue], Awaitable[Any]]) -> Any:
    """Run `scenario` with a BullMQ Queue of the stack's bridged queue (a monolith's Queue)."""

    async def main() -> Any:
        queue = Queue(QUEUE, {"connection": stack.settings.redis_url, "prefix": bull_prefix(stack)})
        try:
            return await scenario(queue)
        finally:
            await queue.close()

    return asyncio.run(main())


async def until(
    stack: Stack, what: str, check: Callable[[], Awaitable[bool]], timeout: float = 60
) -> None:
    deadline = time.monotonic() + timeout
    while not await check():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}\n{stack.logs()}")
        await asyncio.sleep(0.05)


async def finished(stack: Stack, queue: Queue, *job_ids: str, timeout: float = 60) -> None:
    async def done() -> bool:
        states = [await queue.getJobState(j) for j in job_ids]
        return all(s in FINISHED for s in states)

    await until(stack, f"BullMQ jobs {job_ids} to finish", done, timeout)


def intake_entries(stack: Stack, job_id: str) -> list[dict[str, str]]:
    return [f for _, f in stack.redis.xrange(stack.names.intake) if f.get("job_id") == job_id]


def solves(stack: Stack, job_id: str) -> int:
    """How many solves of the job ended (a solver's batch may write a long job back to
    solver.jobs for another replica, ADR 0006: entries there are not solves)."""
    return sum(
        1
        for o in stack.records(stack.names.outcomes)
        if o.get("job_id") == job_id and o.get("kind") in ("completed", "failed")
    )


def queued_in(stack: Stack, job_id: str) -> set[str]:
    """The priorities of the `solver.jobs` streams the job was queued in."""
    return {
        p.value
        for p in READ_ORDER
        if any(r.get("job_id") == job_id for r in stack.records(stack.names.jobs_for(p)))
    }


def bull_events(stack: Stack, job_id: str) -> Counter[str]:
    """BullMQ's own events of the job (what QueueEvents reads), by name."""
    rows = stack.redis.xrange(f"{bull_prefix(stack)}:{QUEUE}:events")
    return Counter(f["event"] for _, f in rows if f.get("jobId") == job_id)


def assert_roster(payload: str, result: dict[str, Any]) -> None:
    """The return value is a complete roster for the request, scored as the service said."""
    req = SolveRequest.model_validate_json(payload)
    res = SolveResult.model_validate(result)
    problem = compile_request(req)
    roster = problem.encode([a.shifts for a in res.assignments])
    assert evaluate(problem, roster).score == res.score
    assert [a.employee for a in res.assignments] == [e.id for e in req.employees]


def bridge_proc(stack: Stack) -> subprocess.Popen[bytes]:
    (proc,) = [p.popen for p in stack.supervisor.procs if p.service == "bridge"]
    return proc


@pytest.fixture(scope="module")
def bridged(
    redis_server: Any, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Stack]:
    """One bridged stack for the tests that only need their own job ids. Started before the
    first job goes in: intake trims what it consumed once at start-up, which would otherwise
    race the intake entry a test reads back."""
    s = Stack(redis_server.url, tmp_path_factory.mktemp("bridge-logs"), bridge_env()).start()
    try:
        yield s.wait_started()
    finally:
        s.stop()


# ------------------------------------------------------------------------------ the happy path


def test_a_bullmq_job_gets_progress_and_the_roster_as_return_value(bridged: Stack) -> None:
    # Curtois Instance 8 runs its whole limit (no proof of optimality), so progress flows.
    payload = curtois_json(8, time_limit=3.0)
    job_id = f"roster-{uuid.uuid4().hex[:6]}"

    async def scenario(queue: Queue) -> Any:
        await queue.add(
            "solve", json.loads(payload),
            {"jobId": job_id, "attempts": 3, "backoff": {"type": "exponential", "delay": 2000},
             "priority": 1},
        )  # fmt: skip
        await finished(bridged, queue, job_id)
        return await queue.getJobState(job_id), await queue.getJob(job_id)

    state, job = run(bridged, scenario)
    assert state == "completed", (job.failedReason, bridged.logs())
    assert_roster(payload, job.returnvalue)
    assert job.attemptsMade == 1
    assert 0 < job.progress <= 100  # the last job.updateProgress the bridge made
    events = bull_events(bridged, job_id)
    assert events["progress"] >= 1 and events["completed"] == 1 and events["failed"] == 0
    # Handed over once, under the BullMQ job id, with the priority mapped; solved once.
    (entry,) = intake_entries(bridged, job_id)
    assert entry["type"] == "solve" and entry["priority"] == "high"
    assert json.loads(entry["payload"]) == json.loads(payload)
    # ... and queued as one: in the high stream, which the solvers read first.
    assert queued_in(bridged, job_id) == {"high"}
    assert bridged.job(job_id)["priority"] == "high"
    assert solves(bridged, job_id) == 1
    assert [e["type"] for e in bridged.terminal(job_id)] == ["solver.completed"]


def test_an_invalid_job_fails_at_once_without_bullmq_retries(bridged: Stack) -> None:
    bad = json.loads(request_json(employees=3, shifts=5))
    bad["employees"][0]["max_minutes"] = -5
    job_id = f"bad-{uuid.uuid4().hex[:6]}"
    too_long = "x" * 201

    async def scenario(queue: Queue) -> Any:
        opts = {"attempts": 3, "backoff": {"type": "exponential", "delay": 2000}}
        await queue.add("solve", bad, {"jobId": job_id, **opts})
        await queue.add("solve", bad, {"jobId": too_long, **opts})
        await finished(bridged, queue, job_id, too_long)
        return [
            (await queue.getJobState(j), await queue.getJob(j)) for j in (job_id, too_long)
        ]

    (state, job), (long_state, long_job) = run(bridged, scenario)
    assert state == "failed" and job.attemptsMade == 1, job.failedReason
    assert job.failedReason.startswith("invalid: ") and "max_minutes" in job.failedReason
    assert bull_events(bridged, job_id)["failed"] == 1
    # Refused by the bridge itself: ShiftStream never saw it.
    assert long_state == "failed" and long_job.attemptsMade == 1
    assert "200" in long_job.failedReason
    assert not intake_entries(bridged, too_long)


def test_delay_and_priority_reach_the_intake_entry(bridged: Stack) -> None:
    job_id = f"later-{uuid.uuid4().hex[:6]}"
    payload = request_json(employees=4, shifts=8, time_limit=0.5)

    async def scenario(queue: Queue) -> Any:
        job = await queue.add("solve", payload, {"jobId": job_id, "delay": 300, "priority": 20})
        await finished(bridged, queue, job_id)
        return job.timestamp, await queue.getJobState(job_id)

    added, state = run(bridged, scenario)
    assert state == "completed"
    (entry,) = intake_entries(bridged, job_id)
    assert entry["priority"] == "low" and entry["payload"] == payload
    # Delayed, it waited in the low schedule, and triage moved it into the low stream.
    assert queued_in(bridged, job_id) == {"low"}
    from services.intake.verdict import parse_not_before

    assert parse_not_before(entry["not_before"]) == pytest.approx((added + 300) / 1000)


def test_a_cancel_in_shiftstream_ends_the_bullmq_job_the_same_way(bridged: Stack) -> None:
    job_id = f"cancel-{uuid.uuid4().hex[:6]}"
    payload = json.loads(curtois_json(8, time_limit=30.0))

    async def scenario(queue: Queue) -> Any:
        await queue.add("solve", payload, {"jobId": job_id, "attempts": 3})

        async def running() -> bool:
            return bridged.job(job_id).get("state") == "running"

        await until(bridged, "the solve to start", running)
        bridged.xadd({"type": "cancel", "job_id": job_id})
        await finished(bridged, queue, job_id, timeout=25)  # long before its 30 s limit
        return await queue.getJobState(job_id), await queue.getJob(job_id)

    state, job = run(bridged, scenario)
    (end,) = bridged.terminal(job_id)
    assert job.attemptsMade == 1
    if end["type"] == "solver.completed":  # stopped with the best roster found so far
        assert end["cancelled"] == "true"
        assert state == "completed" and job.returnvalue["stats"]["cancelled"] is True
    else:  # stopped before any roster
        assert end["error_class"] == "cancelled"
        assert state == "failed" and job.failedReason.startswith("cancelled")


def test_a_job_id_reused_for_another_bullmq_job_is_refused(bridged: Stack) -> None:
    job_id = f"again-{uuid.uuid4().hex[:6]}"
    payload = json.loads(request_json(employees=4, shifts=8, time_limit=0.5))

    async def scenario(queue: Queue) -> Any:
        await queue.add("solve", payload, {"jobId": job_id})
        await finished(bridged, queue, job_id)
        first = await queue.getJobState(job_id)
        await queue.remove(job_id)  # finished: BullMQ lets it go, and the id is free there
        await asyncio.sleep(0.01)  # another millisecond: another job
        await queue.add("solve", payload, {"jobId": job_id, "attempts": 3})
        await finished(bridged, queue, job_id)
        return first, await queue.getJobState(job_id), await queue.getJob(job_id)

    first, state, job = run(bridged, scenario)
    assert first == "completed"
    assert state == "failed" and job.attemptsMade == 1
    assert "already handed to ShiftStream" in job.failedReason and "jobId" in job.failedReason
    assert len(intake_entries(bridged, job_id)) == 1 and solves(bridged, job_id) == 1


def test_an_ending_no_longer_in_the_events_stream_comes_from_the_job_record(
    bridged: Stack,
) -> None:
    """A job that ended while no bridge followed it, and whose terminal event was trimmed
    since: the guard says it ended, the record says how (a roster cannot be recovered)."""
    n, r = bridged.names, bridged.redis
    failed, completed = f"old-f-{uuid.uuid4().hex[:6]}", f"old-c-{uuid.uuid4().hex[:6]}"
    for job_id, record in (
        (failed, {"state": "failed", "error_class": "exhausted", "last_error": "boom"}),
        (completed, {"state": "completed"}),
    ):
        r.set(n.idempotency(job_id), "1-1", ex=600)  # known to ShiftStream: not solved again
        r.set(n.terminal(job_id), "1-1", ex=600)  # an entry id long trimmed away
        r.hset(n.job(job_id), mapping=record)

    async def scenario(queue: Queue) -> Any:
        for job_id in (failed, completed):
            await queue.add("solve", json.loads(request_json()), {"jobId": job_id})
        await finished(bridged, queue, failed, completed)
        return [await queue.getJob(j) for j in (failed, completed)]

    old_failed, old_completed = run(bridged, scenario)
    assert old_failed.failedReason == "exhausted: boom"
    assert old_completed.failedReason.startswith("result lost: ShiftStream completed job")
    assert solves(bridged, failed) == solves(bridged, completed) == 0


def test_the_bridge_reports_live_and_ready(bridged: Stack) -> None:
    for check in ("ready", "live"):
        probe = subprocess.run(
            [sys.executable, "-m", "shared.observability.health", "--service", "bridge",
             "--check", check, "--max-idle", "10"],
            env={**bridged.supervisor.env, "CONSUMER_NAME": bridge_consumer(bridged)},
            cwd=ROOT, capture_output=True, text=True, timeout=30,
        )  # fmt: skip
        assert probe.returncode == 0, (probe.stdout, probe.stderr)
    dead = subprocess.run(
        [sys.executable, "-m", "shared.observability.health", "--service", "bridge",
         "--check", "live"],
        env={**bridged.supervisor.env, "CONSUMER_NAME": "no-such-bridge"},
        cwd=ROOT, capture_output=True, text=True, timeout=30,
    )  # fmt: skip
    assert dead.returncode == 1 and "no heartbeat" in dead.stdout


def bridge_consumer(stack: Stack) -> str:
    """The CONSUMER_NAME the dev runner gave the bridge process (its heartbeat's name)."""
    pid = bridge_proc(stack).pid
    env = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    (name,) = [e.split(b"=", 1)[1].decode() for e in env if e.startswith(b"CONSUMER_NAME=")]
    return name


# ------------------------------------------------------------------------------ crash safety


def test_a_bridge_killed_mid_job_loses_and_doubles_nothing(make_stack: StackFactory) -> None:
    """SIGKILL the bridge while it holds jobs; ShiftStream finishes them while no bridge runs;
    the restarted bridge gets them back from BullMQ's stalled check and completes each BullMQ
    job once, with the roster ShiftStream computed while it was down."""
    stack = make_stack(env=bridge_env()).wait_started()
    payloads = {f"k{i}-{uuid.uuid4().hex[:4]}": request_json(seed=i, time_limit=0.5)
                for i in range(6)}  # fmt: skip

    async def scenario(queue: Queue) -> Any:
        for job_id, payload in payloads.items():
            await queue.add("solve", json.loads(payload), {"jobId": job_id, "attempts": 2})

        async def all_handed_over() -> bool:
            return all(intake_entries(stack, j) for j in payloads)

        await until(stack, "the hand-over", all_handed_over)
        bridge_proc(stack).send_signal(signal.SIGKILL)
        bridge_proc(stack).wait()
        # Every job ends in ShiftStream while no bridge follows it.
        stack.wait_terminal(*payloads)
        assert {await queue.getJobState(j) for j in payloads} == {"active"}
        stack.restart_dead()
        await finished(stack, queue, *payloads)
        return {j: (await queue.getJobState(j), await queue.getJob(j)) for j in payloads}

    ends = run(stack, scenario)
    for job_id, (state, job) in ends.items():
        assert state == "completed", (job_id, job.failedReason, stack.logs())
        assert_roster(payloads[job_id], job.returnvalue)
        assert bull_events(stack, job_id)["completed"] == 1
        assert len(stack.terminal(job_id)) == 1
        assert len(intake_entries(stack, job_id)) == 1  # re-attached, not sent again
        assert solves(stack, job_id) == 1


def test_a_stopping_bridge_gives_its_jobs_back_at_once(make_stack: StackFactory) -> None:
    stack = make_stack(env=bridge_env(BULLMQ_LOCK_DURATION_MS="30000")).wait_started()
    job_ids = [f"s{i}-{uuid.uuid4().hex[:4]}" for i in range(3)]
    payload = json.loads(curtois_json(8, time_limit=2.0))

    async def scenario(queue: Queue) -> Any:
        for job_id in job_ids:
            await queue.add("solve", payload, {"jobId": job_id})

        async def all_handed_over() -> bool:
            return all(intake_entries(stack, j) for j in job_ids)

        await until(stack, "the hand-over", all_handed_over)
        proc = bridge_proc(stack)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 0
        # Not left active under a 30 s lock: back in BullMQ's queue for the next bridge.
        states = {await queue.getJobState(j) for j in job_ids}
        stack.restart_dead()
        await finished(stack, queue, *job_ids)
        return states, {await queue.getJobState(j) for j in job_ids}

    handed_back, end = run(stack, scenario)
    assert "active" not in handed_back, handed_back
    assert end == {"completed"}
    for job_id in job_ids:
        assert len(intake_entries(stack, job_id)) == 1 and solves(stack, job_id) == 1


def test_removing_the_bullmq_job_cancels_the_shiftstream_job(make_stack: StackFactory) -> None:
    stack = make_stack(env=bridge_env())
    job_id = f"rm-{uuid.uuid4().hex[:6]}"
    payload = json.loads(curtois_json(8, time_limit=30.0))

    async def scenario(queue: Queue) -> None:
        await queue.add("solve", payload, {"jobId": job_id})

        async def running() -> bool:
            return stack.job(job_id).get("state") == "running"

        await until(stack, "the solve to start", running)
        # BullMQ refuses to remove a locked job; obliterate with force removes active ones.
        await queue.obliterate(force=True)

    run(stack, scenario)
    # Ends long before its 30 s limit: cancelled, with the best roster so far or without one.
    (end,) = stack.wait_terminal(job_id, timeout=20).values()
    assert end.get("cancelled") == "true" or end.get("error_class") == "cancelled", end
    assert "was removed; cancelling it" in stack.logs()


# ------------------------------------------------------------------------------ settings


def test_without_queues_the_bridge_idles_and_a_bad_list_is_one_clear_line(
    redis_server: Any,
) -> None:
    env = {**os.environ, "REDIS_URL": redis_server.url, "PYTHONPATH": str(ROOT),
           "SHIFTSTREAM_PREFIX": f"t{uuid.uuid4().hex[:6]}:"}  # fmt: skip
    bad = subprocess.run(
        [sys.executable, "-m", "services.bridge"],
        env={**env, "BULLMQ_QUEUES": "orders:eu"}, cwd=ROOT, capture_output=True, text=True,
        timeout=60,
    )  # fmt: skip
    assert bad.returncode != 0
    assert bad.stderr.strip().splitlines()[-1] == (
        "bridge: BULLMQ_QUEUES: queue name 'orders:eu' contains ':', which BullMQ forbids"
    )
    idle = subprocess.Popen(
        [sys.executable, "-m", "services.bridge"], env={**env, "BULLMQ_QUEUES": ""},
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
    )  # fmt: skip
    try:
        assert idle.stdout is not None
        seen = b""
        while b"no BullMQ queue to bridge" not in seen:
            line = idle.stdout.readline()
            assert line, seen.decode(errors="replace")
            seen += line
        assert idle.poll() is None  # idle, not exited (a supervisor would restart it)
    finally:
        idle.send_signal(signal.SIGTERM)
        assert idle.wait(30) == 0


def test_shiftstream_dev_passes_bullmq_queues_on_to_the_bridge(
    redis_server: Any, tmp_path: Path
) -> None:
    from shared.cli.devrunner import Supervisor, parse_scale

    assert "bridge" not in {k for k, v in Supervisor({}).scale.items() if v}
    assert parse_scale(["bridge=2"]) == {"bridge": 2}
    env = {**os.environ, "PYTHONPATH": str(ROOT), "BULLMQ_QUEUES": "workforce-solver",
           "SHIFTSTREAM_PREFIX": f"t{uuid.uuid4().hex[:6]}:",
           "BULLMQ_PREFIX": f"bull{uuid.uuid4().hex[:6]}"}  # fmt: skip
    dev = subprocess.Popen(
        [sys.executable, "-m", "shared.cli.main", "dev", "--redis-url", redis_server.url,
         "--log-dir", str(tmp_path)],
        env=env, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        log = tmp_path / "bridge-0.log"
        deadline = time.monotonic() + 60
        while "bridging BullMQ queues workforce-solver" not in (
            log.read_text() if log.exists() else ""
        ):
            assert dev.poll() is None and time.monotonic() < deadline, "no bridge started"
            time.sleep(0.1)
        children = subprocess.run(
            ["pgrep", "-P", str(dev.pid)], capture_output=True, text=True
        ).stdout.split()
        assert len(children) == 7  # five services, the bridge and the console (Redis is the test's)
    finally:
        dev.send_signal(signal.SIGTERM)
        assert dev.wait(60) == 0


def test_notifier_guard_holds_the_terminal_event_id(bridged: Stack) -> None:
    """What re-attaching relies on: the terminal guard points at the terminal event."""
    job_id = bridged.submit(request_json(employees=4, shifts=8, time_limit=0.5))
    (end,) = bridged.wait_terminal(job_id).values()
    guard = bridged.redis.get(bridged.names.terminal(job_id))
    assert guard is not None
    ((_, fields),) = bridged.redis.xrange(bridged.names.events, min=guard, max=guard)
    assert fields == end


def test_a_script_reload_that_meets_redis_gone_is_retried_not_raised_to_bullmq(
    redis_server: Any,
) -> None:
    """A restarted Redis has lost the hand-over script (NOSCRIPT), and loading it again may meet
    a connection that the restart closed. That is a lost connection like any other: the
    hand-over retries it and gets through. Raised to BullMQ it would spend one of the job's
    attempts (the chaos run with the bridge saw such a job fail after a BullMQ retry)."""
    from redis.exceptions import ConnectionError as RedisConnectionError

    from services.bridge.bridge import Bridge, Held
    from services.bridge.follower import Watch
    from services.bridge.mapping import HandOver, Rules, hand_over
    from shared.settings import Settings
    from shared.streaming.broker import build_service

    settings = Settings(
        redis_url=redis_server.url,
        shiftstream_prefix=f"reload{uuid.uuid4().hex[:8]}:",
        bullmq_queues=QUEUE,
    )
    rules = Rules.parse(
        settings.bullmq_queues,
        high_max=settings.bullmq_priority_high_max,
        low_min=settings.bullmq_priority_low_min,
        unset=settings.bullmq_priority_unset,
    )
    plan = hand_over(QUEUE, "reload-1", int(time.time() * 1000), request_json(), {}, 0, rules)
    assert isinstance(plan, HandOver)

    async def scenario() -> tuple[str | None, int, list[Any]]:
        svc = build_service("bridge", settings)
        bridge = Bridge(svc, rules)
        loads = 0
        real_load = svc.redis.script_load

        async def load_meeting_a_closed_connection(script: str) -> Any:
            nonlocal loads
            loads += 1
            if loads == 1:
                raise RedisConnectionError("Connection closed by server.")
            return await real_load(script)

        try:
            await svc.redis.script_flush()  # what a restart does to the script cache
            svc.redis.script_load = load_meeting_a_closed_connection  # type: ignore[method-assign]
            held = Held(QUEUE, job=None, token="token", watch=Watch(plan.job_id))
            status = await bridge._hand_over(held, plan, plan.fields)
            entries = await svc.redis.xrange(svc.names.intake)
            return status, loads, entries
        finally:
            await bridge.bull.aclose()
            await svc.redis.aclose()

    status, loads, entries = asyncio.run(scenario())
    assert status == "new"
    assert loads == 2  # the failed load, then the one that got through
    assert [f[b"job_id"] for _, f in entries] == [b"reload-1"]
