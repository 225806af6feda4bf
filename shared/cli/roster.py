"""Local roster commands: import a benchmark, generate an instance, solve in-process, evaluate.

Everything here runs without the services, so it doubles as the debugging path when Redis or
the C build is broken (`--solver greedy`).

Exit codes: 0 success (for `evaluate`: the roster is feasible), 1 a hard rule is broken,
2 invalid input, 3 the chosen solver cannot run here.
"""

from __future__ import annotations

import json
import threading
import time
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer
from rich import box
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, Progress, TextColumn
from rich.table import Table

from shared.cli.exits import ExitCode
from shared.cli.live import figures, phase_label
from shared.errors import InvalidRequest, SolverUnavailable
from shared.roster.compiled import I32, compile_request
from shared.roster.curtois import CurtoisFormatError, load_curtois, roster_from_tsv, roster_to_tsv
from shared.roster.evaluator import build_result
from shared.roster.generator import generate as generate_instance
from shared.roster.model import (
    Implementation,
    SolveRequest,
    SolveResult,
    SolverOptions,
)
from shared.roster.parse import parse_request
from shared.roster.solving import SolveControl
from shared.solving.dispatch import solve_request
from shared.solving.progress import bound_of, phase_of

EXIT_INFEASIBLE = ExitCode.FAILED
EXIT_INVALID = ExitCode.INVALID
EXIT_UNAVAILABLE = ExitCode.UNAVAILABLE
MAX_LISTED_VIOLATIONS = 20
POLL_SECONDS = 0.1

out = Console(highlight=False, soft_wrap=True)
err = Console(stderr=True, highlight=False)


class Output(StrEnum):
    JSON = "json"
    TSV = "tsv"
    TABLE = "table"


SolverOpt = Annotated[
    Implementation | None,
    typer.Option("--solver", help="Solver implementation (default: the request's own)."),
]
TimeLimitOpt = Annotated[
    float | None, typer.Option("--time-limit", help="Time limit in seconds.", min=0.001)
]
SeedOpt = Annotated[int | None, typer.Option("--seed", help="Random seed.", min=0)]


def fail(message: str, code: int = EXIT_INVALID) -> typer.Exit:
    err.print(f"[red]error:[/red] {escape(message)}", markup=True)
    return typer.Exit(int(code))


def is_curtois(path: Path, text: str) -> bool:
    """Curtois instances are `.txt` files starting with comments or a section header; requests
    are JSON objects."""
    if path.suffix.lower() == ".json":
        return False
    first = text.lstrip()[:1]
    return path.suffix.lower() == ".txt" or first in {"#", "S"}


