"""Triage: dead letters for permanent failures, scheduled retries for transient ones."""

from __future__ import annotations

from services.triage.triage import Triage
from shared.jobs.messages import FailureRecord
from shared.streaming.broker import build_service
from shared.streaming.hop import Poison

service = build_service("triage")
triage = Triage(service)
stream, group = service.names.groups["triage"]
service.entry_hop(
    stream,
    group,
    FailureRecord,
    triage.handle,
    poison=Poison(service.settings.max_deliveries, triage.on_poison),
)

app = service.app
