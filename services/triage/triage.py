"""Triage logic: dead-letter permanent failures, retry transient ones with backoff."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

from services.triage.backoff import backoff_delay
from services.triage.decide import DeadLetterIt, Retry, decide, poisoned
from shared.connection.factory import AsyncRedis
from shared.jobs.dead_letters import dead_letter_id_of
from shared.jobs.messages import (
    AttemptError,
    DeadLetter,
    FailureRecord,
    Outcome,
    OutcomeKind,
    now,
)
from shared.jobs.records import JobRecords, JobState
from shared.jobs.schedule import Schedule
from shared.observability.tracing import job_scope
from shared.streaming.broker import Service
from shared.streaming.hop import Delivery

log = logging.getLogger("shiftstream.triage")


class Triage:
    def __init__(self, svc: Service) -> None:
        self.svc = svc
        self.s = svc.settings
        self.names = svc.names
        self.records = JobRecords(svc.redis, svc.names, svc.settings)
        self.schedule = Schedule(svc.redis, svc.names)
        self._promoter: asyncio.Task[None] | None = None
        self._trimmer: asyncio.Task[None] | None = None
        svc.app.after_startup(self.start_promoter)
        svc.app.on_shutdown(self.stop_promoter)

    async def handle(self, delivery: Delivery[FailureRecord]) -> None:
        failure = delivery.body
        attempt = failure.job.attempt if failure.job else None
        with job_scope(failure.job_id, attempt=attempt):
            verdict = decide(
                failure, max_attempts=self.s.retry_max_attempts, delay_after=self.backoff
            )
            if isinstance(verdict, Retry):
                await self.retry(failure, verdict)
            else:
                await self.dead_letter(failure, verdict)

    def backoff(self, attempt: int) -> float:
        s = self.s
        return backoff_delay(
            attempt, base=s.retry_base_seconds, factor=s.retry_factor, cap=s.retry_cap_seconds
        )

    async def on_poison(self, delivery: Delivery[FailureRecord], pipe: Any) -> None:
        """The poison reaction of triage's hop: dead-letter at once (it cannot go to triage)."""
        await self.dead_letter(delivery.body, poisoned(delivery.body), pipe)

    async def retry(self, failure: FailureRecord, retry: Retry) -> None:
        job = retry.job
        log.info("retrying %s (attempt %d) in %.2fs", job.job_id, job.attempt, retry.delay)
        await self.records.update(
            job.job_id,
            JobState.RETRYING,
            attempts=job.attempt - 1,
            last_error=failure.reason,
            next_attempt_at=now() + retry.delay,
        )
        await self.schedule.add(job, now() + retry.delay)
        self.svc.metrics.retry(job.attempt)

    async def dead_letter(
        self, failure: FailureRecord, verdict: DeadLetterIt, pipe: Any = None
    ) -> None:
        """Write the dead letter, its job record and the failed outcome (into `pipe` if given)."""
        failure = failure.model_copy(
            update={"error_class": verdict.error_class, "reason": verdict.reason}
        )
        job = failure.job
        history: list[AttemptError] = list(job.history) if job else []
        if not history or history[-1].message not in failure.reason:
            history.append(
                AttemptError(
                    attempt=job.attempt if job else 0,
                    stage=failure.stage,
                    error_class=failure.error_class,
                    error_type=failure.error_class.value,
                    message=failure.reason,
                    at=failure.at,
                )
            )
        attempts = job.attempt if job else 0
        dead_letter_id = dead_letter_id_of(failure.job_id, attempts, failure.reason)
        letter = DeadLetter(
            dead_letter_id=dead_letter_id,
            job_id=failure.job_id,
            error_class=failure.error_class,
            reason=failure.reason,
            attempts=attempts,
            payload=job.payload if job else None,
            raw=failure.raw,
            history=history,
            trace_id=failure.trace_id,
            first_seen=job.submitted_at if job else failure.at,
            priority=job.priority if job else None,
        )
        await self.svc.publish(letter, self.names.dead, maxlen=self.s.dead_maxlen, pipeline=pipe)
        await self.records.update(
            failure.job_id,
            attempts=attempts,
            last_error=failure.reason,
            dead_letter_id=dead_letter_id,
        )
        await self.svc.publish(
            Outcome(
                kind=OutcomeKind.FAILED,
                job_id=failure.job_id,
                error_class=failure.error_class,
                reason=failure.reason,
                attempts=attempts,
                dead_letter_id=dead_letter_id,
            ),
            self.names.outcomes,
            pipeline=pipe,
        )

    # ------------------------------------------------------------------ delay schedule

    async def start_promoter(self) -> None:
        self._promoter = asyncio.create_task(self._promote_loop())
        self._trimmer = asyncio.create_task(self._trim_loop())

    async def stop_promoter(self) -> None:
        for task in (self._promoter, self._trimmer):
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task

    async def trim_dead(self) -> int:
        return await trim_dead(self.svc.redis, self.names.dead, self.s.dead_max_age_seconds)

    async def _trim_loop(self) -> None:
        while True:
            try:
                dropped = await self.trim_dead()
                if dropped:
                    log.info("trimmed %d dead letters older than the retention", dropped)
            except Exception:  # retried next interval; trimming is idempotent
                log.warning("trimming dead letters failed", exc_info=True)
            await asyncio.sleep(self.s.trim_interval_seconds)

    async def _promote_loop(self) -> None:
        interval = self.s.schedule_poll_ms / 1000
        while True:
            try:
                while await self.schedule.promote_due() > 0:
                    pass
            except Exception:  # keep promoting after a Redis blip; the script is atomic
                log.warning("promoting due jobs failed", exc_info=True)
            await asyncio.sleep(interval)


async def trim_dead(redis: AsyncRedis, stream: str, max_age_seconds: float) -> int:
    """Drop dead letters older than DEAD_MAX_AGE_SECONDS; the number dropped.

    MAXLEN on every XADD bounds their count; this bounds their age, so a quiet system
    does not keep a month-old failure storm for ever. Exact MINID: dead letters are few,
    and `~` would keep a whole macro node of old entries.
    """
    cutoff_ms = int((now() - max_age_seconds) * 1000)
    return int(await redis.xtrim(stream, minid=f"{cutoff_ms}-0", approximate=False))
