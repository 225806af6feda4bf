"""Malformed and random compiled problems: the wrapper raises ValueError or the C validator
rejects the problem; nothing ever crashes the process."""

from __future__ import annotations

import dataclasses

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import csolver
from shared.roster.compiled import Problem
from shared.roster.solving import SolveControl
from tests.csolver_helpers import random_problem, random_roster, with_repair

FUZZ = settings(max_examples=150, deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

ARRAYS = (
    "length", "forbidden", "max_shifts", "min_minutes", "max_minutes", "max_consec",
    "min_consec", "min_off", "max_weekends", "day_off", "weekend", "on_ptr", "on_shift",
    "on_weight", "off_ptr", "off_shift", "off_weight", "cover_req", "cover_under", "cover_over",
)


@st.composite
def problems(draw: st.DrawFn) -> Problem:
    seed = draw(st.integers(0, 2**32 - 1))
    e, d, s = draw(st.integers(1, 6)), draw(st.integers(1, 21)), draw(st.integers(1, 4))
    rng = np.random.default_rng(seed)
    p = random_problem(rng, e, d, s, draw(st.integers(0, 6)))
    # half of them re-rostering problems: pins and a previous roster
    return with_repair(p, rng) if draw(st.booleans()) else p


def exercise(p: Problem, seed: int) -> None:
    """Validate, score and briefly solve; only ValueError may come out."""
    try:
        csolver.validate(p)
    except ValueError:
        return
    roster = random_roster(p, np.random.default_rng(seed))
    hard, pen = csolver.score(p, roster)
    assert hard >= 0 and pen >= 0
    run = csolver.solve_generetic(p, time_limit=0.05, seed=seed, control=SolveControl(),
                                  max_evaluations=2000)
    assert run.roster.shape == (p.n_employees, p.n_days)
    assert run.roster.min() >= -1 and run.roster.max() < p.n_shifts
    if p.pin is not None:
        pinned = p.pin != -2
        assert (run.roster[pinned] == p.pin[pinned]).all()


@FUZZ
@given(problems(), st.integers(0, 1000))
def test_valid_random_problems_solve(p: Problem, seed: int) -> None:
    csolver.validate(p)
    exercise(p, seed)


@FUZZ
@given(problems(), st.sampled_from(ARRAYS), st.data())
def test_corrupted_values_never_crash(p: Problem, name: str, data: st.DataObject) -> None:
    arr = np.array(getattr(p, name), copy=True)
    if arr.size == 0:
        return
    idx = data.draw(st.integers(0, arr.size - 1))
    value = data.draw(st.sampled_from([-(2**31), -2, -1, p.n_shifts, p.n_days, 2, 255, 2**31 - 1,
                                       int(arr.flat[idx]) + 1]))
    info = np.iinfo(arr.dtype)
    if not info.min <= value <= info.max:
        value = info.max
    arr.flat[idx] = value
    exercise(dataclasses.replace(p, **{name: arr}), idx)


@FUZZ
@given(problems(), st.sampled_from(["pin", "previous"]), st.data())
def test_corrupted_pins_and_previous_never_crash(p: Problem, name: str,
                                                 data: st.DataObject) -> None:
    if getattr(p, name) is None:
        p = with_repair(p, np.random.default_rng(data.draw(st.integers(0, 1000))))
    arr = np.array(getattr(p, name), copy=True)
    idx = data.draw(st.integers(0, arr.size - 1))
    arr.flat[idx] = data.draw(st.sampled_from([-(2**31), -3, p.n_shifts, 2**31 - 1]))
    broken = dataclasses.replace(p, **{name: arr})
    try:
        csolver.validate(broken)
    except ValueError:
        return
    # a previous value below -2 is no previous value, which is valid
    assert name == "previous"
    exercise(broken, idx)


@FUZZ
@given(problems(), st.sampled_from(ARRAYS), st.data())
def test_wrong_shapes_raise_value_error(p: Problem, name: str, data: st.DataObject) -> None:
    arr = np.asarray(getattr(p, name))
    kind = data.draw(st.sampled_from(["shorter", "longer", "2d", "float"]))
    if kind == "shorter":
        bad = arr.reshape(-1)[:-1] if arr.size else np.zeros(0, arr.dtype)
        if arr.ndim == 2 and arr.size:
            bad = arr[:, :-1] if arr.shape[1] > 0 else arr[:-1]
    elif kind == "longer":
        flat = arr.reshape(-1)
        bad = np.concatenate([flat, flat[:1] if flat.size else np.zeros(1, arr.dtype)])
    elif kind == "2d":
        bad = arr.reshape(1, -1) if arr.ndim == 1 else arr.reshape(-1)
    else:
        bad = arr.astype(np.float64)
    broken = dataclasses.replace(p, **{name: bad})
    try:
        csolver.validate(broken)
    except ValueError:
        return
    # a few reshapes are harmless (a 2-D view of a one-element array, an integer-valued float
    # copy); whatever passes validation must then score and solve without trouble
    exercise(broken, 0)


@FUZZ
@given(problems(), st.data())
def test_broken_csr_pointers_rejected(p: Problem, data: st.DataObject) -> None:
    which = data.draw(st.sampled_from(["on_ptr", "off_ptr"]))
    ptr = np.array(getattr(p, which), copy=True)
    mode = data.draw(st.sampled_from(["start", "end", "decrease"]))
    if mode == "start":
        ptr[0] = 1
    elif mode == "end":
        ptr[-1] += data.draw(st.sampled_from([-1, 1, 1000]))
    else:
        i = data.draw(st.integers(1, ptr.size - 1))
        ptr[i] = ptr[i - 1] - 1
    broken = dataclasses.replace(p, **{which: ptr})
    try:
        csolver.validate(broken)
    except ValueError:
        pass
    else:
        raise AssertionError(f"{which} corrupted ({mode}) but accepted")
    try:
        csolver.score(broken, broken.empty_roster())
    except ValueError:
        return
    raise AssertionError("score accepted a broken CSR")


def test_negative_sizes_rejected() -> None:
    p = random_problem(np.random.default_rng(0), 3, 7, 2)
    for bad in (dataclasses.replace(p, n_weekends=-1),
                dataclasses.replace(p, shift_ids=()),
                dataclasses.replace(p, employee_ids=())):
        try:
            csolver.validate(bad)
        except ValueError:
            continue
        raise AssertionError("accepted a problem with a bad size")
