"""Curtois & Qu benchmark text format <-> `SolveRequest`, and the official TSV solution layout.

The text format is described field by field in `bench/curtois/FORMAT.md`. Every field maps onto the
request model, so an imported instance keeps all of its data: MaxShifts per type becomes
`Employee.max_shifts` (0 encodes a missing skill), the cannot-follow lists become
`ShiftType.cannot_follow`, and the cover weights are kept per row.
"""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import numpy as np
from pydantic import ValidationError

from shared.roster.compiled import I32, Problem
from shared.roster.model import (
    Cover,
    Employee,
    Horizon,
    ShiftRequest,
    ShiftType,
    SolveRequest,
    SolveResult,
)
from shared.roster.parse import describe

# Day 0 of every Curtois instance is this Monday (the `.ros` twins say so).
START_DATE = dt.date(2014, 1, 6)

SECTIONS = (
    "SECTION_HORIZON",
    "SECTION_SHIFTS",
    "SECTION_STAFF",
    "SECTION_DAYS_OFF",
    "SECTION_SHIFT_ON_REQUESTS",
    "SECTION_SHIFT_OFF_REQUESTS",
    "SECTION_COVER",
)

T = TypeVar("T")


class CurtoisFormatError(ValueError):
    """The text is not a valid Curtois instance; the message names the line and its content."""

    def __init__(self, message: str, line_no: int | None = None, line: str | None = None) -> None:
        where = "" if line_no is None else f"line {line_no}: "
        shown = "" if line is None else f" (got {line!r})"
        super().__init__(f"{where}{message}{shown}")
        self.line_no = line_no
        self.line = line


def bench_dir() -> Path:
    """Where the benchmark instances live: `SHIFTSTREAM_BENCH_DIR`, else `bench/curtois` here."""
    env = os.environ.get("SHIFTSTREAM_BENCH_DIR")
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[2] / "bench" / "curtois"


@dataclass
class _Line:
    no: int
    text: str

    def fields(self, count: int | None = None, at_least: int | None = None) -> list[str]:
        parts = self.text.split(",")
        if count is not None and len(parts) != count:
            raise CurtoisFormatError(f"expected {count} comma-separated fields", self.no, self.text)
        if at_least is not None and len(parts) < at_least:
            raise CurtoisFormatError(
                f"expected at least {at_least} comma-separated fields", self.no, self.text
            )
        return parts

    def convert(self, what: str, value: str, conv: Callable[[str], T]) -> T:
        try:
            return conv(value)
        except ValueError:
            raise CurtoisFormatError(f"{what} {value!r} is not valid", self.no, self.text) from None

    def int(self, what: str, value: str, minimum: int = 0) -> int:
        n = self.convert(what, value, int)
        if n < minimum:
            raise CurtoisFormatError(f"{what} {n} is below {minimum}", self.no, self.text)
        return n


