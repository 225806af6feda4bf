"""The job CLI and the dev runner as a user runs them: real processes, real server."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from shared.cli.devrunner import reachable
from shared.cli.roster import roster_of
from shared.roster.curtois import roster_to_tsv
from shared.roster.model import SolveRequest, SolveResult
from shared.roster.parse import parse_request
from shared.solving.dispatch import solve_request
from tests.conftest import ROOT, Stack, request_json

pytestmark = pytest.mark.redis


def cli(stack: Stack, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, **stack.deployment_env, "SHIFTSTREAM_PREFIX": stack.prefix,
           "PYTHONPATH": str(ROOT)}  # fmt: skip
    return subprocess.run(
        [sys.executable, "-m", "shared.cli.main", *args, "--redis-url", stack.settings.redis_url],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def test_submit_watch_status(stack: Stack, tmp_path: Path) -> None:
    request = tmp_path / "request.json"
    request.write_text(request_json(implementation="greedy"))
    done = cli(
        stack, "submit", str(request), "--job-id", "cli-1", "--watch", "-o", "tsv",
        "--priority", "high",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "completed" in done.stderr
    assert len(done.stdout.splitlines()) == 8  # one TSV row per employee
    status = cli(stack, "status", "cli-1")
    assert json.loads(status.stdout)["state"] == "completed"
    assert json.loads(status.stdout)["priority"] == "high"
    again = cli(stack, "watch", "cli-1")  # a late watcher still sees the retained events
    assert again.returncode == 0
    assert json.loads(again.stdout)["feasible"] in (True, False)
    # Any job's roster in the benchmark layout, without its request at hand: the result holds
    # the rows; the same text as from the request.
    tsv = cli(stack, "watch", "cli-1", "-o", "tsv")
    assert tsv.returncode == 0, tsv.stderr
    assert tsv.stdout == done.stdout
    req = SolveRequest.model_validate_json(request.read_text())
    result = SolveResult.model_validate_json(again.stdout)
    assert tsv.stdout == roster_to_tsv(req, roster_of(req, result))


def test_watch_of_a_failed_job_exits_non_zero(stack: Stack) -> None:
    stack.xadd({"type": "solve", "job_id": "cli-bad", "payload": "[]"})
    failed = cli(stack, "watch", "cli-bad")
    assert failed.returncode == 2  # failed as invalid: the input is at fault
    assert "invalid" in failed.stderr


def test_dev_runner_stops_everything_on_sigterm(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "REDIS_URL": "redis://127.0.0.1:1/0"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "shared.cli.main", "dev", "--log-dir", str(tmp_path)],
        env=env,
        cwd=tmp_path,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stderr is not None
    line = proc.stderr.readline()
    while "services on" not in line:
        line = proc.stderr.readline()
        assert line, "dev exited early"
    url = re.search(r"redis://[0-9.:]+/0", line)
    assert url is not None and reachable(url.group(0))  # the embedded server
    # The console's address is printed, and the console answers there.
    console = re.search(r"http://127\.0\.0\.1:\d+/", proc.stderr.readline())
    assert console is not None
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(console.group(0) + "readyz", timeout=2) as r:
                if r.status == 200:
                    break
        except OSError:
            time.sleep(0.2)
    else:
        pytest.fail(f"no console at {console.group(0)}")
    while len(list(tmp_path.glob("*.log"))) < 6 and time.monotonic() < deadline:
        time.sleep(0.1)
    time.sleep(2)
    children = subprocess.run(
        ["pgrep", "-P", str(proc.pid)], capture_output=True, text=True
    ).stdout.split()
    assert len(children) == 7  # five services, the console and the server
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(40) == 0
    for pid in children:
        with pytest.raises(ProcessLookupError):
            os.kill(int(pid), 0)
    assert not reachable(url.group(0))


def test_dead_letters_list_show_replay(stack: Stack) -> None:
    stack.xadd({"type": "solve", "job_id": "cli-dead", "payload": '{"version": 2}'})
    stack.wait_terminal("cli-dead")
    listed = cli(stack, "dead", "list")
    assert listed.returncode == 0 and "cli-dead" in listed.stdout
    shown = json.loads(cli(stack, "dead", "show", "cli-dead").stdout)
    assert shown["error_class"] == "invalid" and shown["history"]
    # An invalid entry never became a job: nothing to replay, said plainly.
    assert cli(stack, "dead", "replay", "cli-dead").returncode == 2


def test_repair_submitted_through_the_services_reports_its_changes(
        stack: Stack, tmp_path: Path) -> None:
    request = tmp_path / "request.json"
    request.write_text(request_json(implementation="greedy"))
    published = tmp_path / "published.json"
    published.write_text(solve_request(parse_request(request.read_text())).model_dump_json())
    rows = json.loads(published.read_text())["assignments"]
    e, first = next((i, r) for i, r in enumerate(rows) if any(r["shifts"]))
    worked = [d for d, s in enumerate(first["shifts"]) if s][-1]
    absent = f"{first['employee']}:{worked}-{worked}"
    done = cli(stack, "repair", str(request), str(published), "--absent", absent,
               "--freeze-before", str(worked), "--submit", "--job-id", "cli-repair", "--watch",
               "-o", "json")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["assignments"][e]["shifts"][worked] is None  # the absence
    assert result["changes"] >= 1
    assert f"{result['changes']} cells changed" in done.stderr
    record = json.loads(cli(stack, "status", "cli-repair").stdout)
    assert record["changes"] == str(result["changes"])
    again = cli(stack, "watch", "cli-repair")
    assert f"{result['changes']} cells changed" in again.stderr


def test_a_pin_contradicting_the_request_fails_as_invalid_naming_it(stack: Stack) -> None:
    doc = json.loads(request_json(implementation="greedy"))
    emp = doc["employees"][0]
    emp["days_off"] = [2]
    doc["pinned"] = [{"employee": emp["id"], "day": 2, "shift": doc["shift_types"][0]["id"]}]
    stack.xadd({"type": "solve", "job_id": "cli-pin", "payload": json.dumps(doc)})
    failed = stack.wait_terminal("cli-pin")["cli-pin"]
    assert failed["type"] == "solver.failed" and failed["error_class"] == "invalid"
    assert f"pinned[0]: pins employee {emp['id']!r}" in failed["reason"]
    assert "one of the employee's days_off" in failed["reason"]
