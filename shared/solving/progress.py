"""Progress reporting for a running solve: at most one update per interval, saying what the
solver is doing in each of its phases.

The solver polls its control struct every 100 ms, far more often than a client wants events;
`ProgressReporter` decides when an update goes out and what it says. A generetic solve runs in
two phases (docs/decisions/0008-column-generation.md): column generation, which has a best
roster and an LP lower bound but no generations or population, then the memetic GA, which has
both. A greedy solve is one construction. The event says which phase runs (`phase`) and carries
the figures that phase has; `message` says it in words, and names a step of the phase during
which the best roster may stand still (`STEPS`).
"""

from __future__ import annotations

from shared.jobs.messages import Outcome, OutcomeKind
from shared.roster.optimality import bound_as_penalty, relative_gap
from shared.roster.solving import STEP_PLAN, STEP_PLANNED, STEP_WEEKEND_MIP, Progress

COLUMNS = "columns"
GENETIC = "genetic"
GREEDY = "greedy"
PHASES = (COLUMNS, GENETIC, GREEDY)
# Before the solver says anything (the request compiling, the solver process starting, the
# column phase sizing the problem up): the event's `phase` is empty. Guessing a phase there
# showed "Column generation" for the first second of 364-day solves the GA alone runs.
STARTING = ""
# Each phase's name in messages and progress bars.
PHASE_NAMES = {
    COLUMNS: "Column generation",
    GENETIC: "Genetic search",
    GREEDY: "Greedy construction",
    STARTING: "Starting",
}
# Steps of a phase that the events name, each with a label that fits where a phase's name
# goes (a progress bar's 80 columns) and words on what it does. During the first two the
# best penalty stands still for a third of a long solve's limit, as the plan's penalties are
# of another problem (csolver, decision 0057); the third runs a MIP with the GA stopped
# (decision 0048). The phase stays the one running: `phase` is an enum of the v1 events.
STEPS = {
    STEP_PLAN: ("Weekend plan", "the weekends planned on the shift types merged"),
    STEP_PLANNED: ("Planned weekends",
                   "the roster walked on the plan's days off and free weekends"),
    STEP_WEEKEND_MIP: ("Weekend MIP", "the weekend days re-planned exactly"),
}
STEP_LABELS = frozenset(label for label, _ in STEPS.values())
# The phases whose steps are named (a greedy construction has none).
STEP_PHASES = (COLUMNS, GENETIC)
# The share of the time limit the generetic solver gives column generation at most
# (csolver.COLUMN_SHARE; tests/test_service_units.py holds the two equal). Only for a solver
# that does not report its phase: this module must not import csolver, which the greedy
# fallback has to run without.
COLUMN_SHARE = 0.75


def best_score(p: Progress) -> str:
    if p.best_hard < 0:
        return ""
    return f"{p.best_hard}hard/{p.best_penalty}soft"


def phase_of(p: Progress, implementation: str = "", time_limit: float = 0.0) -> str:
    """The phase the solver reports (`Progress.phase`), else the one its figures and the
    clock show: a GA with generations, the greedy's one phase, STARTING while there is no
    roster yet, and for a roster from a solver that names no phase the generetic solver's
    column generation for at most `COLUMN_SHARE` of its time limit, then the GA. (Column
    generation may hand over earlier, when its root LP is slow; only the solver knows.)"""
    if p.phase:
        return p.phase
    if implementation == GREEDY:
        return GREEDY
    if p.population > 0 or p.generation > 0:
        return GENETIC
    if p.best_hard < 0:
        # nothing reported at all: an isolated solver's process is still starting, and which
        # phase comes first depends on the problem's size (csolver gives up columns on long
        # horizons), so any guess may be a lie
        return STARTING
    if time_limit > 0 and p.elapsed >= COLUMN_SHARE * time_limit:
        return GENETIC
    return COLUMNS


def bound_of(p: Progress) -> int | None:
    """The LP bound as a penalty: penalties are whole numbers, so the bound rounds up."""
    return bound_as_penalty(p.lower_bound)


