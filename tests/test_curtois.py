"""Curtois import: every field of every instance arrives, TSV solutions round-trip, bad files
fail with the line that is wrong."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from shared.roster.compiled import compile_request
from shared.roster.curtois import (
    CurtoisFormatError,
    bench_dir,
    load_curtois,
    parse_curtois,
    roster_from_tsv,
    roster_to_tsv,
)
from shared.roster.evaluator import evaluate

INSTANCES = [bench_dir() / f"Instance{i}.txt" for i in range(1, 13)]
SOLUTIONS = sorted((bench_dir() / "solutions").glob("Instance*_obj*.tsv"))


def section_lines(path: Path) -> dict[str, list[list[str]]]:
    """The file's data lines per section, split on commas: an independent reading to compare to."""
    out: dict[str, list[list[str]]] = {}
    current = ""
    for raw in path.read_text().splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("SECTION_"):
            current = line
            out[current] = []
        else:
            out[current].append(line.split(","))
    return out


@pytest.mark.parametrize("path", INSTANCES, ids=lambda p: p.stem)
def test_every_section_arrives_whole(path: Path) -> None:
    req = load_curtois(path)
    raw = section_lines(path)
    assert req.name == path.stem
    assert req.horizon.days == int(raw["SECTION_HORIZON"][0][0])
    assert req.horizon.start_date.isoformat() == "2014-01-06"
    assert req.horizon.start_date.weekday() == 0
    assert [(s.id, s.length_minutes, "|".join(s.cannot_follow)) for s in req.shift_types] == [
        (f[0], int(f[1]), f[2]) for f in raw["SECTION_SHIFTS"]
    ]
    assert [e.id for e in req.employees] == [f[0] for f in raw["SECTION_STAFF"]]
    for emp, f in zip(req.employees, raw["SECTION_STAFF"], strict=True):
        assert emp.max_shifts == {k: int(v) for k, v in (p.split("=") for p in f[1].split("|"))}
        assert (
            emp.max_minutes,
            emp.min_minutes,
            emp.max_consecutive_shifts,
            emp.min_consecutive_shifts,
            emp.min_consecutive_days_off,
            emp.max_weekends,
        ) == tuple(int(x) for x in f[2:8])
    assert sum(len(e.days_off) for e in req.employees) == sum(
        len(f) - 1 for f in raw["SECTION_DAYS_OFF"]
    )
    on = {(e.id, r.day, r.shift, r.weight) for e in req.employees for r in e.shift_on_requests}
    off = {(e.id, r.day, r.shift, r.weight) for e in req.employees for r in e.shift_off_requests}
    assert on == {(f[0], int(f[1]), f[2], int(f[3])) for f in raw["SECTION_SHIFT_ON_REQUESTS"]}
    assert off == {(f[0], int(f[1]), f[2], int(f[3])) for f in raw["SECTION_SHIFT_OFF_REQUESTS"]}
    assert len(req.cover) == req.horizon.days * len(req.shift_types)
    assert [(c.day, c.shift, c.required, c.under_weight, c.over_weight) for c in req.cover] == [
        (int(f[0]), f[1], int(f[2]), int(f[3]), int(f[4])) for f in raw["SECTION_COVER"]
    ]


def test_instance3_compiles_to_the_expected_arrays() -> None:
    p = compile_request(load_curtois(bench_dir() / "Instance3.txt"))
    assert p.shift_ids == ("E", "D", "L")
    assert p.n_employees == 20 and p.n_days == 14
    assert p.length.tolist() == [480, 480, 480]
    # D cannot be followed by E; L by E or D.
    assert p.forbidden.tolist() == [[0, 0, 0], [1, 0, 0], [1, 1, 0]]
    a, d, p_ = p.employee_ids.index("A"), p.employee_ids.index("D"), p.employee_ids.index("P")
    assert p.max_shifts[a].tolist() == [14, 14, 0]
    assert p.max_shifts[d].tolist() == [14, 0, 5]
    assert (p.max_minutes[p_], p.min_minutes[p_]) == (2160, 1200)
    assert (p.max_consec[p_], p.min_consec[p_], p.min_off[p_], p.max_weekends[p_]) == (5, 1, 2, 1)
    assert p.weekend.tolist() == [-1] * 5 + [0, 0] + [-1] * 5 + [1, 1]
    raw = section_lines(bench_dir() / "Instance3.txt")
    for f in raw["SECTION_DAYS_OFF"]:
        e = p.employee_ids.index(f[0])
        assert np.flatnonzero(p.day_off[e]).tolist() == sorted(int(x) for x in f[1:])
    for f in raw["SECTION_COVER"]:
        day, s = int(f[0]), p.shift_ids.index(f[1])
        assert p.cover_req[day, s] == int(f[2])
        assert (p.cover_under[day, s], p.cover_over[day, s]) == (100, 1)
    assert len(p.on_shift) == len(raw["SECTION_SHIFT_ON_REQUESTS"])
    assert len(p.off_shift) == len(raw["SECTION_SHIFT_OFF_REQUESTS"])
    f = raw["SECTION_SHIFT_ON_REQUESTS"][0]
    e, day = p.employee_ids.index(f[0]), int(f[1])
    lo, hi = p.on_ptr[e * p.n_days + day], p.on_ptr[e * p.n_days + day + 1]
    assert (p.on_shift[lo:hi].tolist(), p.on_weight[lo:hi].tolist()) == (
        [p.shift_ids.index(f[2])],
        [int(f[3])],
    )


