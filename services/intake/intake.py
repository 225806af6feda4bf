"""Intake logic: carry out each entry's decision (services/intake/verdict.py) in one pipeline:
a job queued or scheduled, a cancel marker (only for a job we know), or an invalid request sent
to triage."""

from __future__ import annotations

import asyncio
import logging
import math
from typing import Any

from opentelemetry import trace

from services.intake.verdict import (
    Accept,
    Action,
    Cancel,
    Duplicate,
    IgnoreCancel,
    Known,
    Reject,
    Verdict,
    anon,
    cancel_action,
    job_id_of,
    job_id_problem,
    judge,
    kind_of,
    needs_claim,
    route,
)
from shared.errors import ErrorClass
from shared.jobs.dead_letters import REPLAY_ATTRIBUTE, REPLAY_FIELD
from shared.jobs.idempotency import claim_many
from shared.jobs.messages import (
    FailureRecord,
    IntakeEntry,
    Job,
    Outcome,
    OutcomeKind,
    Severity,
    now,
)
from shared.jobs.records import JobRecords, JobState
from shared.jobs.schedule import Schedule
from shared.observability.tracing import entry_scope, record_failure
from shared.roster.model import Priority
from shared.streaming.broker import Service
from shared.streaming.hop import Delivery, ordered_pipelines
from shared.text import text

log = logging.getLogger("shiftstream.intake")


def current_trace_id() -> str | None:
    ctx = trace.get_current_span().get_span_context()
    return format(ctx.trace_id, "032x") if ctx.is_valid else None


def failure_record(
    stage: str, job_id: str, error_class: ErrorClass, reason: str, entry: IntakeEntry
) -> FailureRecord:
    """A permanent failure of an intake entry, holding what the producer sent."""
    marks = {"other", "defect", "unreadable"}
    raw = entry.model_dump(exclude_none=True, exclude=marks) | (entry.other or {})
    return FailureRecord(
        job_id=job_id,
        severity=Severity.PERMANENT,
        error_class=error_class,
        reason=reason,
        stage=stage,
        raw={k: str(v)[:10_000] for k, v in raw.items()},
        trace_id=current_trace_id(),
    )


def poison_failure(stage: str, delivery: Delivery[IntakeEntry]) -> FailureRecord:
    """The failure record of an intake entry that keeps failing (the hop's poison reaction)."""
    return failure_record(
        stage,
        job_id_of(delivery.body)
        if job_id_problem(delivery.body) is None
        else anon(delivery.entry_id),
        ErrorClass.EXHAUSTED,
        f"{stage}: delivered {delivery.delivery_count} times without finishing (poison message)",
        delivery.body,
    )


