"""Fallback: solves jobs whose primary solve failed with the greedy solver (wiring only)."""

from __future__ import annotations

from services.fallback.handler import FallbackHandler
from shared.jobs.messages import FallbackJob
from shared.jobs.poison import ToTriage
from shared.solving.report import Reports
from shared.solving.run import SolveRunner
from shared.streaming.broker import build_service
from shared.streaming.hop import Poison

service = build_service("fallback")
settings, names = service.settings, service.names
stream, group = names.groups["fallback"]
runner = SolveRunner(service, "fallback", stream, group)
handler = FallbackHandler(service, runner, Reports(service, "fallback"))
to_triage = ToTriage("fallback", names.failures)
service.entry_hop(
    stream,
    group,
    FallbackJob,
    handler.handle,
    readers=settings.worker_concurrency,
    poison=Poison(settings.max_deliveries, to_triage),
)

app = service.app
