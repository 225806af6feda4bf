"""Realistic random roster instances for demos and benchmarks, reproducible by seed.

A hospital ward: early, late and night shifts plus an ICU day shift, a minimum rest of 11 hours
(so late -> early and night -> early/late are forbidden by rest, not by a list), nurses with
seniority and ICU skills, full- and part-time contracts, a few fixed days off and wishes.
Contracts are deliberately loose enough that the greedy solver finds a feasible roster: the
demo must show a solve that succeeds, and the hard part of the benchmark is the cover.
"""

from __future__ import annotations

import datetime as dt
import math
import random

from shared.roster.model import (
    Cover,
    Employee,
    Horizon,
    ShiftRequest,
    ShiftType,
    SolveRequest,
)

# (id, start, minutes, required skills, share of the daily demand)
SHIFT_TYPES: tuple[tuple[str, dt.time, int, tuple[str, ...], float], ...] = (
    ("early", dt.time(7, 0), 480, ("nurse",), 0.38),
    ("late", dt.time(15, 0), 480, ("nurse",), 0.32),
    ("night", dt.time(23, 0), 480, ("nurse", "senior"), 0.20),
    ("icu", dt.time(9, 0), 480, ("nurse", "icu"), 0.10),
)
MIN_REST_MINUTES = 660
WEEKEND_DEMAND = 0.7  # weekends need fewer people
# Average share of the days one employee may work; sizes the horizon when `days` is not given.
WORKLOAD = 0.5


def default_days(employees: int, shifts: int) -> int:
    """Two weeks unless the demand needs a longer horizon to be coverable."""
    weeks = max(2, math.ceil(shifts / (employees * 7 * WORKLOAD)))
    return 7 * weeks


def _demand(shifts: int, days: int, start: dt.date, rng: random.Random) -> list[list[int]]:
    """Split `shifts` heads over days and shift types in proportion to the shares, exactly."""
    weights = []
    for d in range(days):
        weekday = (start + dt.timedelta(days=d)).weekday()
        day_factor = WEEKEND_DEMAND if weekday >= 5 else 1.0
        weights.append([day_factor * share for *_, share in SHIFT_TYPES])
    total = sum(map(sum, weights))
    exact = [[shifts * w / total for w in row] for row in weights]
    out = [[int(x) for x in row] for row in exact]
    remainder = shifts - sum(map(sum, out))
    order = sorted(
        ((d, s) for d in range(days) for s in range(len(SHIFT_TYPES))),
        key=lambda c: (exact[c[0]][c[1]] - out[c[0]][c[1]], rng.random()),
        reverse=True,
    )
    for d, s in order[:remainder]:
        out[d][s] += 1
    return out


def _employee(index: int, days: int, rng: random.Random) -> Employee:
    skills = ["nurse"]
    if rng.random() < 0.35:
        skills.append("senior")
    if rng.random() < 0.2:
        skills.append("icu")
    weeks = days / 7
    full_time = rng.random() < 0.6
    if full_time:
        max_minutes = int(5 * 480 * weeks)
        min_minutes = int(1 * 480 * weeks)
        max_consec, min_consec, min_off = 5, 2, 2
        max_weekends = max(1, math.ceil(weeks / 2))
    else:
        max_minutes = int(3 * 480 * weeks)
        min_minutes = 0
        max_consec, min_consec, min_off = 4, 1, 1
        max_weekends = max(1, math.floor(weeks / 2))
    taken: set[int] = set(rng.sample(range(days), k=rng.randint(0, 2)))
    on: list[ShiftRequest] = []
    off: list[ShiftRequest] = []
    for _ in range(rng.randint(0, 3)):
        day = rng.randrange(days)
        if day in taken:
            continue
        taken.add(day)
        eligible = [sid for sid, _, _, need, _ in SHIFT_TYPES if set(need) <= set(skills)]
        shift = rng.choice(eligible)
        wish = ShiftRequest(day=day, shift=shift, weight=rng.randint(1, 3))
        (on if rng.random() < 0.5 else off).append(wish)
    days_off = sorted(d for d in taken if all(r.day != d for r in on + off))
    return Employee(
        id=f"N{index + 1:03d}",
        skills=skills,
        min_minutes=min_minutes,
        max_minutes=max_minutes,
        max_consecutive_shifts=max_consec,
        min_consecutive_shifts=min_consec,
        min_consecutive_days_off=min_off,
        max_weekends=max_weekends,
        days_off=days_off,
        shift_on_requests=sorted(on, key=lambda r: r.day),
        shift_off_requests=sorted(off, key=lambda r: r.day),
    )


def generate(
    employees: int = 80, shifts: int = 200, seed: int = 0, days: int | None = None
) -> SolveRequest:
    """An instance with `employees` people and `shifts` heads of cover over the horizon."""
    if employees < 1 or shifts < 0:
        raise ValueError("employees must be at least 1 and shifts not negative")
    rng = random.Random(seed)
    n_days = days if days is not None else default_days(employees, shifts)
    start = dt.date(2026, 1, 5)  # a Monday, like the benchmark
    demand = _demand(shifts, n_days, start, rng)
    staff = [_employee(i, n_days, rng) for i in range(employees)]
    # Every shift type needs someone able to work it, or its cover is unreachable by design.
    for *_, need, _share in SHIFT_TYPES:
        if not any(set(need) <= set(e.skills) for e in staff):
            first = staff[0]
            staff[0] = first.model_copy(update={"skills": sorted({*first.skills, *need})})
    return SolveRequest(
        name=f"generated-{employees}x{shifts}-seed{seed}",
        horizon=Horizon(start_date=start, days=n_days),
        min_rest_minutes=MIN_REST_MINUTES,
        shift_types=[
            ShiftType(id=sid, start=start_time, length_minutes=minutes, required_skills=list(need))
            for sid, start_time, minutes, need, _ in SHIFT_TYPES
        ],
        cover=[
            Cover(day=d, shift=SHIFT_TYPES[s][0], required=demand[d][s])
            for d in range(n_days)
            for s in range(len(SHIFT_TYPES))
        ],
        employees=staff,
    )
