"""What the ACL cannot forbid a producer, seen by the intake: entries that vanished before it
read them, and a stream whose ids ran ahead of the clock (docs/publishing.md, "Trust").

A producer allowed to XADD may also write `XADD workforce-solver MAXLEN 0 ...` (every queued
request gone, no event for any) or an entry id of `18446744073709551615-...` (ids from the far
future: later `XADD *` ids follow it until the sequence runs out, then every XADD fails).
Neither can be refused by Redis's ACL, so the intake looks every trim interval
(`watch_stream.lua`), repairs the group's lag so the health check and KEDA see the real
backlog, and raises an alert that `shiftstream stats`, the health probe and the console show:
the `alerts` hash (`Names.alerts`), expiring a week after its last change.
"""

from __future__ import annotations

import logging
import time

from shared.connection.factory import AsyncRedis
from shared.names import Names
from shared.streaming.lua import script
from shared.text import text

log = logging.getLogger("shiftstream.intake")

# Stream ids are milliseconds: a last id this far past the clock is not a clock skew.
AHEAD_MS = 24 * 3600 * 1000
MAX_ID_MS = 2**64 - 1
ALERT_TTL = 7 * 24 * 3600

# Fields of the alerts hash (read by shared/observability/queue_stats.py).
VANISHED = "intake_vanished"
VANISHED_AT = "intake_vanished_at"
ID_AHEAD = "intake_id_ahead"


class StreamWatch:
    def __init__(self, redis: AsyncRedis, names: Names, group: str) -> None:
        self.redis, self.names, self.group = redis, names, group
        self._watch = redis.register_script(script(__file__, "watch_stream"))
        self._ahead: str | None = None

    async def __call__(self) -> int:
        """Look once; the number of entries found vanished."""
        reply = await self._watch(keys=[self.names.intake], args=[self.group])
        vanished, last = int(reply[0]), text(reply[1])
        alerts = self.names.alerts
        async with self.redis.pipeline(transaction=False) as pipe:
            if vanished:
                log.error(
                    "%d entries left %s before the intake read them (a producer's XADD with "
                    "MAXLEN or MINID?): no event will be sent for them",
                    vanished,
                    self.names.intake,
                )
                pipe.hincrby(alerts, VANISHED, vanished)
                pipe.hset(alerts, VANISHED_AT, f"{time.time():.3f}")
            ahead = last if int(last.partition("-")[0]) > time.time() * 1000 + AHEAD_MS else None
            if ahead is not None and ahead != self._ahead:
                exhausted = int(ahead.partition("-")[0]) == MAX_ID_MS
                log.error(
                    "%s: its last id %s is %s; new entries' ids follow it (docs/publishing.md)",
                    self.names.intake,
                    ahead,
                    "the largest there is" if exhausted else "far ahead of the clock",
                )
            self._ahead = ahead
            # Written every time, not on change: another intake process (or an earlier one)
            # may have raised it, and whoever sees the stream healthy again clears it.
            if ahead is not None:
                pipe.hset(alerts, ID_AHEAD, ahead)
            else:
                pipe.hdel(alerts, ID_AHEAD)
            if vanished or ahead is not None:
                pipe.expire(alerts, ALERT_TTL)
            await pipe.execute()
        return vanished