def read_request(path: Path) -> SolveRequest:
    """A request from a JSON file or a Curtois text file, or exit 2 naming what is wrong."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise fail(f"{path}: {e.strerror or e}") from e
    try:
        if is_curtois(path, text):
            return load_curtois(path)
        return parse_request(text)
    except CurtoisFormatError as e:
        raise fail(f"{path}: {e}") from e
    except InvalidRequest as e:
        raise fail(f"{path}: {e.reason}") from e


def with_options(
    req: SolveRequest, solver: Implementation | None, time_limit: float | None, seed: int | None
) -> SolveRequest:
    current = req.solver
    options = SolverOptions(
        implementation=solver or current.implementation,
        time_limit_seconds=time_limit if time_limit is not None else current.time_limit_seconds,
        seed=seed if seed is not None else current.seed,
    )
    return req.model_copy(update={"solver": options})


def roster_of(req: SolveRequest, result: SolveResult) -> I32:
    return compile_request(req).encode([a.shifts for a in result.assignments])


# ------------------------------------------------------------------------------ commands


def import_curtois(
    file: Annotated[Path, typer.Argument(help="Curtois & Qu instance (InstanceN.txt).")],
    solver: SolverOpt = None,
    time_limit: TimeLimitOpt = None,
    seed: SeedOpt = None,
) -> None:
    """Convert a Curtois & Qu benchmark instance to a solve request (JSON on stdout)."""
    try:
        req = load_curtois(file)
    except OSError as e:
        raise fail(f"{file}: {e.strerror or e}") from e
    except CurtoisFormatError as e:
        raise fail(f"{file}: {e}") from e
    print(with_options(req, solver, time_limit, seed).model_dump_json(indent=2))


def generate(
    employees: Annotated[int, typer.Option(min=1, help="Number of employees.")] = 80,
    shifts: Annotated[int, typer.Option(min=0, help="Total shifts to cover.")] = 200,
    seed: Annotated[int, typer.Option(min=0, help="Generator (and solver) seed.")] = 0,
    days: Annotated[int | None, typer.Option(min=1, help="Horizon (default: sized)")] = None,
    solver: SolverOpt = None,
    time_limit: TimeLimitOpt = None,
) -> None:
    """Generate a realistic roster instance (JSON on stdout)."""
    try:
        req = generate_instance(employees=employees, shifts=shifts, seed=seed, days=days)
    except ValueError as e:
        raise fail(str(e)) from e
    print(with_options(req, solver, time_limit, seed).model_dump_json(indent=2))


def solve(
    file: Annotated[Path, typer.Argument(help="Request JSON or Curtois .txt instance.")],
    solver: SolverOpt = None,
    time_limit: TimeLimitOpt = None,
    seed: SeedOpt = None,
    output: Annotated[Output, typer.Option("--output", "-o")] = Output.JSON,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar.")] = False,
) -> None:
    """Solve a roster in-process and print the result."""
    req = with_options(read_request(file), solver, time_limit, seed)
    result = run_with_progress(req, show=not quiet)
    if output is Output.JSON:
        print(result.model_dump_json(indent=2))
    elif output is Output.TSV:
        print(roster_to_tsv(req, roster_of(req, result)), end="")
    else:
        print_table(req, result)
        return
    if not quiet:  # the table ends with this line; beside JSON or TSV it goes to stderr
        err.print(verdict_line(result))


def evaluate(
    file: Annotated[Path, typer.Argument(help="Request JSON or Curtois .txt instance.")],
    roster: Annotated[Path, typer.Argument(help="Roster in the official TSV layout.")],
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable breakdown.")] = False,
) -> None:
    """Score a roster; exit 0 when it is feasible, 1 when a hard rule is broken."""
    req = read_request(file)
    problem = compile_request(req)
    try:
        grid = roster_from_tsv(roster.read_text(encoding="utf-8"), problem)
    except OSError as e:
        raise fail(f"{roster}: {e.strerror or e}") from e
    except CurtoisFormatError as e:
        raise fail(f"{roster}: {e}") from e
    result = build_result(problem, grid)
    if as_json:
        report: dict[str, Any] = {
            "hard_violations": result.score.hard_violations,
            "penalty": result.score.penalty,
            **result.model_dump(mode="json", exclude={"stats", "version"}),
        }
        print(json.dumps(report, indent=2))
    else:
        print_table(req, result)
    if not result.feasible:
        raise typer.Exit(EXIT_INFEASIBLE)


# ------------------------------------------------------------------------------ helpers


def run_with_progress(req: SolveRequest, show: bool) -> SolveResult:
    """Solve in a worker thread while a progress bar on stderr shows time and best score."""
    control = SolveControl()
    box: dict[str, SolveResult | BaseException] = {}

    def work() -> None:
        try:
            box["result"] = solve_request(req, control=control)
        except BaseException as e:  # re-raised in the caller's thread
            box["error"] = e

    limit = req.solver.time_limit_seconds
    implementation = req.solver.implementation or Implementation.GENERETIC
    worker = threading.Thread(target=work, name="solve", daemon=True)
    # The phase, then its figures once each (shared/cli/live.py), as `watch` shows them.
    bar = Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(bar_width=12),  # an 80-column terminal keeps room for the penalty
        # :g, not :.0f: a limit under a second read "0 s"
        TextColumn("{task.fields[elapsed]:.1f}/{task.fields[limit]:g} s"),
        TextColumn("{task.fields[best]}"),
        console=err,
        transient=True,
        disable=not show,
    )
    started = time.monotonic()
    try:
        with bar:
            task = bar.add_task(
                phase_label(phase_of(control.progress, implementation, limit)),
                total=limit,
                elapsed=0.0,
                limit=limit,
                best=figures(-1, -1),
            )
            worker.start()
            while worker.is_alive():
                worker.join(POLL_SECONDS)
                control.refresh()
                p = control.progress
                elapsed = time.monotonic() - started
                bar.update(
                    task,
                    completed=min(elapsed, limit),
                    description=phase_label(phase_of(p, implementation, limit), step=p.step),
                    elapsed=elapsed,
                    best=figures(p.best_hard, p.best_penalty, bound_of(p)),
                )
            done = box.get("result")
            if isinstance(done, SolveResult):
                # The solver's figures lag its search (the GA passes on its best about once a
                # second) and the roster is scored after the last poll: the last line drawn
                # is the result's, as the verdict printed below it.
                stats = done.stats
                bar.update(
                    task,
                    completed=limit,
                    description="completed",
                    best=figures(
                        done.score.hard_violations,
                        done.score.penalty,
                        gap=stats.gap if stats else None,
                        proven_optimal=bool(stats and stats.proven_optimal),
                    ),
                )
                bar.live.transient = False  # the final line stays, above the verdict
    except KeyboardInterrupt:
        control.cancel.set()
        worker.join()
    error = box.get("error")
    if isinstance(error, SolverUnavailable):
        raise fail(str(error), EXIT_UNAVAILABLE)
    if isinstance(error, BaseException):
        raise error
    result = box["result"]
    assert isinstance(result, SolveResult)
    return result


def shift_codes(ids: list[str]) -> dict[str, str]:
    """Short, unique cell labels so a month of days fits a terminal; a legend maps them back."""
    if all(len(i) <= 2 for i in ids):
        return {i: i for i in ids}
    codes: dict[str, str] = {}
    for i in ids:
        for n in range(1, len(i) + 1):
            code = i[:n].upper() if n == 1 else i[:n]
            if code not in codes.values():
                break
        codes[i] = code
    return codes


def print_table(req: SolveRequest, result: SolveResult) -> None:
    start = req.horizon.start_date
    codes = shift_codes([s.id for s in req.shift_types])
    grid = Table(title=req.name or "roster", box=box.SIMPLE_HEAD, padding=(0, 1, 0, 0))
    grid.add_column("employee", no_wrap=True)
    for d in range(req.horizon.days):
        date = start.fromordinal(start.toordinal() + d)
        style = "bold magenta" if date.weekday() >= 5 else ""
        grid.add_column(
            f"{d}\n{date.strftime('%a')[:2]}", justify="center", style=style, no_wrap=True
        )
    hard_by_emp = {e.employee: e for e in result.employees}
    for a in result.assignments:
        marker = " [red]![/red]" if hard_by_emp[a.employee].hard_violations else ""
        grid.add_row(a.employee + marker, *[codes[s] if s else "·" for s in a.shifts])
    out.print(grid)
    if any(k != v for k, v in codes.items()):
        out.print("  ".join(f"{v} = {k}" for k, v in codes.items()))

    rules = Table(title="score breakdown")
    rules.add_column("rule")
    rules.add_column("kind")
    rules.add_column("hard violations", justify="right")
    rules.add_column("penalty", justify="right")
    for r in result.breakdown:
        rules.add_row(
            r.rule,
            "hard" if r.hard else "soft",
            f"[red]{r.hard_violations}[/red]" if r.hard_violations else "0",
            str(r.penalty),
        )
    rules.add_row(
        "[bold]total[/bold]",
        "",
        f"[bold]{result.score.hard_violations}[/bold]",
        f"[bold]{result.score.penalty}[/bold]",
    )
    out.print(rules)
    broken = [m for r in result.breakdown if r.hard for m in r.matches]
    for m in broken[:MAX_LISTED_VIOLATIONS]:
        out.print(f"[red]{m.rule}[/red] {m.employee or ''}: {m.message}")
    if len(broken) > MAX_LISTED_VIOLATIONS:
        out.print(f"... and {len(broken) - MAX_LISTED_VIOLATIONS} more hard violations")
    out.print(verdict_line(result))


def proof_words(result: SolveResult) -> str:
    """How far the roster may be from the optimum, as its solver proved it; "" without a
    bound (shared/roster/optimality.py)."""
    s = result.stats
    if s is None or s.lower_bound is None:
        return ""
    if s.proven_optimal:
        return f"proven optimal (bound {s.lower_bound})"
    if s.gap is None:
        return f"bound {s.lower_bound}"
    return f"bound {s.lower_bound}, gap {s.gap:.2%}"


def verdict_line(result: SolveResult) -> str:
    """One line: feasible or not, hard violations, penalty, the proof, how it was found."""
    verdict = "[green]feasible[/green]" if result.feasible else "[red]infeasible[/red]"
    line = f"{verdict}: {result.score.hard_violations} hard, penalty {result.score.penalty}"
    if result.changes is not None:
        line += f", {result.changes} cells changed"
    proof = proof_words(result)
    if proof:
        line += f"; {proof}"
    if result.stats is not None:
        s = result.stats
        line += f" ({s.implementation}, seed {s.seed}, {s.time_ms:.0f} ms)"
    return line


def register(app: typer.Typer) -> None:
    app.command("import-curtois")(import_curtois)
    app.command("generate")(generate)
    app.command("solve")(solve)
    app.command("evaluate")(evaluate)