class Intake:
    def __init__(self, svc: Service) -> None:
        self.svc = svc
        self.s = svc.settings
        self.names = svc.names
        self.records = JobRecords(svc.redis, svc.names, svc.settings)
        self.schedule = Schedule(svc.redis, svc.names)

    async def handle_batch(self, batch: list[Delivery[IntakeEntry]]) -> None:
        """Decide every entry, then send all the batch's writes in one pipeline.

        The batch is acked only after the pipeline ran, so a crash in between redelivers the
        entries; their idempotency claims hold their own entry ids, so they go through again
        rather than being taken for duplicates.
        """
        claiming = asyncio.ensure_future(self._claim_all(batch))
        # Let the claims go out first: the requests are validated while they are on the wire,
        # so an idle job pays its validation and the claim's round trip once, not one after the
        # other (the same overlap as the solver's check; bench/README.md).
        await asyncio.sleep(0)
        try:
            verdicts = {
                d.entry_id: judge(d.body, self.s.limits) for d in batch if needs_claim(d.body)
            }
        except BaseException:
            claiming.cancel()  # its claims are harmless: a redelivery finds its own entry id
            raise
        owned = await claiming
        # After the claims, so that a cancel sees a submission earlier in its own batch.
        known = await self._known(batch)
        # A scheduled job is taken out of the schedule at once: its request does not stay in
        # Redis until its due time, and its `cancelled` ends it now.
        unscheduled = await self.schedule.cancel(
            [
                job_id_of(d.body)
                for d in batch
                if kind_of(d.body) == "cancel"
                and (k := known.get(job_id_of(d.body))) is not None
                and k.state == JobState.SCHEDULED.value
                and isinstance(cancel_action(job_id_of(d.body), d.entry_id, k, 1), Cancel)
            ]
        )
        at = now()
        # A job must not reach the solver before its record and its `accepted` outcome are
        # written: on one server that is the order inside one pipeline; on a Cluster, whose
        # nodes each run their share at once, the jobs go in a second round trip.
        async with ordered_pipelines(self.svc.redis) as (pipe, jobs):
            for d in batch:
                job_id = job_id_of(d.body)
                # A dead letter replay (shared/jobs/dead_letters.py) starts a new lifecycle,
                # and so a new trace: the attribute lets `shiftstream trace` tell the two apart
                # from a trace context lost on the way.
                replay_of = (d.body.other or {}).get(REPLAY_FIELD)
                with entry_scope(
                    self.names.intake, d, job_id or None, extra={REPLAY_ATTRIBUTE: replay_of}
                ):
                    action = route(
                        d.body,
                        d.entry_id,
                        owned=owned.get(d.entry_id, False),
                        verdict=verdicts.get(d.entry_id),
                        now=at,
                        known=known.get(job_id),
                        cancel_ttl_ms=self.s.cancel_ttl_seconds * 1000,
                        horizon_seconds=self.s.not_before_horizon_seconds,
                    )
                    await self._carry_out(action, d.body, pipe, jobs, unscheduled)

    async def _claim_all(self, batch: list[Delivery[IntakeEntry]]) -> dict[str, bool]:
        # Claimed whatever the verdict: a job id gets exactly one terminal event, so an invalid
        # request's id is spent too, and repeats of it are dropped rather than re-reported.
        wanted = [d for d in batch if needs_claim(d.body)]
        if not wanted:
            return {}
        claims = [(self.names.idempotency(job_id_of(d.body)), d.entry_id) for d in wanted]
        won = await claim_many(self.svc.redis, claims, self.s.idempotency_ttl_seconds)
        return {d.entry_id: ok for d, ok in zip(wanted, won, strict=True)}

    async def _known(self, batch: list[Delivery[IntakeEntry]]) -> dict[str, Known]:
        """For the batch's cancels: their job ids' claims and record states, and the server's
        time, in one round trip (none for a batch without a cancel)."""
        ids = sorted(
            {
                job_id_of(d.body)
                for d in batch
                if kind_of(d.body) == "cancel" and job_id_problem(d.body) is None
            }
        )
        if not ids:
            return {}
        async with self.svc.redis.pipeline(transaction=False) as pipe:
            # As a raw command: redis-py's cluster pipeline refuses its `time()` method. On a
            # Cluster the time is one node's; the nodes' clocks agree to NTP's milliseconds.
            pipe.execute_command("TIME")
            for job_id in ids:
                pipe.get(self.names.idempotency(job_id))
                pipe.pexpiretime(self.names.idempotency(job_id))
                pipe.hget(self.names.job(job_id), "state")
            replies = await pipe.execute()
        seconds, micros = replies[0]
        now_ms = int(seconds) * 1000 + int(micros) // 1000
        known = {}
        for i, job_id in enumerate(ids):
            owner, expires, state = replies[1 + 3 * i : 4 + 3 * i]
            known[job_id] = Known(
                now_ms=now_ms,
                claimed_by=text(owner) if owner is not None else None,
                claim_expires_ms=int(expires) if int(expires) > 0 else None,
                state=text(state) if state is not None else None,
            )
        return known

    async def _carry_out(
        self, action: Action, entry: IntakeEntry, pipe: Any, jobs: Any, unscheduled: set[str]
    ) -> None:
        match action:
            case Reject(job_id, reason):
                log.info("invalid request %s: %s", job_id, reason)
                record_failure(ErrorClass.INVALID.value)
                record = failure_record("intake", job_id, ErrorClass.INVALID, reason, entry)
                await self.svc.publish(record, self.names.failures, pipeline=pipe)
            case Cancel(job_id, expire_at_ms) if job_id in unscheduled:
                unscheduled.discard(job_id)  # one `cancelled` however many cancels
                outcome = Outcome(
                    kind=OutcomeKind.FAILED,
                    job_id=job_id,
                    error_class=ErrorClass.CANCELLED,
                    reason="cancelled before its not_before time; taken out of the schedule",
                    attempts=0,
                )
                await self.svc.publish(outcome, self.names.outcomes, pipeline=pipe)
                log.info("scheduled job %s cancelled", job_id)
            case Cancel(job_id, expire_at_ms):
                pipe.set(self.names.cancel(job_id), "1", pxat=expire_at_ms)
                log.info("cancel requested for %s", job_id)
            case IgnoreCancel(job_id, reason):
                log.info("cancel of %s ignored: %s", job_id, reason)
            case Duplicate(job_id):
                log.info("duplicate job id %s ignored", job_id)
            case Accept(job_id, due, priority):
                await self._accept(job_id, due, priority, entry, pipe, jobs)

    async def _accept(
        self,
        job_id: str,
        due: float | None,
        priority: Priority,
        entry: IntakeEntry,
        pipe: Any,
        jobs: Any,
    ) -> None:
        """`pipe` is written before `jobs` (`ordered_pipelines`)."""
        job = Job(
            job_id=job_id,
            payload=entry.payload or "",
            trace_id=current_trace_id(),
            priority=priority,
        )
        # `accepted` and the record go out before the job, so no progress can ever overtake
        # the one, and the solver's `running` never precedes the other's `queued`.
        accepted = Outcome(kind=OutcomeKind.ACCEPTED, job_id=job_id, priority=priority)
        await self.svc.publish(accepted, self.names.outcomes, pipeline=pipe)
        if due is not None:
            # The job id and the record live until the job is due and as long again as any
            # job's after that: a repeat is still a repeat, and a cancel still finds the job.
            wait = max(0, math.ceil(due - now()))
            self.records.queue(
                pipe, job_id, JobState.SCHEDULED, created=True, attempts=0, not_before=due,
                priority=priority,
            )  # fmt: skip
            pipe.expire(self.names.job(job_id), self.s.job_ttl_seconds + wait)
            pipe.expire(self.names.idempotency(job_id), self.s.idempotency_ttl_seconds + wait)
            await self.schedule.add_cancellable(job, due, pipe=jobs)
        else:
            self.records.queue(
                pipe, job_id, JobState.QUEUED, created=True, attempts=0, priority=priority
            )
            await self.svc.publish(job, self.names.jobs_for(priority), pipeline=jobs)


__all__ = ["Intake", "Verdict", "failure_record", "poison_failure"]
