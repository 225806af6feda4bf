"""Intake: reads the public request stream, validates, and forwards jobs (wiring only)."""

from __future__ import annotations

from services.intake.intake import Intake, poison_failure
from services.intake.parser import intake_body, intake_parser
from services.intake.watch import StreamWatch
from shared.jobs.messages import IntakeEntry
from shared.jobs.poison import ToTriage
from shared.streaming.broker import build_service
from shared.streaming.hop import Poison

service = build_service("intake")
settings, names = service.settings, service.names
intake = Intake(service)
stream, group = names.groups["intake"]
watch = StreamWatch(service.redis, names, group)
# The broker trims the intake stream of what the group consumed; the watch counts after it.
service.after_trim = watch
service.batched_hop(
    stream,
    group,
    IntakeEntry,
    intake.handle_batch,
    parser=intake_parser,
    entry_body=intake_body,
    max_batch=settings.batch_max_records,
    poison=Poison(
        settings.max_deliveries,
        ToTriage("intake", names.failures, describe=poison_failure),
    ),
)

app = service.app
