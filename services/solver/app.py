"""Solver: solves jobs with the configured implementation (wiring only)."""

from __future__ import annotations

from services.solver.hop import SolverHop
from shared.jobs.messages import Job
from shared.jobs.poison import ToTriage
from shared.solving.report import Reports
from shared.solving.run import SolveRunner
from shared.streaming.broker import build_service
from shared.streaming.hop import Poison

service = build_service("solver")
settings, names = service.settings, service.names
stream, group = names.groups["solver"]
runner = SolveRunner(service, "solver", stream, group)
if settings.solver_isolation == "process":
    service.app.on_startup(runner.warm_up)
hop = SolverHop(service, runner, Reports(service, "solver"))
to_triage = ToTriage("solver", names.failures)
service.batched_hop(
    stream,
    group,
    Job,
    hop.handle_jobs,
    readers=settings.worker_concurrency,
    max_batch=settings.solver_batch,
    poison=Poison(settings.max_deliveries, to_triage),
)

app = service.app
