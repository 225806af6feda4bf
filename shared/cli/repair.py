"""`shiftstream repair`: a re-rostering request from a request, the roster published for it,
absences and a frozen past (shared/roster/repair.py); printed, or submitted to the services.

Exit codes as `submit` (shared/cli/exits.py): 2 for input that cannot make a request.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Annotated, Any

import typer
from pydantic import ValidationError

from shared.cli.roster import Output, fail, read_request
from shared.roster.compiled import compile_request
from shared.roster.curtois import CurtoisFormatError, roster_from_tsv
from shared.roster.model import EmployeeRoster, SolveRequest
from shared.roster.parse import describe
from shared.roster.repair import Absence, repair_request


def read_previous(path: Path, request: SolveRequest) -> list[EmployeeRoster]:
    """The published roster: a result JSON (`solve -o json`, `watch`), a JSON list of
    {employee, shifts}, or a roster in the benchmark's TSV layout; exit 2 naming the
    problem."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise fail(f"{path}: {e.strerror or e}") from e
    if text.lstrip()[:1] in {"{", "["}:
        try:
            data: Any = json.loads(text)
        except ValueError as e:
            raise fail(f"{path}: not valid JSON: {e}") from e
        rows = data.get("assignments") if isinstance(data, dict) else data
        if not isinstance(rows, list):
            raise fail(f"{path}: expected a result with `assignments` or a list of rows")
        try:
            return [EmployeeRoster.model_validate(r) for r in rows]
        except ValidationError as e:
            raise fail(f"{path}: {describe(e)}") from e
    problem = compile_request(request)
    try:
        grid = roster_from_tsv(text, problem)
    except CurtoisFormatError as e:
        raise fail(f"{path}: {e}") from e
    return [
        EmployeeRoster(employee=emp, shifts=row)
        for emp, row in zip(problem.employee_ids, problem.decode(grid), strict=True)
    ]


def repair(
    file: Annotated[Path, typer.Argument(help="The roster's request (JSON or Curtois .txt).")],
    previous: Annotated[
        Path,
        typer.Argument(help="The roster published for it: result JSON or benchmark TSV."),
    ],
    absent: Annotated[
        list[str] | None,
        typer.Option("--absent", help="EMPLOYEE:FIRST-LAST (days, inclusive); repeatable."),
    ] = None,
    freeze_before: Annotated[
        int | None,
        typer.Option("--freeze-before", min=0, help="Keep every cell before this day."),
    ] = None,
    change_weight: Annotated[
        int | None,
        typer.Option("--change-weight", min=0, max=1_000_000,
                     help="Penalty per changed cell (default: the request's, else 10)."),
    ] = None,
    submit: Annotated[
        bool, typer.Option("--submit", help="Submit it to the services instead of printing.")
    ] = False,
    watch: Annotated[bool, typer.Option("--watch", help="With --submit: follow it.")] = False,
    job_id: Annotated[str | None, typer.Option("--job-id", help="Idempotency key.")] = None,
    output: Annotated[Output, typer.Option("--output", "-o")] = Output.TABLE,
    redis_url: Annotated[
        str | None,
        typer.Option("--redis-url", help="Redis URL (default: REDIS_URL, then localhost:6379)."),
    ] = None,
) -> None:
    """Re-roster around absences: the request with PREVIOUS as the roster to stay close to
    (each changed cell costs --change-weight), the absences as fixed days off and every cell
    before --freeze-before kept. Prints the request (JSON), or submits it with --submit."""
    request = read_request(file)
    roster = read_previous(previous, request)
    try:
        absences = [Absence.parse(a) for a in absent or []]
        rebuilt = repair_request(request, roster, absences, freeze_before, change_weight)
    except ValidationError as e:
        raise fail(describe(e)) from e
    except ValueError as e:
        raise fail(str(e)) from e
    if not submit:
        print(rebuilt.model_dump_json(indent=2))
        return
    from shared.cli.jobs import submit_and_watch
    from shared.cli.redis_target import resolve

    target = resolve(redis_url)
    asyncio.run(submit_and_watch(target, rebuilt, job_id, None, watch, output))


def register(app: typer.Typer) -> None:
    app.command("repair")(repair)
