"""The chaos suite at CI size: 100 jobs while services are SIGKILLed and Redis restarts twice;
the same through BullMQ; and 120 jobs while the primary of a Sentinel deployment is killed twice."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.conftest import ROOT

pytestmark = pytest.mark.redis


def test_chaos_100_jobs_every_job_ends_exactly_once() -> None:
    run = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "chaos.py"), "--jobs", "100", "--seed", "1"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    print(run.stdout)
    assert run.returncode == 0, run.stdout + run.stderr[-3000:]
    assert "lost: 0" in run.stdout and "duplicate terminal events: 0" in run.stdout


def test_chaos_through_bullmq_the_bridge_killed_too_every_job_ends_once() -> None:
    """The same chaos with a BullMQ producer and the bridge among the killed services: every
    job ends once in ShiftStream and once in BullMQ, the same way in both."""
    run = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "chaos.py"), "--jobs", "60", "--seed", "2",
         "--bridge"],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    print(run.stdout)
    assert run.returncode == 0, run.stdout + run.stderr[-3000:]
    assert "lost: 0" in run.stdout and "duplicate terminal events: 0" in run.stdout
    assert "'bridge':" in run.stdout.split("chaos: SIGKILLs", 1)[1].splitlines()[0], run.stdout
    assert "unfinished: 0; ended twice: 0; ended unlike ShiftStream: 0" in run.stdout


def test_chaos_on_sentinel_two_lossy_failovers_every_accepted_job_ends_once() -> None:
    """The same at a smaller size on a Sentinel deployment whose primary is killed twice, each
    time after writes the replica never got (bench/chaos.py `--failovers`)."""
    run = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "chaos.py"), "--jobs", "120", "--seed", "3",
         "--failovers", "2"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=420,
    )  # fmt: skip
    print(run.stdout)
    assert run.returncode == 0, run.stdout + run.stderr[-3000:]
    assert "lost: 0" in run.stdout and "duplicate terminal events: 0" in run.stdout
    assert "without exactly one terminal event: 0" in run.stdout
    failovers = [line for line in run.stdout.splitlines() if line.startswith("failover ")]
    assert len(failovers) == 2, run.stdout
    # Each failover really lost writes: the guarantee was tested, not a gentle switch-over.
    assert all(" 0 of 12 partitioned writes lost" not in line for line in failovers), failovers
