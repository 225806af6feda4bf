"""Notifier logic: the only writer of the public events stream."""

from __future__ import annotations

import logging
from typing import Any

from shared.broker import Service
from shared.event_writer import EventWriter
from shared.jobs import JobRecords, JobState
from shared.messages import Outcome, OutcomeKind
from shared.tracing import job_scope

log = logging.getLogger("shiftstream.notifier")


class Notifier:
    def __init__(self, svc: Service) -> None:
        s = svc.settings
        self.redis = svc.redis
        self.dead = svc.names.dead
        self.dead_maxlen = s.dead_maxlen
        self.max_deliveries = s.max_deliveries
        self.records = JobRecords(svc.redis, svc.names, s)
        # The guard lives exactly as long as the idempotency key: while the job id is known no
        # second terminal event can appear, and once intake forgets the id a new job under it
        # gets its own events instead of being solved in silence.
        self.events = EventWriter(
            svc.redis, svc.names, maxlen=s.events_maxlen, guard_ttl=s.idempotency_ttl_seconds
        )

    async def handle(self, outcome: Outcome, msg: Any) -> None:
        with job_scope(outcome.job_id, attempt=outcome.attempts):
            await self._handle(outcome, msg)

    async def _handle(self, outcome: Outcome, msg: Any) -> None:
        count = await msg.get_delivery_count()
        if count > self.max_deliveries:
            # Nothing downstream can take it; keep it for operators instead of looping.
            log.error("outcome %s of %s is poison; parking it", outcome.kind, outcome.job_id)
            await self.redis.xadd(
                self.dead,
                {"poison_outcome": outcome.model_dump_json(), "deliveries": str(count)},
                maxlen=self.dead_maxlen,
                approximate=True,
            )
            return
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
