"""Intake logic: turn one public entry into a job, a cancel marker, or an invalid failure."""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import logging
from dataclasses import dataclass
from typing import Any

from opentelemetry import trace

from shared.jobs.idempotency import claim_many
from shared.jobs.messages import (
    ErrorClass,
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
from shared.observability.tracing import job_scope, record_failure
from shared.roster.parse import InvalidRequest, parse_request
from shared.streaming.broker import Service
from shared.streaming.hop import Delivery, entry_span

log = logging.getLogger("shiftstream.intake")
MAX_JOB_ID = 128


def current_trace_id() -> str | None:
    ctx = trace.get_current_span().get_span_context()
    return format(ctx.trace_id, "032x") if ctx.is_valid else None


def parse_not_before(text: str) -> float:
    """ISO 8601 time to epoch seconds; a time without zone is taken as UTC."""
    t = dt.datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    if t.tzinfo is None:
        t = t.replace(tzinfo=dt.UTC)
    return t.timestamp()


@dataclass(frozen=True, slots=True)
class Verdict:
    """A solve request's validation: why it is invalid (None: valid), and its `not_before`."""

    reason: str | None = None
    due: float | None = None


class Intake:
    def __init__(self, svc: Service) -> None:
        self.svc = svc
        self.s = svc.settings
        self.names = svc.names
        self.records = JobRecords(svc.redis, svc.names, svc.settings)
        self.schedule = Schedule(svc.redis, svc.names, svc.settings.stream_maxlen)
        self._trimmer: asyncio.Task[None] | None = None
        svc.app.after_startup(self._start_trimmer)
        svc.app.on_shutdown(self._stop_trimmer)

    # ------------------------------------------------------------------ input retention

    async def trim_input(self) -> int:
        """Trim consumed entries of the public intake stream once it exceeds STREAM_MAXLEN.

        Foreign producers may XADD without MAXLEN, and a MAXLEN of ours could drop entries the
        group has not read yet (a backlog is not garbage). So only what the group has taken is
        cut: everything before the oldest pending entry and the last delivered one.
        """
        stream, group = self.names.intake, "intake"
        if await self.svc.redis.xlen(stream) <= self.s.stream_maxlen:
            return 0
        groups = await self.svc.redis.xinfo_groups(stream)
        info = next((g for g in groups if _text(g["name"]) == group), None)
        if info is None:
            return 0
        floor = _text(info["last-delivered-id"])
        pending = await self.svc.redis.xpending(stream, group)
        if pending["pending"] and _id_key(_text(pending["min"])) < _id_key(floor):
            floor = _text(pending["min"])
        return int(await self.svc.redis.xtrim(stream, minid=floor))

    async def _trim_loop(self) -> None:
        while True:
            try:
                await self.trim_input()
            except Exception:  # retried next interval; trimming is idempotent
                log.warning("trimming the intake stream failed", exc_info=True)
            await asyncio.sleep(self.s.trim_interval_seconds)

    async def _start_trimmer(self) -> None:
        self._trimmer = asyncio.create_task(self._trim_loop())

    async def _stop_trimmer(self) -> None:
        if self._trimmer is not None:
            self._trimmer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._trimmer

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
            verdicts = {d.entry_id: self._verdict(d.body) for d in batch if self._needs_claim(d)}
        except BaseException:
            claiming.cancel()  # its claims are harmless: a redelivery finds its own entry id
            raise
        owned = await claiming
        async with self.svc.redis.pipeline(transaction=False) as pipe:
            for d in batch:
                job_id = (d.body.job_id or "").strip()
                with entry_span(self.names.intake, d), job_scope(job_id or None):
                    await self._handle(
                        d, job_id, owned.get(d.entry_id, False), verdicts.get(d.entry_id), pipe
                    )
            await pipe.execute()

    def _needs_claim(self, d: Delivery[IntakeEntry]) -> bool:
        job_id = (d.body.job_id or "").strip()
        return (
            d.delivery_count <= self.s.max_deliveries
            and 0 < len(job_id) <= MAX_JOB_ID
            and (d.body.type or "").strip() == "solve"
        )

    async def _claim_all(self, batch: list[Delivery[IntakeEntry]]) -> dict[str, bool]:
        # Claimed whatever the verdict: a job id gets exactly one terminal event, so an invalid
        # request's id is spent too, and repeats of it are dropped rather than re-reported.
        wanted = [d for d in batch if self._needs_claim(d)]
        if not wanted:
            return {}
        claims = [
            (self.names.idempotency((d.body.job_id or "").strip()), d.entry_id) for d in wanted
        ]
        won = await claim_many(self.svc.redis, claims, self.s.idempotency_ttl_seconds)
        return {d.entry_id: ok for d, ok in zip(wanted, won, strict=True)}

    def _verdict(self, body: IntakeEntry) -> Verdict:
        """What a solve request is worth, before knowing whether its job id is ours."""
        if body.payload is None:
            return Verdict(reason="payload: missing")
        try:
            parse_request(body.payload, self.s.limits)
        except InvalidRequest as err:
            return Verdict(reason=err.reason)
        if not body.not_before:
            return Verdict()
        try:
            return Verdict(due=parse_not_before(body.not_before))
        except ValueError:
            return Verdict(reason=f"not_before: not an ISO 8601 time ({body.not_before!r:.60})")

    async def _handle(
        self,
        d: Delivery[IntakeEntry],
        job_id: str,
        owned: bool,
        verdict: Verdict | None,
        pipe: Any,
    ) -> None:
        body = d.body
        if d.delivery_count > self.s.max_deliveries:
            await self.failed(
                job_id or _anon(d.entry_id),
                ErrorClass.EXHAUSTED,
                f"intake: delivered {d.delivery_count} times without finishing (poison message)",
                body,
                pipe,
            )
            return
        if not job_id or len(job_id) > MAX_JOB_ID:
            # Nobody can be told about it, but it must not vanish: record it under a new id.
            reason = "job_id: missing" if not job_id else f"job_id: longer than {MAX_JOB_ID}"
            await self.invalid(_anon(d.entry_id), reason, body, pipe)
            return
        kind = (body.type or "").strip()
        if kind == "cancel":
            pipe.set(self.names.cancel(job_id), "1", ex=self.s.cancel_ttl_seconds)
            log.info("cancel requested for %s", job_id)
            return
        if kind != "solve":
            await self.invalid(
                job_id, f"type: unknown type {kind!r}, expected solve or cancel", body, pipe
            )
            return
        if not owned:
            log.info("duplicate job id %s ignored", job_id)
            return
        verdict = verdict or self._verdict(body)  # judged while claiming, normally
        if verdict.reason is not None:
            await self.invalid(job_id, verdict.reason, body, pipe)
            return
        due = verdict.due
        job = Job(job_id=job_id, payload=body.payload, trace_id=current_trace_id())
        # `accepted` goes out before the job (same pipeline, earlier), so no progress can ever
        # overtake it.
        await self.svc.publish(
            Outcome(kind=OutcomeKind.ACCEPTED, job_id=job_id), self.names.outcomes, pipeline=pipe
        )
        if due is not None and due > now():
            self.records.queue(
                pipe, job_id, JobState.SCHEDULED, created=True, attempts=0, not_before=due
            )
            await self.schedule.add(job, due, client=pipe)
        else:
            self.records.queue(pipe, job_id, JobState.QUEUED, created=True, attempts=0)
            await self.svc.publish(job, self.names.jobs, pipeline=pipe)

    async def invalid(self, job_id: str, reason: str, entry: IntakeEntry, pipe: Any) -> None:
        log.info("invalid request %s: %s", job_id, reason)
        record_failure(ErrorClass.INVALID.value)
        await self.failed(job_id, ErrorClass.INVALID, reason, entry, pipe)

    async def failed(
        self, job_id: str, error_class: ErrorClass, reason: str, entry: IntakeEntry, pipe: Any
    ) -> None:
        # What the producer sent, for the dead letter; only built for the entries that fail.
        raw = entry.model_dump(exclude_none=True, exclude={"other"}) | (entry.other or {})
        await self.svc.publish(
            FailureRecord(
                job_id=job_id,
                severity=Severity.PERMANENT,
                error_class=error_class,
                reason=reason,
                stage="intake",
                raw={k: str(v)[:10_000] for k, v in raw.items()},
                trace_id=current_trace_id(),
            ),
            self.names.failures,
            pipeline=pipe,
        )


def _text(v: Any) -> str:
    return v.decode() if isinstance(v, bytes) else str(v)


def _id_key(entry_id: str) -> tuple[int, int]:
    ms, _, seq = entry_id.partition("-")
    return int(ms), int(seq or 0)


def _anon(entry_id: str) -> str:
    # Derived from the entry id, not random: a redelivery of the same garbage entry (a crash
    # between its failure record and the ack) must land on the same id, so the terminal guard
    # keeps it to one failed event instead of one per delivery.
    return f"anon-{entry_id}"
