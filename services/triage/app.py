"""Triage: dead letters for permanent failures, scheduled retries for transient ones."""

from __future__ import annotations

from faststream.redis import RedisStreamMessage

from services.triage.triage import Triage
from shared.jobs.messages import FailureRecord
from shared.streaming.broker import build_service

service = build_service("triage")
triage = Triage(service)
stream, group = service.names.groups["triage"]


@service.reader_and_reclaimer(stream, group)
async def on_failure(body: FailureRecord, msg: RedisStreamMessage) -> None:
    await triage.handle(body, msg)


app = service.app
