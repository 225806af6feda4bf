"""The five services as real processes against a real server: the delivery rules
(docs/design.md §4).

Each test talks to the pipeline like a foreign producer (plain redis-py XADD of flat fields)
and checks only what a client can see (public events) plus the Redis state an operator would
check (pending lists, dead letters, job records).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import itertools
import json
import os
import signal
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
import redis.asyncio as aioredis

from services.notifier.event_writer import EventWriter, entry_id, result_lost
from shared.cli.devrunner import EmbeddedServer
from shared.jobs.messages import Outcome, OutcomeKind
from shared.names import Names
from shared.roster.compiled import compile_request
from shared.roster.evaluator import evaluate
from shared.roster.model import SolveRequest, SolveResult
from shared.settings import Settings
from tests.conftest import Stack, StackFactory, curtois_json, request_json

pytestmark = pytest.mark.redis


def dead_letters(stack: Stack) -> list[dict[str, Any]]:
    return stack.records(stack.names.dead)


def entries_for(stack: Stack, stream: str, job_id: str) -> int:
    return sum(r.get("job_id") == job_id for r in stack.records(stream))


# --------------------------------------------------------------------------- happy path


def test_foreign_producer_gets_accepted_progress_completed(stack: Stack) -> None:
    payload = curtois_json(8, time_limit=2.5)
    job = stack.submit(
        payload, traceparent="00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
    )
    done = stack.wait_terminal(job)[job]
    types = [e["type"] for e in stack.events(job)]
    assert types[0] == "solver.accepted"
    assert "solver.progress" in types
    assert types[-1] == "solver.completed" and types.count("solver.completed") == 1
    progress = [e for e in stack.events(job) if e["type"] == "solver.progress"]
    # At most one progress event per second: a 2.5 s solve cannot produce more than 4.
    assert 1 <= len(progress) <= 4
    assert {"progress", "message", "generation", "population", "eta_seconds", "best_score"} <= set(
        progress[0]
    )
    assert done["solver_used"] == "generetic" and done["attempts"] == "1"
    request = SolveRequest.model_validate_json(payload)
    result = SolveResult.model_validate_json(done["result"])
    problem = compile_request(request)
    roster = problem.encode([a.shifts for a in result.assignments])
    scored = evaluate(problem, roster)
    assert scored.hard_violations == result.score.hard_violations
    assert scored.penalty == result.score.penalty
    assert stack.job(job)["state"] == "completed"


INVALID = {
    "broken-json": ({"payload": "{not json"}, "JSON"),
    "wrong-type": (
        {"payload": json.dumps({**json.loads(request_json()), "horizon": {"days": "many"}})},
        "horizon.days",
    ),
    "missing-field": (
        {
            "payload": json.dumps(
                {k: v for k, v in json.loads(request_json()).items() if k != "employees"}
            )
        },
        "employees",
    ),
    "unknown-shift": (
        {
            "payload": json.dumps(
                {
                    **json.loads(request_json()),
                    "cover": [{"day": 0, "shift": "teatime", "required": 1}],
                }
            )
        },
        "teatime",
    ),
    "oversize": ({"payload": json.dumps({"name": "x" * 250_000})}, "over the limit"),
    "missing-payload": ({}, "payload"),
    "unknown-type": ({"type": "explode", "payload": "{}"}, "type"),
}


def test_invalid_requests_fail_once_and_are_never_retried(stack: Stack) -> None:
    jobs = {}
    for name, (fields, _) in INVALID.items():
        job_id = f"invalid-{name}-{time.monotonic_ns()}"
        stack.xadd({"type": "solve", "job_id": job_id, **fields})
        jobs[name] = job_id
    # Garbage without even a job id must be recorded and must not stop the intake.
    stack.xadd({"nonsense": "\x00\x01"})
    found = stack.wait_terminal(*jobs.values())
    for name, (_, needle) in INVALID.items():
        ev = found[jobs[name]]
        assert ev["type"] == "solver.failed", name
        assert ev["error_class"] == "invalid", name
        assert needle in ev["reason"], (name, ev["reason"])
        assert ev["dead_letter_id"], name
    time.sleep(1.0)  # room for a wrong retry to show up
    for name, job_id in jobs.items():
        assert len(stack.terminal(job_id)) == 1, name
        assert entries_for(stack, stack.names.jobs, job_id) == 0, name
    letters = dead_letters(stack)
    assert any(
        d["job_id"].startswith("anon-")
        and d["reason"] == "job_id: missing"
        and "nonsense" in (d["raw"] or {})
        for d in letters
    )
    assert stack.alive()
    assert stack.pending("intake") == 0


def test_the_longest_job_id_the_contract_allows_is_answered_under_it(stack: Stack) -> None:
    """Ids of 129-200 characters are valid by the published schema: their events carry them."""
    longest = uuid.uuid4().hex.ljust(200, "L")
    too_long = uuid.uuid4().hex.ljust(201, "L")
    stack.submit(request_json(implementation="greedy"), job_id=longest)
    stack.submit(request_json(implementation="greedy"), job_id=too_long)
    assert stack.wait_terminal(longest)[longest]["type"] == "solver.completed"
    stack.wait_for(
        lambda: any((d["raw"] or {}).get("job_id") == too_long for d in dead_letters(stack)),
        what="a dead letter for the 201-character id",
    )
    letter = next(d for d in dead_letters(stack) if (d["raw"] or {}).get("job_id") == too_long)
    assert letter["job_id"].startswith("anon-")
    assert letter["reason"] == "job_id: longer than 200 characters"
    assert stack.events(too_long) == []


def test_same_job_id_three_times_is_solved_once(stack: Stack) -> None:
    payload = request_json(implementation="greedy")
    job = f"dup-{time.monotonic_ns()}"
    for _ in range(3):
        stack.submit(payload, job_id=job)
    stack.wait_terminal(job)
    time.sleep(1.0)
    assert len(stack.terminal(job)) == 1
    assert entries_for(stack, stack.names.jobs, job) == 1


def test_not_before_delays_the_solve(stack: Stack) -> None:
    # The stack is shared and may still be starting when this test runs first: time from a
    # pipeline that already moved a job, not from the services' start-up.
    stack.wait_terminal(stack.submit(request_json(implementation="greedy")))
    due = dt.datetime.now(dt.UTC) + dt.timedelta(seconds=2)
    job = stack.submit(request_json(implementation="greedy"), not_before=due.isoformat())
    stack.wait_for(lambda: bool(stack.events(job)), what="accepted")
    assert stack.job(job)["state"] == "scheduled"
    done = stack.wait_terminal(job)[job]
    assert done["type"] == "solver.completed"
    assert dt.datetime.fromisoformat(done["ts"]) >= due


def test_cancel_of_a_queued_job(stack: Stack) -> None:
    due = dt.datetime.now(dt.UTC) + dt.timedelta(seconds=1.5)
    job = stack.submit(request_json(implementation="greedy"), not_before=due.isoformat())
    stack.xadd({"type": "cancel", "job_id": job})
    done = stack.wait_terminal(job)[job]
    assert done["type"] == "solver.failed" and done["error_class"] == "cancelled"


def test_cancel_of_a_running_job_keeps_its_best_roster(stack: Stack) -> None:
    job = stack.submit(curtois_json(8, time_limit=20))
    stack.wait_for(lambda: stack.job(job).get("state") == "running", what="running")
    time.sleep(0.5)
    asked = time.monotonic()
    stack.xadd({"type": "cancel", "job_id": job})
    done = stack.wait_terminal(job)[job]
    assert time.monotonic() - asked < 10  # far below the 20 s limit
    assert done["type"] == "solver.completed" and done.get("cancelled") == "true"


# --------------------------------------------------------------------------- delivery


def test_a_large_result_goes_to_its_event_once_and_a_lost_one_is_answered(
    make_stack: StackFactory,
) -> None:
    # Every result counts as large here; the notifier starts only once both are waiting, so
    # one of the keys can be lost first, as an operator's DEL or an expired TTL would.
    env = {"RESULT_KEY_MIN_BYTES": "1"}
    solving = make_stack(env=env, scale={"notifier": 0})
    payload = request_json(time_limit=0.5)
    kept, lost = solving.submit(payload), solving.submit(payload)
    n = solving.names

    def completed() -> dict[str, dict[str, Any]]:
        return {r["job_id"]: r for r in solving.records(n.outcomes) if r["kind"] == "completed"}

    solving.wait_for(lambda: len(completed()) == 2, timeout=60, what="both solved")
    outcome = completed()
    # The outcome names the key; the roster itself is written once, under it.
    assert {outcome[j]["result"] for j in (kept, lost)} == {None}
    keys = [outcome[j]["result_key"] for j in (kept, lost)]
    assert all(k.startswith(n.result(j, "")) for k, j in zip(keys, (kept, lost), strict=True))
    assert solving.redis.exists(*keys) == 2
    solving.redis.delete(keys[1])

    make_stack(
        env={**env, "SHIFTSTREAM_PREFIX": solving.prefix},
        scale={"intake": 0, "solver": 0, "fallback": 0, "triage": 0, "notifier": 1},
    )
    done = solving.wait_terminal(kept, lost)
    assert done[kept]["type"] == "solver.completed"
    result = SolveResult.model_validate_json(done[kept]["result"])
    problem = compile_request(SolveRequest.model_validate_json(payload))
    scored = evaluate(problem, problem.encode([a.shifts for a in result.assignments]))
    assert (scored.hard_violations, scored.penalty) == (
        result.score.hard_violations,
        result.score.penalty,
    )
    assert done[lost]["type"] == "solver.failed" and done[lost]["error_class"] == "crash"
    assert "lost before it was published" in done[lost]["reason"]
    assert [e["type"] for e in solving.terminal(lost)] == ["solver.failed"]
    assert solving.job(lost)["state"] == "failed" and solving.job(kept)["state"] == "completed"
    assert solving.redis.exists(*keys) == 0


def test_a_large_result_is_written_once_and_its_key_goes_with_a_redelivery(
    redis_server: EmbeddedServer,
) -> None:
    # The notifier's script alone (services/notifier/emit_event.lua), as a crash between the
    # event and the ack would run it twice, and as it finds a key that is gone.
    names = Names.from_settings(Settings(shiftstream_prefix=f"t{uuid.uuid4().hex[:8]}:"))
    roster = json.dumps({"assignments": ["x" * 1000] * 300})

    def completed(key: str) -> Outcome:
        return Outcome(kind=OutcomeKind.COMPLETED, job_id="j1", result_key=key, attempts=1)

    async def emit(redis: Any, writer: EventWriter, outcome: Outcome) -> Any:
        async with redis.pipeline(transaction=False) as pipe:
            writer.queue(pipe, outcome)
            return (await pipe.execute(raise_on_error=False))[0]

    async def scenario() -> None:
        redis = aioredis.Redis.from_url(redis_server.url, decode_responses=True)
        writer = EventWriter(redis, names, maxlen=1000, guard_ttl=60)
        await writer.load()
        first, again, gone = (names.result("j1", t) for t in ("a", "b", "c"))
        await redis.set(first, roster)
        written = entry_id(await emit(redis, writer, completed(first)))
        assert written is not None and await redis.exists(first) == 0
        [(_, event)] = await redis.xrange(names.events)
        assert event["result"] == roster and event["type"] == "solver.completed"
        assert await redis.get(names.terminal("j1")) == written
        # A second completed outcome of the job: no second event, and its roster is dropped.
        await redis.set(again, roster)
        assert await emit(redis, writer, completed(again)) is None
        assert await redis.exists(again) == 0 and await redis.xlen(names.events) == 1
        # A key that is gone: nothing written, and the reply says so.
        await redis.delete(names.terminal("j1"))
        reply = await emit(redis, writer, completed(gone))
        assert result_lost(reply) and entry_id(reply) is None
        assert await redis.xlen(names.events) == 1 and not await redis.exists(names.terminal("j1"))
        await redis.aclose()

    asyncio.run(scenario())


def test_entries_written_before_the_services_started_are_processed(
    make_stack: StackFactory,
) -> None:
    stack = make_stack(env={"SOLVER_IMPLEMENTATION": "greedy"}, start=False)
    jobs = [stack.submit(request_json(seed=i)) for i in range(3)]
    stack.start()
    found = stack.wait_terminal(*jobs)
    assert all(e["type"] == "solver.completed" for e in found.values())


def test_two_solver_processes_split_the_work(make_stack: StackFactory) -> None:
    stack = make_stack(env={"WORKER_CONCURRENCY": "1"}, scale={"solver": 2})
    # Under load one process can start seconds after the other and take every job first.
    stack.wait_for(lambda: stack.started("solver") == 2, timeout=60, what="two solvers")
    jobs = [stack.submit(request_json(seed=i, time_limit=1.0)) for i in range(6)]
    stack.wait_terminal(*jobs, timeout=90)
    workers = {stack.job(j)["worker"] for j in jobs}
    assert len(workers) == 2
    outcomes = stack.records(stack.names.outcomes)
    for j in jobs:
        assert len(stack.terminal(j)) == 1
        # Solved once: a batch's second long job is written back to the stream for the other
        # solver (ADR 0006), which may add an entry, never a second solve.
        assert sum(o.get("job_id") == j and o.get("kind") == "completed" for o in outcomes) == 1
    assert stack.pending("solver") == 0


def _solver_pid(stack: Stack) -> int:
    [pid] = stack.supervisor.pids("solver")
    return pid


def test_solver_killed_mid_solve_the_job_still_ends_once(make_stack: StackFactory) -> None:
    stack = make_stack()
    job = stack.submit(curtois_json(8, time_limit=3))
    stack.wait_for(lambda: stack.job(job).get("state") == "running", what="running")
    os.kill(_solver_pid(stack), signal.SIGKILL)
    stack.wait_for(lambda: not stack.alive(), what="solver death")
    stack.restart_dead()  # a fresh solver process; its reclaimer takes the entry over
    done = stack.wait_terminal(job, timeout=60)[job]
    assert done["type"] == "solver.completed"
    time.sleep(0.5)
    assert len(stack.terminal(job)) == 1
    stack.wait_for(lambda: stack.pending("solver") == 0, what="empty pending list")


def test_sigterm_during_a_solve_finishes_it(make_stack: StackFactory) -> None:
    stack = make_stack()
    job = stack.submit(curtois_json(8, time_limit=3))
    stack.wait_for(lambda: stack.job(job).get("state") == "running", what="running")
    pid = _solver_pid(stack)
    os.kill(pid, signal.SIGTERM)
    stack.wait_for(lambda: not stack.alive(), timeout=20, what="solver exit")
    done = stack.wait_terminal(job)[job]
    assert done["type"] == "solver.completed"
    assert stack.pending("solver") == 0


def test_sigterm_beyond_the_grace_period_hands_the_job_back(make_stack: StackFactory) -> None:
    # Every result counts as large: the solve process stores the roster it stopped with under
    # a key, which the hand-back must not leave behind for a day.
    stack = make_stack(env={"GRACEFUL_TIMEOUT": "3", "RESULT_KEY_MIN_BYTES": "1"})
    job = stack.submit(curtois_json(8, time_limit=6))
    stack.wait_for(lambda: stack.job(job).get("state") == "running", what="running")
    os.kill(_solver_pid(stack), signal.SIGTERM)
    stack.wait_for(lambda: not stack.alive(), timeout=15, what="solver exit")
    assert stack.terminal(job) == []  # handed back, not reported as done
    assert stack.pending("solver") == 1
    assert list(stack.redis.scan_iter(match=stack.names.result(job, "") + "*")) == []
    stack.restart_dead()
    done = stack.wait_terminal(job, timeout=60)[job]
    assert done["type"] == "solver.completed"
    stack.wait_for(lambda: stack.pending("solver") == 0, what="empty pending list")


# --------------------------------------------------------------------------- failures


def _broken_csolver(tmp_path: Path) -> Path:
    """A working directory whose `csolver` package fails to import, like a broken C build."""
    pkg = tmp_path / "broken" / "csolver"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text('raise ImportError("libgeneretic.so: cannot open")\n')
    return pkg.parent


def test_primary_failure_falls_back_to_greedy(make_stack: StackFactory, tmp_path: Path) -> None:
    stack = make_stack(cwd=_broken_csolver(tmp_path))
    job = stack.submit(request_json())
    done = stack.wait_terminal(job)[job]
    assert done["type"] == "solver.completed" and done["solver_used"] == "greedy"


def test_transient_failures_are_retried_with_backoff_then_dead_lettered(
    make_stack: StackFactory, tmp_path: Path
) -> None:
    traces = tmp_path / "traces.jsonl"
    stack = make_stack(
        env={"SOLVER_ALLOW_FALLBACK": "false", "SHIFTSTREAM_TRACE_FILE": str(traces)},
        cwd=_broken_csolver(tmp_path),
    )
    job = stack.submit(request_json())
    done = stack.wait_terminal(job, timeout=60)[job]
    assert done["type"] == "solver.failed"
    assert done["error_class"] == "exhausted" and done["attempts"] == "3"
    [letter] = [d for d in dead_letters(stack) if d["job_id"] == job]
    assert letter["dead_letter_id"] == done["dead_letter_id"]
    history = letter["history"]
    assert [h["attempt"] for h in history] == [1, 2, 3]
    assert all("SolverUnavailable" in h["error_type"] for h in history)
    gaps = [b["at"] - a["at"] for a, b in itertools.pairwise(history)]
    # Backoff draws from [ceiling/2, ceiling]: 0.3 s then 0.6 s ceilings.
    assert gaps[0] >= 0.15 and gaps[1] >= 0.3
    assert letter["payload"]
    time.sleep(1.0)
    assert len(stack.terminal(job)) == 1
    # Every hop of every attempt, delayed retries included, is one trace.
    stack.stop()  # flushes the span exporters
    spans = []
    for line in traces.read_text().splitlines():
        for rs in json.loads(line)["resourceSpans"]:
            service = next(
                a["value"]["stringValue"]
                for a in rs["resource"]["attributes"]
                if a["key"] == "service.name"
            )
            for ss in rs["scopeSpans"]:
                for span in ss["spans"]:
                    attrs = {a["key"]: a["value"] for a in span.get("attributes", [])}
                    if attrs.get("job.id", {}).get("stringValue") == job:
                        spans.append((service, span["traceId"]))
    trace_ids = {t for _, t in spans}
    assert {s for s, _ in spans} >= {
        "shiftstream-intake",
        "shiftstream-solver",
        "shiftstream-triage",
        "shiftstream-notifier",
    }
    assert len(trace_ids) == 1 and letter["trace_id"] in trace_ids


def test_a_long_solve_keeps_its_claim(make_stack: StackFactory) -> None:
    """A solve longer than the reclaim idle time is not stolen by the other solver's reclaimer."""
    stack = make_stack(
        env={"WORKER_CONCURRENCY": "1", "MESSAGE_LOG_LEVEL": "INFO"}, scale={"solver": 2}
    )
    job = stack.submit(curtois_json(8, time_limit=4))
    done = stack.wait_terminal(job)[job]
    assert done["type"] == "solver.completed"
    assert stack.supervisor.log_dir is not None
    logs = [p.read_text() for p in stack.supervisor.log_dir.glob("solver-*.log")]
    assert sum(text.count("Received") for text in logs) == 1, stack.logs()


def test_a_job_that_keeps_killing_its_worker_is_dead_lettered(make_stack: StackFactory) -> None:
    """Poison: after MAX_DELIVERIES deliveries the entry goes to triage, not round again."""
    stack = make_stack(env={"MAX_DELIVERIES": "2"})
    job = stack.submit(curtois_json(8, time_limit=20))
    for attempt in range(2):
        stack.wait_for(
            lambda: stack.job(job).get("state") == "running" and stack.alive(),
            timeout=30,
            what=f"running (delivery {attempt + 1})",
        )
        os.kill(_solver_pid(stack), signal.SIGKILL)
        stack.wait_for(lambda: not stack.alive(), what="solver death")
        stack.redis.hset(stack.names.job(job), "state", "killed")
        stack.restart_dead()
    done = stack.wait_terminal(job, timeout=30)[job]
    assert done["type"] == "solver.failed" and done["error_class"] == "exhausted"
    assert "poison" in done["reason"]
    stack.wait_for(lambda: stack.pending("solver") == 0, what="empty pending list")
