"""Celery peer: Redis broker, one solo-pool worker process (no prefork children)."""

from __future__ import annotations

import redis
from celery import Celery
from common import DONE_STREAM, QUEUE, REDIS_URL

app = Celery("bench", broker=REDIS_URL)
# Results are not stored: "done" is the XADD below, the same signal every peer gives.
app.conf.update(
    task_ignore_result=True,
    task_default_queue=QUEUE,
    worker_hijack_root_logger=False,
    broker_connection_retry_on_startup=True,
)
_done = redis.Redis.from_url(REDIS_URL)


@app.task(name="noop")  # type: ignore[untyped-decorator]
def noop(job_id: str) -> None:
    _done.xadd(DONE_STREAM, {"id": job_id})
