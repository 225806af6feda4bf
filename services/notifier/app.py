"""Notifier: maps outcomes to public `solver-events` entries (wiring only)."""

from __future__ import annotations

from services.notifier.notifier import Notifier
from shared.jobs.messages import Outcome
from shared.jobs.poison import DeadLetterOnly
from shared.streaming.broker import build_service
from shared.streaming.hop import Poison

service = build_service("notifier")
settings, names = service.settings, service.names
notifier = Notifier(service)
# Nothing after the notifier could tell the client: a poisoned outcome is kept for operators.
park = DeadLetterOnly("notifier", names.dead, settings.dead_maxlen)
stream, group = names.groups["notifier"]
# An outcome is done with once its event is out (the broker trims it from `solver.outcomes`):
# the result is kept once, in `solver-events`.
service.batched_hop(
    stream,
    group,
    Outcome,
    notifier.handle_batch,
    max_batch=settings.batch_max_records,
    poison=Poison(settings.max_deliveries, park),
)

app = service.app
