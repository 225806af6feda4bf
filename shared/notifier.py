"""Notifier logic: the only writer of the public events stream."""

from __future__ import annotations

from shared.broker import Service
from shared.event_writer import EventWriter
from shared.jobs import JobRecords, JobState
from shared.messages import Outcome, OutcomeKind


class Notifier:
    def __init__(self, svc: Service) -> None:
        s = svc.settings
        self.records = JobRecords(svc.redis, svc.names, s)
        # The guard outlives the idempotency key, so a late redelivery can never add a second
        # terminal event while anyone could still be reading.
        self.events = EventWriter(
            svc.redis,
            svc.names,
            maxlen=s.events_maxlen,
            guard_ttl=max(s.job_ttl_seconds, s.idempotency_ttl_seconds),
        )

    async def handle(self, outcome: Outcome) -> None:
        written = await self.events.emit(outcome)
        if written is None or not outcome.kind.terminal:
            return
        if outcome.kind is OutcomeKind.COMPLETED:
            await self.records.update(
                outcome.job_id,
                JobState.COMPLETED,
                attempts=outcome.attempts,
                solver_used=outcome.solver_used,
                solve_time_ms=outcome.solve_time_ms,
                event_id=written,
            )
        else:
            await self.records.update(
                outcome.job_id,
                JobState.FAILED,
                attempts=outcome.attempts,
                error_class=outcome.error_class.value if outcome.error_class else None,
                last_error=outcome.reason,
                dead_letter_id=outcome.dead_letter_id,
                event_id=written,
            )
