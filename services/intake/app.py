"""Intake: reads the public request stream, validates, and forwards jobs (wiring only)."""

from __future__ import annotations

from shared.broker import build_service
from shared.intake import Intake
from shared.intake_parser import intake_body, intake_parser
from shared.messages import IntakeEntry

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
