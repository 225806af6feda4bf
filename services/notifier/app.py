"""Notifier: maps outcomes to public `solver-events` entries (wiring only)."""

from __future__ import annotations

from faststream.redis import RedisStreamMessage

from shared.broker import build_service
from shared.messages import Outcome
from shared.notifier import Notifier

service = build_service("notifier")
notifier = Notifier(service)
stream, group = service.names.groups["notifier"]


@service.reader_and_reclaimer(stream, group)
async def on_outcome(body: Outcome, msg: RedisStreamMessage) -> None:
    await notifier.handle(body, msg)


app = service.app
