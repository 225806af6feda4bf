"""A small Python client of the public contract: submit, cancel, follow events, read status.

It writes flat fields exactly as a foreign producer (a Node monolith) would, so the CLI
exercises the same path as any other client.
"""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import AsyncIterator
from typing import Any

from faststream.redis.message import bDATA_KEY
from faststream.redis.parser import BinaryMessageFormatV1

from shared.connection.durable import write_durably
from shared.connection.factory import async_client
from shared.jobs.events import TERMINAL_EVENTS
from shared.jobs.messages import DeadLetter
from shared.jobs.records import JobRecords
from shared.names import Names
from shared.settings import Settings
from shared.text import text


def lifecycle(events: list[dict[str, str]]) -> list[dict[str, str]]:
    """The events of the job's latest lifecycle: from its last `solver.accepted` on (a dead
    letter replay starts a new one), or all of them when it was never accepted."""
    starts = [i for i, e in enumerate(events) if e.get("type") == "solver.accepted"]
    return events[starts[-1] :] if starts else events


def terminal_of(events: list[dict[str, str]]) -> dict[str, str] | None:
    return next((e for e in events if e.get("type") in TERMINAL_EVENTS), None)


class Client:
    """Parameters:
        redis_url: where Redis is; the rest of the deployment (Sentinel, Cluster, TLS) comes
            from `settings`, by default the environment's.
    """

    def __init__(self, redis_url: str, settings: Settings | None = None) -> None:
        settings = settings or Settings(redis_url=redis_url)
        if settings.redis_url != redis_url:
            settings = settings.model_copy(update={"redis_url": redis_url})
        self.settings = settings
        self.names = Names.from_settings(settings)
        # Event reads block 1 s at most; a reply slower than this is a dead connection.
        self.redis = async_client(settings, round_trip_timeout=30)

    async def close(self) -> None:
        await self.redis.aclose()

    async def __aenter__(self) -> Client:
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.close()

    async def last_event_id(self) -> str:
        """Where to start following so that only events written from now on are read."""
        last = await self.redis.xrevrange(self.names.events, count=1)
        return text(last[0][0]) if last else "0-0"

    async def submit(
        self,
        payload: str,
        *,
        job_id: str | None = None,
        not_before: dt.datetime | None = None,
        traceparent: str | None = None,
    ) -> str:
        job_id = job_id or uuid.uuid4().hex
        fields: dict[str, str] = {"type": "solve", "job_id": job_id, "payload": payload}
        if not_before is not None:
            fields["not_before"] = not_before.isoformat()
        if traceparent:
            fields["traceparent"] = traceparent
        await self._add(fields)
        return job_id

    async def cancel(self, job_id: str) -> None:
        await self._add({"type": "cancel", "job_id": job_id})

    async def _add(self, fields: dict[str, str]) -> None:
        """XADD to the intake; with REDIS_WAIT_REPLICAS, only done once replicas hold it
        (`NotReplicated` otherwise: submitting again under the same job id is safe)."""
        entry: dict[Any, Any] = fields
        s = self.settings
        await write_durably(
            self.redis,
            s.wait_replicas,
            s.redis_wait_timeout_ms,
            lambda pipe: pipe.xadd(
                self.names.intake, entry, maxlen=s.stream_maxlen, approximate=True
            ),
        )

    async def events(
        self, job_id: str, *, after: str = "0-0", block_ms: int = 1000, heartbeat: bool = False
    ) -> AsyncIterator[dict[str, str]]:
        """The job's events in order, ending after its terminal event.

        From `after` (default: the start of the retained stream), so a late watcher still
        sees a job that already finished while its events are retained. With `heartbeat`, an
        empty dict after every read that brought nothing of this job, so a caller can tell
        how long it has been waiting.
        """
        last = after
        while True:
            batch: Any = await self.redis.xread(
                {self.names.events: last}, count=500, block=block_ms
            )
            mine = False
            for _stream, entries in batch or []:
                for entry_id, raw in entries:
                    last = text(entry_id)
                    fields = {text(k): text(v) for k, v in raw.items()}
                    if fields.get("job_id") != job_id:
                        continue
                    mine = True
                    yield fields
                    if fields.get("type") in TERMINAL_EVENTS:
                        return
            if heartbeat and not mine:
                yield {}

    async def history(self, job_id: str, batch: int = 1000) -> tuple[list[dict[str, str]], str]:
        """The job's retained events and the id of the last entry read, from which
        `events(after=...)` goes on: one pass over the stream (trimmed to `EVENTS_MAXLEN`
        entries). A replayed job has several lifecycles; `lifecycle` picks the latest."""
        found: list[dict[str, str]] = []
        last = "0-0"
        start = "-"
        while True:
            rows: Any = await self.redis.xrange(self.names.events, min=start, count=batch)
            for entry_id, raw in rows:
                last = text(entry_id)
                if raw.get(b"job_id", raw.get("job_id")) not in (job_id, job_id.encode()):
                    continue
                found.append({text(k): text(v) for k, v in raw.items()})
            if len(rows) < batch:
                return found, last
            start = "(" + last

    async def claimed(self, job_id: str) -> bool:
        """Whether the job id is claimed: submitted and not yet forgotten (idempotency key)."""
        return bool(await self.redis.exists(self.names.idempotency(job_id)))

    async def dead_letters(self, count: int = 100) -> list[DeadLetter]:
        """The newest dead letters first (poison outcomes parked by the notifier are skipped)."""
        rows: Any = await self.redis.xrevrange(self.names.dead, count=count)
        letters = []
        for _entry_id, fields in rows:
            data = fields.get(bDATA_KEY)
            if not isinstance(data, bytes):
                continue
            body, _headers = BinaryMessageFormatV1.parse(data)
            letters.append(DeadLetter.model_validate_json(body))
        return letters

    async def status(self, job_id: str) -> dict[str, str]:
        return await JobRecords(self.redis, self.names, self.settings).get(job_id)
