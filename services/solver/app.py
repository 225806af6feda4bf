"""Solver: solves jobs with the configured implementation (wiring only)."""

from __future__ import annotations

from shared.broker import build_service
from shared.messages import Job
from shared.solve_worker import SolveWorker

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