def _bound_words(p: Progress) -> str:
    """', LP bound N (gap x %)' as far as they are known (the gap as the result states it)."""
    bound = bound_of(p)
    if bound is None:
        return ""
    text = f", LP bound {bound}"
    if p.best_hard == 0:
        gap = relative_gap(p.best_penalty, bound)
        if gap is not None:
            text += f" (gap {gap:.1%})"
    return text


def _best_words(p: Progress) -> str:
    if p.best_hard < 0:
        return "no roster yet"
    words = f"best roster: penalty {p.best_penalty}"
    if p.best_hard > 0:
        words += f", {p.best_hard} hard rule{'s' if p.best_hard != 1 else ''} broken"
    return words


def describe(p: Progress, phase: str, generation_total: int | None = None) -> str:
    """The progress message: the phase (or the step of it running, `STEPS`) and its
    figures, in words."""
    if p.step in STEPS and phase in STEP_PHASES:
        label, words = STEPS[p.step]
        gen = f"generation {p.generation}, " if p.generation > 0 else ""
        return f"{label}: {words}; {gen}{_best_words(p)}{_bound_words(p)}"
    if phase == COLUMNS:
        return f"{PHASE_NAMES[COLUMNS]}: {_best_words(p)}{_bound_words(p)}"
    if phase == GENETIC:
        # generation 0 is the first anneal: on long horizons nearly the whole solve, so the
        # words go to the roster, not to a count that does not move
        of = f" of ~{generation_total}" if generation_total else ""
        gen = f"generation {p.generation}{of}, " if p.generation > 0 else ""
        return f"{PHASE_NAMES[GENETIC]}: {gen}{_best_words(p)}{_bound_words(p)}"
    if phase == GREEDY:
        return f"{PHASE_NAMES[GREEDY]}: {_best_words(p)}"
    if phase == STARTING:
        return f"{PHASE_NAMES[STARTING]}: {_best_words(p)}"
    return f"Solving ({phase}): {_best_words(p)}"


class ProgressReporter:
    def __init__(
        self, job_id: str, time_limit: float, interval: float = 1.0, implementation: str = ""
    ) -> None:
        self.job_id = job_id
        self.time_limit = time_limit
        self.interval = interval
        self.implementation = implementation
        self._last: float | None = None
        # When the GA was first seen and at which generation: its pace estimates how many
        # generations the time left holds (a time-limited GA knows no total of its own).
        self._ga_start: tuple[float, int] | None = None

    def due(self, now: float) -> bool:
        return self._last is None or now - self._last >= self.interval

    def expected_generations(self, p: Progress, now: float, eta: float) -> int | None:
        if p.total_generations > 0:
            return p.total_generations
        if self._ga_start is None:
            return None
        t0, g0 = self._ga_start
        if now <= t0 or p.generation <= g0:
            return None
        rate = (p.generation - g0) / (now - t0)
        return p.generation + round(rate * eta)

    def outcome(self, p: Progress, now: float) -> Outcome | None:
        """The update to send at `now` (monotonic seconds), or None if it is too soon."""
        phase = phase_of(p, self.implementation, self.time_limit)
        if phase == GENETIC and self._ga_start is None:
            self._ga_start = (now, p.generation)
        if not self.due(now):
            return None
        self._last = now
        elapsed = p.elapsed
        eta = max(0.0, self.time_limit - elapsed)
        by_time = elapsed / self.time_limit if self.time_limit > 0 else 0.0
        by_generation = p.generation / p.total_generations if p.total_generations > 0 else 0.0
        fraction = min(0.99, max(by_time, by_generation))
        total = self.expected_generations(p, now, eta) if phase == GENETIC else None
        bound = bound_of(p)
        return Outcome(
            kind=OutcomeKind.PROGRESS,
            job_id=self.job_id,
            progress=round(fraction * 100, 1),
            message=describe(p, phase, total),
            phase=phase,
            # `g/expected`, only where there are generations and an estimate of how many.
            generation=f"{p.generation}/{total}" if total else "",
            population=p.population,
            eta_seconds=round(eta, 1),
            best_score=best_score(p),
            lower_bound=float(bound) if bound is not None else None,
        )
