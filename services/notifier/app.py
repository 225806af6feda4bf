"""Notifier: maps outcomes to public `solver-events` entries (wiring only)."""

from __future__ import annotations

from services.notifier.notifier import Notifier
from shared.jobs.messages import Outcome
from shared.streaming.broker import build_service

service = build_service("notifier")
notifier = Notifier(service)
stream, group = service.names.groups["notifier"]
service.batched_hop(
    stream, group, Outcome, notifier.handle_batch, max_batch=service.settings.batch_max_records
)

app = service.app
