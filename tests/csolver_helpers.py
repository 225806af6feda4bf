"""Shared builders for the csolver tests: benchmark instances and random compiled problems,
and a poller of a running solve's progress."""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np

from shared.roster.compiled import FREE, I32, Problem, compile_request, weekend_index
from shared.roster.curtois import bench_dir, load_curtois, parse_curtois

BENCH = bench_dir()


@contextlib.contextmanager
def polling(look: Callable[[], object], every: float = 0.05) -> Iterator[None]:
    """While the block runs, a thread calls `look` every `every` seconds, as a caller polls a
    running solve's progress, until `look` returns something true; joined on leaving."""
    done = threading.Event()

    def poll() -> None:
        while not done.wait(every):
            if look():
                return

    poller = threading.Thread(target=poll)
    poller.start()
    try:
        yield
    finally:
        done.set()
        poller.join()


@functools.cache
def instance(i: int) -> Problem:
    return compile_request(load_curtois(Path(BENCH) / f"Instance{i}.txt"))


@functools.cache
def cut_instance(i: int, days: int, staff: int) -> Problem:
    """Instance i cut to its first `days` days and `staff` employees: each employee's limits
    (shifts per type, minimum and maximum minutes, weekends) scaled to the shorter horizon,
    the cover to the smaller staff. Scaling both minute limits narrows their window: Instance
    24 to 84 days x 40 staff leaves 166 minutes, less than one shift."""
    lines = (Path(BENCH) / f"Instance{i}.txt").read_text().splitlines()
    section, out = "", []
    horizon = int(next(x for x in lines[lines.index("SECTION_HORIZON") + 1:]
                        if x.strip() and not x.startswith("#")))
    everyone = sum(1 for x in lines[lines.index("SECTION_STAFF") + 1:lines.index(
        "SECTION_DAYS_OFF")] if x.strip() and not x.startswith("#"))
    time_share, staff_share = days / horizon, staff / everyone
    kept: set[str] = set()

    def scaled(v: str, share: float) -> int:
        return round(int(v) * share)

    for line in lines:
        f = line.split(",")
        if line.startswith("SECTION_"):
            section = line
        elif not line.strip() or line.startswith("#"):
            pass
        elif section == "SECTION_HORIZON":
            line = str(days)
        elif section == "SECTION_STAFF":
            if len(kept) == staff:
                continue
            kept.add(f[0])
            f[1] = "|".join(f"{t}={min(days, scaled(n, time_share))}"
                            for t, n in (kv.split("=") for kv in f[1].split("|")))
            f[2], f[3] = str(scaled(f[2], time_share)), str(scaled(f[3], time_share))
            f[7] = str(max(1, scaled(f[7], time_share)))
            line = ",".join(f)
        elif section == "SECTION_DAYS_OFF":
            off = [x for x in f[1:] if int(x) < days]
            if f[0] not in kept or not off:
                continue
            line = ",".join([f[0], *off])
        elif section in ("SECTION_SHIFT_ON_REQUESTS", "SECTION_SHIFT_OFF_REQUESTS"):
            if f[0] not in kept or int(f[1]) >= days:
                continue
        elif section == "SECTION_COVER":
            if int(f[0]) >= days:
                continue
            f[2] = str(scaled(f[2], staff_share))
            line = ",".join(f)
        out.append(line)
    return compile_request(parse_curtois("\n".join(out) + "\n", f"Instance{i}-{days}x{staff}"))


def random_roster(p: Problem, rng: np.random.Generator, off_share: float = 0.4) -> I32:
    """Random shifts (eligible or not, on fixed days off or not) and random days off."""
    r = rng.integers(0, p.n_shifts, size=(p.n_employees, p.n_days), dtype=np.int32)
    r[rng.random(r.shape) < off_share] = -1
    return r


def _csr(rng: np.random.Generator, cells: int, s: int, density: float) -> tuple[I32, I32, I32]:
    counts = (rng.random(cells) < density) * rng.integers(1, 3, size=cells)  # 0, 1 or 2 per cell
    ptr = np.zeros(cells + 1, dtype=np.int32)
    ptr[1:] = np.cumsum(counts)
    n = int(ptr[-1])
    return ptr, rng.integers(0, s, size=n, dtype=np.int32), rng.integers(0, 4, size=n,
                                                                         dtype=np.int32)


def random_problem(rng: np.random.Generator, e: int, d: int, s: int,
                   start_weekday: int = 0) -> Problem:
    """A valid compiled problem with every rule active and several requests per cell."""
    weekend, n_weekends = weekend_index(start_weekday, d)
    on_ptr, on_shift, on_weight = _csr(rng, e * d, s, 0.2)
    off_ptr, off_shift, off_weight = _csr(rng, e * d, s, 0.2)
    i32 = np.int32

    def ints(lo: int, hi: int, shape: tuple[int, ...]) -> I32:
        return rng.integers(lo, hi, size=shape, dtype=i32)

    min_minutes = ints(0, 480 * d // 2 + 1, (e,))
    return Problem(
        shift_ids=tuple(f"s{i}" for i in range(s)),
        employee_ids=tuple(f"e{i}" for i in range(e)),
        length=rng.choice(np.array([240, 480, 600, 720], dtype=i32), size=s),
        forbidden=(rng.random((s, s)) < 0.3).astype(np.uint8),
        max_shifts=np.where(rng.random((e, s)) < 0.2, 0, ints(1, d + 1, (e, s))).astype(i32),
        min_minutes=min_minutes,
        max_minutes=(min_minutes + ints(0, 480 * d, (e,))).astype(i32),
        max_consec=ints(1, d + 1, (e,)),
        min_consec=ints(1, 4, (e,)),
        min_off=ints(1, 4, (e,)),
        max_weekends=ints(0, n_weekends + 1, (e,)),
        day_off=(rng.random((e, d)) < 0.1).astype(np.uint8),
        weekend=weekend,
        n_weekends=n_weekends,
        on_ptr=on_ptr,
        on_shift=on_shift,
        on_weight=on_weight,
        off_ptr=off_ptr,
        off_shift=off_shift,
        off_weight=off_weight,
        cover_req=ints(0, max(2, e // s + 1), (d, s)),
        cover_under=ints(0, 200, (d, s)),
        cover_over=ints(0, 5, (d, s)),
    )


def with_repair(p: Problem, rng: np.random.Generator, pin_share: float = 0.2,
                change_weight: int | None = None) -> Problem:
    """`p` with random pins (a share of the cells, each pinned to a random value, day off
    included, whether the request would allow it or not) and a random previous roster with a
    few cells left out, so both the `pinned` and the `changes` rules have work."""
    e, d = p.n_employees, p.n_days
    pin = np.full((e, d), FREE, dtype=np.int32)
    chosen = rng.random((e, d)) < pin_share
    pin[chosen] = rng.integers(-1, p.n_shifts, size=int(chosen.sum()), dtype=np.int32)
    previous = random_roster(p, rng)
    previous[rng.random((e, d)) < 0.1] = FREE
    weight = int(rng.integers(0, 30)) if change_weight is None else change_weight
    return dataclasses.replace(p, pin=pin, previous=previous, change_weight=weight)


def pinned_roster(p: Problem, rng: np.random.Generator, keep_share: float = 0.8) -> I32:
    """A random roster that keeps most pins (and so breaks a few)."""
    r = random_roster(p, rng, float(rng.random()))
    if p.pin is not None:
        keep = (p.pin != FREE) & (rng.random(r.shape) < keep_share)
        r[keep] = p.pin[keep]
    return r