def _split_sections(text: str) -> dict[str, list[_Line]]:
    out: dict[str, list[_Line]] = {}
    current: list[_Line] | None = None
    expected = iter(SECTIONS)
    for no, raw in enumerate(text.replace("\r", "").split("\n"), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("SECTION_"):
            want = next(expected, None)
            if line != want:
                hint = f"expected {want}" if want else "no more sections expected"
                raise CurtoisFormatError(f"unexpected section header, {hint}", no, line)
            current = out[line] = []
            continue
        if current is None:
            raise CurtoisFormatError("data before the first section header", no, line)
        current.append(_Line(no, line))
    missing = [s for s in SECTIONS if s not in out]
    if missing:
        raise CurtoisFormatError(f"missing section {missing[0]}")
    return out


def _requests(
    lines: list[_Line], emp_index: dict[str, int], shift_ids: set[str], days: int
) -> Iterator[tuple[int, ShiftRequest]]:
    for ln in lines:
        emp, day, shift, weight = ln.fields(count=4)
        if emp not in emp_index:
            raise CurtoisFormatError(f"unknown employee {emp!r}", ln.no, ln.text)
        d = ln.int("day", day)
        if d >= days:
            raise CurtoisFormatError(f"day {d} is outside the horizon", ln.no, ln.text)
        if shift not in shift_ids:
            raise CurtoisFormatError(f"unknown shift {shift!r}", ln.no, ln.text)
        yield emp_index[emp], ShiftRequest(day=d, shift=shift, weight=ln.int("weight", weight))


def parse_curtois(text: str, name: str | None = None) -> SolveRequest:
    sec = _split_sections(text)

    horizon = sec["SECTION_HORIZON"]
    if len(horizon) != 1:
        raise CurtoisFormatError(
            "SECTION_HORIZON must hold exactly one line",
            horizon[1].no if horizon else None,
            horizon[1].text if horizon else None,
        )
    days = horizon[0].int("horizon", horizon[0].text, minimum=1)

    raw_shifts: list[tuple[_Line, str, int, list[str]]] = []
    for ln in sec["SECTION_SHIFTS"]:
        sid, length, follow = ln.fields(count=3)
        if not sid:
            raise CurtoisFormatError("empty shift id", ln.no, ln.text)
        cannot = [s for s in follow.split("|") if s]
        raw_shifts.append((ln, sid, ln.int("length", length, minimum=1), cannot))
    shift_ids = {sid for _, sid, _, _ in raw_shifts}
    shift_types: list[ShiftType] = []
    for ln, sid, minutes, cannot in raw_shifts:
        for s in cannot:
            if s not in shift_ids:
                raise CurtoisFormatError(f"unknown shift {s!r} in cannot-follow", ln.no, ln.text)
        shift_types.append(ShiftType(id=sid, length_minutes=minutes, cannot_follow=cannot))

    staff: list[dict[str, object]] = []
    emp_index: dict[str, int] = {}
    for ln in sec["SECTION_STAFF"]:
        eid, max_shifts, max_min, min_min, max_con, min_con, min_off, max_we = ln.fields(count=8)
        if not eid:
            raise CurtoisFormatError("empty employee id", ln.no, ln.text)
        limits: dict[str, int] = {}
        for pair in max_shifts.split("|") if max_shifts else []:
            sid, eq, value = pair.partition("=")
            if not eq or sid not in shift_ids:
                raise CurtoisFormatError(f"bad MaxShifts pair {pair!r}", ln.no, ln.text)
            limits[sid] = ln.int(f"MaxShifts for {sid}", value)
        emp_index.setdefault(eid, len(staff))
        staff.append(
            {
                "id": eid,
                "max_shifts": limits,
                "max_minutes": ln.int("MaxTotalMinutes", max_min),
                "min_minutes": ln.int("MinTotalMinutes", min_min),
                "max_consecutive_shifts": ln.int("MaxConsecutiveShifts", max_con, minimum=1),
                "min_consecutive_shifts": ln.int("MinConsecutiveShifts", min_con, minimum=1),
                "min_consecutive_days_off": ln.int("MinConsecutiveDaysOff", min_off, minimum=1),
                "max_weekends": ln.int("MaxWeekends", max_we),
                "days_off": [],
                "shift_on_requests": [],
                "shift_off_requests": [],
            }
        )

    for ln in sec["SECTION_DAYS_OFF"]:
        eid, *day_fields = ln.fields(at_least=2)
        if eid not in emp_index:
            raise CurtoisFormatError(f"unknown employee {eid!r}", ln.no, ln.text)
        off = staff[emp_index[eid]]["days_off"]
        assert isinstance(off, list)
        for value in day_fields:
            if value == "":  # tolerate a trailing comma
                continue
            d = ln.int("day", value)
            if d >= days:
                raise CurtoisFormatError(f"day {d} is outside the horizon", ln.no, ln.text)
            off.append(d)

    for section, key in (
        ("SECTION_SHIFT_ON_REQUESTS", "shift_on_requests"),
        ("SECTION_SHIFT_OFF_REQUESTS", "shift_off_requests"),
    ):
        for e, req in _requests(sec[section], emp_index, shift_ids, days):
            bucket = staff[e][key]
            assert isinstance(bucket, list)
            bucket.append(req)

    cover: list[Cover] = []
    for ln in sec["SECTION_COVER"]:
        day, sid, required, under, over = ln.fields(count=5)
        d = ln.int("day", day)
        if d >= days:
            raise CurtoisFormatError(f"day {d} is outside the horizon", ln.no, ln.text)
        if sid not in shift_ids:
            raise CurtoisFormatError(f"unknown shift {sid!r}", ln.no, ln.text)
        cover.append(
            Cover(
                day=d,
                shift=sid,
                required=ln.int("requirement", required),
                under_weight=ln.int("under weight", under),
                over_weight=ln.int("over weight", over),
            )
        )

    try:
        return SolveRequest(
            name=name,
            horizon=Horizon(start_date=START_DATE, days=days),
            shift_types=shift_types,
            cover=cover,
            employees=[Employee.model_validate(s) for s in staff],
        )
    except ValidationError as err:
        raise CurtoisFormatError(f"instance is inconsistent: {describe(err)}") from err


def load_curtois(path: str | Path) -> SolveRequest:
    p = Path(path)
    return parse_curtois(p.read_text(encoding="utf-8"), name=p.stem)


# ----------------------------------------------------------------------- solution layout


def _ids(problem_or_request: Problem | SolveRequest) -> tuple[tuple[str, ...], tuple[str, ...]]:
    if isinstance(problem_or_request, Problem):
        return problem_or_request.shift_ids, problem_or_request.employee_ids
    return (
        tuple(s.id for s in problem_or_request.shift_types),
        tuple(e.id for e in problem_or_request.employees),
    )


def roster_to_tsv(problem_or_request: Problem | SolveRequest, roster: I32) -> str:
    """The official validator's layout: one tab-separated row per employee, empty = day off."""
    shift_ids, employee_ids = _ids(problem_or_request)
    if roster.ndim != 2 or roster.shape[0] != len(employee_ids):
        raise ValueError(
            f"roster shape {roster.shape} does not match {len(employee_ids)} employees"
        )
    rows = ("\t".join("" if s < 0 else shift_ids[s] for s in row) for row in roster.tolist())
    return "".join(r + "\n" for r in rows)


def result_to_tsv(result: SolveResult) -> str:
    """`roster_to_tsv` from a result alone: its assignments are the request's employees in
    order, each with a shift id (or null) per day, so nothing else is needed."""
    rows = ("\t".join(s or "" for s in a.shifts) for a in result.assignments)
    return "".join(r + "\n" for r in rows)


def roster_from_tsv(text: str, problem: Problem | SolveRequest) -> I32:
    shift_ids, employee_ids = _ids(problem)
    days = problem.n_days if isinstance(problem, Problem) else problem.horizon.days
    index = {s: i for i, s in enumerate(shift_ids)}
    lines = text.replace("\r", "").split("\n")
    # Only truly empty trailing lines go: a row of tabs alone is an employee with no shifts.
    while lines and lines[-1] == "":
        lines.pop()
    if len(lines) != len(employee_ids):
        raise CurtoisFormatError(
            f"roster has {len(lines)} rows, the instance has {len(employee_ids)} employees"
        )
    roster = np.full((len(employee_ids), days), -1, dtype=np.int32)
    for e, line in enumerate(lines):
        cells = line.split("\t")
        if len(cells) != days:
            raise CurtoisFormatError(
                f"row for employee {employee_ids[e]!r} has {len(cells)} columns, "
                f"the horizon has {days} days",
                e + 1,
                line,
            )
        for d, cell in enumerate(cells):
            cell = cell.strip()
            if not cell:
                continue
            if cell not in index:
                raise CurtoisFormatError(
                    f"unknown shift id {cell!r} on day {d} for employee {employee_ids[e]!r}",
                    e + 1,
                    line,
                )
            roster[e, d] = index[cell]
    return roster
