"""The floor: the least a Redis Streams consumer can do per job, in plain redis-py.

XREADGROUP COUNT 100, then one pipeline per batch with a done XADD per entry and one XACK for
the batch: the same work a peer's no-op handler does, with nothing of a framework around it.
"""

from __future__ import annotations

from typing import Any

import redis
from common import DONE_STREAM, GROUP, QUEUE, REDIS_URL


def main() -> None:
    r = redis.Redis.from_url(REDIS_URL)
    while True:
        # [[stream, [(id, {field: value})]]]; redis-py's reply types are too loose to use.
        got: Any = r.xreadgroup(GROUP, "floor", {QUEUE: ">"}, count=100, block=1000)
        if not got:
            continue
        entries = got[0][1]
        pipe = r.pipeline(transaction=False)
        for _, fields in entries:
            pipe.xadd(DONE_STREAM, {"id": fields[b"id"]})
        pipe.xack(QUEUE, GROUP, *[entry_id for entry_id, _ in entries])
        pipe.execute()


if __name__ == "__main__":
    main()
