"""What the job pages read from Redis: job records (shared.jobs.records), the job's events,
its failed attempts and dead letter (shared.jobs.dead_letters). Read-only."""

from __future__ import annotations

import asyncio
import json
from collections import OrderedDict
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from faststream.redis.message import bDATA_KEY
from faststream.redis.parser import BinaryMessageFormatV1
from pydantic import ValidationError

from services.console.sampler import JobSeen
from services.console.views import ResultSummary, result_summary
from shared.connection.factory import AsyncRedis, SyncRedis
from shared.jobs.dead_letters import DeadLetters, Entry
from shared.jobs.events import TERMINAL_EVENTS
from shared.jobs.messages import AttemptError, FailureRecord
from shared.jobs.records import JobRecords
from shared.names import Names
from shared.settings import Settings
from shared.text import text

# Bounds on what one page reads: a job's events since it was created, its failures.
MAX_JOB_EVENTS = 20_000
MAX_FAILURE_SCAN = 20_000
SUMMARY_CACHE = 5_000


def _fields(raw: Any) -> dict[str, str]:
    return {text(k, "replace"): text(v, "replace") for k, v in (raw or {}).items()}


def created_ms(record: dict[str, str]) -> int:
    """Where this lifecycle's events start: a second before the record's creation."""
    try:
        return max(0, int(float(record.get("created_at", "0")) * 1000) - 1000)
    except ValueError:
        return 0


@dataclass
class JobRow:
    job_id: str
    state: str
    attempts: str
    solver: str
    solve_ms: str
    updated: str
    error: str
    summary: ResultSummary = field(default_factory=ResultSummary)


class Reads:
    def __init__(self, client: AsyncRedis, sync: SyncRedis, settings: Settings) -> None:
        self.redis = client
        self.sync = sync
        self.names = Names.from_settings(settings)
        self.records = JobRecords(client, self.names, settings)
        self.dead = DeadLetters(sync, settings)
        # event id -> what the job list shows of its roster: a terminal event never changes.
        self._summaries: OrderedDict[str, ResultSummary] = OrderedDict()

    # -------------------------------------------------------------- one job

    async def record(self, job_id: str) -> dict[str, str]:
        return await self.records.get(job_id)

    async def terminal_event(self, record: dict[str, str]) -> dict[str, str] | None:
        event_id = record.get("event_id")
        if not event_id:
            return None
        rows: Any = await self.redis.xrange(self.names.events, min=event_id, max=event_id)
        return _fields(rows[0][1]) if rows else None

    async def events(self, job_id: str, since_ms: int) -> list[dict[str, str]]:
        """The job's events of this lifecycle that are still retained, oldest first."""
        out: list[dict[str, str]] = []
        start = f"{since_ms}-0"
        scanned = 0
        while scanned < MAX_JOB_EVENTS:
            rows: Any = await self.redis.xrange(self.names.events, min=start, count=1000)
            for entry_id, raw in rows:
                f = _fields(raw)
                if f.get("job_id") == job_id:
                    out.append({"id": text(entry_id), **f})
            scanned += len(rows)
            if len(rows) < 1000:
                break
            start = "(" + text(rows[-1][0])
        return out

    async def follow(
        self, job_id: str, after: str, block_ms: int = 1500
    ) -> AsyncIterator[dict[str, str] | None]:
        """The job's events after `after` as they are written, like `shiftstream watch`
        (shared.jobs.client); None on each quiet `block_ms`, so the caller can notice a closed
        page. Ends after the terminal event."""
        last = after
        while True:
            batch: Any = await self.redis.xread(
                {self.names.events: last}, count=500, block=block_ms
            )
            if not batch:
                yield None
                continue
            for _stream, entries in batch:
                for entry_id, raw in entries:
                    last = text(entry_id)
                    f = _fields(raw)
                    if f.get("job_id") != job_id:
                        continue
                    yield {"id": last, **f}
                    if f.get("type") in TERMINAL_EVENTS:
                        return

    async def attempts(self, job_id: str, since_ms: int) -> list[AttemptError]:
        """The job's failed attempts of this lifecycle, from `solver.failures`."""
        found: list[AttemptError] = []
        start = f"{since_ms}-0"
        scanned = 0
        while scanned < MAX_FAILURE_SCAN:
            rows: Any = await self.redis.xrange(self.names.failures, min=start, count=1000)
            for _entry_id, raw in rows:
                data = raw.get(bDATA_KEY)
                if not isinstance(data, bytes) or job_id.encode() not in data:
                    continue  # cheap filter: most entries are other jobs'
                try:
                    body, _ = BinaryMessageFormatV1.parse(data)
                    rec = FailureRecord.model_validate_json(body)
                except (ValidationError, ValueError):
                    continue
                if rec.job_id != job_id:
                    continue
                found.append(
                    AttemptError(
                        attempt=rec.job.attempt if rec.job else 1,
                        stage=rec.stage,
                        error_class=rec.error_class,
                        error_type=rec.severity.value,
                        message=rec.reason,
                        at=rec.at,
                    )
                )
            scanned += len(rows)
            if len(rows) < 1000:
                break
            start = "(" + text(rows[-1][0])
        return found

    async def dead_letter(self, ident: str) -> Entry | None:
        return await asyncio.to_thread(self.dead.find, ident)

    # -------------------------------------------------------------- the job list

    async def rows(self, seen: list[JobSeen]) -> list[JobRow]:
        """Job records of `seen`, with each finished roster's penalty and gap."""
        async with self.redis.pipeline(transaction=False) as pipe:
            for s in seen:
                pipe.hgetall(self.names.job(s.job_id))
            records = [_fields(r) for r in await pipe.execute()]
        missing = [
            r["event_id"]
            for r in records
            if r.get("state") == "completed" and r.get("event_id")
            and r["event_id"] not in self._summaries
        ]
        if missing:
            async with self.redis.pipeline(transaction=False) as pipe:
                for event_id in missing:
                    pipe.xrange(self.names.events, min=event_id, max=event_id)
                for event_id, rows in zip(missing, await pipe.execute(), strict=True):
                    summary = ResultSummary()
                    if rows:
                        try:
                            result = json.loads(_fields(rows[0][1]).get("result") or "{}")
                            summary = result_summary(result)
                        except (ValueError, AttributeError):
                            pass
                    self._summaries[event_id] = summary
            while len(self._summaries) > SUMMARY_CACHE:
                self._summaries.popitem(last=False)
        out = []
        for s, rec in zip(seen, records, strict=True):
            out.append(
                JobRow(
                    job_id=s.job_id,
                    state=rec.get("state") or "expired",
                    attempts=rec.get("attempts", ""),
                    solver=rec.get("solver_used") or rec.get("solver", ""),
                    solve_ms=rec.get("solve_time_ms", ""),
                    updated=rec.get("updated_at", ""),
                    error=rec.get("error_class", ""),
                    summary=self._summaries.get(rec.get("event_id", ""), ResultSummary()),
                )
            )
        return out
