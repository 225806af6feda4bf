"""Bridge: BullMQ queues (BULLMQ_QUEUES) into the intake stream, each BullMQ job kept in step
with its ShiftStream job (wiring only; docs/coming-from-bullmq.md)."""

from __future__ import annotations

import logging
import sys

from services.bridge.bridge import Bridge
from services.bridge.mapping import ConfigError, Rules
from shared.streaming.broker import build_service

service = build_service("bridge")
settings = service.settings
try:
    rules = Rules.parse(
        settings.bullmq_queues,
        high_max=settings.bullmq_priority_high_max,
        low_min=settings.bullmq_priority_low_min,
        unset=settings.bullmq_priority_unset,
    )
except ConfigError as err:
    sys.exit(f"bridge: {err}")

if rules.queues:
    bridge = Bridge(service, rules)
    service.app.after_startup(bridge.start)
    # Before the broker's drain: the held jobs go back to BullMQ within the grace period.
    service.app.on_shutdown(bridge.stop)
else:
    service.app.after_startup(
        lambda: logging.getLogger("shiftstream.bridge").info(
            "BULLMQ_QUEUES is empty: no BullMQ queue to bridge, idle"
        )
    )

app = service.app
