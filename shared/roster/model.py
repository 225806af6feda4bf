"""Solve request v1 and result v1: the roster problem as the public contract states it.

The request reads like the domain (a horizon, shift types, cover, employees with their labour
rules and wishes). Curtois & Qu's benchmark is a strict subset: every field of its text format
has a place here, so importing an instance loses nothing (see `shared.roster.curtois`).

Validation that needs the whole request (unknown references, day indexes inside the horizon,
size limits) lives in `model_validator`s so that a bad request fails with a message naming
the field and the value, before anything is compiled or solved.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter
from enum import StrEnum
from typing import Annotated, Any, Literal, TypeVar

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    ValidationInfo,
    field_validator,
    model_validator,
)

from shared.roster.limits import Limits

Identifier = Annotated[str, StringConstraints(min_length=1, max_length=64, strip_whitespace=True)]
Weight = Annotated[int, Field(ge=0, le=1_000_000)]
Minutes = Annotated[int, Field(ge=0, le=1_000_000)]

# A changed cell costs more than any Curtois request (weights 1-3), so a repair never moves
# someone just to grant a wish, and less than a missing employee on a shift (cover under
# weight 100), so filling a gap someone left is always worth a call (docs/decisions/0017).
DEFAULT_CHANGE_WEIGHT = 10

# Consecutive-run bounds default to "no restriction"; 10_000 exceeds any allowed horizon.
UNBOUNDED = 10_000
# Every count in a request (cover, shift and weekend limits, runs) is at most this: with
# weights at most 10^6, the largest penalty of an accepted request (366 days x 64 shift types
# x 10^4 missing x 10^6, plus the requests) stays far inside int64, and every count inside
# the C solver's int32 arrays, so each solver scores every accepted request exactly.
MAX_COUNT = UNBOUNDED
Count = Annotated[int, Field(ge=0, le=MAX_COUNT)]


class Implementation(StrEnum):
    GENERETIC = "generetic"
    GREEDY = "greedy"


class Priority(StrEnum):
    """Which waiting jobs a solver takes first (docs/decisions/0016-priorities.md)."""

    HIGH = "high"
    NORMAL = "normal"
    LOW = "low"


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Horizon(_Model):
    """The planning period. Weekends follow the real weekday of `start_date`."""

    start_date: dt.date = Field(
        default=dt.date(2014, 1, 6),
        description="Date of day 0 (Curtois instances start on Monday 2014-01-06).",
    )
    days: int = Field(ge=1, description="Number of days in the horizon.")


class ShiftType(_Model):
    id: Identifier
    start: dt.time | None = Field(
        default=None, description="Start time of day (HH:MM); needed for rest-derived successions."
    )
    length_minutes: int = Field(gt=0, le=24 * 60)
    required_skills: list[Identifier] = Field(default_factory=list)
    cannot_follow: list[Identifier] = Field(
        default_factory=list,
        description="Shift type ids that may not be worked on the day after this shift.",
    )


class Cover(_Model):
    day: int = Field(ge=0)
    shift: Identifier
    required: Count
    under_weight: Weight = 100
    over_weight: Weight = 1


class ShiftRequest(_Model):
    day: int = Field(ge=0)
    shift: Identifier
    weight: Weight = 1


class Employee(_Model):
    id: Identifier
    skills: list[Identifier] = Field(default_factory=list)
    max_shifts: dict[Identifier, Count] = Field(
        default_factory=dict,
        description="Per shift type id, the most shifts of that type; absent means no limit, "
        "0 means never (Curtois encodes skills this way).",
    )
    min_minutes: Minutes = 0
    max_minutes: Minutes | None = Field(default=None, description="None means no limit.")
    max_consecutive_shifts: int = Field(default=UNBOUNDED, ge=1, le=MAX_COUNT)
    min_consecutive_shifts: int = Field(default=1, ge=1, le=MAX_COUNT)
    min_consecutive_days_off: int = Field(default=1, ge=1, le=MAX_COUNT)
    max_weekends: Count | None = Field(default=None, description="None means no limit.")
    days_off: list[Annotated[int, Field(ge=0)]] = Field(
        default_factory=list, description="Day indexes the employee must not work."
    )
    shift_on_requests: list[ShiftRequest] = Field(default_factory=list)
    shift_off_requests: list[ShiftRequest] = Field(default_factory=list)

    @model_validator(mode="after")
    def _bounds_are_possible(self) -> Employee:
        if self.max_minutes is not None and self.min_minutes > self.max_minutes:
            raise ValueError(
                f"employee {self.id!r}: min_minutes {self.min_minutes} exceeds "
                f"max_minutes {self.max_minutes}"
            )
        if self.min_consecutive_shifts > self.max_consecutive_shifts:
            raise ValueError(
                f"employee {self.id!r}: min_consecutive_shifts {self.min_consecutive_shifts} "
                f"exceeds max_consecutive_shifts {self.max_consecutive_shifts}"
            )
        return self


class EmployeeRoster(_Model):
    employee: str
    shifts: list[str | None] = Field(description="Shift type id per day, null for a day off.")


class Pin(_Model):
    """One cell the solver must keep exactly as given."""

    employee: Identifier
    day: int = Field(ge=0)
    shift: Identifier | None = Field(description="Shift type id, or null for a pinned day off.")


class SolverOptions(_Model):
    implementation: Implementation | None = Field(
        default=None,
        description="Which solver to run; absent means the deployment's default "
        "(SOLVER_IMPLEMENTATION, generetic unless configured otherwise).",
    )
    time_limit_seconds: float = Field(default=10.0, gt=0, le=3600)
    seed: int = Field(default=0, ge=0, le=2**31 - 1)


class SolveRequest(_Model):
    """Solve request, public contract version 1."""

    version: Literal[1] = 1
    name: str | None = Field(default=None, max_length=200)
    priority: Priority | None = Field(
        default=None,
        description="Which waiting jobs the solvers take first: every waiting high job before "
        "any normal one, normal before low (a low job waiting longer than the deployment's "
        "PRIORITY_AGING_SECONDS competes as normal). An intake entry's own `priority` field "
        "wins over this one; absent in both: normal.",
    )
    horizon: Horizon
    min_rest_minutes: Minutes | None = Field(
        default=None,
        description="Minimum rest between the end of a shift and the start of the next day's "
        "shift; successions that break it are forbidden (needs shift start times).",
    )
    shift_types: list[ShiftType] = Field(min_length=1)
    cover: list[Cover] = Field(default_factory=list)
    employees: list[Employee] = Field(min_length=1)
    solver: SolverOptions = Field(default_factory=SolverOptions)
    pinned: list[Pin] = Field(
        default_factory=list,
        description="Cells every solver keeps exactly (a shift, or null for a day off).",
    )
    previous: list[EmployeeRoster] | None = Field(
        default=None,
        description="A roster this one replaces (e.g. the published one): each cell that "
        "differs from it costs change_weight (the `changes` rule). Employees missing from it "
        "have no previous cells.",
    )
    change_weight: Weight = Field(
        default=DEFAULT_CHANGE_WEIGHT,
        description="Penalty per cell that differs from `previous`.",
    )
    freeze_before_day: int | None = Field(
        default=None,
        ge=0,
        description="Pins every cell of `previous` before this day (the past stays as it was).",
    )

    @field_validator("shift_types", "employees", mode="after")
    @classmethod
    def _ids_are_unique(cls, items: list[ShiftType] | list[Employee], info: ValidationInfo) -> list:  # type: ignore[type-arg]
        ids = [x.id for x in items]
        if len(set(ids)) == len(ids):
            return items
        dupes = [i for i, n in Counter(ids).items() if n > 1]
        raise ValueError(f"duplicate id {dupes[0]!r} in {info.field_name}")

    @model_validator(mode="after")
    def _within_limits(self, info: ValidationInfo) -> SolveRequest:
        limits = Limits.from_context(info.context)
        checks = (
            ("horizon.days", self.horizon.days, limits.max_days),
            ("employees", len(self.employees), limits.max_employees),
            ("shift_types", len(self.shift_types), limits.max_shift_types),
        )
        for field, value, limit in checks:
            if value > limit:
                raise ValueError(f"{field}: {value} is over the limit of {limit}")
        return self

    @model_validator(mode="after")
    def _references_resolve(self) -> SolveRequest:
        days = self.horizon.days
        shift_ids = {s.id for s in self.shift_types}

        # The field path is only formatted once something is wrong: building it for every
        # item cost more than all the checks on a small request.
        def outside(where: str, day: int) -> ValueError:
            return ValueError(f"{where}: day {day} is outside the horizon of {days} days")

        def unknown(where: str, shift: str) -> ValueError:
            return ValueError(f"{where}: unknown shift type {shift!r}")

        for i, st in enumerate(self.shift_types):
            for follower in st.cannot_follow:
                if follower not in shift_ids:
                    raise unknown(f"shift_types[{i}].cannot_follow", follower)
        if self.min_rest_minutes is not None:
            missing = [s.id for s in self.shift_types if s.start is None]
            if missing:
                raise ValueError(
                    f"min_rest_minutes needs a start time on every shift type; "
                    f"shift_types {missing[0]!r} has none"
                )
        seen_cover: set[tuple[int, str]] = set()
        for i, c in enumerate(self.cover):
            if c.day >= days:
                raise outside(f"cover[{i}].day", c.day)
            if c.shift not in shift_ids:
                raise unknown(f"cover[{i}].shift", c.shift)
            cell = (c.day, c.shift)
            if cell in seen_cover:
                raise ValueError(f"cover[{i}]: duplicate cover for day {c.day} shift {c.shift!r}")
            seen_cover.add(cell)
        for i, e in enumerate(self.employees):
            for shift in e.max_shifts:
                if shift not in shift_ids:
                    raise unknown(f"employees[{i}] ({e.id!r}).max_shifts", shift)
            for day in e.days_off:
                if day >= days:
                    raise outside(f"employees[{i}] ({e.id!r}).days_off", day)
            for kind, requests in (
                ("shift_on_requests", e.shift_on_requests),
                ("shift_off_requests", e.shift_off_requests),
            ):
                for j, r in enumerate(requests):
                    if r.day >= days:
                        raise outside(f"employees[{i}] ({e.id!r}).{kind}[{j}].day", r.day)
                    if r.shift not in shift_ids:
                        raise unknown(f"employees[{i}] ({e.id!r}).{kind}[{j}].shift", r.shift)
        return self


    @model_validator(mode="after")
    def _pins_are_possible(self) -> SolveRequest:
        # Runs after `_references_resolve` (declaration order), so shift ids are known.
        if self.pinned or self.previous is not None or self.freeze_before_day is not None:
            self.effective_pins()
        return self

    def effective_pins(self) -> dict[tuple[int, int], int | None]:
        """Every pinned cell, (employee index, day) -> shift index or None (a day off): the
        `pinned` list together with the frozen past of `previous`. ValueError naming the pin
        when one contradicts the request itself."""
        days = self.horizon.days
        s_index = {s.id: i for i, s in enumerate(self.shift_types)}
        e_index = {e.id: i for i, e in enumerate(self.employees)}
        previous = self.previous_rows()
        if self.freeze_before_day is not None:
            if previous is None:
                raise ValueError("freeze_before_day needs a previous roster to freeze")
            if self.freeze_before_day > days:
                raise ValueError(
                    f"freeze_before_day: day {self.freeze_before_day} is past the horizon of "
                    f"{days} days"
                )
        pins: dict[tuple[int, int], int | None] = {}
        where: dict[tuple[int, int], str] = {}
        for i, pin in enumerate(self.pinned):
            at = f"pinned[{i}]"
            e = e_index.get(pin.employee)
            if e is None:
                raise ValueError(f"{at}: unknown employee {pin.employee!r}")
            if pin.day >= days:
                raise ValueError(f"{at}: day {pin.day} is outside the horizon of {days} days")
            s = None
            if pin.shift is not None:
                s = s_index.get(pin.shift)
                if s is None:
                    raise ValueError(f"{at}: unknown shift type {pin.shift!r}")
            if (e, pin.day) in pins:
                raise ValueError(
                    f"{at}: employee {pin.employee!r} day {pin.day} is already pinned by "
                    f"{where[e, pin.day]}"
                )
            pins[e, pin.day] = s
            where[e, pin.day] = at
        if self.freeze_before_day is not None and previous is not None:
            for e, row in previous.items():
                for d in range(self.freeze_before_day):
                    s = row[d]
                    if (e, d) in pins and pins[e, d] != s:
                        was = "a day off" if s is None else self.shift_types[s].id
                        raise ValueError(
                            f"{where[e, d]}: contradicts freeze_before_day "
                            f"{self.freeze_before_day}, which keeps employee "
                            f"{self.employees[e].id!r} on {was} on day {d}"
                        )
                    if (e, d) not in pins:
                        pins[e, d] = s
                        where[e, d] = f"freeze_before_day {self.freeze_before_day}"
        for (e, d), s in pins.items():
            if s is None:
                continue
            emp, st = self.employees[e], self.shift_types[s]
            if d in emp.days_off:
                raise ValueError(
                    f"{where[e, d]}: pins employee {emp.id!r} to shift {st.id!r} on day {d}, "
                    f"one of the employee's days_off"
                )
            missing = set(st.required_skills) - set(emp.skills)
            if missing or emp.max_shifts.get(st.id) == 0:
                why = (
                    f"lacks skill {sorted(missing)[0]!r}"
                    if missing
                    else "has max_shifts 0 for it"
                )
                raise ValueError(
                    f"{where[e, d]}: pins employee {emp.id!r} to shift {st.id!r} on day {d}, "
                    f"a type the employee may never work ({why})"
                )
        return pins

    def previous_rows(self) -> dict[int, list[int | None]] | None:
        """`previous` as employee index -> shift index (None = day off) per day; ValueError
        naming the entry when it does not fit the request."""
        if self.previous is None:
            return None
        days = self.horizon.days
        s_index = {s.id: i for i, s in enumerate(self.shift_types)}
        e_index = {e.id: i for i, e in enumerate(self.employees)}
        rows: dict[int, list[int | None]] = {}
        for i, entry in enumerate(self.previous):
            at = f"previous[{i}] ({entry.employee!r})"
            e = e_index.get(entry.employee)
            if e is None:
                raise ValueError(f"{at}: unknown employee {entry.employee!r}")
            if e in rows:
                raise ValueError(f"{at}: employee {entry.employee!r} appears twice")
            if len(entry.shifts) != days:
                raise ValueError(
                    f"{at}: {len(entry.shifts)} days, the horizon has {days}"
                )
            row: list[int | None] = []
            for d, sid in enumerate(entry.shifts):
                if sid is None:
                    row.append(None)
                    continue
                s = s_index.get(sid)
                if s is None:
                    raise ValueError(f"{at}.shifts[{d}]: unknown shift type {sid!r}")
                row.append(s)
            rows[e] = row
        return rows


# ---------------------------------------------------------------------------- result v1


class Score(_Model):
    hard_violations: int = Field(description="Number of broken hard-rule instances; 0 = feasible.")
    penalty: int = Field(description="Soft penalty (the Curtois objective).")

    @property
    def feasible(self) -> bool:
        return self.hard_violations == 0


class ConstraintMatch(_Model):
    """One reason for points: which rule, which employee, which days, how much."""

    rule: str
    employee: str | None = None
    days: list[int] = Field(default_factory=list)
    shift: str | None = None
    hard_violations: int = 0
    penalty: int = 0
    message: str


class RuleScore(_Model):
    rule: str
    hard: bool
    hard_violations: int
    penalty: int
    matches: list[ConstraintMatch]


class EmployeeScore(_Model):
    employee: str
    hard_violations: int
    penalty: int
    minutes: int
    shifts: int


class Uncovered(_Model):
    day: int
    shift: str
    required: int
    assigned: int


class SolverStats(_Model):
    implementation: Implementation
    seed: int
    time_ms: float
    iterations: int = 0
    evaluations: int = 0
    time_to_first_feasible_ms: float | None = None
    time_to_best_ms: float | None = None
    cancelled: bool = False
    timed_out: bool = False
    # Additive within v1 (docs/versioning.md); their meaning: shared/roster/optimality.py.
    lower_bound: int | None = Field(
        default=None,
        description="The least soft penalty any roster of this request can have, as the solver "
        "proved it (the generetic solver's LP bound); null when the solver proved none (the "
        "greedy, or a column phase whose root priced no round in time).",
    )
    gap: float | None = Field(
        default=None,
        description="(penalty - lower_bound) / lower_bound: how much more the roster may cost "
        "than the best one, e.g. 0.05 for at most 5 %; 0 at the bound. Null without a bound, "
        "with a bound of 0 under a positive penalty, and for a roster with hard violations.",
    )
    proven_optimal: bool = Field(
        default=False,
        description="True only when the roster has no hard violations and its penalty meets "
        "lower_bound: no roster of this request has a smaller penalty.",
    )


class SolveResult(_Model):
    """Solve result, public contract version 1."""

    version: Literal[1] = 1
    assignments: list[EmployeeRoster]
    score: Score
    feasible: bool
    breakdown: list[RuleScore]
    employees: list[EmployeeScore]
    uncovered: list[Uncovered]
    stats: SolverStats | None = Field(
        default=None, description="How the roster was found; absent when it was only evaluated."
    )
    changes: int | None = Field(
        default=None,
        description="Cells that differ from the request's previous roster (the `changes` "
        "rule lists them); absent when the request has none.",
    )


# ---------------------------------------------------------------------------- trusted builds

M = TypeVar("M", bound=BaseModel)

_new = object.__new__
# The slot setters themselves: `object.__setattr__` by name costs about twice as much.
_set_dict = BaseModel.__dict__["__dict__"].__set__
_set_fields_set = BaseModel.__dict__["__pydantic_fields_set__"].__set__
_set_extra = BaseModel.__dict__["__pydantic_extra__"].__set__
_set_private = BaseModel.__dict__["__pydantic_private__"].__set__
_DEFAULTS: dict[type[BaseModel], tuple[tuple[str, Any], ...]] = {}
_N_FIELDS: dict[type[BaseModel], int] = {}


def _defaults(cls: type[BaseModel]) -> tuple[tuple[str, Any], ...]:
    """(name, field info) per field of `cls`, in declaration order."""
    found = _DEFAULTS.get(cls)
    if found is None:
        found = _DEFAULTS[cls] = tuple(cls.model_fields.items())
    return found


def trusted(cls: type[M], values: dict[str, Any]) -> M:
    """`cls(**values)` without validation, for values our own code computed from a validated
    request (the evaluator's verdict): building the ~20 models of a small result through the
    validator cost more than solving it. Unlike `model_construct`, which is slower than
    validating, this only does what construction must: fill the defaults, in declaration order
    (serialization follows the instance dict's order), and set pydantic's slots.

    The values must already have the field types (Python ints, not numpy ones; lists, not
    tuples): nothing is coerced. Input from outside is never built this way. With every field
    given, `values` itself becomes the instance dict, so pass a dict nothing else holds."""
    n = _N_FIELDS.get(cls)
    if n is None:
        n = _N_FIELDS[cls] = len(cls.model_fields)
    if len(values) == n:
        data = values  # every field given, in declaration order (the callers write them so)
    else:
        data = {
            name: values[name] if name in values else info.get_default(call_default_factory=True)
            for name, info in _defaults(cls)
        }
    obj = _new(cls)
    _set_dict(obj, data)  # the callers' dicts are fresh, so they become the instance dicts
    _set_fields_set(obj, set(values))
    _set_extra(obj, None)
    _set_private(obj, None)
    return obj
