"""The Node.js monolith example against the running services, as a team would use it.

Runs `node examples/monolith-node/index.js` (after `npm ci` in that folder) against the five
service processes of the conftest stack, then scores the roster it wrote with the evaluator:
the file must be a real, complete roster for the request, not just any JSON.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import uuid
from pathlib import Path

from shared.roster.compiled import compile_request
from shared.roster.evaluator import evaluate
from shared.roster.model import SolveRequest, SolveResult
from tests.conftest import Stack, request_json

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "monolith-node"


def run_node(
    stack: Stack, request: Path, out: Path, *extra: str
) -> subprocess.CompletedProcess[str]:
    node = shutil.which("node")
    assert node, "Node.js 18+ is needed for the monolith example"
    assert (EXAMPLE / "node_modules" / "ioredis").is_dir(), (
        f"run `npm ci` in {EXAMPLE} first (`./task test` does)"
    )
    return subprocess.run(
        [node, str(EXAMPLE / "index.js"), "--redis-url", stack.settings.redis_url,
         "--prefix", stack.prefix, "--request", str(request), "--out", str(out), *extra],
        env={**os.environ, **stack.deployment_env},  # Sentinel, Cluster, TLS settings
        capture_output=True, text=True, timeout=90,
    )  # fmt: skip


def test_node_monolith_gets_a_roster(stack: Stack, tmp_path: Path) -> None:
    request = tmp_path / "request.json"
    request.write_text(request_json(employees=6, shifts=20, time_limit=1.0))
    out = tmp_path / "roster.json"
    job_id = f"node-{uuid.uuid4().hex[:8]}"
    proc = run_node(stack, request, out, "--job-id", job_id, "--timeout", "60")
    assert proc.returncode == 0, f"{proc.stdout}\n{proc.stderr}\n{stack.logs()}"
    assert "accepted" in proc.stdout and "completed by" in proc.stdout

    req = SolveRequest.model_validate_json(request.read_text())
    result = SolveResult.model_validate_json(out.read_text())
    problem = compile_request(req)
    roster = problem.encode([a.shifts for a in result.assignments])
    ev = evaluate(problem, roster)
    # The score the service reported is the score of the roster it returned.
    assert ev.score == result.score
    assert [a.employee for a in result.assignments] == [e.id for e in req.employees]

    # Published with a W3C trace context, and it reached the job's span chain via intake.
    (entry,) = [f for _, f in stack.redis.xrange(stack.names.intake) if f["job_id"] == job_id]
    assert entry["traceparent"].startswith("00-") and len(entry["traceparent"]) == 55
    # The private consumer group is removed at the end: nothing piles up on the events stream.
    groups = [g["name"] for g in stack.redis.xinfo_groups(stack.names.events)]
    assert not [g for g in groups if g.startswith("monolith-")], groups


def test_node_monolith_exits_1_on_failure(stack: Stack, tmp_path: Path) -> None:
    request = tmp_path / "bad.json"
    bad = json.loads(request_json(employees=3, shifts=5))
    bad["employees"][0]["max_minutes"] = -5  # invalid: reported, never solved
    request.write_text(json.dumps(bad))
    proc = run_node(stack, request, tmp_path / "none.json", "--timeout", "30")
    assert proc.returncode == 1, f"{proc.stdout}\n{proc.stderr}"
    assert "failed (invalid)" in proc.stderr and "max_minutes" in proc.stderr
    assert not (tmp_path / "none.json").exists()


def _node(*args: str) -> subprocess.CompletedProcess[str]:
    node = shutil.which("node")
    assert node, "Node.js 18+ is needed for the monolith example"
    return subprocess.run(
        [node, str(EXAMPLE / "index.js"), *args], capture_output=True, text=True, timeout=60
    )


def test_node_monolith_names_a_broken_request_file(tmp_path: Path) -> None:
    broken = tmp_path / "broken.json"
    broken.write_text('{"version": 1, "horizon":')
    proc = _node("--redis-url", "redis://127.0.0.1:1/0", "--request", str(broken),
                 "--out", str(tmp_path / "out.json"))  # fmt: skip
    assert proc.returncode == 3, proc.stderr
    assert proc.stderr.strip().splitlines() == [
        f"error: {broken}: not valid JSON: Unexpected end of JSON input"
    ]
    missing = _node("--request", str(tmp_path / "none.json"), "--out", "x.json")
    assert missing.returncode == 3 and f"{tmp_path / 'none.json'}: cannot read" in missing.stderr


def test_node_monolith_says_in_one_line_that_redis_is_unreachable(tmp_path: Path) -> None:
    from shared.cli.devrunner import free_port

    request = tmp_path / "request.json"
    request.write_text(request_json(employees=3, shifts=5))
    url = f"redis://monolith:secret@127.0.0.1:{free_port()}/0"
    proc = _node("--redis-url", url, "--request", str(request), "--out", str(tmp_path / "o.json"))
    assert proc.returncode == 4, proc.stderr
    [line] = proc.stderr.strip().splitlines()
    assert line.startswith("error: cannot reach Redis at redis://monolith:***@127.0.0.1:")
    assert "ECONNREFUSED" in line and "secret" not in proc.stderr
    assert "Unhandled error event" not in proc.stderr


def test_node_monolith_exit_codes_are_the_documented_ones() -> None:
    """The table in index.js's header, the code's EXIT map and docs/publishing.md agree."""
    source = (EXAMPLE / "index.js").read_text()
    header = {
        int(code): text
        for code, text in re.findall(r"^//\s+(\d+)\s+(\S.*)$", source, flags=re.MULTILINE)
    }
    exits = {int(v) for v in re.findall(r"\b\w+: (\d+)", re.search(
        r"const EXIT = \{([^}]*)\}", source).group(1))}  # type: ignore[union-attr]  # fmt: skip
    assert set(header) == exits | {70}, (header, exits)
    publishing = (ROOT / "docs" / "publishing.md").read_text()
    prose = " ".join(publishing.split())
    for code in sorted(exits - {0}):
        assert f" {code} " in prose[prose.index("exits 0 on") :][:600], code
