"""arq peer: default settings (max_jobs=10, poll_delay=0.5 s), one worker process."""

from __future__ import annotations

from typing import Any, ClassVar

from arq.connections import RedisSettings
from common import DONE_STREAM, REDIS_URL


async def noop(ctx: dict[str, Any], job_id: str) -> None:
    await ctx["redis"].xadd(DONE_STREAM, {"id": job_id})


class WorkerSettings:
    functions: ClassVar[list[Any]] = [noop]
    redis_settings = RedisSettings.from_dsn(REDIS_URL)
    # Results kept by default would grow Redis during a 10k run; "done" is the XADD above.
    keep_result = 0
