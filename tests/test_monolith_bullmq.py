"""The Node.js BullMQ monolith (examples/monolith-bullmq/, `bullmq` 6.x from npm) against the
services and the bridge: it adds jobs exactly as the issue's snippet does, follows them with
QueueEvents, and takes the roster from `waitUntilFinished`; nothing in it knows ShiftStream.

`./task test` installs the example's packages (Taskfile.yml `deps:node`).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import uuid
from pathlib import Path
from typing import Any

import pytest

from shared.roster.compiled import compile_request
from shared.roster.evaluator import evaluate
from shared.roster.model import SolveRequest, SolveResult
from tests.conftest import Stack, StackFactory, curtois_json, request_json
from tests.test_bridge import bridge_env

pytestmark = pytest.mark.redis

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "monolith-bullmq"


def run_monolith(
    stack: Stack, plans: dict[str, Path], out: Path, timeout: float = 90
) -> tuple[int, list[dict[str, Any]]]:
    node = shutil.which("node")
    assert node, "Node.js 18+ is needed for the BullMQ monolith example"
    assert (EXAMPLE / "node_modules" / "bullmq").is_dir(), (
        f"run `npm ci` in {EXAMPLE} first (`./task test` does)"
    )
    args = [node, str(EXAMPLE / "index.js"), "--redis-url", stack.settings.redis_url,
            "--prefix", stack.supervisor.env["BULLMQ_PREFIX"], "--out-dir", str(out),
            "--timeout", "80"]  # fmt: skip
    for plan, file in plans.items():
        args += ["--plan", f"{plan}={file}"]
    proc = subprocess.run(args, capture_output=True, text=True, timeout=timeout)
    lines = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    assert proc.stderr == "" or proc.returncode != 3, proc.stderr
    return proc.returncode, lines


def test_an_unchanged_bullmq_monolith_gets_rosters_through_shiftstream(
    make_stack: StackFactory, tmp_path: Path
) -> None:
    stack = make_stack(env=bridge_env())
    # The intake's history is read below: its start-up trim must come before the first entry
    # (a job bridged and consumed before it was trimmed away at start-up, under load).
    stack.wait_for(lambda: stack.started("intake") >= 1, timeout=60, what="intake started")
    plan = uuid.uuid4().hex[:6]
    good, bad = f"{plan}-a", f"{plan}-b"
    # Curtois Instance 8 solves for its whole limit: progress events flow meanwhile.
    good_file = tmp_path / "good.json"
    good_file.write_text(curtois_json(8, time_limit=3.0))
    invalid = json.loads(request_json(employees=3, shifts=5))
    invalid["employees"][0]["max_minutes"] = -5
    bad_file = tmp_path / "bad.json"
    bad_file.write_text(json.dumps(invalid))

    code, lines = run_monolith(stack, {good: good_file, bad: bad_file}, tmp_path / "out")
    by = {(e["event"], e["jobId"]) for e in lines}
    good_id, bad_id = f"roster-{good}", f"roster-{bad}"
    assert code == 1, (lines, stack.logs())  # one plan failed, as it should
    # QueueEvents: progress and completion of the good job, failure of the bad one.
    progress = [e["progress"] for e in lines if e["event"] == "progress" and e["jobId"] == good_id]
    assert progress and all(0 <= p <= 100 for p in progress), lines
    assert ("completed", good_id) in by and ("failed", bad_id) in by
    (failed,) = [e for e in lines if e["event"] == "failed"]
    reason = failed["failedReason"]
    assert reason.startswith("invalid: ") and "max_minutes" in reason
    # Failed at once: attempts: 3 in the snippet, yet one attempt made.
    (error,) = [e for e in lines if e["event"] == "error"]
    assert error["jobId"] == bad_id and error["state"] == "failed" and error["attemptsMade"] == 1

    # waitUntilFinished gave the roster, and it is a real one: the evaluator agrees.
    (roster,) = [e for e in lines if e["event"] == "roster"]
    assert roster["jobId"] == good_id
    req = SolveRequest.model_validate_json(good_file.read_text())
    res = SolveResult.model_validate_json(Path(roster["file"]).read_text())
    problem = compile_request(req)
    verdict = evaluate(problem, problem.encode([a.shifts for a in res.assignments]))
    assert verdict.score == res.score and verdict.score.hard_violations == 0
    # ShiftStream saw the BullMQ job id, priority 1 as high, and solved it once.
    entries = [f for _, f in stack.redis.xrange(stack.names.intake) if f["job_id"] == good_id]
    assert [e["priority"] for e in entries] == ["high"]
    assert [e["type"] for e in stack.terminal(good_id)] == ["solver.completed"]
