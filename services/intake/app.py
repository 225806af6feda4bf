"""Intake: reads the public request stream, validates, and forwards jobs (wiring only)."""

from __future__ import annotations

from faststream.redis import RedisStreamMessage

from shared.broker import build_service
from shared.intake import Intake
from shared.intake_parser import intake_parser
from shared.messages import IntakeEntry

service = build_service("intake")
intake = Intake(service)
stream, group = service.names.groups["intake"]


@service.reader_and_reclaimer(stream, group, parser=intake_parser)
async def on_request(body: IntakeEntry, msg: RedisStreamMessage) -> None:
    await intake.handle(body, msg)


app = service.app
