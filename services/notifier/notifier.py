"""Notifier logic: the only writer of the public events stream."""

from __future__ import annotations

import logging
from typing import Any

from redis.exceptions import NoScriptError

from services.notifier.event_writer import EventWriter, entry_id, result_lost
from shared.connection.durable import fence
from shared.errors import ErrorClass
from shared.jobs.messages import Outcome, OutcomeKind
from shared.jobs.records import JobRecords, JobState
from shared.observability.logs import job_context
from shared.observability.tracing import entry_scope
from shared.streaming.broker import Service
from shared.streaming.hop import Delivery

log = logging.getLogger("shiftstream.notifier")


class Notifier:
    def __init__(self, svc: Service) -> None:
        s = svc.settings
        self.redis = svc.redis
        self.stream = svc.names.outcomes
        self.records = JobRecords(svc.redis, svc.names, s)
        # The guard lives exactly as long as the idempotency key: while the job id is known no
        # second terminal event can appear, and once intake forgets the id a new job under it
        # gets its own events instead of being solved in silence.
        self.events = EventWriter(
            svc.redis, svc.names, maxlen=s.events_maxlen, guard_ttl=s.idempotency_ttl_seconds
        )
        svc.app.on_startup(self.events.load)
        self.replicas, self.wait_ms = s.wait_replicas, s.redis_wait_timeout_ms
        self.fence_key = svc.names.fence(s.consumer_name)

    async def handle_batch(self, batch: list[Delivery[Outcome]]) -> None:
        """Emit the batch's events in one pipeline, then its terminal records in a second.

        Acked after both: a crash in between re-emits, and the terminal guard of
        `emit_event.lua` turns a second terminal event into nothing (which is also why running
        the batch again after a NOSCRIPT is safe).
        """
        try:
            await self._emit_batch(batch)
        except NoScriptError:
            await self.events.load()
            await self._emit_batch(batch)

    async def _emit_batch(self, batch: list[Delivery[Outcome]]) -> None:
        if self.replicas:
            # What a client is about to see (a job accepted, a roster completed) must survive
            # a failover: everything the batch's outcomes stand on is on a replica before the
            # first event is written (docs/decisions/0012-failover-durability.md).
            await fence(self.redis, self.fence_key, self.replicas, self.wait_ms)
        async with self.redis.pipeline(transaction=False) as pipe:
            for d in batch:
                outcome = d.body
                # The span that ends the job is recorded; `accepted` and `progress` pass
                # through without one: a span costs as much as forwarding the event, and the
                # job's trace already shows them (intake's span, the solve's progress events).
                scope = (
                    entry_scope(self.stream, d, outcome.job_id, outcome.attempts)
                    if outcome.kind.terminal
                    else job_context(outcome.job_id)
                )
                with scope:
                    self.events.queue(pipe, outcome)
            replies = await pipe.execute(raise_on_error=False)
        # Only a lost result is answered here; any other error (a NOSCRIPT) fails the batch.
        for reply in replies:
            if isinstance(reply, Exception) and not result_lost(reply):
                raise reply
        ends = [
            (d.body, written)
            for d, reply in zip(batch, replies, strict=True)
            if d.body.kind.terminal and (written := entry_id(reply)) is not None
        ]
        ends += await self._answer_lost(
            [d.body for d, reply in zip(batch, replies, strict=True) if result_lost(reply)]
        )
        if not ends:
            return
        async with self.redis.pipeline(transaction=False) as pipe:
            for outcome, written in ends:
                self._record_end(pipe, outcome, written)
            await pipe.execute()

    async def _answer_lost(self, outcomes: list[Outcome]) -> list[tuple[Outcome, str]]:
        """A completed outcome whose result key is gone (deleted by hand, or past its TTL
        while the notifier was down) still gets its one terminal event: a failed one that
        says so, since its roster cannot be published."""
        if not outcomes:
            return []
        failed = [
            Outcome(
                kind=OutcomeKind.FAILED,
                job_id=o.job_id,
                attempts=o.attempts,
                error_class=ErrorClass.CRASH,
                reason=f"the roster was lost before it was published: {o.result_key} is gone",
            )
            for o in outcomes
        ]
        for o in outcomes:
            log.error("result of %s lost: %s is gone", o.job_id, o.result_key)
        async with self.redis.pipeline(transaction=False) as pipe:
            for outcome in failed:
                self.events.queue(pipe, outcome)
            replies = await pipe.execute()
        return [(o, w) for o, r in zip(failed, replies, strict=True) if (w := entry_id(r))]

    def _record_end(self, pipe: Any, outcome: Outcome, written: str) -> None:
        if outcome.kind is OutcomeKind.COMPLETED:
            self.records.queue(
                pipe,
                outcome.job_id,
                JobState.COMPLETED,
                attempts=outcome.attempts,
                solver_used=outcome.solver_used,
                solve_time_ms=outcome.solve_time_ms,
                changes=outcome.changes,
                penalty=outcome.penalty,
                hard_violations=outcome.hard_violations,
                lower_bound=outcome.lower_bound_text(),
                gap=outcome.gap_text(),
                proven_optimal=outcome.proven_text(),
                event_id=written,
            )
        elif outcome.kind is OutcomeKind.FAILED:
            self.records.queue(
                pipe,
                outcome.job_id,
                JobState.FAILED,
                attempts=outcome.attempts,
                error_class=outcome.error_class.value if outcome.error_class else None,
                last_error=outcome.reason,
                dead_letter_id=outcome.dead_letter_id,
                event_id=written,
            )