def test_crlf_and_blank_lines_are_tolerated() -> None:
    text = (bench_dir() / "Instance1.txt").read_text()
    crlf = text.replace("\n", "\r\n").replace("SECTION_SHIFTS", "\r\n\r\nSECTION_SHIFTS")
    assert parse_curtois(crlf) == parse_curtois(text)


@pytest.mark.parametrize("path", SOLUTIONS, ids=lambda p: p.stem)
def test_fixture_solutions_load_and_round_trip(path: Path) -> None:
    instance, objective = path.stem.split("_obj")
    req = load_curtois(bench_dir() / f"{instance}.txt")
    problem = compile_request(req)
    text = path.read_text()
    roster = roster_from_tsv(text, problem)
    assert roster.shape == (problem.n_employees, problem.n_days)
    assert roster.dtype == np.int32
    assert roster_to_tsv(problem, roster) == text
    assert roster_to_tsv(req, roster) == text
    ev = evaluate(problem, roster)
    assert (ev.hard_violations, ev.penalty) == (0, int(objective))


def test_tsv_round_trip_of_an_arbitrary_roster() -> None:
    problem = compile_request(load_curtois(bench_dir() / "Instance12.txt"))
    rng = np.random.default_rng(1)
    roster = rng.integers(-1, problem.n_shifts, size=(problem.n_employees, problem.n_days))
    roster = roster.astype(np.int32)
    assert np.array_equal(roster_from_tsv(roster_to_tsv(problem, roster), problem), roster)


@pytest.fixture
def instance1() -> str:
    return (bench_dir() / "Instance1.txt").read_text()


def test_tsv_errors_name_the_problem(instance1: str) -> None:
    problem = compile_request(parse_curtois(instance1))
    good = roster_to_tsv(problem, problem.empty_roster()).splitlines()
    with pytest.raises(CurtoisFormatError, match="7 rows, the instance has 8 employees"):
        roster_from_tsv("\n".join(good[:-1]), problem)
    with pytest.raises(CurtoisFormatError, match=r"line 2: .* 15 columns, the horizon has 14"):
        roster_from_tsv("\n".join([good[0], good[1] + "\t", *good[2:]]), problem)
    bad = good[0].replace("\t", "X\t", 1)
    with pytest.raises(CurtoisFormatError, match="line 1: unknown shift id 'X' on day 0"):
        roster_from_tsv("\n".join([bad, *good[1:]]), problem)


def line_of(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if line.startswith(needle))


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ("A,D=14,4320,3360,5,2,2,1", "A,D=14,4320,3360,5,2,2", "expected 8 comma-separated"),
        ("A,D=14,4320,3360,5,2,2,1", "A,X=14,4320,3360,5,2,2,1", "bad MaxShifts pair 'X=14'"),
        ("A,D=14,4320,3360,5,2,2,1", "A,D=14,lots,3360,5,2,2,1", "MaxTotalMinutes 'lots'"),
        ("A,0\n", "Z,0\n", "unknown employee 'Z'"),
        ("A,0\n", "A,99\n", "day 99 is outside the horizon"),
        ("0,D,5,100,1", "0,Q,5,100,1", "unknown shift 'Q'"),
    ],
)
def test_bad_lines_raise_with_line_number(instance1: str, old: str, new: str, message: str) -> None:
    assert old in instance1
    text = instance1.replace(old, new, 1)
    line = line_of(text, new.strip())
    with pytest.raises(CurtoisFormatError, match=f"line {line}: .*{message}") as info:
        parse_curtois(text)
    assert info.value.line_no == line
    assert info.value.line == new.strip()


def test_structural_errors(instance1: str) -> None:
    with pytest.raises(CurtoisFormatError, match="missing section SECTION_COVER"):
        parse_curtois(instance1.split("SECTION_COVER")[0])
    swapped = instance1.replace("SECTION_SHIFTS", "SECTION_TEMP").replace(
        "SECTION_STAFF", "SECTION_SHIFTS"
    )
    with pytest.raises(CurtoisFormatError, match="unexpected section header"):
        parse_curtois(swapped)
    with pytest.raises(CurtoisFormatError, match="line 1: data before the first section"):
        parse_curtois("14\n" + instance1)
    assert isinstance(CurtoisFormatError("x"), ValueError)


def test_bench_dir_follows_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("SHIFTSTREAM_BENCH_DIR", str(tmp_path))
    assert bench_dir() == tmp_path
    monkeypatch.delenv("SHIFTSTREAM_BENCH_DIR")
    assert (bench_dir() / "Instance1.txt").is_file()
