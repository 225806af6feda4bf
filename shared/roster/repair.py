"""Building a re-rostering request: the published roster as `previous`, absences as fixed days
off, the past frozen. The solvers then keep the pins and change as few cells as they can
(the `pinned` and `changes` rules, docs/decisions/0017)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from shared.roster.model import EmployeeRoster, SolveRequest

_ABSENCE = re.compile(r"^(?P<emp>.+):(?P<first>\d+)(?:-(?P<last>\d+))?$")


@dataclass(frozen=True)
class Absence:
    """Employee `employee` cannot work days `first` to `last` (inclusive)."""

    employee: str
    first: int
    last: int

    @classmethod
    def parse(cls, text: str) -> Absence:
        """`EMP:DAY-DAY` or `EMP:DAY`; ValueError naming what is wrong."""
        m = _ABSENCE.match(text.strip())
        if not m:
            raise ValueError(f"absence {text!r}: expected EMPLOYEE:DAY-DAY (e.g. A:10-12)")
        first = int(m["first"])
        last = int(m["last"]) if m["last"] is not None else first
        if last < first:
            raise ValueError(f"absence {text!r}: day {last} is before day {first}")
        return cls(m["emp"], first, last)


def repair_request(
    request: SolveRequest,
    previous: list[EmployeeRoster],
    absences: list[Absence],
    freeze_before_day: int | None = None,
    change_weight: int | None = None,
) -> SolveRequest:
    """`request` re-rostered around `absences`: each absent day becomes a fixed day off (and
    the minutes `previous` had the employee work on it come off their `min_minutes`),
    `previous` is the roster to stay close to, and days before `freeze_before_day` keep it
    exactly. ValueError naming the absence that cannot be honoured; the result is validated
    as any request is (a pin that contradicts it is refused there)."""
    days = request.horizon.days
    ids = {e.id for e in request.employees}
    off: dict[str, set[int]] = {}
    for a in absences:
        where = f"absence {a.employee}:{a.first}-{a.last}"
        if a.employee not in ids:
            raise ValueError(f"{where}: unknown employee {a.employee!r}")
        if a.last >= days:
            raise ValueError(f"{where}: day {a.last} is outside the horizon of {days} days")
        if freeze_before_day is not None and a.first < freeze_before_day:
            raise ValueError(
                f"{where}: day {a.first} is before the frozen day {freeze_before_day}; "
                f"the frozen past cannot change"
            )
        off.setdefault(a.employee, set()).update(range(a.first, a.last + 1))
    length = {s.id: s.length_minutes for s in request.shift_types}
    rows = {r.employee: r.shifts for r in previous}
    data = request.model_dump(mode="json")
    for emp in data["employees"]:
        extra = off.get(emp["id"])
        if extra:
            emp["days_off"] = sorted(set(emp.get("days_off", [])) | extra)
            # An absence is time the contract counts as worked (sick leave is paid): the
            # shifts it takes away lower the minimum, or the lost minutes would have to be
            # made up in the days left, which the other rules often forbid.
            row = rows.get(emp["id"], [])
            lost = 0
            for d in extra:
                worked = row[d] if d < len(row) else None
                lost += length.get(worked, 0) if worked is not None else 0
            emp["min_minutes"] = max(0, emp["min_minutes"] - lost)
    data["previous"] = [r.model_dump(mode="json") for r in previous]
    if freeze_before_day is not None:
        data["freeze_before_day"] = freeze_before_day
    if change_weight is not None:
        data["change_weight"] = change_weight
    return SolveRequest.model_validate(data)
