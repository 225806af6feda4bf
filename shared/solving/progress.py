"""Progress reporting for a running solve: at most one update per interval, readable messages.

The solver polls its control struct every 100 ms, far more often than a client wants events;
`ProgressReporter` decides when an update goes out and what it says.
"""

from __future__ import annotations

from shared.jobs.messages import Outcome, OutcomeKind
from shared.roster.solving import Progress

MESSAGES = (
    "Analysing shifts…",
    "Balancing workloads…",
    "Honouring wishes…",
    "Polishing the roster…",
)
MESSAGE_PERIOD_SECONDS = 5.0


def message_for(elapsed: float) -> str:
    """The message rotates with elapsed time, so every client sees the same text at once."""
    return MESSAGES[int(max(0.0, elapsed) // MESSAGE_PERIOD_SECONDS) % len(MESSAGES)]


def best_score(p: Progress) -> str:
    if p.best_hard < 0:
        return ""
    return f"{p.best_hard}hard/{p.best_penalty}soft"


class ProgressReporter:
    def __init__(self, job_id: str, time_limit: float, interval: float = 1.0) -> None:
        self.job_id = job_id
        self.time_limit = time_limit
        self.interval = interval
        self._last: float | None = None

    def due(self, now: float) -> bool:
        return self._last is None or now - self._last >= self.interval

    def outcome(self, p: Progress, now: float) -> Outcome | None:
        """The update to send at `now` (monotonic seconds), or None if it is too soon."""
        if not self.due(now):
            return None
        self._last = now
        elapsed = p.elapsed
        by_time = elapsed / self.time_limit if self.time_limit > 0 else 0.0
        by_generation = p.generation / p.total_generations if p.total_generations > 0 else 0.0
        fraction = min(0.99, max(by_time, by_generation))
        return Outcome(
            kind=OutcomeKind.PROGRESS,
            job_id=self.job_id,
            progress=round(fraction * 100, 1),
            message=message_for(elapsed),
            generation=f"{p.generation}/{p.total_generations}",
            population=p.population,
            eta_seconds=round(max(0.0, self.time_limit - elapsed), 1),
            best_score=best_score(p),
        )
