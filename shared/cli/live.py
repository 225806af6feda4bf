"""The one line a running solve shows: `solve` from the solver in this process, `watch` and
`submit --watch` from the job's events.

The line names the phase (or a step of it that holds the best roster still, such as a weekend
plan), then the best roster's figures once each (its penalty, its gap to the bound), so that
an 80-column terminal holds them whole: the services' `message` says the same in a sentence,
too long for a line beside a bar. When the solve ends, the line takes the result's figures,
so the last line drawn agrees with the verdict printed below it.
"""

from __future__ import annotations

import re

from shared.roster.model import SolveResult
from shared.roster.optimality import relative_gap
from shared.solving.progress import PHASE_NAMES, STEP_LABELS, STEP_PHASES, STEPS

_BEST_SCORE = re.compile(r"^(\d+)hard/(\d+)soft$")


def phase_label(phase: str | None, message: str = "", step: str = "") -> str:
    """The name of the step running (`step`, or the one the event's message leads with: the
    events carry no step field), else of the phase; from services older than the `phase`
    field, the name their message leads with."""
    head, sep, _ = message.partition(":")
    head = head.strip() if sep else ""
    if step in STEPS and phase in STEP_PHASES:
        return STEPS[step][0]
    if head in STEP_LABELS:
        return head
    if phase is not None and phase in PHASE_NAMES:
        return PHASE_NAMES[phase]
    return head or "solving"


def figures(
    hard: int,
    penalty: int,
    bound: int | None = None,
    gap: float | None = None,
    proven_optimal: bool = False,
) -> str:
    """The best roster in a few words: 'penalty 1147  gap 0.53%'; `hard` < 0: none yet.
    The gap is formatted as the verdict line formats it (shared/cli/roster.py)."""
    if hard < 0:
        return "no roster yet"
    if hard > 0:  # no gap of an infeasible roster: the hard rules say more
        return f"{hard} hard, penalty {penalty}"
    text = f"penalty {penalty}"
    if proven_optimal:
        return f"{text}  proven optimal"
    if gap is None and bound is not None:
        gap = relative_gap(penalty, bound)
    return f"{text}  gap {gap:.2%}" if gap is not None else text


def progress_figures(ev: dict[str, str]) -> str:
    """A `solver.progress` event's figures, and the time it has left."""
    match = _BEST_SCORE.match(ev.get("best_score") or "")
    bound = ev.get("lower_bound") or ""
    text = (
        figures(int(match[1]), int(match[2]), int(bound) if bound.isdigit() else None)
        if match
        else figures(-1, -1)
    )
    if ev.get("eta_seconds"):
        text += f"  eta {ev['eta_seconds']} s"
    return text


def result_figures(result: SolveResult | None) -> str:
    """The figures of a finished roster, as the verdict line has them; empty without one
    (the verdict below says why)."""
    if result is None:
        return ""
    stats = result.stats
    return figures(
        result.score.hard_violations,
        result.score.penalty,
        gap=stats.gap if stats is not None else None,
        proven_optimal=stats is not None and stats.proven_optimal is True,
    )
