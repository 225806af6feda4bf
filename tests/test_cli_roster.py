"""The roster CLI: import -> solve -> evaluate agree with each other, exit codes mean what
the help says, bad input names the field."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner

from shared.cli.main import app
from shared.roster.curtois import bench_dir
from shared.roster.model import Implementation, SolveRequest, SolveResult
from shared.roster.solving import SolveControl
from shared.solving.dispatch import solve_request
from tests.terminal import screen_lines

runner = CliRunner()
BENCH = bench_dir()


def run(*args: str | Path, code: int = 0) -> str:
    result = runner.invoke(app, [str(a) for a in args])
    assert result.exit_code == code, (result.stdout, result.stderr, result.exception)
    return result.stdout


@pytest.mark.parametrize("n", range(1, 13))
def test_import_solve_evaluate_round_trip(n: int, tmp_path: Path) -> None:
    request = tmp_path / "request.json"
    request.write_text(run("import-curtois", BENCH / f"Instance{n}.txt", "--solver", "greedy"))
    assert json.loads(request.read_text())["solver"]["implementation"] == "greedy"

    # The greedy searches for as long as its limit allows; this is about the round trip.
    quick = ("--time-limit", "2", "--quiet")
    solved = json.loads(run("solve", request, "--output", "json", *quick))
    roster = tmp_path / "roster.tsv"
    roster.write_text(run("solve", request, "--output", "tsv", *quick))
    assert len(roster.read_text().splitlines()) == len(solved["assignments"])
    # A second solve equals the first only if the clock cut neither short (a loaded machine
    # may), so the roster evaluated is the JSON result's own, in the TSV layout.
    roster.write_text(
        "".join("\t".join(s or "" for s in a["shifts"]) + "\n" for a in solved["assignments"])
    )

    hard = solved["score"]["hard_violations"]
    code = 1 if hard else 0
    report = json.loads(run("evaluate", request, roster, "--json", code=code))
    assert (report["hard_violations"], report["penalty"]) == (
        hard,
        solved["score"]["penalty"],
    )
    assert report["breakdown"] == solved["breakdown"]
    # The Curtois file itself is accepted wherever a request is.
    again = json.loads(run("evaluate", BENCH / f"Instance{n}.txt", roster, "--json", code=code))
    assert again["penalty"] == solved["score"]["penalty"]


def test_evaluate_exit_codes_and_fixture_objective(tmp_path: Path) -> None:
    fixture = BENCH / "solutions" / "Instance1_obj608.tsv"
    report = json.loads(run("evaluate", BENCH / "Instance1.txt", fixture, "--json"))
    assert (report["hard_violations"], report["penalty"], report["feasible"]) == (0, 608, True)
    # Employee A's fixed day off is day 0; working it breaks a hard rule.
    rows = fixture.read_text().splitlines()
    rows[0] = "D" + rows[0]  # the fixture's first cell is empty
    broken = tmp_path / "broken.tsv"
    broken.write_text("\n".join(rows) + "\n")
    report = json.loads(run("evaluate", BENCH / "Instance1.txt", broken, "--json", code=1))
    assert report["hard_violations"] >= 1
    assert any(r["rule"] == "days_off" and r["hard_violations"] == 1 for r in report["breakdown"])
    table = run("evaluate", BENCH / "Instance1.txt", broken, code=1)
    assert "infeasible" in table and "days_off" in table


def test_table_output_and_progress() -> None:
    result = runner.invoke(
        app, ["solve", str(BENCH / "Instance1.txt"), "--solver", "greedy", "--output", "table"]
    )
    assert result.exit_code == 0, result.stderr
    assert "score breakdown" in result.stdout and "cover_under" in result.stdout
    assert "feasible" in result.stdout


def test_generate_then_solve(tmp_path: Path) -> None:
    request = tmp_path / "gen.json"
    request.write_text(
        run("generate", "--employees", "30", "--shifts", "60", "--seed", "4", "--solver", "greedy")
    )
    data = json.loads(request.read_text())
    assert len(data["employees"]) == 30
    assert sum(c["required"] for c in data["cover"]) == 60
    assert data["solver"]["seed"] == 4
    solved = json.loads(run("solve", request, "--quiet"))
    assert solved["stats"]["implementation"] == "greedy"
    assert solved["feasible"] is True


def test_invalid_request_names_the_field(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"horizon": {"days": 0}, "shift_types": [], "employees": []}))
    result = runner.invoke(app, ["solve", str(bad), "--solver", "greedy"])
    assert result.exit_code == 2
    assert "horizon.days" in result.stderr and result.stdout == ""

    broken = tmp_path / "Broken.txt"
    text = (BENCH / "Instance1.txt").read_text().replace("A,0\n", "A,x\n")
    broken.write_text(text)
    result = runner.invoke(app, ["solve", str(broken), "--solver", "greedy"])
    assert result.exit_code == 2
    assert "line " in result.stderr and "day 'x' is not valid" in result.stderr

    result = runner.invoke(app, ["import-curtois", str(tmp_path / "missing.txt")])
    assert result.exit_code == 2


def test_evaluate_rejects_a_roster_of_the_wrong_shape(tmp_path: Path) -> None:
    short = tmp_path / "short.tsv"
    short.write_text("D\tD\n")
    result = runner.invoke(app, ["evaluate", str(BENCH / "Instance1.txt"), str(short)])
    assert result.exit_code == 2
    assert "1 rows, the instance has 8 employees" in result.stderr


def test_repair_builds_a_request_that_solve_and_evaluate_count_changes_of(
        tmp_path: Path) -> None:
    instance = BENCH / "Instance1.txt"
    published = tmp_path / "published.json"
    published.write_text(run("solve", instance, "--time-limit", "1", "-q", "-o", "json"))
    request = tmp_path / "repair.json"
    request.write_text(run("repair", instance, published, "--absent", "A:5-7",
                           "--absent", "B:6", "--freeze-before", "5"))
    doc = json.loads(request.read_text())
    assert doc["freeze_before_day"] == 5 and len(doc["previous"]) == len(doc["employees"])
    assert {5, 6, 7} <= set(doc["employees"][0]["days_off"])
    table = run("solve", request, "--time-limit", "1", "-q", "-o", "table")
    assert "cells changed" in table and "changes" in table
    solved = json.loads(run("solve", request, "--time-limit", "1", "-q", "-o", "json"))
    roster = tmp_path / "roster.tsv"
    roster.write_text(
        "".join("\t".join(s or "" for s in a["shifts"]) + "\n" for a in solved["assignments"])
    )
    report = json.loads(run("evaluate", request, roster, "--json"))
    assert report["changes"] == solved["changes"]
    assert f"{solved['changes']} cells changed" in run("evaluate", request, roster)
    # the TSV layout of the published roster is read too
    tsv = tmp_path / "published.tsv"
    tsv.write_text(run("solve", instance, "--time-limit", "1", "-q", "-o", "tsv"))
    assert json.loads(run("repair", instance, tsv, "--absent", "A:5-7"))["previous"]


@pytest.mark.parametrize(
    ("args", "message"),
    [(["--absent", "A:3-4", "--freeze-before", "5"], "before the frozen day 5"),
     (["--absent", "ZZ:3"], "unknown employee 'ZZ'"),
     (["--absent", "A3"], "expected EMPLOYEE:DAY-DAY")],
)
def test_repair_refuses_what_cannot_be_honoured(tmp_path: Path, args: list[str],
                                               message: str) -> None:
    published = tmp_path / "published.json"
    published.write_text(run("solve", BENCH / "Instance1.txt", "--time-limit", "0.2", "-q"))
    result = runner.invoke(app, ["repair", str(BENCH / "Instance1.txt"), str(published), *args])
    assert result.exit_code == 2
    assert message in " ".join(result.stderr.split())


def test_solve_shows_the_bound_and_the_proof() -> None:
    """Instance 2 is proven optimal by column generation in well under a second: the result and
    the line beside it say so; the greedy proves nothing and says nothing of a bound."""
    result = runner.invoke(
        app, ["solve", str(BENCH / "Instance2.txt"), "--time-limit", "20", "--quiet"]
    )
    assert result.exit_code == 0, result.stderr
    stats = json.loads(result.stdout)["stats"]
    assert (stats["lower_bound"], stats["gap"], stats["proven_optimal"]) == (828, 0.0, True)
    shown = runner.invoke(
        app, ["solve", str(BENCH / "Instance2.txt"), "--time-limit", "20", "-o", "tsv"]
    )
    assert "feasible: 0 hard, penalty 828; proven optimal (bound 828)" in shown.stderr
    greedy = runner.invoke(
        app, ["solve", str(BENCH / "Instance2.txt"), "--solver", "greedy", "-o", "table"]
    )
    assert "feasible: 0 hard, penalty" in greedy.stdout and "bound" not in greedy.stdout


def test_the_solve_bar_ends_on_the_results_figures_in_80_columns(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The solver's figures lag its search (the GA passes its best on about once a second):
    the bar's last line is the result's, as the verdict below it, and fits 80 columns with
    the penalty once and whole."""
    from shared.cli import roster

    def lagging(request: SolveRequest, control: SolveControl) -> SolveResult:
        result = solve_request(request, control=control)
        control.progress.best_hard, control.progress.best_penalty = 0, 4_140_253
        control.progress.phase = "genetic"
        return result

    screen = io.StringIO()
    monkeypatch.setattr(roster, "err", Console(file=screen, force_terminal=True, width=80))
    monkeypatch.setattr(roster, "solve_request", lagging)
    request = roster.with_options(
        roster.read_request(BENCH / "Instance1.txt"), Implementation.GREEDY, 0.5, None
    )
    result = roster.run_with_progress(request, show=True)
    text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", screen.getvalue())
    frames = [line.rstrip() for line in re.split(r"[\r\n]", text) if line.strip()]
    assert all(len(f) <= 80 for f in frames), frames
    last = frames[-1]
    assert last.startswith("completed") and f"penalty {result.score.penalty}" in last, frames
    assert "4140253" not in last and last.count("penalty") == 1, last
    assert "/0.5 s" in last, last  # the limit as given, not rounded to "0 s"
    # and the final line stays on the screen, not erased with the bar
    assert any(
        line.startswith("completed") and f"penalty {result.score.penalty}" in line
        for line in screen_lines(screen.getvalue())
    ), screen_lines(screen.getvalue())
