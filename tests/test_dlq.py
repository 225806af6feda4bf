"""`shiftstream dlq list | show | replay | purge` and dead-letter retention, on a real server."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import ROOT, Stack, StackFactory, request_json
from tests.test_jobs_cli import cli
from tests.test_services import _broken_csolver

pytestmark = pytest.mark.redis


def test_replay_gives_the_same_job_id_a_second_lifecycle(
    make_stack: StackFactory, tmp_path: Path
) -> None:
    # A broken C build and no fallback: the job dies after its one attempt.
    broken = make_stack(
        env={
            "SOLVER_ALLOW_FALLBACK": "false",
            "RETRY_MAX_ATTEMPTS": "1",
            "SHIFTSTREAM_TRACE_FILE": str(tmp_path / "traces.jsonl"),
            "OTEL_BSP_SCHEDULE_DELAY": "100",
        },
        cwd=_broken_csolver(tmp_path),
    )
    job = broken.submit(
        request_json(time_limit=0.5), job_id=f"dlq-{time.monotonic_ns()}", priority="high"
    )
    failed = broken.wait_terminal(job)[job]
    assert failed["type"] == "solver.failed" and failed["error_class"] == "exhausted"

    listed = cli(broken, "dlq", "list", "-o", "json")
    assert listed.returncode == 0, listed.stderr
    assert job in [json.loads(line)["job_id"] for line in listed.stdout.splitlines()]
    shown = json.loads(cli(broken, "dlq", "show", job).stdout)
    assert shown["dead_letter_id"] == failed["dead_letter_id"]
    assert shown["payload"] and shown["trace_id"] and shown["first_seen"] and shown["dead_at"]
    assert shown["priority"] == "high"
    [attempt] = shown["history"]
    assert attempt["error_class"] == "crash" and "SolverUnavailable" in attempt["error_type"]
    assert attempt["message"] and attempt["at"]

    # The fix is deployed: the same streams, a working solver.
    broken.supervisor.stop()
    fixed = make_stack(
        env={
            "SHIFTSTREAM_PREFIX": broken.prefix,
            "SHIFTSTREAM_TRACE_FILE": str(tmp_path / "traces.jsonl"),
            "OTEL_BSP_SCHEDULE_DELAY": "100",
        }
    )
    replayed = cli(broken, "dlq", "replay", failed["dead_letter_id"])
    assert replayed.returncode == 0, replayed.stderr
    fixed.wait_for(lambda: len(fixed.terminal(job)) == 2, timeout=60, what="second terminal")
    time.sleep(1.0)  # room for a wrong third one
    first, second = fixed.terminal(job)
    assert first["type"] == "solver.failed"
    assert second["type"] == "solver.completed" and second["attempts"] == "1"
    assert second["solver_used"] == "generetic"
    types = [e["type"] for e in fixed.events(job)]
    assert types.count("solver.accepted") == 2
    # Replayed with the priority it had.
    accepted = [e for e in fixed.events(job) if e["type"] == "solver.accepted"]
    assert [e["priority"] for e in accepted] == ["high", "high"]
    assert fixed.job(job)["state"] == "completed"
    # The replayed letter is gone, so a second replay (or --all) cannot run it a third time.
    assert cli(broken, "dlq", "replay", failed["dead_letter_id"]).returncode == 4  # not found
    assert job not in cli(broken, "dlq", "list", "-o", "json").stdout

    # Its trace: two lifecycles, one trace each, told apart from a lost trace context.
    def traced() -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "shared.cli.main", "trace", job,
             "--file", str(tmp_path / "traces.jsonl")],
            capture_output=True, text=True, timeout=60, cwd=ROOT,
        )  # fmt: skip

    fixed.wait_for(
        lambda: "2 lifecycles" in traced().stdout, timeout=30, what="both lifecycles' spans"
    )
    shown = traced().stdout
    assert "2 lifecycles: the first submission and 1 replay" in shown, shown
    assert f"replay of dead letter {failed['dead_letter_id']}" in " ".join(shown.split()), shown
    assert "not carried" not in shown


def test_replay_all_skips_what_never_became_a_job_and_purge_empties(stack: Stack) -> None:
    ids = [f"dlq-bad-{i}-{time.monotonic_ns()}" for i in range(3)]
    for job_id in ids:
        stack.xadd({"type": "solve", "job_id": job_id, "payload": '{"version": 2}'})
    stack.wait_terminal(*ids)
    stack.wait_for(lambda: stack.redis.xlen(stack.names.dead) >= 3, what="dead letters")
    replay = cli(stack, "dlq", "replay", "--all")
    assert replay.returncode == 0 and "replayed 0" in replay.stdout, replay.stderr
    assert cli(stack, "dlq", "replay", ids[0]).returncode == 2  # nothing to replay, said so
    assert all(len(stack.terminal(j)) == 1 for j in ids)
    purged = cli(stack, "dlq", "purge", "--yes")
    assert purged.returncode == 0 and "purged" in purged.stdout
    assert stack.redis.xlen(stack.names.dead) == 0
    assert cli(stack, "dlq", "show", ids[0]).returncode == 4  # not found


def test_dead_letters_expire_by_age(make_stack: StackFactory) -> None:
    # An age long enough that a loaded machine still sees the letter before it goes.
    stack = make_stack(env={"DEAD_MAX_AGE_SECONDS": "6", "TRIM_INTERVAL_SECONDS": "0.3"})
    job = f"dlq-old-{time.monotonic_ns()}"
    stack.xadd({"type": "solve", "job_id": job, "payload": "[]"})
    stack.wait_for(lambda: stack.redis.xlen(stack.names.dead) == 1, what="the dead letter")
    stack.wait_for(
        lambda: stack.redis.xlen(stack.names.dead) == 0, timeout=30, what="age trimming"
    )
