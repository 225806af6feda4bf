"""Solver: solves jobs with the configured implementation (wiring only)."""

from __future__ import annotations

from faststream.redis import RedisStreamMessage

from shared.broker import build_service
from shared.messages import Job
from shared.solve_worker import SolveWorker

service = build_service("solver")
stream, group = service.names.groups["solver"]
worker = SolveWorker(service, "solver", stream, group)


@service.reader_and_reclaimer(stream, group, readers=service.settings.worker_concurrency)
async def on_job(body: Job, msg: RedisStreamMessage) -> None:
    await worker.handle_job(body, msg)


app = service.app
