"""A new user's first hour with `shiftstream` (issue #23), each case as the user meets it: the
real entry point (a `python -m shared.cli.main` process, or typer's runner on the real app)
against real Redis servers the tests start.

One rule finds Redis for every command; `dev` starts an embedded server only when nothing
answers and says how a second terminal reaches it; expected failures are one line with an exit
code from shared/cli/exits.py; nothing waits in silence.
"""

from __future__ import annotations

import asyncio
import io
import json
import os
import re
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator, Iterator, Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import cast

import pytest
import typer
from rich.console import Console
from typer.testing import CliRunner

from shared.cli import jobs, redis_target
from shared.cli.devrunner import EmbeddedServer, free_port, reachable
from shared.cli.exits import ExitCode
from shared.cli.main import app
from shared.cli.roster import Output
from shared.jobs.client import Client
from shared.jobs.events import SolveEntry
from shared.jobs.messages import Outcome, OutcomeKind
from shared.roster.model import Implementation, SolveResult
from shared.roster.parse import parse_request
from shared.roster.solving import Progress
from shared.solving.dispatch import solve_request
from shared.solving.progress import ProgressReporter
from tests.conftest import ROOT, Stack, StackFactory, curtois_json, request_json
from tests.terminal import screen_lines
from tests.test_acl import AclServer, acl_server  # noqa: F401  (a fixture)

pytestmark = pytest.mark.redis

DEAD_URL = f"redis://127.0.0.1:{free_port()}/0"


def clean_env(**extra: str) -> dict[str, str]:
    """The user's environment, without a REDIS_URL or prefix the test runner may have."""
    env = {
        k: v for k, v in os.environ.items() if k not in ("REDIS_URL", "SHIFTSTREAM_PREFIX")
    }
    return {**env, "PYTHONPATH": str(ROOT), **extra}


def shiftstream(
    *args: str, env: Mapping[str, str] | None = None, cwd: Path = ROOT, timeout: float = 90
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "shared.cli.main", *args],
        env=dict(env or clean_env()),
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def on(stack: Stack, **extra: str) -> dict[str, str]:
    """A terminal set up for `stack`: REDIS_URL exported, its prefix."""
    return clean_env(REDIS_URL=stack.settings.redis_url, SHIFTSTREAM_PREFIX=stack.prefix, **extra)


