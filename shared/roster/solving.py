"""The solver strategy interface: every implementation takes a compiled `Problem` and returns a
`SolverRun`, watched and stopped through a `SolveControl`.

Only types live here, so that every implementation (the greedy in this package, the C solver in
`csolver`) imports them without importing the others; `shared.solving.dispatch` picks one by name
and scores its roster.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from shared.roster.compiled import I32, Problem
from shared.roster.evaluator import Evaluation

# `Progress.step`'s codes: the weekends planned on the shift types merged, the roster walked
# on the plan's days off and then its free weekends, the weekend days re-planned exactly
# (decisions 0057, 0061, 0048).
STEP_PLAN = "plan"
STEP_PLANNED = "planned"
STEP_WEEKEND_MIP = "weekend_mip"


@dataclass
class Progress:
    """Live figures a running solve publishes; read by pollers from another thread.

    Plain attribute writes are atomic under the GIL and the C solver's struct is copied into
    this object by its wrapper, so a reader may see a slightly stale but never a torn value.
    """

    generation: int = 0
    total_generations: int = 0  # 0 = unknown (time-limited search)
    population: int = 0
    best_hard: int = -1  # -1 = no roster yet
    best_penalty: int = -1
    evaluations: int = 0
    started: float = field(default_factory=time.monotonic)
    # What the solver is doing: "columns" (column generation), "genetic" (the memetic GA),
    # "greedy"; "" when the solver does not say (shared/solving/progress.py infers it).
    phase: str = ""
    # The least penalty any roster can have, as the column phase's LP proves it; None: unknown.
    lower_bound: float | None = None
    # A step of the phase that a user should see named, because the best penalty may stand
    # still during it: one of the STEP_* codes below, "" for none (shared/solving/progress.py
    # words them).
    step: str = ""

    @property
    def elapsed(self) -> float:
        return time.monotonic() - self.started


@dataclass
class SolveControl:
    """What a caller holds to watch and stop a solve."""

    cancel: threading.Event = field(default_factory=threading.Event)
    progress: Progress = field(default_factory=Progress)
    # Refreshes the caller's view of `progress` (the C wrapper copies its struct here).
    refresh: Callable[[], None] = lambda: None


@dataclass(frozen=True)
class SolverRun:
    roster: I32
    iterations: int = 0
    evaluations: int = 0
    time_to_first_feasible_ms: float | None = None
    time_to_best_ms: float | None = None
    cancelled: bool = False
    timed_out: bool = False
    # The evaluator's verdict on `roster` when the solver already computed it, so the result
    # is not scored twice.
    evaluation: Evaluation | None = None
    # The least penalty any roster can have, as the solver proved it (shared/roster/
    # optimality.py); None when it proved none.
    lower_bound: float | None = None


class Solver(Protocol):
    def __call__(
        self, problem: Problem, *, time_limit: float, seed: int, control: SolveControl
    ) -> SolverRun: ...
