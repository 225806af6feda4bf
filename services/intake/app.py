"""Intake: reads the public request stream, validates, and forwards jobs (wiring only)."""

from __future__ import annotations

from services.intake.intake import Intake
from services.intake.parser import intake_body, intake_parser
from shared.jobs.messages import IntakeEntry
from shared.streaming.broker import build_service

service = build_service("intake")
intake = Intake(service)
stream, group = service.names.groups["intake"]
service.batched_hop(
    stream,
    group,
    IntakeEntry,
    intake.handle_batch,
    parser=intake_parser,
    entry_body=intake_body,
    max_batch=service.settings.batch_max_records,
)

app = service.app