def one_line(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1, stderr
    assert "Traceback" not in stderr
    return lines[0]


@pytest.fixture
def request_file(tmp_path: Path) -> Path:
    path = tmp_path / "request.json"
    path.write_text(request_json(employees=6, shifts=20, implementation="greedy"))
    return path


# ------------------------------------------------------------------ one rule to find Redis


def test_every_command_finds_redis_by_one_rule(stack: Stack, request_file: Path) -> None:
    # REDIS_URL alone is enough: submit and status meet on it.
    submitted = shiftstream("submit", str(request_file), "--job-id", "rule-1", env=on(stack))
    assert submitted.returncode == 0, submitted.stderr
    stack.wait_terminal("rule-1")
    status = shiftstream("status", "rule-1", env=on(stack))
    assert json.loads(status.stdout)["state"] == "completed", status.stderr
    # --redis-url wins over REDIS_URL.
    flagged = shiftstream(
        "status", "rule-1", "--redis-url", stack.settings.redis_url,
        env={**on(stack), "REDIS_URL": DEAD_URL},
    )  # fmt: skip
    assert flagged.returncode == 0, flagged.stderr
    # And it is said which of the three was used when it does not answer.
    dead = shiftstream("status", "rule-1", env={**on(stack), "REDIS_URL": DEAD_URL})
    assert dead.returncode == ExitCode.UNREACHABLE
    assert f"cannot reach Redis at {DEAD_URL} (from REDIS_URL)" in one_line(dead.stderr)
    bad = shiftstream("status", "rule-1", env={**on(stack), "REDIS_URL": "localhost:6379"})
    assert bad.returncode == ExitCode.INVALID
    assert "REDIS_URL 'localhost:6379' is not a Redis URL" in one_line(bad.stderr)


def test_with_nothing_set_the_default_address_is_used_when_it_answers(
    redis_server: EmbeddedServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """No flag, no REDIS_URL: localhost:6379 is the default. The tests cannot own that port,
    so the default address is pointed at a server of theirs; the rule is what is tested."""
    runner = CliRunner()
    monkeypatch.delenv("REDIS_URL", raising=False)
    monkeypatch.setenv("SHIFTSTREAM_PREFIX", f"t{uuid.uuid4().hex[:8]}:")
    monkeypatch.setattr(redis_target, "DEFAULT_REDIS_URL", DEAD_URL)
    down = runner.invoke(app, ["status", "j1"])
    assert down.exit_code == ExitCode.UNREACHABLE
    assert "(the default: neither --redis-url nor REDIS_URL is set)" in down.output

    monkeypatch.setattr(redis_target, "DEFAULT_REDIS_URL", redis_server.url)
    unknown = runner.invoke(app, ["status", "j1"])
    assert unknown.exit_code == ExitCode.NOT_FOUND, unknown.output
    # `demo` starts its services on the default Redis when it answers: no embedded server.
    demo = runner.invoke(
        app,
        ["demo", "--employees", "6", "--shifts", "15", "--time-limit", "0.5", "-o", "json",
         "--log-dir", str(tmp_path / "logs")],
    )  # fmt: skip
    assert demo.exit_code == 0, demo.output
    assert f"starting the five services on {redis_server.url}" in demo.output
    assert "embedded" not in demo.output and "export REDIS_URL" not in demo.output
    assert json.loads(demo.stdout[demo.stdout.index("{") :])["assignments"]


def _start_dev(env: Mapping[str, str], cwd: Path) -> tuple[subprocess.Popen[str], list[str]]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "shared.cli.main", "dev"],
        env=dict(env),
        cwd=cwd,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stderr is not None
    said: list[str] = []
    while not said or "services on" not in said[-1]:
        line = proc.stderr.readline()
        assert line, f"dev exited early: {said}"
        said.append(line.rstrip("\n"))
    return proc, said


def _stop_dev(proc: subprocess.Popen[str]) -> None:
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(40) == 0


def _children(pid: int) -> list[int]:
    out = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout
    return [int(p) for p in out.split()]


def test_dev_without_redis_starts_one_and_tells_a_second_terminal_how_to_reach_it(
    tmp_path: Path, request_file: Path
) -> None:
    proc, said = _start_dev(clean_env(REDIS_URL=DEAD_URL), tmp_path)
    try:
        text = "\n".join(said)
        assert f"no Redis answers at {DEAD_URL} (from REDIS_URL)" in text
        exports = [line.strip() for line in said if line.strip().startswith("export ")]
        assert len(exports) == 1, text
        url = exports[0].removeprefix("export REDIS_URL=")
        assert reachable(url)
        # The logs are kept by default, where dev says.
        assert "logs in .shiftstream/logs/" in text
        logs = tmp_path / ".shiftstream" / "logs"
        deadline = time.monotonic() + 30
        while len(list(logs.glob("*.log"))) < 6 and time.monotonic() < deadline:
            time.sleep(0.1)
        # The five services and the operations console, which dev starts beside them.
        assert sorted(p.name for p in logs.glob("*.log")) == [
            f"{s}-0.log" for s in ("console", "fallback", "intake", "notifier", "solver", "triage")
        ]
        # The second terminal pastes the line and meets the services.
        second = shiftstream(
            "submit", str(request_file), "--watch", "-o", "json",
            env=clean_env(REDIS_URL=url), cwd=tmp_path,
        )  # fmt: skip
        assert second.returncode == 0, second.stderr
        assert json.loads(second.stdout)["assignments"]
        # A service's task dump (docs/services.md) lands in its log.
        services = [p for p in _children(proc.pid) if p]
        intake = next(
            p for p in services if "services.intake" in Path(f"/proc/{p}/cmdline").read_text()
        )
        os.kill(intake, signal.SIGUSR1)
        deadline = time.monotonic() + 15
        while "--- " not in (logs / "intake-0.log").read_text(errors="replace"):
            assert time.monotonic() < deadline, "no task dump in the intake's log"
            time.sleep(0.1)
    finally:
        _stop_dev(proc)
    assert not reachable(url)


def test_dev_uses_the_redis_that_answers(redis_server: EmbeddedServer, tmp_path: Path) -> None:
    env = clean_env(REDIS_URL=redis_server.url, SHIFTSTREAM_PREFIX=f"t{uuid.uuid4().hex[:8]}:")
    proc, said = _start_dev(env, tmp_path)
    try:
        assert said[-1].startswith(f"services on {redis_server.url}"), said
        assert not any("export" in line or "embedded" in line for line in said), said
        time.sleep(1)
        assert len(_children(proc.pid)) == 6  # five services and the console, no server
    finally:
        _stop_dev(proc)


# ------------------------------------------------------------------ one line, one exit code

OFFLINE = [
    ("status", "j1"),
    ("submit", "{request}"),
    ("submit", "{request}", "--watch"),
    ("watch", "j1"),
    ("cancel", "j1"),
    ("dlq", "list"),
    ("dlq", "show", "j1"),
    ("dlq", "replay", "--all"),
    ("dlq", "purge", "--yes"),
    ("stats",),
    ("stats", "--json"),
]


@pytest.mark.parametrize("command", OFFLINE, ids=[" ".join(c) for c in OFFLINE])
def test_an_unreachable_redis_is_one_line_and_exit_5(
    command: tuple[str, ...], request_file: Path
) -> None:
    args = [a.replace("{request}", str(request_file)) for a in command]
    done = shiftstream(*args, "--redis-url", DEAD_URL)
    assert done.returncode == ExitCode.UNREACHABLE, done.stderr
    line = one_line(done.stderr)
    assert line.startswith(f"error: cannot reach Redis at {DEAD_URL} (from --redis-url): ")
    assert "refused" in line.lower()
    assert done.stdout == ""


def test_refusals_name_the_user_and_what_it_may_not_do(
    acl_server: AclServer,  # noqa: F811
) -> None:
    env = clean_env(SHIFTSTREAM_PREFIX=acl_server.prefix)
    mono = acl_server.url("monolith")
    status = shiftstream("status", "j1", "--redis-url", mono, env=env)
    assert status.returncode == ExitCode.REFUSED
    line = one_line(status.stderr)
    # It may run HGETALL on BullMQ's keys (a monolith that keeps BullMQ), not on job records.
    assert "Redis user 'monolith' may not touch a key this command needs" in line
    assert acl_server.passwords["monolith"] not in status.stderr
    listed = shiftstream("dlq", "list", "--redis-url", mono, env=env)
    assert listed.returncode == ExitCode.REFUSED
    assert "Redis user 'monolith' may not" in one_line(listed.stderr)
    wrong = mono.replace(acl_server.passwords["monolith"], "not-the-password")
    login = shiftstream("status", "j1", "--redis-url", wrong, env=env)
    assert login.returncode == ExitCode.REFUSED
    assert "refused to log in user 'monolith'" in one_line(login.stderr)
    assert "not-the-password" not in login.stderr  # the URL is shown without its password
    # The monolith may cancel (it may publish), though it cannot check the job: it is told.
    cancel = shiftstream("cancel", "j1", "--redis-url", mono, env=env)
    assert cancel.returncode == 0, cancel.stderr
    assert "may not read job records" in cancel.stderr
    # An operator user reads what the monolith may not.
    admin = shiftstream("status", "j1", "--redis-url", acl_server.url("admin"), env=env)
    assert admin.returncode == ExitCode.NOT_FOUND, admin.stderr


def test_unknown_output_formats_are_refused_by_every_command(request_file: Path) -> None:
    runner = CliRunner()
    for args in (
        ["solve", str(request_file)],
        ["submit", str(request_file), "--redis-url", DEAD_URL],
        ["watch", "j1", "--redis-url", DEAD_URL],
        ["demo", "--redis-url", DEAD_URL],
        ["dlq", "list", "--redis-url", DEAD_URL],
    ):
        done = runner.invoke(app, [*args, "-o", "yaml"])
        assert done.exit_code == ExitCode.INVALID, (args, done.output)
        assert "'yaml' is not one of" in done.output, args


# ------------------------------------------------------------------ cancel, watch, submit


def test_a_cancel_of_an_unknown_job_never_stops_a_later_job_of_that_id(
    stack: Stack, request_file: Path
) -> None:
    before = stack.redis.xlen(stack.names.intake)
    refused = shiftstream("cancel", "ghost-1", env=on(stack))
    assert refused.returncode == ExitCode.NOT_FOUND
    assert "no job ghost-1" in one_line(refused.stderr) and "no cancel was sent" in refused.stderr
    assert stack.redis.xlen(stack.names.intake) == before  # nothing was sent

    # A foreign producer sends one anyway; the intake sets no marker for a job it does not know.
    stack.xadd({"type": "cancel", "job_id": "ghost-2"})
    job = stack.submit(request_json(implementation="greedy"), job_id="ghost-2")
    done = stack.wait_terminal(job)[job]
    assert done["type"] == "solver.completed" and "cancelled" not in done, done
    assert not stack.redis.exists(stack.names.cancel("ghost-2"))


def test_a_cancel_of_a_running_job_stops_it_and_its_marker_dies_with_the_job_id(
    stack: Stack,
) -> None:
    job = stack.submit(curtois_json(8, time_limit=20))
    stack.wait_for(lambda: stack.job(job).get("state") == "running", what="running")
    sent = shiftstream("cancel", job, env=on(stack))
    assert sent.returncode == 0, sent.stderr
    assert f"cancel sent for job {job} (state: running)" in sent.stderr
    done = stack.wait_terminal(job)[job]
    assert done["type"] == "solver.completed" and done.get("cancelled") == "true"
    marker = stack.redis.pexpiretime(stack.names.cancel(job))
    assert 0 < marker <= stack.redis.pexpiretime(stack.names.idempotency(job))
    again = shiftstream("cancel", job, env=on(stack))
    assert again.returncode == 0 and "already completed: nothing to cancel" in again.stderr


def test_a_known_job_id_is_followed_not_resubmitted_and_an_unknown_one_is_said(
    stack: Stack, request_file: Path
) -> None:
    first = shiftstream("submit", str(request_file), "--job-id", "known-1", "--watch",
                        "-o", "json", env=on(stack))  # fmt: skip
    assert first.returncode == 0, first.stderr
    again = shiftstream("submit", str(request_file), "--job-id", "known-1", "--watch",
                        "-o", "json", env=on(stack), timeout=30)  # fmt: skip
    assert again.returncode == 0, again.stderr
    assert "job known-1 is already known (state: completed)" in again.stderr
    assert json.loads(again.stdout) == json.loads(first.stdout)
    quiet = shiftstream("submit", str(request_file), "--job-id", "known-1", env=on(stack))
    assert quiet.returncode == 0 and quiet.stdout.strip() == "known-1"
    entries = [f for _, f in stack.redis.xrange(stack.names.intake) if f["job_id"] == "known-1"]
    assert len(entries) == 1  # nothing was submitted again

    unknown = shiftstream("watch", "nobody-1", env=on(stack), timeout=30)
    assert unknown.returncode == ExitCode.NOT_FOUND
    assert "no job nobody-1" in one_line(unknown.stderr) and "--wait" in unknown.stderr

    waiting = subprocess.Popen(
        [sys.executable, "-m", "shared.cli.main", "watch", "later-1", "--wait"],
        env=on(stack), cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert waiting.stderr is not None
        assert "waiting for it (--wait)" in waiting.stderr.readline()
        stack.submit(request_json(implementation="greedy"), job_id="later-1")
        out, err = waiting.communicate(timeout=60)
    finally:
        waiting.kill()
    assert waiting.returncode == 0, err
    assert json.loads(out)["assignments"]


def test_watch_of_a_job_failed_as_invalid_exits_2(stack: Stack) -> None:
    stack.xadd({"type": "solve", "job_id": "bad-1", "payload": "[]"})
    failed = shiftstream("watch", "bad-1", env=on(stack))
    assert failed.returncode == ExitCode.INVALID
    assert "failed (invalid)" in failed.stderr


def test_not_before_in_the_publishing_guides_z_form(stack: Stack, request_file: Path) -> None:
    # Within the deployment's not_before horizon (90 days by default).
    when = (datetime.now(UTC) + timedelta(days=30)).replace(microsecond=0)
    done = shiftstream("submit", str(request_file), "--job-id", "later-z",
                       "--not-before", when.strftime("%Y-%m-%dT%H:%M:%SZ"),
                       env=on(stack))  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert f"not before {when:%Y-%m-%d %H:%M:%S} UTC" in done.stderr
    stack.wait_for(lambda: stack.job("later-z").get("state") == "scheduled", what="scheduled")
    (entry,) = [f for _, f in stack.redis.xrange(stack.names.intake) if f["job_id"] == "later-z"]
    SolveEntry.model_validate(entry)  # the CLI writes what the contract publishes
    bad = shiftstream("submit", str(request_file), "--not-before", "tomorrow", env=on(stack))
    assert bad.returncode == ExitCode.INVALID
    assert "--not-before 'tomorrow': not an ISO 8601 time" in one_line(bad.stderr)


def test_stats_watch_into_a_pipe_writes_every_frame_at_once(stack: Stack) -> None:
    for args, marker in (([], "consumer groups"), (["--json"], '"streams"')):
        proc = subprocess.Popen(
            [sys.executable, "-m", "shared.cli.main", "stats", "--watch", *args,
             "--interval", "0.2"],
            env=on(stack), cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        try:
            assert proc.stdout is not None
            frames = 0
            deadline = time.monotonic() + 60
            while frames < 2:
                line = proc.stdout.readline()
                assert line and time.monotonic() < deadline, proc.stderr
                frames += marker in line
        finally:
            proc.send_signal(signal.SIGINT)
            proc.wait(20)


# ------------------------------------------------------------------ progress in each phase


def test_progress_says_what_each_phase_of_the_solver_is_doing(make_stack: StackFactory) -> None:
    """Instance 5 is not proven optimal by column generation: its solve runs both phases."""
    stack = make_stack(env={"SOLVER_MAX_TIME_LIMIT": "60"})
    job = stack.submit(curtois_json(5, time_limit=12.0))
    stack.wait_terminal(job, timeout=90)
    progress = [e for e in stack.events(job) if e["type"] == "solver.progress"]
    phases = [e["phase"] for e in progress]
    # "" while the solver's process starts, before it names its phase
    assert "columns" in phases and "genetic" in phases, phases
    assert phases == sorted(phases, key=["", "columns", "genetic"].index)  # one way, in order
    for e in progress:
        if e["phase"] == "":
            assert e["message"] == "Starting: no roster yet", e
        elif e["phase"] == "columns":
            assert e["generation"] == "" and e["population"] == "0", e
            assert e["message"].startswith("Column generation: "), e
        else:
            assert e["message"].startswith("Genetic search: "), e
            if e["generation"]:
                done, expected = map(int, e["generation"].split("/"))
                assert 0 < done <= expected, e
                assert f"generation {done} of ~{expected}, " in e["message"], e
    assert any(e["best_score"] for e in progress)
    # The column phase's LP bound, once its root LP converged (in well under a second on an
    # idle machine; the limit leaves it 3 s),
    # with the gap of the best roster against it; the GA keeps saying it.
    bounds = {e["lower_bound"] for e in progress if e["lower_bound"]}
    assert len(bounds) == 1, progress
    (bound,) = bounds
    assert int(bound) <= 1143  # Instance 5's proven optimum
    assert any(f"LP bound {bound} (gap " in e["message"] for e in progress if
               e["phase"] == "columns"), progress
    # The completed event and the result carry the proof.
    (done,) = [e for e in stack.events(job) if e["type"] == "solver.completed"]
    stats = json.loads(done["result"])["stats"]
    penalty = json.loads(done["result"])["score"]["penalty"]
    assert done["lower_bound"] == bound and stats["lower_bound"] == int(bound)
    assert float(done["gap"]) == pytest.approx(stats["gap"], abs=1e-4)
    assert stats["gap"] == pytest.approx((penalty - int(bound)) / int(bound))
    assert done["proven_optimal"] == ("true" if penalty == int(bound) else "false")
    # `status` and `watch` show them beside the penalty
    status = shiftstream("status", job, env=on(stack))
    record = json.loads(status.stdout)
    assert (record["penalty"], record["lower_bound"]) == (str(penalty), bound), record
    assert record["proven_optimal"] == done["proven_optimal"] and record["gap"] == done["gap"]
    watched = shiftstream("watch", job, env=on(stack))
    assert watched.returncode == 0, watched.stderr
    proof = (f"proven optimal (bound {bound})" if penalty == int(bound)
             else f"bound {bound}, gap {stats['gap']:.2%}")
    assert f"feasible: 0 hard, penalty {penalty}; {proof}" in watched.stderr, watched.stderr


class PacedEvents:
    """A job's events as `watch` reads them: the services publish progress about once a
    second, so the bar draws each event before the next one comes."""

    def __init__(self, events: list[dict[str, str]], pause: float = 0.3) -> None:
        self._events, self._pause = events, pause

    async def events(
        self, job_id: str, after: str, heartbeat: bool
    ) -> AsyncIterator[dict[str, str]]:
        for ev in self._events:
            await asyncio.sleep(self._pause)
            yield ev


def watched(
    monkeypatch: pytest.MonkeyPatch, events: list[dict[str, str]], width: int = 80
) -> tuple[list[str], list[str], list[str]]:
    """What `watch` draws in a terminal `width` columns wide: every frame of its progress
    line, the lines printed after it (escape codes gone), and what the screen shows at the
    end."""
    screen = io.StringIO()
    terminal = Console(
        file=screen, force_terminal=True, width=width, highlight=False, soft_wrap=True
    )
    monkeypatch.setattr(jobs, "err", terminal)
    client = cast(Client, PacedEvents(events))
    ended = asyncio.run(jobs.follow(client, "j1", "0", show=True))
    jobs.report(ended, None, Output.JSON)
    text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", screen.getvalue())
    lines = [line.rstrip() for line in re.split(r"[\r\n]", text) if line.strip()]
    end = next(i for i, line in enumerate(lines) if line.startswith("completed by "))
    return lines[:end], lines[end:], screen_lines(screen.getvalue())


def progress_event(p: Progress, time_limit: float = 8.0) -> dict[str, str]:
    """The services' own event for `p` (shared/solving/progress.py)."""
    update = ProgressReporter("j1", time_limit, implementation="generetic").outcome(p, 0.0)
    assert update is not None
    return update.event_fields()


def completed_event(result: SolveResult) -> dict[str, str]:
    return Outcome(
        kind=OutcomeKind.COMPLETED,
        job_id="j1",
        result=result.model_dump_json(),
        solve_time_ms=8000,
        solver_used="generetic",
        attempts=1,
    ).event_fields()


def test_the_last_progress_line_is_the_results(monkeypatch: pytest.MonkeyPatch) -> None:
    """The solver improved after its last progress event: the last line drawn says what the
    result printed below it says, not what that event said."""
    request = parse_request(curtois_json(1, time_limit=0.3))
    result = solve_request(request, implementation=Implementation.GREEDY)
    penalty = result.score.penalty
    assert penalty > 0 and result.feasible
    stale = penalty + 1745
    events = [
        progress_event(Progress(phase="genetic", best_hard=0, best_penalty=stale)),
        completed_event(result),
    ]
    frames, after, screen = watched(monkeypatch, events)
    assert any(f"penalty {stale}" in f for f in frames), frames  # the event was drawn
    last = frames[-1]
    assert f"penalty {penalty}" in last and str(stale) not in last, frames
    assert last.startswith("completed"), last
    assert f"0 hard, penalty {penalty}" in after[1], after
    # and it stays on the screen, above the verdict, not erased with the bar
    shown = next(i for i, line in enumerate(screen) if line.startswith("completed "))
    assert f"penalty {penalty}" in screen[shown], screen
    assert screen[shown + 1].startswith("completed by "), screen


def test_at_80_columns_the_progress_line_holds_the_penalty_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Instance 22's first GA roster, beside the column phase's bound: each figure once and
    whole, in one 80-column line. A step that holds the best roster still (the weekend plan,
    a third of a long solve) is named where the phase is, from the message that names it."""
    request = parse_request(request_json(employees=6, shifts=20, time_limit=0.2))
    result = solve_request(request, implementation=Implementation.GREEDY)
    columns = Progress(phase="columns", best_hard=0, best_penalty=140253, lower_bound=131078.2)
    genetic = Progress(
        phase="genetic", generation=12, population=30, best_hard=0, best_penalty=140253
    )
    broken = Progress(phase="genetic", best_hard=3, best_penalty=1402530, lower_bound=131079)
    plan = Progress(phase="genetic", step="plan", best_hard=0, best_penalty=140254,
                    lower_bound=131078.2)
    planned = Progress(phase="genetic", step="planned", best_hard=0, best_penalty=140255)
    events = [progress_event(p) for p in (columns, genetic, broken, plan, planned)]
    frames, _, _ = watched(monkeypatch, [*events, completed_event(result)])
    assert all(len(f) <= 80 for f in frames), frames
    for label, figures in (
        ("Column generation", "penalty 140253  gap 7.00%"),
        ("Genetic search", "penalty 140253  eta"),
        ("Genetic search", "3 hard, penalty 1402530  eta"),
        ("Weekend plan", "penalty 140254  gap 7.00%  eta"),
        ("Planned weekends", "penalty 140255  eta"),
    ):
        shown = [f for f in frames if f.startswith(label) and figures in f]
        assert shown, (label, figures, frames)
        assert all(f.count("1402") == 1 for f in shown), shown


def test_watch_reads_a_result_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """A result at the size limits is megabytes (0.3 s to parse): the progress line, the
    verdict and the roster printed read one parse of it."""
    request = parse_request(request_json(employees=6, shifts=20, time_limit=0.2))
    result = solve_request(request, implementation=Implementation.GREEDY)
    parses: list[int] = []
    parse = SolveResult.model_validate_json

    def counted(text: str | bytes) -> SolveResult:
        parses.append(len(text))
        return parse(text)

    monkeypatch.setattr(SolveResult, "model_validate_json", counted)
    monkeypatch.setattr(jobs, "err", Console(file=io.StringIO(), width=80))
    printed = io.StringIO()
    monkeypatch.setattr(sys, "stdout", printed)
    client = cast(Client, PacedEvents([completed_event(result)], pause=0))
    ended = asyncio.run(jobs.follow(client, "j1", "0", show=True))
    jobs.report(ended, request, Output.TSV)
    assert len(parses) == 1, parses
    assert printed.getvalue().count("\n") == len(request.employees)  # a row each


def test_watch_names_a_result_that_is_not_one(monkeypatch: pytest.MonkeyPatch) -> None:
    """A completed event whose result a service wrote wrong: the text that came is still
    printed (json), the problem is named, and the exit code says it failed."""
    request = parse_request(request_json(employees=6, shifts=20, time_limit=0.2))
    event = completed_event(solve_request(request, implementation=Implementation.GREEDY))
    event["result"] = json.dumps({**json.loads(event["result"]), "score": "none"})
    screen = io.StringIO()
    monkeypatch.setattr(jobs, "err", Console(file=screen, width=200))
    printed = io.StringIO()
    monkeypatch.setattr(sys, "stdout", printed)
    client = cast(Client, PacedEvents([event], pause=0))
    ended = asyncio.run(jobs.follow(client, "j1", "0", show=True))
    with pytest.raises(typer.Exit) as exit_:
        jobs.report(ended, request, Output.JSON)
    assert exit_.value.exit_code == ExitCode.FAILED
    assert printed.getvalue().strip() == event["result"]
    assert "the result is not a result v1: score:" in screen.getvalue(), screen.getvalue()
    with pytest.raises(typer.Exit):  # a table of it cannot be drawn
        jobs.report(ended, request, Output.TABLE)


# ------------------------------------------------------------------ fixtures' own hygiene


@pytest.fixture(autouse=True)
def _no_stray_rule_state() -> Iterator[None]:
    yield
    redis_target._current = None


def test_the_shown_url_never_carries_a_password() -> None:
    assert redis_target.redact("redis://u:secret@h:1/0") == "redis://u:***@h:1/0"
    assert redis_target.redact("redis://h:1/0") == "redis://h:1/0"
    assert re.fullmatch(r"redis://127\.0\.0\.1:\d+/0", DEAD_URL)
