"""The chaos suite at CI size: 100 jobs while services are SIGKILLed and Redis restarts twice."""

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
