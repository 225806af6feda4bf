"""Fallback: solves jobs whose primary solve failed with the greedy solver (wiring only)."""

from __future__ import annotations

from faststream.redis import RedisStreamMessage

from shared.jobs.messages import FallbackJob
from shared.solving.worker import SolveWorker
from shared.streaming.broker import build_service

service = build_service("fallback")
stream, group = service.names.groups["fallback"]
worker = SolveWorker(service, "fallback", stream, group)


@service.reader_and_reclaimer(stream, group, readers=service.settings.worker_concurrency)
async def on_fallback(body: FallbackJob, msg: RedisStreamMessage) -> None:
    await worker.handle_fallback(body, msg)


app = service.app
