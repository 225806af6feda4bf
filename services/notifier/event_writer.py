"""Writing the public `solver-events` stream: flat string fields, one terminal event per job."""

from __future__ import annotations

from typing import Any

from redis.exceptions import ResponseError

from shared.connection.factory import AsyncRedis
from shared.jobs.messages import Outcome
from shared.names import Names
from shared.streaming.lua import script
from shared.text import text


class EventWriter:
    def __init__(self, redis: AsyncRedis, names: Names, *, maxlen: int, guard_ttl: int) -> None:
        self.redis = redis
        self.names = names
        self.maxlen = maxlen
        self.guard_ttl = guard_ttl
        self._emit = redis.register_script(script(__file__, "emit_event"))

    def _args(self, outcome: Outcome) -> tuple[list[str], list[str | int]]:
        args: list[str | int] = ["1" if outcome.kind.terminal else "0", self.guard_ttl, self.maxlen]
        for k, v in outcome.event_fields().items():
            args += [k, v]
        keys = [self.names.terminal(outcome.job_id), self.names.events]
        if outcome.result_key is not None:
            keys.append(outcome.result_key)
        return keys, args

    def queue(self, pipe: Any, outcome: Outcome) -> None:
        """Queue the event into `pipe`; its reply there is what `entry_id` reads: the new
        entry's id, or None when suppressed (a second terminal, or progress after the end).

        A bare EVALSHA: redis-py's script objects would make every pipeline ask SCRIPT EXISTS
        first, one more round trip per batch. `load` puts the script in place; a Redis that
        lost it answers NOSCRIPT, and the caller loads it and runs its batch again. Sent as a
        raw command: redis-py's cluster pipeline refuses its `evalsha` method, though it routes
        the command itself by its keys (all of one batch's in the events stream's slot).
        """
        keys, args = self._args(outcome)
        pipe.execute_command("EVALSHA", self._emit.sha, len(keys), *keys, *args)

    async def load(self) -> None:
        await self.redis.script_load(self._emit.script)


def entry_id(reply: Any) -> str | None:
    """The event's id from the script's reply; None when it wrote nothing."""
    if reply is None or result_lost(reply):
        return None
    return text(reply)


def result_lost(reply: Any) -> bool:
    """The script's `NORESULT`: the outcome's result key is gone."""
    return isinstance(reply, ResponseError) and str(reply).startswith("NORESULT")
