"""Solver: solves jobs with the configured implementation (wiring only)."""

from __future__ import annotations

from shared.jobs.messages import Job
from shared.solving.worker import SolveWorker
from shared.streaming.broker import build_service

service = build_service("solver")
stream, group = service.names.groups["solver"]
worker = SolveWorker(service, "solver", stream, group)
service.batched_hop(
    stream,
    group,
    Job,
    worker.handle_jobs,
    readers=service.settings.worker_concurrency,
    max_batch=service.settings.solver_batch,
)

app = service.app
