"""Writing the public `solver-events` stream: flat string fields, one terminal event per job."""

from __future__ import annotations

import redis.asyncio as aioredis

from shared.lua import source
from shared.messages import Outcome
from shared.streams import Names


class EventWriter:
    def __init__(self, redis: aioredis.Redis, names: Names, *, maxlen: int, guard_ttl: int) -> None:
        self.redis = redis
        self.names = names
        self.maxlen = maxlen
        self.guard_ttl = guard_ttl
        self._emit = redis.register_script(source("emit_event"))

    async def emit(self, outcome: Outcome) -> str | None:
        """XADD the event; None when suppressed (a second terminal, or progress after the end)."""
        args: list[str | int] = ["1" if outcome.kind.terminal else "0", self.guard_ttl, self.maxlen]
        for k, v in outcome.event_fields().items():
            args += [k, v]
        entry = await self._emit(
            keys=[self.names.terminal(outcome.job_id), self.names.events], args=args
        )
        if entry is None:
            return None
        return entry.decode() if isinstance(entry, bytes) else str(entry)
